#include "data/dictionary.h"
#include "data/input_limits.h"

#include <fmt/format.h>
#include <iconv.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/core/error.h"

namespace sa {

std::string lowercase_latin(const std::string& s) {
  std::string o = s;
  for (size_t i = 0; i < o.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(o[i]);
    if (c >= 'A' && c <= 'Z') o[i] = static_cast<char>(c + 32);
    // U+00C0..U+00DE except U+00D7 (x): UTF-8 C3 80..C3 9E -> C3 A0..C3 BE
    if (c == 0xC3 && i + 1 < o.size()) {
      unsigned char d = static_cast<unsigned char>(o[i + 1]);
      if (d >= 0x80 && d <= 0x9E && d != 0x97) o[i + 1] = static_cast<char>(d + 0x20);
      ++i;
    }
  }
  return o;
}

std::string Dictionary::describe() const {
  return fmt::format("{} pairs from {} lines, {} lines skipped{}", pairs.size(), lines, skipped,
                     skipped ? " (first: " + first_skip + ")" : "");
}

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, sep);) out.push_back(part);
  return out;
}

// Removes bracketed notes ((..), {..}, [..], nested), then trims.
std::string strip_notes(const std::string& s) {
  std::string o;
  int depth = 0;
  for (char c : s) {
    if (c == '(' || c == '{' || c == '[') ++depth;
    else if ((c == ')' || c == '}' || c == ']') && depth > 0) --depth;
    else if (depth == 0) o += c;
  }
  return trim(o);
}

// One lowercased word, or "" for phrases and empty glosses. English glosses must look like a
// word (letters, digits, '-' and '\''): "CL:..." classifier notes and symbols are not words.
std::string single_word(std::string s, bool english) {
  s = strip_notes(s);
  if (english && s.rfind("to ", 0) == 0) s = trim(s.substr(3));
  if (s.empty() || s.find_first_of(" \t") != std::string::npos) return "";
  if (english && !std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '\'';
      }))
    return "";
  return lowercase_latin(s);
}

void skip(Dictionary& d, const std::string& path, size_t line, const std::string& why) {
  if (d.skipped++ == 0) d.first_skip = fmt::format("{}:{}: {}", path, line, why);
}

// Calls f(line, line_number) for every line; lines that are not valid UTF-8 are counted skips.
template <typename F>
Dictionary read_lines(const std::string& path, F f) {
  std::ifstream in(path, std::ios::binary);
  SA_CHECK(in, "{}: cannot open dictionary", path);
  Dictionary d;
  std::string line;
  while (read_line(in, line, path, static_cast<int64_t>(d.lines) + 1)) {
    ++d.lines;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!valid_utf8(line)) {
      skip(d, path, d.lines, "not UTF-8");
      continue;
    }
    f(d, line);
  }
  return d;
}

void add(Dictionary& d, const std::string& a, const std::string& b) {
  if (!a.empty() && !b.empty()) d.pairs.emplace_back(a, b);
}

}  // namespace

Dictionary read_muse_dictionary(const std::string& path) {
  return read_lines(path, [&](Dictionary& d, const std::string& line) {
    std::istringstream ss(line);
    std::string a, b, extra;
    if (!(ss >> a >> b) || (ss >> extra)) return skip(d, path, d.lines, "expected \"source target\"");
    add(d, lowercase_latin(a), lowercase_latin(b));
  });
}

Dictionary read_cedict(const std::string& path) {
  return read_lines(path, [&](Dictionary& d, const std::string& line) {
    if (line.empty() || line[0] == '#') return;
    const size_t sp1 = line.find(' '), sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
    const size_t slash = line.find('/');
    if (sp2 == std::string::npos || slash == std::string::npos || slash < sp2 || line.back() != '/')
      return skip(d, path, d.lines, "expected \"Traditional Simplified [pinyin] /gloss/.../\"");
    const std::string simp = line.substr(sp1 + 1, sp2 - sp1 - 1);
    for (const std::string& g : split(line.substr(slash + 1, line.size() - slash - 2), '/'))
      add(d, simp, single_word(g, true));
  });
}

