#include "train/elmo_lm.h"

#include <cmath>


namespace sa {

ElmoLM ElmoLM::init(const ElmoOptions& opt, int vocab_size, uint64_t seed, Device dev, DType dt) {
  ElmoLM lm;
  lm.bilm = ElmoModel::init(opt, seed, dev, dt);
  std::mt19937_64 rng(seed ^ 0x5eed50f7ull);
  std::normal_distribution<double> n(0.0, 1.0 / std::sqrt(static_cast<double>(opt.projection_dim)));
  std::vector<double> w(static_cast<size_t>(vocab_size) * opt.projection_dim);
  for (double& v : w) v = n(rng);
  lm.softmax_W = Tensor::of(w, {vocab_size, opt.projection_dim}, dt, dev);
  lm.softmax_b = Tensor::zeros({vocab_size, 1}, dt, dev);
  lm.set_trainable();
  return lm;
}

ElmoLM ElmoLM::init_sense(const ElmoOptions& opt, const SenseOptions& so, int vocab_size, uint64_t seed, Device dev) {
  ElmoLM lm;
  lm.bilm = ElmoModel::init(opt, seed, dev);
  for (int d = 0; d < 2; ++d) lm.heads.emplace_back(vocab_size, so, opt.projection_dim, seed * 31 + 7 + d, dev);
  lm.set_trainable();
  return lm;
}

std::vector<NamedTensor> ElmoLM::named() {
  std::vector<NamedTensor> v = bilm.named();
  if (sense()) {
    for (int d = 0; d < 2; ++d) {
      v.push_back({"sense/" + std::to_string(d) + "/W", &heads[d].table.W});
      v.push_back({"sense/" + std::to_string(d) + "/b", &heads[d].table.b});
    }
  } else {
    v.push_back({"softmax/W", &softmax_W});
    v.push_back({"softmax/b", &softmax_b});
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

CarriedState CarriedState::zeros(const ElmoOptions& o, int rows, Device dev, DType dt) {
  CarriedState s;
  for (int d = 0; d < 2; ++d)
    for (int l = 0; l < o.n_layers; ++l)
      s.dir[d].push_back({Tensor::zeros({rows, o.lstm_dim}, dt, dev), Tensor::zeros({rows, o.projection_dim}, dt, dev)});
  return s;
}

void CarriedState::detach() {
  for (auto& d : dir)
    for (LstmState& s : d) s = {s.c.detach(), s.m.detach()};
}

void CarriedState::reset_rows(double p, uint64_t seed) {
  if (p <= 0) return;
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution reset(p);
  for (auto& d : dir) {
    if (d.empty()) continue;
    const int64_t rows = d[0].c.dim(0);
    std::vector<uint8_t> m(static_cast<size_t>(rows));
    for (uint8_t& v : m) v = reset(rng) ? 1 : 0;
    Tensor mask = Tensor::from(m, {rows, 1}, d[0].c.device());
    for (LstmState& s : d) s = {ops::masked_fill(s.c, mask, 0.0), ops::masked_fill(s.m, mask, 0.0)};
  }
}

std::pair<Tensor, Tensor> encode_batches(const ElmoLM& lm, const LmBatch& f, const LmBatch& b) {
  SA_CHECK(f.rows == b.rows && f.steps == b.steps, "encode_batches: the two directions' batches differ in shape");
  std::vector<int32_t> ids(f.char_ids);
  ids.insert(ids.end(), b.char_ids.begin(), b.char_ids.end());
  std::vector<Tensor> both = ops::unbind(lm.bilm.encode_tokens(ids, {2, f.rows, f.steps}));
  return {both[0], both[1]};
}

namespace {

// The top outputs of the listed directions, their layers run as one op per layer.
std::vector<Tensor> tops(const ElmoModel& m, const std::vector<int>& dirs, std::vector<Tensor> x,
                         const std::vector<std::vector<LstmState>*>& states, double p, Generator& gen,
                         std::vector<Tensor>* undropped = nullptr) {
  const size_t n = dirs.size();
  const ops::LstmPath path = m.opt.lstm_path();
  for (int l = 0; l < m.opt.n_layers; ++l) {
    std::vector<Tensor> in(n);
    std::vector<ops::LstmSequenceArgs> args;
    for (size_t k = 0; k < n; ++k) {
      in[k] = ops::dropout(x[k], p, gen);
      const LstmWeights& w = m.lstm[dirs[k]][l];
      LstmState& s = (*states[k])[l];
      args.push_back({ops::permute(in[k], {1, 0, 2}), w.W, w.B, w.W_P, s.c, s.m, m.opt.cell_clip, m.opt.proj_clip, path});
    }
    std::vector<std::vector<Tensor>> r = ops::lstm_sequences(args);
    for (size_t k = 0; k < n; ++k) {
      (*states[k])[l] = {r[k][1], r[k][2]};
      Tensor out = ops::permute(r[k][0], {1, 0, 2});
      if (m.opt.use_skip_connections && l > 0) out = ops::add(out, in[k]);  // the residual adds the dropped input
      x[k] = out;
    }
  }
  if (undropped) *undropped = x;
  for (Tensor& t : x) t = ops::dropout(t, p, gen);
  return x;
}

}  // namespace

Tensor lm_top(const ElmoModel& m, int dir, const Tensor& tokens, std::vector<LstmState>& state, double p,
              Generator& gen) {
  return tops(m, {dir}, {tokens}, {&state}, p, gen)[0];
}

std::array<Tensor, 2> lm_tops(const ElmoModel& m, const std::array<Tensor, 2>& tokens, CarriedState& state, double p,
                              Generator& gen, std::array<Tensor, 2>* undropped) {
  std::vector<Tensor> u;
  std::vector<Tensor> t = tops(m, {0, 1}, {tokens[0], tokens[1]}, {&state.dir[0], &state.dir[1]}, p, gen,
                               undropped ? &u : nullptr);
  if (undropped) *undropped = {u[0], u[1]};
  return {t[0], t[1]};
}

Tensor direction_loss(ElmoLM& lm, const Tensor& top, const LmBatch& b, const LossOptions& o,
                      const LogUniformSampler* sampler, std::mt19937_64* rng) {
  const int64_t B = b.rows, T = b.steps, P = lm.bilm.opt.projection_dim;
  Tensor flat = ops::reshape(top, {B * T, P});
  Tensor loss = o.training && o.n_samples > 0
                    ? sampled_softmax_loss(flat, lm.softmax_W, lm.softmax_b, b.targets, *sampler, o.n_samples, *rng)
                    : full_softmax_loss(flat, lm.softmax_W, lm.softmax_b, b.targets);
  return ops::mean(loss);
}

Tensor direction_loss(ElmoLM& lm, int dir, const Tensor& tokens, const LmBatch& b, std::vector<LstmState>& state,
                      const LossOptions& o, Generator& gen, const LogUniformSampler* sampler, std::mt19937_64* rng) {
  return direction_loss(lm, lm_top(lm.bilm, dir, tokens, state, o.training ? o.dropout : 0.0, gen), b, o, sampler, rng);
}

}  // namespace sa
