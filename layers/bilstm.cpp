#include "layers/bilstm.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace sa {

namespace {

// The rows sorted longest first (stable), and how many of them are still inside their sentence
// at each step: a prefix of `order`, non-increasing, steps[0] = B.
struct PackedOrder {
  std::vector<int32_t> order;
  std::vector<int64_t> steps;
};

PackedOrder packed_order(const std::vector<int>& lengths) {
  const int64_t B = static_cast<int64_t>(lengths.size());
  PackedOrder p;
  p.order.resize(static_cast<size_t>(B));
  std::iota(p.order.begin(), p.order.end(), 0);
  std::stable_sort(p.order.begin(), p.order.end(), [&](int32_t a, int32_t b) { return lengths[a] > lengths[b]; });
  for (int64_t n = B; n > 0;) {
    const int64_t t = static_cast<int64_t>(p.steps.size());
    while (n > 0 && lengths[p.order[static_cast<size_t>(n - 1)]] <= t) --n;
    if (n > 0) p.steps.push_back(n);
  }
  SA_CHECK(!p.steps.empty() && p.steps[0] == B, "bilstm: every row needs a length of at least 1");
  return p;
}

}  // namespace

Tensor packed_lstm(const LstmWeights& w, const Tensor& x, const std::vector<int>& lengths) {
  const int64_t B = x.dim(0), T = x.dim(1), in = x.dim(2), H = w.W.dim(1) / 4;
  const Device dev = x.device();
  const auto [order, steps] = packed_order(lengths);
  const Tensor sorted = ops::reshape(
      ops::gather_rows(ops::reshape(x, {B, T * in}), Tensor::from(order, {B}, dev)), {B, T, in});
  // One GEMM for every step's input part, time-major.
  const std::vector<Tensor> xw = ops::unbind(ops::reshape(
      ops::linear(ops::permute(sorted, {1, 0, 2}), ops::slice(w.W, 0, 0, in), w.B), {T, B, 4 * H}));
  const Tensor w_h = ops::slice(w.W, 0, in, in + H);
  std::vector<Tensor> outs;
  std::vector<int64_t> offset;  // of step t's rows in the concatenated outputs
  int64_t total = 0;
  Tensor c, m;
  for (int64_t t = 0; t < static_cast<int64_t>(steps.size()); ++t) {
    const int64_t n = steps[static_cast<size_t>(t)];  // rows still running: a prefix of `order`
    Tensor gates = ops::slice(xw[t], 0, 0, n);
    if (t > 0) {
      c = ops::slice(c, 0, 0, n);
      gates = ops::add(gates, ops::matmul(ops::slice(m, 0, 0, n), w_h));
    } else {
      c = Tensor::zeros({n, H}, x.dtype(), dev);
    }
    std::tie(c, m) = ops::lstm_cell(gates, c, 1.0, 0.0);
    outs.push_back(m);
    offset.push_back(total);
    total += n;
  }
  // Back to [B, T, H] in the rows' own order with one gather; padding reads an extra zero row.
  std::vector<int32_t> rank(static_cast<size_t>(B)), idx(static_cast<size_t>(B * T));
  for (int64_t i = 0; i < B; ++i) rank[static_cast<size_t>(order[static_cast<size_t>(i)])] = static_cast<int32_t>(i);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      idx[static_cast<size_t>(b * T + t)] =
          static_cast<int32_t>(t < lengths[b] ? offset[static_cast<size_t>(t)] + rank[static_cast<size_t>(b)] : total);
  outs.push_back(Tensor::zeros({1, H}, x.dtype(), dev));
  return ops::reshape(ops::gather_rows(ops::concat(outs, 0), Tensor::from(idx, {B * T}, dev)), {B, T, H});
}

Tensor glorot_uniform(int64_t rows, int64_t cols, std::mt19937_64& rng, Device dev) {
  const double a = std::sqrt(6.0 / static_cast<double>(rows + cols));
  std::uniform_real_distribution<double> u(-a, a);
  std::vector<double> v(static_cast<size_t>(rows * cols));
  for (double& x : v) x = u(rng);
  return Tensor::of(v, {rows, cols}).to(dev).set_requires_grad();
}

Tensor lengths_tensor(const std::vector<int>& lengths, Device dev) {
  return Tensor::from(std::vector<int32_t>(lengths.begin(), lengths.end()), {static_cast<int64_t>(lengths.size())}, dev);
}