Dictionary read_edict(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SA_CHECK(in, "{}: cannot open dictionary", path);
  iconv_t cd = iconv_open("UTF-8", "EUC-JP");
  SA_CHECK(cd != reinterpret_cast<iconv_t>(-1), "iconv: no EUC-JP converter");
  Dictionary d;
  std::string raw;
  while (read_line(in, raw, path, static_cast<int64_t>(d.lines) + 1)) {
    ++d.lines;
    std::string line(raw.size() * 2 + 16, '\0');
    char* src = raw.data();
    char* dst = line.data();
    size_t in_left = raw.size(), out_left = line.size();
    iconv(cd, nullptr, nullptr, nullptr, nullptr);
    if (iconv(cd, &src, &in_left, &dst, &out_left) == static_cast<size_t>(-1)) {
      skip(d, path, d.lines, "not EUC-JP");
      continue;
    }
    line.resize(line.size() - out_left);
    const size_t slash = line.find('/');
    if (slash == std::string::npos || line.back() != '/') {
      skip(d, path, d.lines, "expected \"headword [reading] /gloss/.../\"");
      continue;
    }
    std::string head = trim(line.substr(0, slash));
    const size_t br = head.find('[');
    std::vector<std::string> words;
    for (const std::string& h : split(trim(head.substr(0, br)), ';')) words.push_back(strip_notes(h));
    if (br != std::string::npos && words.empty()) words.push_back(strip_notes(head.substr(br + 1)));
    for (const std::string& g : split(line.substr(slash + 1, line.size() - slash - 2), '/')) {
      if (g.rfind("EntL", 0) == 0) continue;
      const std::string en = single_word(g, true);
      for (const std::string& w : words) add(d, w, en);
    }
  }
  iconv_close(cd);
  // A file in another encoding fails on most lines: say so instead of returning a few pairs.
  SA_CHECK(d.lines == 0 || d.skipped * 2 < d.lines, "{}: {} of {} lines are not EUC-JP (EDICT's encoding; first: {})",
           path, d.skipped, d.lines, d.first_skip);
  return d;
}

Dictionary read_ding(const std::string& path) {
  return read_lines(path, [&](Dictionary& d, const std::string& line) {
    if (line.empty() || line[0] == '#') return;
    const size_t sep = line.find(" :: ");
    if (sep == std::string::npos) return skip(d, path, d.lines, "expected \"German :: English\"");
    std::vector<std::string> de = split(line.substr(0, sep), '|'), en = split(line.substr(sep + 4), '|');
    if (de.size() != en.size()) return skip(d, path, d.lines, "the two sides have different numbers of '|' groups");
    for (size_t g = 0; g < de.size(); ++g)
      for (const std::string& a : split(de[g], ';'))
        for (const std::string& b : split(en[g], ';')) add(d, single_word(a, false), single_word(b, true));
  });
}

Dictionary read_dictionary(const std::string& path, const std::string& format) {
  if (format == "muse") return read_muse_dictionary(path);
  if (format == "cedict") return read_cedict(path);
  if (format == "edict") return read_edict(path);
  if (format == "ding") return read_ding(path);
  fail("{}: unknown dictionary format \"{}\" (muse, cedict, edict or ding)", path, format);
}

Dictionary reversed(const Dictionary& d) {
  Dictionary r = d;
  for (auto& [a, b] : r.pairs) std::swap(a, b);
  return r;
}

TranslationTable translation_table(const Dictionary& d, const Vocab& vocab, int per_word) {
  TranslationTable t;
  t.per_word = per_word;
  t.ids.assign(static_cast<size_t>(vocab.size()) * per_word, -1);
  std::set<std::pair<int, int>> seen;
  for (const auto& [a, b] : d.pairs) {
    if (!vocab.contains(a) || !vocab.contains(b)) continue;
    const int s = vocab.id(a), g = vocab.id(b);
    if (!seen.insert({s, g}).second) continue;
    ++t.pairs_in_vocab;
    int32_t* slots = &t.ids[static_cast<size_t>(s) * per_word];
    int32_t* free = std::find(slots, slots + per_word, -1);
    if (free == slots + per_word) {
      ++t.dropped_for_limit;
      continue;
    }
    t.sources += free == slots;
    *free = g;
  }
  return t;
}

std::string describe(const Dictionary& d, const TranslationTable& t) {
  return fmt::format(
      "dictionary: {} pairs read ({} lines skipped), {} distinct pairs in the vocabulary, {} source words with "
      "translations, {} pairs dropped over the {}-per-word limit",
      d.pairs.size(), d.skipped, t.pairs_in_vocab, t.sources, t.dropped_for_limit, t.per_word);
}

}  // namespace sa
