// Vocabularies for BERT runs (bin/vocab --wordpiece / --word-pieces): a WordPiece vocabulary
// learned from corpora, or the word-level one the released SaBERT used (every word its own piece).
// Both start with [PAD] [UNK] [CLS] [SEP] [MASK].
#pragma once
#include <string>
#include <vector>

#include "data/wordpiece.h"

namespace sa {

struct WordPieceTrainOptions {
  int vocab_size = 30522;  // BERT's
  int min_pair_count = 2;  // stop merging below this
  BasicTokenizerOptions basic;
};

// Words are counted after the basic tokenizer. The alphabet (each character, as a first character
// and as a "##" continuation; all of it, even past vocab_size) comes first, then merges of the most frequent adjacent pair, as BPE
// does (Hugging Face's WordPiece trainer does the same), until vocab_size entries. Ties go to the
// pair formed first, so the result is deterministic.
WordPieceVocab train_wordpiece(const std::vector<std::string>& corpora, const WordPieceTrainOptions& o);

// The specials, then every word seen at least min_count times by descending count (ties in byte
// order), at most max_size entries in all (0: no limit).
WordPieceVocab word_level_vocab(const std::vector<std::string>& corpora, int min_count, int max_size,
                                const BasicTokenizerOptions& basic);

}  // namespace sa