BiLstm BiLstm::init(int64_t in, int64_t H, std::mt19937_64& rng, Device dev) {
  BiLstm b;
  b.hidden = H;
  for (LstmWeights* w : {&b.fwd, &b.bwd}) {
    w->W = glorot_uniform(in + H, 4 * H, rng, dev);
    w->B = Tensor::zeros({4 * H}, DType::F32, dev).set_requires_grad();
  }
  return b;
}

namespace {

// Token (b, t) of a batch lies in row row_of(b, t) of the flat input. Packed positions: step t,
// rank i reads position t of row order[i] forwards and position length - 1 - t backwards; the way
// back gives each output slot (of n_out) its packed index, and every other slot (padding) the extra
// zero row at the end.
template <typename RowOf>
Tensor bi_lstm(const BiLstm& m, const Tensor& flat, const std::vector<int>& lengths, int64_t n_out, RowOf row_of) {
  const int64_t B = static_cast<int64_t>(lengths.size()), H = m.hidden;
  const Device dev = flat.device();
  // Rows longest first: step t runs the rows still inside their sentence, a prefix.
  const auto [order, steps] = packed_order(lengths);
  std::vector<int32_t> fwd_src, bwd_src;
  int32_t k = 0;
  for (size_t t = 0; t < steps.size(); ++t) k += static_cast<int32_t>(steps[t]);
  std::vector<int32_t> fwd_back(static_cast<size_t>(n_out), k), bwd_back(static_cast<size_t>(n_out), k);
  k = 0;
  for (size_t t = 0; t < steps.size(); ++t)
    for (int64_t i = 0; i < steps[t]; ++i, ++k) {
      const int64_t b = order[static_cast<size_t>(i)], r = lengths[static_cast<size_t>(b)] - 1 - static_cast<int64_t>(t);
      const int64_t f_row = row_of(b, static_cast<int64_t>(t)), b_row = row_of(b, r);
      fwd_src.push_back(static_cast<int32_t>(f_row));
      bwd_src.push_back(static_cast<int32_t>(b_row));
      fwd_back[static_cast<size_t>(f_row)] = k;
      bwd_back[static_cast<size_t>(b_row)] = k;
    }
  auto src = [&](const std::vector<int32_t>& v) { return ops::gather_rows(flat, Tensor::from(v, {k}, dev)); };
  const Tensor zero = Tensor::zeros({B, H}, flat.dtype(), dev);
  // Both directions as one node: the CPU runs them side by side.
  const auto out = ops::lstm_sequences({{src(fwd_src), m.fwd.W, m.fwd.B, Tensor(), zero, zero, 0, 0, ops::LstmPath::Steps, steps},
                                        {src(bwd_src), m.bwd.W, m.bwd.B, Tensor(), zero, zero, 0, 0, ops::LstmPath::Steps, steps}});
  const Tensor pad = Tensor::zeros({1, H}, flat.dtype(), dev);
  auto unpack = [&](const Tensor& y, const std::vector<int32_t>& back) {
    return ops::gather_rows(ops::concat({y, pad}, 0), Tensor::from(back, {n_out}, dev));
  };
  return ops::concat({unpack(out[0][0], fwd_back), unpack(out[1][0], bwd_back)}, 1);
}

}  // namespace

Tensor BiLstm::forward(const Tensor& x, const std::vector<int>& lengths) const {
  const int64_t B = x.dim(0), T = x.dim(1), in = x.dim(2);
  SA_CHECK(static_cast<int64_t>(lengths.size()) == B, "bilstm: {} lengths for {} rows", lengths.size(), B);
  const Tensor y = bi_lstm(*this, ops::reshape(x, {B * T, in}), lengths, B * T, [T](int64_t b, int64_t t) { return b * T + t; });
  return ops::reshape(y, {B, T, 2 * hidden});
}

Tensor BiLstm::forward_packed(const Tensor& x, const std::vector<int>& lengths) const {
  const std::vector<int64_t> off = packed_offsets(lengths);
  SA_CHECK(x.rank() == 2 && x.dim(0) == off.back(), "bilstm: packed x {} for {} tokens", describe(x), off.back());
  return bi_lstm(*this, x, lengths, off.back(), [&off](int64_t b, int64_t t) { return off[static_cast<size_t>(b)] + t; });
}

std::vector<int64_t> packed_offsets(const std::vector<int>& lengths) {
  std::vector<int64_t> off = {0};
  for (int l : lengths) off.push_back(off.back() + l);
  return off;
}

}  // namespace sa
