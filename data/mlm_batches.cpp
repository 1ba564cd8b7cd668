#include "data/mlm_batches.h"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <random>

#include "data/corpus.h"

namespace sa {

MlmData::MlmData(const std::string& corpus, const WordPieceTokenizer& tok, const MlmOptions& o)
    : o_(o), vocab_size_(tok.vocab().size()), cls_(tok.vocab().cls()), sep_(tok.vocab().sep()),
      mask_id_(tok.vocab().mask()) {
  SA_CHECK(cls_ >= 0 && sep_ >= 0 && mask_id_ >= 0, "masked LM: the vocabulary needs [CLS], [SEP] and [MASK]");
  SA_CHECK(o.max_len >= 3, "masked LM: sequences of {} pieces leave no room between [CLS] and [SEP]", o.max_len);
  const size_t room = static_cast<size_t>(o.max_len - 2);
  std::vector<int32_t> cur;
  auto flush = [&] {
    if (cur.empty()) return;
    std::vector<int32_t> s = {cls_};
    s.insert(s.end(), cur.begin(), cur.end());
    s.push_back(sep_);
    pieces_ += static_cast<int64_t>(s.size());
    seqs_.push_back(std::move(s));
    cur.clear();
  };
  for (const std::string& file : expand_glob(corpus)) {
    std::ifstream f(file);
    SA_CHECK(f.good(), "{}: cannot open", file);
    int64_t line_no = 0;
    for (std::string line; std::getline(f, line);) {
      ++line_no;
      std::vector<int32_t> ids;
      for (const std::string& w : bert_basic_tokenize(line, tok.options(), fmt::format("{}: line {}", file, line_no)))
        for (int id : wordpiece_ids(w, tok.vocab())) ids.push_back(id);
      if (ids.empty()) continue;
      if (ids.size() > room) ids.resize(room);
      if (cur.size() + ids.size() > room) flush();
      cur.insert(cur.end(), ids.begin(), ids.end());
    }
  }
  flush();
  SA_CHECK(!seqs_.empty(), "{}: no text for the masked LM", corpus);
}

const std::vector<int64_t>& MlmData::order(int64_t epoch) const {
  if (epoch != cached_epoch_) {
    order_.resize(seqs_.size());
    std::iota(order_.begin(), order_.end(), 0);
    std::mt19937_64 rng(o_.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch));
    std::shuffle(order_.begin(), order_.end(), rng);
    cached_epoch_ = epoch;
  }
  return order_;
}

MlmBatch MlmData::batch(int64_t k, int size, Device dev) const {
  const int64_t n = static_cast<int64_t>(seqs_.size());
  std::vector<int64_t> picked;
  std::vector<int64_t> epochs;
  for (int i = 0; i < size; ++i) {
    const int64_t g = k * size + i, e = g / n;
    picked.push_back(order(e)[static_cast<size_t>(g % n)]);
    epochs.push_back(e);
  }
  size_t T = 0;
  for (int64_t s : picked) T = std::max(T, seqs_[static_cast<size_t>(s)].size());
  MlmBatch b;
  std::vector<int32_t> ids(size * T, 0), types(size * T, 0);
  std::vector<uint8_t> mask(size * T, 0);
  for (int i = 0; i < size; ++i) {
    const std::vector<int32_t>& s = seqs_[static_cast<size_t>(picked[i])];
    // This visit's masks: a stream of its own per (seed, epoch, sequence).
    std::mt19937_64 rng((o_.seed * 1000003 + static_cast<uint64_t>(epochs[i])) * 0x2545F4914F6CDD1Dull +
                        static_cast<uint64_t>(picked[i]));
    std::vector<size_t> cand(s.size() - 2);
    std::iota(cand.begin(), cand.end(), 1);
    std::shuffle(cand.begin(), cand.end(), rng);
    const size_t n_pred = std::min<size_t>(
        {static_cast<size_t>(o_.max_predictions), cand.size(),
         std::max<size_t>(1, static_cast<size_t>(std::lround(static_cast<double>(cand.size()) * o_.mask_prob)))});
    cand.resize(n_pred);
    std::sort(cand.begin(), cand.end());
    std::vector<int32_t> shown = s;
    std::uniform_real_distribution<double> u(0, 1);
    std::uniform_int_distribution<int> any(0, vocab_size_ - 1);
    for (size_t t : cand) {
      const double r = u(rng);
      if (r < 0.8) {
        shown[t] = mask_id_;
      } else if (r < 0.9) {
        int id;
        do id = any(rng);
        while (id == cls_ || id == sep_ || id == mask_id_);
        shown[t] = id;
      }
      b.positions.push_back(static_cast<int32_t>(i * T + t));
      b.labels.push_back(s[t]);
    }
    for (size_t t = 0; t < s.size(); ++t) ids[i * T + t] = shown[t], mask[i * T + t] = 1;
    b.pieces += static_cast<int64_t>(s.size());
  }
  const Shape shape{size, static_cast<int64_t>(T)};
  b.ids = Tensor::from(ids, shape, dev), b.types = Tensor::from(types, shape, dev), b.mask = Tensor::from(mask, shape, dev);
  return b;
}

}  // namespace sa
