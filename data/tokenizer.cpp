#include "data/tokenizer.h"

#include <iconv.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "engine/core/error.h"

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

// segment_cjk.py's CJK class: kana, CJK ideographs (extension A, unified, compatibility), the
// prolonged sound mark, 々 and 〆.
bool is_cjk(uint32_t cp) {
  return (cp >= 0x3040 && cp <= 0x30FF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x4E00 && cp <= 0x9FFF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || cp == 0x3005 || cp == 0x3006;
}

bool joins(uint32_t cp) { return cp == '-' || cp == '\'' || cp == 0x2019 || cp == '.'; }

bool ends_sentence(uint32_t cp) {
  return cp == '.' || cp == '!' || cp == '?' || cp == 0x3002 || cp == 0xFF01 || cp == 0xFF1F;
}

// The bytes of code points [i, j).
std::string bytes(const std::string& s, const std::vector<Char>& c, size_t i, size_t j) {
  return s.substr(c[i].at, c[j - 1].at + c[j - 1].len - c[i].at);
}

std::vector<std::string> tokens_of(const std::string& s, const std::vector<Char>& c, size_t from, size_t to,
                                   const CjkLexicon* lexicon) {
  // With a lexicon a CJK run is segmented on its own, and words of other text stop at it.
  const auto word = [&](size_t k) { return is_word(c[k].cp) && !(lexicon && is_cjk(c[k].cp)); };
  std::vector<std::string> out;
  for (size_t i = from; i < to;) {
    if (lexicon && is_cjk(c[i].cp)) {
      size_t end = i;
      while (end < to && is_cjk(c[end].cp)) ++end;
      while (i < end) {  // longest lexicon word first; a character alone when none fits
        size_t n = std::min<size_t>(static_cast<size_t>(lexicon->max_len()), end - i);
        while (n > 1 && !lexicon->contains(bytes(s, c, i, i + n))) --n;
        out.push_back(bytes(s, c, i, i + n));
        i += n;
      }
      continue;
    }
    if (is_space(c[i].cp)) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    if (word(i)) {
      while (j < to && word(j)) ++j;
      while (j + 1 < to && joins(c[j].cp) && word(j + 1)) {
        j += 2;
        while (j < to && word(j)) ++j;
      }
    }
    out.push_back(s.substr(c[i].at, c[j - 1].at + c[j - 1].len - c[i].at));
    i = j;
  }
  return out;
}

}  // namespace

bool has_cjk(const std::string& s) {
  for (const Char& c : decode(s))
    if (is_cjk(c.cp)) return true;
  return false;
}

std::vector<std::string> tokenize(const std::string& s, const CjkLexicon* lexicon) {
  const std::vector<Char> c = decode(s);
  return tokens_of(s, c, 0, c.size(), lexicon);
}

std::vector<std::vector<std::string>> tokenize_sentences(const std::string& s, const CjkLexicon* lexicon) {
  const std::vector<Char> c = decode(s);
  std::vector<std::vector<std::string>> out;
  size_t start = 0;
  for (size_t i = 1; i <= c.size(); ++i) {
    const bool split = i == c.size() || (is_space(c[i].cp) && ends_sentence(c[i - 1].cp));
    if (!split) continue;
    std::vector<std::string> t = tokens_of(s, c, start, i, lexicon);
    if (!t.empty()) out.push_back(std::move(t));
    while (i < c.size() && is_space(c[i].cp)) ++i;
    start = i;
  }
  return out;
}

}  // namespace sa

