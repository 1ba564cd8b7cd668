#include "layers/lstm.h"

namespace sa {

Tensor lstm_forward(const LstmWeights& w, const Tensor& x, LstmState& state, double cell_clip, double proj_clip,
                    const std::vector<int>* lengths) {
  const int64_t B = x.dim(0), T = x.dim(1), in = x.dim(2), D = w.W_P.dim(0), P = w.W_P.dim(1);
  SA_CHECK(w.W.shape() == (Shape{in + P, 4 * D}) && w.B.shape() == Shape{4 * D},
           "lstm: weights W {} and B {} do not fit input {} with cell {} and projection {}", describe(w.W),
           describe(w.B), describe(x), D, P);
  SA_CHECK(state.c.shape() == (Shape{B, D}) && state.m.shape() == (Shape{B, P}),
           "lstm: state c {} and m {} must be [{}, {}] and [{}, {}]", describe(state.c), describe(state.m), B, D, B, P);
  Tensor w_x = ops::slice(w.W, 0, 0, in), w_h = ops::slice(w.W, 0, in, in + P);
  // Time-major input (a small copy: `in` is the projection size, not 4D), one GEMM for all steps,
  // then per-step views: slicing [B, T, 4D] per step would zero-fill and accumulate a whole
  // [B, T, 4D] gradient at every step.
  std::vector<Tensor> xw = ops::unbind(ops::reshape(ops::linear(ops::permute(x, {1, 0, 2}), w_x, w.B), {T, B, 4 * D}));
  std::vector<Tensor> outs;
  outs.reserve(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    Tensor gates = ops::add(xw[t], ops::matmul(state.m, w_h));
    auto [c, h] = ops::lstm_cell(gates, state.c, 1.0, cell_clip);
    Tensor m = ops::matmul(h, w.W_P);
    if (proj_clip > 0) m = ops::clip(m, -proj_clip, proj_clip);
    if (lengths) {
      // keep[r] = 1 while t < lengths[r]: past its end a row keeps its state and outputs zeros.
      std::vector<float> keep(static_cast<size_t>(B));
      for (int64_t r = 0; r < B; ++r) keep[r] = t < (*lengths)[r] ? 1.f : 0.f;
      Tensor k = Tensor::from(keep, {B, 1}, x.device()).to(x.dtype());
      c = ops::add(state.c, ops::mul(k, ops::sub(c, state.c)));
      Tensor m_out = ops::mul(k, m);
      m = ops::add(state.m, ops::mul(k, ops::sub(m, state.m)));
      outs.push_back(ops::reshape(m_out, {B, 1, P}));
    } else {
      outs.push_back(ops::reshape(m, {B, 1, P}));
    }
    state.c = c;
    state.m = m;
  }
  return ops::concat(outs, 1);
}

}  // namespace sa
