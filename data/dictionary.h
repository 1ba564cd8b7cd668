// Bilingual dictionaries for the cross-lingual work (docs/design.md §4.2): readers
// for MUSE pairs, CC-CEDICT, EDICT (EUC-JP) and Ding, each giving lowercase-normalized
// single-word pairs, and the per-word translation table joint training uses.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "data/vocab.h"

namespace sa {

struct Dictionary {
  std::vector<std::pair<std::string, std::string>> pairs;  // (source, target), lowercased
  size_t lines = 0;                // lines read (comments included)
  size_t skipped = 0;              // malformed or wrongly encoded lines, counted, not fatal
  std::string first_skip;          // "file:line: why" of the first one
  std::string describe() const;    // one log line
};

// Lowercase for dictionary matching: ASCII and the Latin-1 letters (Ä -> ä, Ñ -> ñ).
std::string lowercase_latin(const std::string& s);

// MUSE: "src tgt" per line (UTF-8).
Dictionary read_muse_dictionary(const std::string& path);
// CC-CEDICT (UTF-8): "Trad Simp [pin yin] /gloss/gloss/" -> (simplified, English word) for every
// gloss that is one word once parentheses and a leading "to " are removed.
Dictionary read_cedict(const std::string& path);
// EDICT (EUC-JP, Debian `edict`): "KANJI;KANJI [KANA] /(n) gloss/.../EntL.../" -> (headword,
// English word) for one-word glosses; the kana reading is the headword when there is no kanji.
Dictionary read_edict(const std::string& path);
// Ding (UTF-8, Debian `trans-de-en`): "de; de | de :: en; en | en" -> (German word, English
// word) within each '|' group, for one-word entries once {..}, (..) and [..] are removed.
Dictionary read_ding(const std::string& path);
// One of the above by name: "muse", "cedict", "edict" or "ding" (the config key dictionary_format).
Dictionary read_dictionary(const std::string& path, const std::string& format);
// (target, source)
Dictionary reversed(const Dictionary& d);

// Per source word, up to `per_word` target ids in file order (released: 4; -1 = none), for words
// of a joint vocabulary. Pairs with a word outside the vocabulary are dropped, as are repeats.
struct TranslationTable {
  int per_word = 4;
  std::vector<int32_t> ids;  // [V * per_word]
  // dictionary_by_language: the entries of tokens of the second language ([V * per_word]: the
  // reversed pairs, or none), `ids` then serving only the first language. Empty: `ids` for all.
  std::vector<int32_t> ids_l2;
  size_t pairs_in_vocab = 0, sources = 0, dropped_for_limit = 0;
  // The translations of `word` in a sentence of language `lang` (0: train_prefix's, 1: train_prefix_l2's).
  const int32_t* of(int word, int lang = 0) const {
    return &(lang && !ids_l2.empty() ? ids_l2 : ids)[static_cast<size_t>(word) * per_word];
  }
};
TranslationTable translation_table(const Dictionary& d, const Vocab& vocab, int per_word = 4);
// The MUSE-style log line: pairs read, in the vocabulary, sources with translations, dropped.
std::string describe(const Dictionary& d, const TranslationTable& t);

}  // namespace sa
