#include "layers/bilm.h"

#include <random>

namespace sa {

BilmState BilmState::zeros(const ElmoOptions& o, int64_t rows, Device dev, DType dt) {
  BilmState s;
  for (int d = 0; d < 2; ++d)
    for (int l = 0; l < o.n_layers; ++l)
      s.dir[d].push_back({Tensor::zeros({rows, o.lstm_dim}, dt, dev), Tensor::zeros({rows, o.projection_dim}, dt, dev)});
  return s;
}

void BilmState::detach() {
  for (auto& d : dir)
    for (LstmState& s : d) s = {s.c.detach(), s.m.detach()};
}

BilmState BilmState::rows(int64_t first, int64_t n) const {
  BilmState s;
  for (int d = 0; d < 2; ++d)
    for (const LstmState& l : dir[d]) s.dir[d].push_back({l.c.rows(first, first + n).clone(), l.m.rows(first, first + n).clone()});
  return s;
}

void BilmState::reset_rows(double p, uint64_t seed, int64_t first_row, int64_t all_rows) {
  reset_rows(reset_masks(p, seed, first_row, all_rows));
}

std::vector<std::vector<uint8_t>> BilmState::reset_masks(double p, uint64_t seed, int64_t first_row,
                                                         int64_t all_rows) const {
  std::vector<std::vector<uint8_t>> masks;
  if (p <= 0) return masks;
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution reset(p);
  for (const auto& d : dir) {
    if (d.empty()) continue;
    const int64_t rows = d[0].c.dim(0), drawn = std::max(all_rows, first_row + rows);
    std::vector<uint8_t> all(static_cast<size_t>(drawn));
    for (uint8_t& v : all) v = reset(rng) ? 1 : 0;
    masks.emplace_back(all.begin() + first_row, all.begin() + first_row + rows);
  }
  return masks;
}

void BilmState::reset_rows(const std::vector<std::vector<uint8_t>>& masks) {
  size_t k = 0;
  for (auto& d : dir) {
    if (d.empty() || k == masks.size()) continue;
    const std::vector<uint8_t>& m = masks[k++];
    Tensor mask = Tensor::from(m, {static_cast<int64_t>(m.size()), 1}, d[0].c.device());
    for (LstmState& s : d) s = {ops::masked_fill(s.c, mask, 0.0), ops::masked_fill(s.m, mask, 0.0)};
  }
}

std::vector<Tensor> BilmState::tensors() const {
  std::vector<Tensor> v;
  for (const auto& d : dir)
    for (const LstmState& s : d) v.push_back(s.c), v.push_back(s.m);
  return v;
}

Tensor BilmOutputs::clean_top(int d) const {
  if (!top_input[d].defined()) return layers[d].back();
  NoGrad ng;
  return ops::add(top_lstm[d], top_input[d]);
}

BilmOutputs bilm_forward(const ElmoModel& m, const std::array<Tensor, 2>& tokens, BilmState& state, double p,
                         Generator& gen, const std::vector<int>* lengths) {
  const ElmoOptions& o = m.opt;
  const double cell_clip = o.effective_cell_clip(), proj_clip = o.effective_proj_clip();
  BilmOutputs r;
  std::array<Tensor, 2> x = tokens;
  for (int l = 0; l < o.n_layers; ++l) {
    std::array<Tensor, 2> in, out;
    for (int d = 0; d < 2; ++d) in[d] = ops::dropout(x[d], p, gen);
    if (lengths) {  // rows of different lengths: the step composition freezes each row at its end
      for (int d = 0; d < 2; ++d)
        out[d] = lstm_forward(m.lstm[d][l], in[d], state.dir[d][l], cell_clip, proj_clip, lengths);
    } else {  // both directions' whole sequences as one op, side by side
      std::vector<ops::LstmSequenceArgs> args;
      for (int d = 0; d < 2; ++d) {
        const LstmWeights& w = m.lstm[d][l];
        const LstmState& s = state.dir[d][l];
        args.push_back({ops::permute(in[d], {1, 0, 2}), w.W, w.B, w.W_P, s.c, s.m, cell_clip, proj_clip, o.lstm_path()});
      }
      std::vector<std::vector<Tensor>> seq = ops::lstm_sequences(args);
      for (int d = 0; d < 2; ++d) {
        state.dir[d][l] = {seq[d][1], seq[d][2]};
        out[d] = ops::permute(seq[d][0], {1, 0, 2});
      }
    }
    for (int d = 0; d < 2; ++d) {
      const bool skip = o.use_skip_connections && l > 0;
      if (l == o.n_layers - 1 && skip && p > 0) r.top_lstm[d] = out[d], r.top_input[d] = x[d];
      if (skip) out[d] = ops::add(out[d], in[d]);  // the residual adds the dropped input (bilm-tf)
      r.layers[d].push_back(out[d]);
      x[d] = out[d];
    }
  }
  for (int d = 0; d < 2; ++d) r.top[d] = ops::dropout(x[d], p, gen);
  return r;
}

}  // namespace sa
