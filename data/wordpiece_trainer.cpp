#include "data/wordpiece_trainer.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "data/corpus.h"
#include "engine/core/error.h"

namespace sa {

namespace {

const std::vector<std::string> kSpecials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

// Word counts over the lines of every file the corpora name.
std::map<std::string, int64_t> count_words(const std::vector<std::string>& corpora, const BasicTokenizerOptions& basic) {
  std::map<std::string, int64_t> counts;
  for (const std::string& pattern : corpora)
    for (const std::string& file : expand_glob(pattern)) {
      std::ifstream f(file);
      SA_CHECK(f.good(), "{}: cannot open", file);
      int64_t line_no = 0;
      for (std::string line; std::getline(f, line);) {
        ++line_no;
        for (std::string& w : bert_basic_tokenize(line, basic, fmt::format("{}: line {}", file, line_no))) ++counts[w];
      }
    }
  return counts;
}

// Each character of a word, the first plain and the rest as "##" continuations.
std::vector<std::string> characters(const std::string& w) {
  std::vector<std::string> out;
  for (size_t i = 0; i < w.size();) {
    size_t n = 1;
    while (i + n < w.size() && (static_cast<unsigned char>(w[i + n]) & 0xC0) == 0x80) ++n;
    out.push_back((i ? "##" : "") + w.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace

WordPieceVocab train_wordpiece(const std::vector<std::string>& corpora, const WordPieceTrainOptions& o) {
  const std::map<std::string, int64_t> counts = count_words(corpora, o.basic);
  std::vector<std::string> symbols;  // symbol id -> piece
  std::unordered_map<std::string, int> symbol_id;
  auto intern = [&](const std::string& s) {
    auto [it, fresh] = symbol_id.emplace(s, static_cast<int>(symbols.size()));
    if (fresh) symbols.push_back(s);
    return it->second;
  };
  std::vector<std::vector<int>> words;
  std::vector<int64_t> freq;
  std::map<int, int64_t> alphabet_count;
  for (const auto& [w, c] : counts) {
    std::vector<int> ids;
    for (const std::string& ch : characters(w)) ids.push_back(intern(ch)), alphabet_count[ids.back()] += c;
    words.push_back(std::move(ids)), freq.push_back(c);
  }
  // The alphabet, most frequent first.
  std::vector<int> alphabet;
  for (const auto& [id, c] : alphabet_count) alphabet.push_back(id);
  std::stable_sort(alphabet.begin(), alphabet.end(), [&](int a, int b) { return alphabet_count[a] > alphabet_count[b]; });
  std::vector<std::string> vocab = kSpecials;
  for (int id : alphabet) vocab.push_back(symbols[static_cast<size_t>(id)]);

  auto key = [](int a, int b) { return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b); };
  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<int>> pair_words;  // may list a word twice or after it lost the pair
  std::unordered_map<uint64_t, int64_t> first_seen;           // tie-break: the pair formed first wins
  int64_t clock = 0;
  // The heap holds (count, -first_seen, pair); an entry whose count is stale is skipped when popped.
  using Entry = std::tuple<int64_t, int64_t, uint64_t>;
  std::priority_queue<Entry> heap;
  auto add = [&](int a, int b, int word, int64_t c) {
    const uint64_t k = key(a, b);
    first_seen.emplace(k, clock++);
    pair_count[k] += c;
    if (c > 0) pair_words[k].push_back(word);
    heap.emplace(pair_count[k], -first_seen[k], k);
  };
  for (size_t w = 0; w < words.size(); ++w)
    for (size_t i = 0; i + 1 < words[w].size(); ++i) add(words[w][i], words[w][i + 1], static_cast<int>(w), freq[w]);
  std::unordered_map<std::string, bool> in_vocab;
  for (const std::string& p : vocab) in_vocab[p] = true;

  while (static_cast<int>(vocab.size()) < o.vocab_size && !heap.empty()) {
    const auto [c, neg_seen, k] = heap.top();
    heap.pop();
    if (c != pair_count[k] || c <= 0) continue;  // stale
    if (c < o.min_pair_count) break;
    const int a = static_cast<int>(k >> 32), b = static_cast<int>(k & 0xffffffffu);
    const std::string& sb = symbols[static_cast<size_t>(b)];
    const std::string merged = symbols[static_cast<size_t>(a)] + sb.substr(sb.rfind("##", 0) == 0 ? 2 : 0);
    const int m = intern(merged);
    if (!in_vocab[merged]) vocab.push_back(merged), in_vocab[merged] = true;
    std::vector<int> touched = std::move(pair_words[k]);
    pair_words.erase(k);
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (int w : touched) {
      std::vector<int>& s = words[static_cast<size_t>(w)];
      bool has = false;
      for (size_t i = 0; i + 1 < s.size() && !has; ++i) has = s[i] == a && s[i + 1] == b;
      if (!has) continue;
      for (size_t i = 0; i + 1 < s.size(); ++i) add(s[i], s[i + 1], w, -freq[static_cast<size_t>(w)]);
      std::vector<int> next;
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) next.push_back(m), ++i;
        else next.push_back(s[i]);
      }
      s = std::move(next);
      for (size_t i = 0; i + 1 < s.size(); ++i) add(s[i], s[i + 1], w, freq[static_cast<size_t>(w)]);
    }
  }
  return WordPieceVocab::from_pieces(std::move(vocab), "learned vocabulary");
}

WordPieceVocab word_level_vocab(const std::vector<std::string>& corpora, int min_count, int max_size,
                                const BasicTokenizerOptions& basic) {
  const std::map<std::string, int64_t> counts = count_words(corpora, basic);
  std::vector<std::pair<std::string, int64_t>> words;
  for (const auto& [w, c] : counts)
    if (c >= min_count && std::find(kSpecials.begin(), kSpecials.end(), w) == kSpecials.end()) words.emplace_back(w, c);
  std::stable_sort(words.begin(), words.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  std::vector<std::string> vocab = kSpecials;
  for (const auto& [w, c] : words) {
    if (max_size > 0 && static_cast<int>(vocab.size()) >= max_size) break;
    vocab.push_back(w);
  }
  return WordPieceVocab::from_pieces(std::move(vocab), "word-level vocabulary");
}

}  // namespace sa
