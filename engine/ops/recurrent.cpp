// The LSTM with projection over a whole sequence as one tape node. Per step it runs the same
// backend primitives as the step-by-step composition (GEMM, lstm_cell, clip), but it records
// nothing per step, and the backward computes every weight gradient as one GEMM over all T*B
// rows, where per-step nodes would run T small GEMMs of inner size B each.
#include "engine/ops/op_util.h"
#include "engine/ops/ops.h"

namespace sa::ops {

using namespace detail;

namespace {

// c = op(a) op(b) (+ c when beta = 1) on the whole of a, b, c.
void mm(const Tensor& a, const Tensor& b, Tensor& c, bool ta, bool tb, double beta = 0) {
  GemmArgs g;
  g.trans_a = ta, g.trans_b = tb, g.beta = beta;
  g.m = c.dim(0), g.n = c.dim(1), g.k = ta ? a.dim(0) : a.dim(1);
  be(a).gemm(g, a, b, c);
}

}  // namespace

std::vector<Tensor> lstm_sequence(const Tensor& x, const Tensor& W, const Tensor& bias, const Tensor& W_P,
                                  const Tensor& c0, const Tensor& m0, double cell_clip, double proj_clip) {
  check_same("lstm_sequence", {x, W, bias, W_P, c0, m0});
  const int64_t T = x.rank() == 3 ? x.dim(0) : -1, B = x.rank() == 3 ? x.dim(1) : -1, in = x.rank() == 3 ? x.dim(2) : -1;
  const int64_t D = W_P.rank() == 2 ? W_P.dim(0) : -1, P = W_P.rank() == 2 ? W_P.dim(1) : -1;
  SA_CHECK(T >= 1 && D > 0 && W.shape() == (Shape{in + P, 4 * D}) && bias.numel() == 4 * D &&
               c0.shape() == (Shape{B, D}) && m0.shape() == (Shape{B, P}),
           "lstm_sequence: x {}, W {}, bias {}, W_P {}, c0 {}, m0 {} (expected [T,B,in], [in+P,4D], [4D], [D,P], [B,D], "
           "[B,P])",
           describe(x), describe(W), describe(bias), describe(W_P), describe(c0), describe(m0));
  Backend& b = be(x);
  const Tensor X = x.view({T * B, in}), Wx = W.rows(0, in), Wh = W.rows(in, in + P);
  // Saved for the backward: pre-activation gates, cells, pre-projection outputs h, and the
  // projections before (M) and after (Y) the clip.
  Tensor G = Tensor::empty({T * B, 4 * D}, x.dtype(), x.device());
  Tensor C = Tensor::empty({T * B, D}, x.dtype(), x.device()), H = like(C);
  Tensor M = Tensor::empty({T * B, P}, x.dtype(), x.device());
  Tensor Y = proj_clip > 0 ? like(M) : M;
  {
    NoGrad ng;
    mm(X, Wx, G, false, false);  // the input GEMM, hoisted over all steps
    const Tensor bias_row = bias.view({1, 4 * D});
    b.binary(BinaryOp::Add, G, bias_row, G, make_broadcast_plan(G.shape(), G.shape(), bias_row.shape()));
  }
  Tensor c_prev = c0, m_prev = m0;
  for (int64_t t = 0; t < T; ++t) {
    Tensor g = G.rows(t * B, (t + 1) * B), c = C.rows(t * B, (t + 1) * B), h = H.rows(t * B, (t + 1) * B);
    Tensor m = M.rows(t * B, (t + 1) * B), y = Y.rows(t * B, (t + 1) * B);
    mm(m_prev, Wh, g, false, false, 1.0);
    b.lstm_cell(g, c_prev, 1.0, cell_clip, c, h);
    mm(h, W_P, m, false, false);
    if (proj_clip > 0) b.unary(UnaryOp::Clip, m, y, -proj_clip, proj_clip);
    c_prev = c, m_prev = y;
  }
  // Fresh handles for the outputs (record marks them as requiring grad; the buffers stay saved).
  Tensor y_out = Y.view({T, B, P}), c_last = c_prev.clone(), m_last = m_prev.clone();
  record("lstm_sequence", {x, W, bias, W_P, c0, m0}, {y_out, c_last, m_last}, [=](const std::vector<Tensor>& gs) {
    Backend& bk = be(x);
    Tensor dG = like(G), dM = like(M);
    Tensor dm_rec = gs[2].defined() ? gs[2].clone() : zeros_like(m0);
    Tensor dc_rec = gs[1].defined() ? gs[1].clone() : zeros_like(c0);
    Tensor dm = like(m0), gh = like(c0), dc_prev = like(c0);
    const Tensor gy = gs[0].defined() ? gs[0].view({T * B, P}) : Tensor();
    for (int64_t t = T - 1; t >= 0; --t) {
      const auto r = [&](const Tensor& s) { return s.rows(t * B, (t + 1) * B); };
      dm.copy_from(dm_rec);
      if (gy.defined()) bk.axpy(1.0, r(gy), dm);
      Tensor dmt = r(dM);
      if (proj_clip > 0)
        bk.unary_backward(UnaryOp::Clip, r(M), r(Y), dm, dmt, -proj_clip, proj_clip, false);
      else
        dmt.copy_from(dm);
      mm(dmt, W_P, gh, false, true);
      const Tensor cp = t > 0 ? C.rows((t - 1) * B, t * B) : c0;
      Tensor dg = r(dG);
      bk.lstm_cell_backward(r(G), cp, r(C), 1.0, cell_clip, &dc_rec, &gh, dg, &dc_prev);
      std::swap(dc_rec, dc_prev);
      mm(dg, Wh, dm_rec, false, true);
    }
    // Weight gradients: one GEMM each over all steps.
    Tensor gW = like(W);
    Tensor gWx = gW.rows(0, in), gWh = gW.rows(in, in + P);
    mm(X, dG, gWx, true, false);
    Tensor m_before = like(M);  // m_{t-1} of every step: m0, then the outputs but the last
    m_before.rows(0, B).copy_from(m0);
    if (T > 1) m_before.rows(B, T * B).copy_from(Y.rows(0, (T - 1) * B));
    mm(m_before, dG, gWh, true, false);
    Tensor gWP = like(W_P);
    mm(H, dM, gWP, true, false);
    Tensor gbias = Tensor::empty({1, 4 * D}, x.dtype(), x.device());
    bk.sum_to(dG, gbias, make_broadcast_plan(dG.shape(), dG.shape(), gbias.shape()), false);
    Tensor gx = Tensor::empty({T * B, in}, x.dtype(), x.device());
    mm(dG, Wx, gx, false, true);
    accumulate_grad(x, gx.view(x.shape()), true);
    accumulate_grad(W, gW, true);
    accumulate_grad(bias, gbias.view(bias.shape()), true);
    accumulate_grad(W_P, gWP, true);
    accumulate_grad(c0, dc_rec, true);
    accumulate_grad(m0, dm_rec, true);
  });
  return {y_out, c_last, m_last};
}

}  // namespace sa::ops
