#include "data/vocab.h"
#include "data/input_limits.h"

#include <algorithm>
#include <fstream>

#include "data/atomic_file.h"
#include "data/corpus.h"

#include "engine/core/error.h"

namespace sa {

bool valid_utf8(const std::string& s, size_t* bad) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
    bool ok = n >= 0 && !(n == 1 && c < 0xc2) && !(n == 3 && c > 0xf4) && i + static_cast<size_t>(n) < s.size();
    for (int k = 1; ok && k <= n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (!ok) {
      if (bad) *bad = i;
      return false;
    }
    i += static_cast<size_t>(n) + 1;
  }
  return true;
}

void require_utf8(const std::string& text, const std::string& path, int first_line) {
  size_t bad = 0;
  if (valid_utf8(text, &bad)) return;
  const size_t line_start = bad == 0 ? 0 : text.rfind('\n', bad - 1) + 1;  // npos + 1 == 0: the first line
  const auto line = first_line + std::count(text.begin(), text.begin() + static_cast<long>(bad), '\n');
  fail("{}:{}: invalid UTF-8 at byte {} (expected UTF-8 text)", path, line, bad - line_start + 1);
}

void Vocab::build(const std::string& origin, bool require_unk) {
  index_.clear();
  for (size_t i = 0; i < words_.size(); ++i) index_.emplace(words_[i], static_cast<int>(i));
  auto find = [&](const char* w) { auto it = index_.find(w); return it == index_.end() ? -1 : it->second; };
  bos_ = find("<S>");
  eos_ = find("</S>");
  unk_ = find("<UNK>");
  SA_CHECK(bos_ >= 0 && eos_ >= 0 && (unk_ >= 0 || !require_unk),
           "{}: the vocabulary must contain <S>, </S>{} (bilm-tf format: those first, then words by descending count)",
           origin, require_unk ? " and <UNK>" : "");
}

Vocab Vocab::load(const std::string& path, bool require_unk) {
  std::ifstream f(path);
  SA_CHECK(f, "{}: cannot open vocabulary file", path);
  Vocab v;
  std::string line;
  for (int lineno = 1; read_line(f, line, path, lineno); ++lineno) {
    require_utf8(line, path, lineno);
    size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    std::string w = b == std::string::npos ? "" : line.substr(b, e - b + 1);
    if (w.empty() || w == "!!!MAXTERMID") continue;
    check_token_length(w, path, lineno);
    v.words_.push_back(w);
  }
  SA_CHECK(!v.words_.empty(), "{}: the vocabulary file is empty", path);
  v.build(path, require_unk);
  return v;
}

Vocab Vocab::from_words(std::vector<std::string> words) {
  Vocab v;
  v.words_ = std::move(words);
  v.build("vocabulary", true);
  return v;
}

void Vocab::save(const std::string& path) const {
  std::string text;
  for (const std::string& w : words_) text += w + '\n';
  write_file_atomically(path, text);
}

uint64_t Vocab::checksum() const {
  uint64_t h = 14695981039346656037ull;
  for (const std::string& w : words_)
    for (unsigned char c : w + '\n') h = (h ^ c) * 1099511628211ull;
  return h;
}

Vocab build_vocab(const std::vector<std::string>& corpora, int min_count, int max_size, bool lowercase) {
  std::unordered_map<std::string, int64_t> counts;
  for (const std::string& pattern : corpora)
    for (const std::string& f : expand_glob(pattern))
      for (const Sentence& s : read_sentences(f, lowercase))
        for (const std::string& w : s) ++counts[w];
  std::vector<std::pair<std::string, int64_t>> items;
  for (auto& [w, c] : counts)
    if (c >= min_count && w != "<S>" && w != "</S>" && w != "<UNK>") items.emplace_back(w, c);
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<std::string> words = {"<S>", "</S>", "<UNK>"};
  for (auto& [w, c] : items) {
    if (max_size > 0 && static_cast<int>(words.size()) >= max_size) break;
    words.push_back(w);
  }
  std::string names;
  for (const std::string& c : corpora) names += (names.empty() ? "" : ", ") + c;
  SA_CHECK(words.size() > 3, "{}: no word occurs at least {} time(s) (vocab_min_count); is the corpus empty?", names,
           min_count);
  return Vocab::from_words(std::move(words));
}

int Vocab::id(const std::string& w) const {
  auto it = index_.find(w);
  return it == index_.end() ? unk_ : it->second;
}

}  // namespace sa