namespace sa {

namespace {

std::ifstream open_lexicon(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  SA_CHECK(f, "{}: cannot open ({})", path, std::strerror(errno));
  return f;
}

// EUC-JP -> UTF-8; an invalid byte becomes U+FFFD (Python's errors="replace").
std::string euc_jp_to_utf8(iconv_t cd, const std::string& in) {
  std::string out;
  char buf[4096];
  char* src = const_cast<char*>(in.data());
  size_t left = in.size();
  while (left > 0) {
    char* dst = buf;
    size_t room = sizeof buf;
    const size_t r = iconv(cd, &src, &left, &dst, &room);
    out.append(buf, static_cast<size_t>(dst - buf));
    if (r == static_cast<size_t>(-1) && errno != E2BIG) {  // EILSEQ or EINVAL: skip a byte
      out += "\xEF\xBF\xBD";
      ++src, --left;
      iconv(cd, nullptr, nullptr, nullptr, nullptr);
    }
  }
  return out;
}

}  // namespace

void CjkLexicon::add_cedict(const std::string& path) {
  std::ifstream f = open_lexicon(path);
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t a = line.find(' ');
    if (a == std::string::npos) continue;
    const size_t b = line.find(' ', a + 1);
    words_.insert(line.substr(0, a));
    words_.insert(line.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1));
  }
}

void CjkLexicon::add_edict(const std::string& path) {
  std::ifstream f = open_lexicon(path);
  iconv_t cd = iconv_open("UTF-8", "EUC-JP");
  SA_CHECK(cd != reinterpret_cast<iconv_t>(-1), "{}: no EUC-JP converter ({})", path, std::strerror(errno));
  auto strip = [](std::string s, const char* chars) {
    const size_t b = s.find_first_not_of(chars), e = s.find_last_not_of(chars);
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  for (std::string raw; std::getline(f, raw);) {
    const std::string line = euc_jp_to_utf8(cd, raw);
    const std::string head = strip(line.substr(0, line.find('/')), " \t\r\n\f\v");
    const size_t sp = head.find(' ');
    words_.insert(head.substr(0, sp));
    if (sp != std::string::npos) {
      const std::string kana = strip(head.substr(sp + 1), "[] ");
      if (!kana.empty()) words_.insert(kana);
    }
  }
  iconv_close(cd);
}

void CjkLexicon::add_muse_targets(const std::string& path, int skip_lo, int skip_hi) {
  std::ifstream f = open_lexicon(path);
  std::map<std::string, int> rank;
  for (std::string line; std::getline(f, line);) {
    std::istringstream ss(line);
    std::string src, tgt, extra;
    if (!(ss >> src >> tgt) || (ss >> extra)) continue;
    const int r = rank.emplace(src, static_cast<int>(rank.size())).first->second;
    if (r < skip_lo || r >= skip_hi) words_.insert(tgt);
  }
}

bool is_cjk_character(const std::string& token) {
  const std::vector<Char> c = decode(token);
  return c.size() == 1 && is_cjk(c[0].cp);
}

RegroupedTokens regroup_cjk_characters(const std::vector<std::string>& tokens, const CjkLexicon& lexicon) {
  RegroupedTokens out;
  out.word_of.resize(tokens.size());
  for (size_t i = 0; i < tokens.size();) {
    size_t end = i;
    while (end < tokens.size() && is_cjk_character(tokens[end])) ++end;
    if (end == i) end = i + 1;  // not a CJK character: a word of its own
    // Longest lexicon word first; a token alone when none fits (or it is not a CJK character).
    size_t n = std::min<size_t>(static_cast<size_t>(lexicon.max_len()), end - i);
    std::string w;
    for (;; --n) {
      w.clear();
      for (size_t k = i; k < i + n; ++k) w += tokens[k];
      if (n == 1 || lexicon.contains(w)) break;
    }
    for (size_t k = i; k < i + n; ++k) out.word_of[k] = static_cast<int32_t>(out.words.size());
    out.words.push_back(std::move(w));
    i += n;
  }
  return out;
}

void CjkLexicon::finish(int max_len) {
  SA_CHECK(max_len >= 1, "CJK lexicon: max_len must be positive, got {}", max_len);
  max_len_ = max_len;
  for (auto it = words_.begin(); it != words_.end();) {
    const std::vector<Char> c = decode(*it);
    bool keep = c.size() > 1 && c.size() <= static_cast<size_t>(max_len);
    for (const Char& ch : c) keep = keep && is_cjk(ch.cp);
    it = keep ? std::next(it) : words_.erase(it);
  }
}

}  // namespace sa
