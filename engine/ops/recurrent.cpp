// The LSTM with projection over a whole sequence as one tape node. Per step it runs the same
// backend primitives as the step-by-step composition (GEMM, lstm_cell, clip), but it records
// nothing per step, and the backward computes every weight gradient as one GEMM over all T*B
// rows, where per-step nodes would run T small GEMMs of inner size B each.
#include <omp.h>

#include <algorithm>

#include "engine/core/precision.h"
#include "engine/ops/cudnn_lstm.h"
#include "engine/ops/op_util.h"
#include "engine/ops/ops.h"

namespace sa::ops {

using namespace detail;

namespace {

// c = op(a) op(b) (+ c when beta = 1) on the whole of a, b, c. Under precision = "bf16" f32
// operands are rounded here, where the step-by-step composition's ops::matmul rounds them; the
// weights come already rounded (once per sequence, Seq and Grads).
void mm(const Tensor& a, const Tensor& b, Tensor& c, bool ta, bool tb, double beta = 0) {
  GemmArgs g;
  g.trans_a = ta, g.trans_b = tb, g.beta = beta;
  g.m = c.dim(0), g.n = c.dim(1), g.k = ta ? a.dim(0) : a.dim(1);
  be(a).gemm(g, gemm_operand(a), gemm_operand(b), c);
}

// One sequence's saved tensors and sizes. Step t's rows are rows [off[t], off[t] + n[t]) of the
// flat buffers: n[t] = B and off[t] = t * B for a [T, B, in] input, the packed counts otherwise.
struct Seq {
  LstmSequenceArgs a;
  int64_t T = 0, B = 0, N = 0, in = 0, D = 0, P = 0;
  bool projected = true;
  std::vector<int64_t> n, off;
  Tensor X, Wx, Wh, G, C, H, M, Y, c_last, m_last;
  Tensor Wh_op, WP_op;  // Wh and W_P as the GEMMs take them (rounded to bf16 under precision = "bf16")
  Tensor step(const Tensor& x, int64_t t) const { return x.rows(off[t], off[t] + n[t]); }
};

Seq prepare(const LstmSequenceArgs& a) {
  const bool projected = a.W_P.defined();
  check_same("lstm_sequence", {a.x, a.W, a.bias, a.c0, a.m0});
  if (projected) check_same("lstm_sequence", {a.x, a.W_P});
  const Tensor& x = a.x;
  Seq s;
  s.a = a;
  s.projected = projected;
  if (!a.steps.empty()) {
    s.T = static_cast<int64_t>(a.steps.size()), s.B = a.steps[0];
    int64_t prev = s.B;
    for (int64_t k : a.steps) {
      SA_CHECK(k >= 1 && k <= prev, "lstm_sequence: packed step sizes must be positive and non-increasing");
      s.off.push_back(s.N), s.n.push_back(k), s.N += k, prev = k;
    }
    SA_CHECK(x.rank() == 2 && x.dim(0) == s.N, "lstm_sequence: packed x {} for steps of {} rows in all",
             describe(x), s.N);
  } else {
    SA_CHECK(x.rank() == 3, "lstm_sequence: x {} (expected [T, B, in])", describe(x));
    s.T = x.dim(0), s.B = x.dim(1), s.N = s.T * s.B;
    for (int64_t t = 0; t < s.T; ++t) s.off.push_back(t * s.B), s.n.push_back(s.B);
  }
  s.in = x.dim(x.rank() - 1);
  s.D = a.W.rank() == 2 ? a.W.dim(1) / 4 : -1;
  s.P = !projected ? s.D : a.W_P.rank() == 2 ? a.W_P.dim(1) : -1;
  const int64_t T = s.T, B = s.B, N = s.N, in = s.in, D = s.D, P = s.P;
  SA_CHECK(T >= 1 && D > 0 && a.W.shape() == (Shape{in + P, 4 * D}) && a.bias.numel() == 4 * D &&
               (!projected || a.W_P.shape() == (Shape{D, P})) && a.c0.shape() == (Shape{B, D}) &&
               a.m0.shape() == (Shape{B, P}),
           "lstm_sequence: x {}, W {}, bias {}, W_P {}, c0 {}, m0 {} (expected [T,B,in], [in+P,4D], [4D], [D,P], [B,D], "
           "[B,P])",
           describe(x), describe(a.W), describe(a.bias), projected ? describe(a.W_P) : "none", describe(a.c0),
           describe(a.m0));
  SA_CHECK(projected || a.proj_clip <= 0, "lstm_sequence: proj_clip without a projection");
  s.X = x.view({N, in}), s.Wx = gemm_operand(a.W.rows(0, in)), s.Wh = a.W.rows(in, in + P);
  s.Wh_op = gemm_operand(s.Wh), s.WP_op = projected ? gemm_operand(a.W_P) : Tensor();
  // Saved for the backward: pre-activation gates, cells, pre-projection outputs h, and the
  // projections before (M) and after (Y) the clip. Without a projection the output is h itself.
  s.G = Tensor::empty({N, 4 * D}, x.dtype(), x.device());
  s.C = Tensor::empty({N, D}, x.dtype(), x.device()), s.H = like(s.C);
  s.M = projected ? Tensor::empty({N, P}, x.dtype(), x.device()) : s.H;
  s.Y = a.proj_clip > 0 ? like(s.M) : s.M;
  s.c_last = like(a.c0), s.m_last = like(a.m0);
  return s;
}

void forward(const Seq& s) {
  Backend& b = be(s.a.x);
  const int64_t T = s.T, D = s.D;
  Tensor G = s.G;                    // a handle: the saved buffer is written
  mm(s.X, s.Wx, G, false, false);  // the input GEMM, hoisted over all steps
  const Tensor bias_row = s.a.bias.view({1, 4 * D});
  b.binary(BinaryOp::Add, G, bias_row, G, make_broadcast_plan(G.shape(), G.shape(), bias_row.shape()));
  Tensor c_prev = s.a.c0, m_prev = s.a.m0;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t n = s.n[t];
    Tensor g = s.step(s.G, t), c = s.step(s.C, t), h = s.step(s.H, t), m = s.step(s.M, t), y = s.step(s.Y, t);
    mm(m_prev.rows(0, n), s.Wh_op, g, false, false, 1.0);
    b.lstm_cell(g, c_prev.rows(0, n), 1.0, s.a.cell_clip, c, h);
    if (s.projected) mm(h, s.WP_op, m, false, false);
    if (s.a.proj_clip > 0) b.unary(UnaryOp::Clip, m, y, -s.a.proj_clip, s.a.proj_clip);
    // The rows whose sequence ends at this step keep its state as their final one.
    const int64_t next = t + 1 < T ? s.n[t + 1] : 0;
    if (next < n) {
      s.c_last.rows(next, n).copy_from(c.rows(next, n));
      s.m_last.rows(next, n).copy_from(y.rows(next, n));
    }
    c_prev = c, m_prev = y;
  }
}

// The gradients of one sequence, in the order x, W, bias, W_P, c0, m0. All memory is allocated
// before the per-step loop, which only runs backend kernels (safe in a parallel region).
struct Grads {
  Tensor gx, gW, gbias, gWP, gc0, gm0;
  Tensor dG, dM, dm, gh, dc_prev, m_before;
  // W_h and W_P transposed, so the per-step GEMMs of the backward run untransposed: a BLAS repacks a
  // transposed right operand on every call, which made the step GEMMs of a few rows (packed
  // sentences near their ends) 2-3x slower on the CPU.
  Tensor WhT, WPT;
};

Grads alloc_grads(const Seq& s, const Tensor& gc, const Tensor& gm) {
  Grads g;
  g.dG = like(s.G), g.dM = like(s.M);
  g.gm0 = gm.defined() ? gm.clone() : zeros_like(s.a.m0);  // becomes d m0 after the loop
  g.gc0 = gc.defined() ? gc.clone() : zeros_like(s.a.c0);  // becomes d c0 after the loop
  g.dm = like(s.a.m0), g.gh = like(s.a.c0), g.dc_prev = like(s.a.c0);
  g.gW = like(s.a.W), g.m_before = like(s.M);
  if (s.projected) g.gWP = like(s.a.W_P);
  g.gbias = Tensor::empty({1, 4 * s.D}, s.a.x.dtype(), s.a.x.device());
  g.gx = Tensor::empty({s.N, s.in}, s.a.x.dtype(), s.a.x.device());
  NoGrad ng;
  g.WhT = gemm_operand(transpose(s.Wh, 0, 1));
  if (s.projected) g.WPT = gemm_operand(transpose(s.a.W_P, 0, 1));
  return g;
}

// The recurrent gradients live in g.gm0 and g.gc0 (B rows). Step t reads and writes only its first
// n[t] rows, so the row of a sequence that ends at step t still holds its final state's gradient
// when the loop reaches t.
void backward_one(const Seq& s, const Tensor& gy_in, Grads& g) {
  Backend& bk = be(s.a.x);
  const int64_t T = s.T, in = s.in, P = s.P;
  const double pc = s.a.proj_clip;
  const Tensor gy = gy_in.defined() ? gy_in.view({s.N, P}) : Tensor();
  for (int64_t t = T - 1; t >= 0; --t) {
    const int64_t n = s.n[t];
    Tensor dm_rec = g.gm0.rows(0, n), dc_rec = g.gc0.rows(0, n), dm = g.dm.rows(0, n);
    Tensor dc_prev = g.dc_prev.rows(0, n), gh = g.gh.rows(0, n);
    dm.copy_from(dm_rec);
    if (gy.defined()) bk.axpy(1.0, s.step(gy, t), dm);
    Tensor dmt = s.step(g.dM, t);
    if (pc > 0)
      bk.unary_backward(UnaryOp::Clip, s.step(s.M, t), s.step(s.Y, t), dm, dmt, -pc, pc, false);
    else
      dmt.copy_from(dm);
    if (s.projected)
      mm(dmt, g.WPT, gh, false, false);
    else
      gh.copy_from(dmt);
    const Tensor cp = t > 0 ? s.step(s.C, t - 1).rows(0, n) : s.a.c0;
    Tensor dg = s.step(g.dG, t);
    bk.lstm_cell_backward(s.step(s.G, t), cp, s.step(s.C, t), 1.0, s.a.cell_clip, &dc_rec, &gh, dg, &dc_prev);
    dc_rec.copy_from(dc_prev);
    mm(dg, g.WhT, dm_rec, false, false);
  }
  // Weight gradients: one GEMM each over all steps.
  Tensor gWx = g.gW.rows(0, in), gWh = g.gW.rows(in, in + P);
  mm(s.X, g.dG, gWx, true, false);
  // m_{t-1} of every step's rows: m0, then the previous step's outputs.
  for (int64_t t = 0; t < T; ++t)
    s.step(g.m_before, t).copy_from(t > 0 ? s.step(s.Y, t - 1).rows(0, s.n[t]) : s.a.m0);
  mm(g.m_before, g.dG, gWh, true, false);
  if (s.projected) mm(s.H, g.dM, g.gWP, true, false);
  bk.sum_to(g.dG, g.gbias, make_broadcast_plan(g.dG.shape(), g.dG.shape(), g.gbias.shape()), false);
  mm(g.dG, s.Wx, g.gx, false, true);
}

// Runs f(i) for every sequence: on the CPU each in its own thread (its GEMMs single-threaded:
// small recurrent GEMMs gain more from running side by side than from splitting), otherwise in turn.
template <typename F>
void for_each_sequence(const std::vector<Seq>& seqs, F f) {
  const int n = static_cast<int>(seqs.size());
  if (n > 1 && !seqs[0].a.x.device().is_cuda()) {
    // No more threads than the caller allows (a job of xling_eval runs on one).
#pragma omp parallel for num_threads(std::min(n, omp_get_max_threads())) schedule(static, 1)
    for (int i = 0; i < n; ++i) f(i);
  } else {
    for (int i = 0; i < n; ++i) f(i);
  }
}

// Whether a sequence runs through cuDNN (see LstmPath).
bool runs_on_cudnn(const LstmSequenceArgs& a) {
  return a.W_P.defined() && a.steps.empty() &&
         lstm_uses_cudnn(a.x.device(), a.path, a.cell_clip, a.proj_clip, a.W_P.dim(0), a.W_P.dim(1));
}

#if SA_CUDNN
std::vector<std::vector<Tensor>> lstm_sequences_cudnn(const std::vector<LstmSequenceArgs>& args) {
  std::vector<cudnn_lstm::Forward> runs;
  for (const LstmSequenceArgs& a : args) runs.push_back(cudnn_lstm::forward(a));
  std::vector<std::vector<Tensor>> outs;
  std::vector<Tensor> inputs, flat_outs;
  for (size_t i = 0; i < args.size(); ++i) {
    const LstmSequenceArgs& a = args[i];
    // Fresh handles for the outputs (record marks them as requiring grad; the saved y stays as is).
    outs.push_back({runs[i].y.view(runs[i].y.shape()), runs[i].c_last, runs[i].m_last});
    for (const Tensor& t : {a.x, a.W, a.bias, a.W_P, a.c0, a.m0}) inputs.push_back(t);
    for (const Tensor& t : outs.back()) flat_outs.push_back(t);
  }
  std::vector<std::shared_ptr<cudnn_lstm::Saved>> saved;
  for (auto& r : runs) saved.push_back(r.saved);
  record(Op::lstm_sequence_cudnn, inputs, flat_outs, [=](const std::vector<Tensor>& gs) {
    for (size_t i = 0; i < saved.size(); ++i) {
      const LstmSequenceArgs& a = args[i];
      cudnn_lstm::Grads g = cudnn_lstm::backward(*saved[i], gs[3 * i], gs[3 * i + 1], gs[3 * i + 2]);
      accumulate_grad(a.x, g.x, true);
      accumulate_grad(a.W, g.W, true);
      accumulate_grad(a.bias, g.bias, true);
      accumulate_grad(a.W_P, g.W_P, true);
      accumulate_grad(a.c0, g.c0, true);
      accumulate_grad(a.m0, g.m0, true);
    }
  });
  return outs;
}
#endif

}  // namespace

