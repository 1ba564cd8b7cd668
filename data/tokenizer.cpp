#include "data/tokenizer.h"

#include <algorithm>
#include <cstdint>

namespace sa {

namespace {

struct CodeRange {
  uint32_t lo, hi;
};
#include "data/unicode_classes.inc"

template <size_t N>
bool in(const CodeRange (&ranges)[N], uint32_t cp) {
  const CodeRange* end = ranges + N;
  const CodeRange* it = std::upper_bound(ranges, end, cp, [](uint32_t c, const CodeRange& r) { return c < r.lo; });
  return it != ranges && cp <= (it - 1)->hi;
}

bool is_word(uint32_t cp) { return in(kWordRanges, cp); }
bool is_space(uint32_t cp) { return in(kSpaceRanges, cp); }

struct Char {
  uint32_t cp;
  size_t at, len;  // byte offset and length in the text
};

// UTF-8 -> code points; an invalid byte stands for itself (U+FFFD's class: neither word nor space).
std::vector<Char> decode(const std::string& s) {
  std::vector<Char> out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char b = static_cast<unsigned char>(s[i]);
    size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    uint32_t cp = n == 1 ? b : n == 2 ? b & 0x1F : n == 3 ? b & 0x0F : b & 0x07;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) {
      const unsigned char c = static_cast<unsigned char>(s[i + k]);
      ok = (c >> 6) == 2;
      cp = (cp << 6) | (c & 0x3F);
    }
    if (!ok) n = 1, cp = 0xFFFD;
    out.push_back({cp, i, n});
    i += n;
  }
  return out;
}

bool joins(uint32_t cp) { return cp == '-' || cp == '\'' || cp == 0x2019 || cp == '.'; }

bool ends_sentence(uint32_t cp) {
  return cp == '.' || cp == '!' || cp == '?' || cp == 0x3002 || cp == 0xFF01 || cp == 0xFF1F;
}

std::vector<std::string> tokens_of(const std::string& s, const std::vector<Char>& c, size_t from, size_t to) {
  std::vector<std::string> out;
  for (size_t i = from; i < to;) {
    if (is_space(c[i].cp)) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    if (is_word(c[i].cp)) {
      while (j < to && is_word(c[j].cp)) ++j;
      while (j + 1 < to && joins(c[j].cp) && is_word(c[j + 1].cp)) {
        j += 2;
        while (j < to && is_word(c[j].cp)) ++j;
      }
    }
    out.push_back(s.substr(c[i].at, c[j - 1].at + c[j - 1].len - c[i].at));
    i = j;
  }
  return out;
}

}  // namespace

std::vector<std::string> tokenize(const std::string& s) {
  const std::vector<Char> c = decode(s);
  return tokens_of(s, c, 0, c.size());
}

std::vector<std::vector<std::string>> tokenize_sentences(const std::string& s) {
  const std::vector<Char> c = decode(s);
  std::vector<std::vector<std::string>> out;
  size_t start = 0;
  for (size_t i = 1; i <= c.size(); ++i) {
    const bool split = i == c.size() || (is_space(c[i].cp) && ends_sentence(c[i - 1].cp));
    if (!split) continue;
    std::vector<std::string> t = tokens_of(s, c, start, i);
    if (!t.empty()) out.push_back(std::move(t));
    while (i < c.size() && is_space(c[i].cp)) ++i;
    start = i;
  }
  return out;
}

}  // namespace sa
