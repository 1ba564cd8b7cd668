#include "data/wordpiece.h"
#include "data/input_limits.h"

#include <utf8proc.h>

#include <cstdlib>
#include <fstream>
#include <memory>

#include "data/atomic_file.h"
#include "engine/core/error.h"

namespace sa {

namespace {

std::vector<int32_t> decode(const std::string& s, const std::string& origin) {
  std::vector<int32_t> cps;
  cps.reserve(s.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  for (utf8proc_ssize_t at = 0, n = static_cast<utf8proc_ssize_t>(s.size()); at < n;) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t len = utf8proc_iterate(p + at, n - at, &cp);
    SA_CHECK(len > 0, "{}: invalid UTF-8 at byte {}", origin, at);
    cps.push_back(cp), at += len;
  }
  return cps;
}

void append(std::string& out, int32_t cp) {
  utf8proc_uint8_t buf[4];
  out.append(reinterpret_cast<char*>(buf), static_cast<size_t>(utf8proc_encode_char(cp, buf)));
}

std::string encode(const std::vector<int32_t>& cps) {
  std::string s;
  for (int32_t cp : cps) append(s, cp);
  return s;
}

// utf8proc's normal forms return malloc'ed strings.
std::string normalize(const std::string& s, utf8proc_uint8_t* (*form)(const utf8proc_uint8_t*)) {
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> r(form(reinterpret_cast<const utf8proc_uint8_t*>(s.c_str())),
                                                            &std::free);
  SA_CHECK(r != nullptr, "Unicode normalization failed");
  return reinterpret_cast<const char*>(r.get());
}

bool is_whitespace(int32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || utf8proc_category(cp) == UTF8PROC_CATEGORY_ZS;
}

// Categories C* (Cc, Cf, Cs, Co and unassigned Cn), except the white space \t \n \r.
bool is_control(int32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS: case UTF8PROC_CATEGORY_CO: return true;
    default: return false;
  }
}

// All non-letter, non-digit ASCII counts as punctuation ($, ^, `), as in BERT, plus categories P*.
bool is_punctuation(int32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) return true;
  const auto c = utf8proc_category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

// The CJK Unified Ideographs blocks (not Hangul, Hiragana or Katakana, which are written with spaces
// or are split by WordPiece like any other script).
bool is_cjk(int32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_special(const std::string& t) {
  return t == "[UNK]" || t == "[CLS]" || t == "[SEP]" || t == "[PAD]" || t == "[MASK]";
}

std::vector<std::string> split_whitespace(const std::vector<int32_t>& cps) {
  std::vector<std::string> out;
  std::string cur;
  for (int32_t cp : cps) {
    if (cp == ' ') {
      if (!cur.empty()) out.push_back(std::move(cur)), cur.clear();
    } else {
      append(cur, cp);
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

}  // namespace

std::vector<std::string> bert_basic_tokenize(const std::string& text, const BasicTokenizerOptions& o,
                                             const std::string& origin) {
  std::vector<int32_t> cleaned;
  for (int32_t cp : decode(text, origin)) {
    if (cp == 0 || cp == 0xFFFD || is_control(cp)) continue;
    const bool spaced = o.split_cjk && is_cjk(cp);
    if (spaced) cleaned.push_back(' ');
    cleaned.push_back(is_whitespace(cp) ? ' ' : cp);
    if (spaced) cleaned.push_back(' ');
  }
  std::vector<std::string> out;
  for (std::string token : split_whitespace(decode(normalize(encode(cleaned), utf8proc_NFC), origin))) {
    if (is_special(token)) {
      out.push_back(token);
      continue;
    }
    std::vector<int32_t> cps = decode(token, origin);
    if (o.lowercase)
      for (int32_t& cp : cps) cp = utf8proc_tolower(cp);
    if (o.strips_accents()) {
      std::vector<int32_t> kept;
      for (int32_t cp : decode(normalize(encode(cps), utf8proc_NFD), origin))
        if (utf8proc_category(cp) != UTF8PROC_CATEGORY_MN) kept.push_back(cp);
      cps = std::move(kept);
    }
    std::string cur;
    for (int32_t cp : cps) {
      if (is_punctuation(cp)) {
        if (!cur.empty()) out.push_back(std::move(cur)), cur.clear();
        std::string p;
        append(p, cp);
        out.push_back(std::move(p));
      } else {
        append(cur, cp);
      }
    }
    if (!cur.empty()) out.push_back(std::move(cur));
  }
  return out;
}

WordPieceVocab WordPieceVocab::from_pieces(std::vector<std::string> pieces, const std::string& origin) {
  WordPieceVocab v;
  v.pieces_ = std::move(pieces);
  for (size_t i = 0; i < v.pieces_.size(); ++i) {
    SA_CHECK(!v.pieces_[i].empty(), "{}: line {}: empty entry", origin, i + 1);
    const auto [it, fresh] = v.index_.emplace(v.pieces_[i], static_cast<int>(i));
    SA_CHECK(fresh, "{}: line {}: '{}' already on line {}", origin, i + 1, v.pieces_[i], it->second + 1);
  }
  v.unk_ = v.id("[UNK]");
  SA_CHECK(v.unk_ >= 0, "{}: no [UNK] entry", origin);
  return v;
}

WordPieceVocab WordPieceVocab::load(const std::string& path) {
  std::ifstream f(path);
  SA_CHECK(f.good(), "{}: cannot open", path);
  std::vector<std::string> pieces;
  int64_t lineno = 0;
  for (std::string line; read_line(f, line, path, ++lineno);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    check_token_length(line, path, lineno);
    pieces.push_back(line);
  }
  return from_pieces(std::move(pieces), path);
}

void WordPieceVocab::save(const std::string& path) const {
  std::string s;
  for (const std::string& p : pieces_) s += p + "\n";
  write_file_atomically(path, s);
}

int WordPieceVocab::id(const std::string& piece) const {
  auto it = index_.find(piece);
  return it == index_.end() ? -1 : it->second;
}

std::vector<int> wordpiece_ids(const std::string& word, const WordPieceVocab& v, int max_chars) {
  if (const int special = is_special(word) ? v.id(word) : -1; special >= 0) return {special};
  const std::vector<int32_t> cps = decode(word, "word");
  if (static_cast<int>(cps.size()) > max_chars) return {v.unk()};
  std::vector<size_t> offset(cps.size() + 1, 0);  // byte offset of each character
  for (size_t i = 0; i < cps.size(); ++i) offset[i + 1] = offset[i] + (cps[i] < 0x80 ? 1 : cps[i] < 0x800 ? 2 : cps[i] < 0x10000 ? 3 : 4);
  std::vector<int> ids;
  for (size_t start = 0; start < cps.size();) {
    int found = -1;
    size_t end = cps.size();
    for (; end > start; --end) {
      const std::string sub = (start > 0 ? "##" : "") + word.substr(offset[start], offset[end] - offset[start]);
      if ((found = v.id(sub)) >= 0) break;
    }
    if (found < 0) return {v.unk()};
    ids.push_back(found);
    start = end;
  }
  return ids;
}

std::vector<int> WordPieceTokenizer::encode(const std::string& text) const {
  std::vector<int> ids;
  for (const std::string& w : bert_basic_tokenize(text, o_))
    for (int id : wordpiece_ids(w, vocab_)) ids.push_back(id);
  return ids;
}

WordPieces WordPieceTokenizer::encode_words(const std::vector<std::string>& words) const {
  WordPieces r;
  for (size_t i = 0; i < words.size(); ++i) {
    size_t before = r.ids.size();
    for (const std::string& w : bert_basic_tokenize(words[i], o_))
      for (int id : wordpiece_ids(w, vocab_)) r.ids.push_back(id);
    if (r.ids.size() == before) r.ids.push_back(vocab_.unk());  // a word of only control characters
    r.word_of.resize(r.ids.size(), static_cast<int>(i));
  }
  return r;
}

std::vector<std::string> WordPieceTokenizer::pieces(const std::string& text) const {
  std::vector<std::string> out;
  for (int id : encode(text)) out.push_back(vocab_.piece(id));
  return out;
}

}  // namespace sa