bool lstm_uses_cudnn(Device dev, LstmPath path, double cell_clip, double proj_clip, int64_t cell_dim,
                     int64_t projection_dim) {
  if (!dev.is_cuda() || path == LstmPath::Steps) return false;
#if SA_CUDNN
  const bool clipped = cell_clip > 0 || proj_clip > 0;
  SA_CHECK(path != LstmPath::Cudnn || !clipped || !cudnn_lstm_fits(cell_dim, projection_dim),
           "lstm: the cuDNN path runs no cell_clip or proj_clip (got {} and {}); pass 0 for both or take the step "
           "kernels", cell_clip, proj_clip);
  return cudnn_lstm_fits(cell_dim, projection_dim) && (path == LstmPath::Cudnn || !clipped);
#else
  SA_CHECK(path != LstmPath::Cudnn, "lstm: the cuDNN path was asked for, but this binary was built without cuDNN");
  return false;
#endif
}

std::vector<std::vector<Tensor>> lstm_sequences(const std::vector<LstmSequenceArgs>& args) {
  SA_CHECK(!args.empty(), "lstm_sequences: no sequences");
  [[maybe_unused]] bool cudnn = true;
  for (const LstmSequenceArgs& a : args) cudnn = runs_on_cudnn(a) && cudnn;
#if SA_CUDNN
  if (cudnn) return lstm_sequences_cudnn(args);
#endif
  std::vector<Seq> seqs;
  for (const LstmSequenceArgs& a : args) seqs.push_back(prepare(a));
  {
    NoGrad ng;
    for_each_sequence(seqs, [&](int i) { forward(seqs[i]); });
  }
  std::vector<std::vector<Tensor>> outs;
  std::vector<Tensor> inputs, flat_outs;
  for (const Seq& s : seqs) {
    // Fresh handles for the outputs (record marks them as requiring grad; the buffers stay saved).
    const Tensor y = s.a.steps.empty() ? s.Y.view({s.T, s.B, s.P}) : s.Y.view({s.N, s.P});
    outs.push_back({y, s.c_last, s.m_last});
    for (const Tensor& t : {s.a.x, s.a.W, s.a.bias, s.a.W_P, s.a.c0, s.a.m0}) inputs.push_back(t);
    for (const Tensor& t : outs.back()) flat_outs.push_back(t);
  }
  record(Op::lstm_sequence, inputs, flat_outs, [=](const std::vector<Tensor>& gs) {
    std::vector<Grads> grads;
    for (size_t i = 0; i < seqs.size(); ++i) grads.push_back(alloc_grads(seqs[i], gs[3 * i + 1], gs[3 * i + 2]));
    for_each_sequence(seqs, [&](int i) { backward_one(seqs[i], gs[3 * i], grads[i]); });
    for (size_t i = 0; i < seqs.size(); ++i) {
      const Seq& s = seqs[i];
      Grads& g = grads[i];
      accumulate_grad(s.a.x, g.gx.view(s.a.x.shape()), true);
      accumulate_grad(s.a.W, g.gW, true);
      accumulate_grad(s.a.bias, g.gbias.view(s.a.bias.shape()), true);
      accumulate_grad(s.a.W_P, g.gWP, true);
      accumulate_grad(s.a.c0, g.gc0, true);
      accumulate_grad(s.a.m0, g.gm0, true);
    }
  });
  return outs;
}

std::vector<Tensor> lstm_sequence(const Tensor& x, const Tensor& W, const Tensor& bias, const Tensor& W_P,
                                  const Tensor& c0, const Tensor& m0, double cell_clip, double proj_clip) {
  return lstm_sequences({{x, W, bias, W_P, c0, m0, cell_clip, proj_clip}})[0];
}

}  // namespace sa::ops
