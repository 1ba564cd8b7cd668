#include "train/elmo_lm.h"

#include <cmath>

namespace sa {

ElmoLM ElmoLM::init(const ElmoOptions& opt, int vocab_size, uint64_t seed, Device dev, DType dt, bool shared) {
  ElmoLM lm;
  lm.bilm = ElmoModel::init(opt, seed, dev, dt);
  lm.shared_tables = shared;
  for (int d = 0; d < (shared ? 1 : 2); ++d) {
    lm.softmax_W[d] = Tensor::of(softmax_init_rows(vocab_size, opt.projection_dim, softmax_init_seed(seed, d)),
                                 {vocab_size, opt.projection_dim}, dt, dev);
    lm.softmax_b[d] = Tensor::zeros({vocab_size, 1}, dt, dev);
  }
  if (shared) lm.softmax_W[1] = lm.softmax_W[0], lm.softmax_b[1] = lm.softmax_b[0];
  lm.set_trainable();
  return lm;
}

ElmoLM ElmoLM::init_sense(const ElmoOptions& opt, const SenseOptions& so, int vocab_size, uint64_t seed, Device dev,
                          DType dt, TableShard shard) {
  ElmoLM lm;
  lm.bilm = ElmoModel::init(opt, seed, dev, dt);
  lm.shared_tables = so.shared_tables();
  SA_CHECK(!lm.shared_tables || shard.count == 1, "shared sense tables cannot be sharded");
  for (int d = 0; d < 2; ++d)
    lm.heads.emplace_back(vocab_size, so, opt.projection_dim, seed * 31 + 7 + d, dev, dt, shard,
                          softmax_init_seed(seed, lm.shared_tables ? 0 : d));
  if (lm.shared_tables) lm.heads[1].table.W = lm.heads[0].table.W, lm.heads[1].table.b = lm.heads[0].table.b;
  lm.set_trainable();
  return lm;
}

ElmoLM ElmoLM::make(const ElmoOptions& opt, const SenseOptions& so, int vocab_size, uint64_t seed, Device dev,
                    DType dt, TableShard shard) {
  return so.n_context >= 2 ? init_sense(opt, so, vocab_size, seed, dev, dt, shard)
                           : init(opt, vocab_size, seed, dev, dt, so.shared_tables());
}

std::vector<NamedTensor> ElmoLM::named() {
  std::vector<NamedTensor> v = bilm.named();
  // Shared tables are named once, under direction 0.
  const size_t tables = shared_tables ? 1 : 2;
  if (sense()) {
    for (size_t d = 0; d < tables; ++d)
      for (NamedTensor& nt : heads[d].params(sense_head_prefix(d))) v.push_back(nt);
  } else {
    v.push_back({"softmax/W", &softmax_W[0]});
    v.push_back({"softmax/b", &softmax_b[0]});
    if (tables == 2) v.push_back({"softmax/1/W", &softmax_W[1]}), v.push_back({"softmax/1/b", &softmax_b[1]});
  }
  return v;
}

std::vector<Tensor> ElmoLM::params() {
  std::vector<Tensor> p;
  for (auto& nt : named()) p.push_back(*nt.tensor);
  return p;
}

void ElmoLM::set_trainable() {
  for (auto& nt : named()) nt.tensor->set_requires_grad().set_name(nt.name);
  // Tables read by row: only the rows a step touches get gradients and updates.
  bilm.char_embed.set_sparse_grad();
  for (auto& nt : named())
    if (nt.name.find("softmax/") == 0 || nt.name.find("sense/") == 0) nt.tensor->set_sparse_grad();
}

DistinctTokens distinct_batch_tokens(const LmBatch& f, const LmBatch& b) {
  SA_CHECK(f.rows == b.rows && f.steps == b.steps, "encode_batches: the two directions' batches differ in shape");
  return distinct_tokens({std::span(f.char_ids), std::span(b.char_ids)});
}

std::pair<Tensor, Tensor> encode_batches(const ElmoLM& lm, const DistinctTokens& tokens, int rows, int steps) {
  std::vector<Tensor> both = ops::unbind(lm.bilm.encode_distinct(tokens, {2, rows, steps}));
  return {both[0], both[1]};
}

std::pair<Tensor, Tensor> encode_batches(const ElmoLM& lm, const LmBatch& f, const LmBatch& b, int64_t* distinct) {
  const DistinctTokens tokens = distinct_batch_tokens(f, b);
  if (distinct) *distinct = tokens.count();
  return encode_batches(lm, tokens, f.rows, f.steps);
}

namespace {
Tensor flat_top(const ElmoLM& lm, const Tensor& top, const LmBatch& b) {
  return ops::reshape(top, {static_cast<int64_t>(b.rows) * b.steps, lm.bilm.opt.projection_dim});
}
}  // namespace

Tensor direction_loss(ElmoLM& lm, int d, const Tensor& top, const LmBatch& b, const LossOptions& o,
                      const LogUniformSampler* sampler, std::mt19937_64* rng, std::vector<int32_t>* drawn) {
  const Tensor flat = flat_top(lm, top, b);
  const Tensor &W = lm.softmax_W[static_cast<size_t>(d)], &bias = lm.softmax_b[static_cast<size_t>(d)];
  Tensor loss = o.training && o.n_samples > 0
                    ? sampled_softmax_loss(flat, W, bias, b.targets, *sampler, o.n_samples, *rng, drawn)
                    : full_softmax_loss(flat, W, bias, b.targets);
  return ops::mean(loss);
}

Tensor direction_loss(ElmoLM& lm, int d, const Tensor& top, const LmBatch& b, const SampledCandidates& c) {
  return ops::mean(sampled_softmax_loss(flat_top(lm, top, b), lm.softmax_W[static_cast<size_t>(d)],
                                        lm.softmax_b[static_cast<size_t>(d)], b.targets, c));
}

}  // namespace sa
