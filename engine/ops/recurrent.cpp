// The LSTM with projection over a whole sequence as one tape node. Per step it runs the same
// backend primitives as the step-by-step composition (GEMM, lstm_cell, clip), but it records
// nothing per step, and the backward computes every weight gradient as one GEMM over all T*B
// rows, where per-step nodes would run T small GEMMs of inner size B each.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <string>

#include "engine/core/precision.h"
#include "engine/ops/cudnn_lstm.h"
#include "engine/ops/op_util.h"
#include "engine/ops/ops.h"
#include "engine/step_replay.h"

namespace sa::ops {

using namespace detail;

namespace {

// c = op(a) op(b) (+ c when beta = 1) on the whole of a, b, c. Under precision = "bf16" f32
// operands are rounded here, where the step-by-step composition's ops::matmul rounds them; the
// weights come already rounded (once per sequence, Seq and Grads). An operand the forward saved
// in bf16 rounds its partner too, even if the setting changed before the backward ran.
void mm(const Tensor& a, const Tensor& b, Tensor& c, bool ta, bool tb, double beta = 0) {
  GemmArgs g;
  g.trans_a = ta, g.trans_b = tb, g.beta = beta;
  g.m = c.dim(0), g.n = c.dim(1), g.k = ta ? a.dim(0) : a.dim(1);
  const bool bf16 = a.dtype() == DType::BF16 || b.dtype() == DType::BF16;
  auto operand = [&](const Tensor& x) { return bf16 && x.dtype() == DType::F32 ? x.to(DType::BF16) : gemm_operand(x); };
  be(a).gemm(g, operand(a), operand(b), c);
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
  // Under precision = "bf16" (f32 sequences): the step kernels write the bf16 copies the next GEMM
  // takes (h, the output, and in the backward the gradients of the output and of the gates).
  bool rounds = false;
  // An unpacked, projected sequence under bf16 stores h and m_{t-1} only as the bf16 operands its
  // weight gradients take (H_op, M_op: step t's rows as the step's GEMMs read them); H is then one
  // step's scratch, not a saved [N, D] f32 buffer.
  Tensor H_op, M_op;
  bool bf16_saved() const { return M_op.defined(); }
  Tensor step(const Tensor& x, int64_t t) const { return x.rows(off[t], off[t] + n[t]); }
};

// A [rows, width] bf16 buffer for the copies the step kernels write, or none when nothing rounds.
Tensor bf16_buffer(bool rounds, int64_t rows, int64_t width, Device dev) {
  return rounds ? Tensor::empty({rows, width}, DType::BF16, dev) : Tensor();
}
Tensor* bf16_rows(Tensor& copy, int64_t n, Tensor& view) {
  if (!copy.defined()) return nullptr;
  view = copy.rows(0, n);
  return &view;
}

// Checks a sequence's shapes and takes its sizes; with `buffers` it also allocates what the step
// loop writes and saves (a stacked sequence has these in its stack instead).
Seq prepare(const LstmSequenceArgs& a, bool buffers = true) {
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
  s.rounds = bf16_matmuls() && x.dtype() == DType::F32;
  if (!buffers) return s;
  s.Wh_op = gemm_operand(s.Wh), s.WP_op = projected ? gemm_operand(a.W_P) : Tensor();
  // Saved for the backward: pre-activation gates, cells, pre-projection outputs h, and the
  // projections before (M) and after (Y) the clip. Without a projection the output is h itself.
  s.G = Tensor::empty({N, 4 * D}, x.dtype(), x.device());
  const bool saved = s.rounds && projected && a.steps.empty();  // Seq::bf16_saved
  s.C = Tensor::empty({N, D}, x.dtype(), x.device());
  s.H = saved ? Tensor::empty({B, D}, x.dtype(), x.device()) : like(s.C);
  if (saved)
    s.H_op = Tensor::empty({N, D}, DType::BF16, x.device()), s.M_op = Tensor::empty({N, P}, DType::BF16, x.device());
  s.M = projected ? Tensor::empty({N, P}, x.dtype(), x.device()) : s.H;
  s.Y = a.proj_clip > 0 ? like(s.M) : s.M;
  s.c_last = like(a.c0), s.m_last = like(a.m0);
  return s;
}

void forward(const Seq& s) {
  const int64_t T = s.T, D = s.D;
  Tensor G = s.G;  // a handle: the saved buffer is written
  const Tensor bias_row = s.a.bias.view({1, 4 * D});
  if (!s.a.x.device().is_cuda()) {
    // The input GEMM, hoisted over all steps, adds to the bias copied into every row: the CPU's
    // BLAS would otherwise zero G first and the bias add pass over it again. With the inner size
    // in one of the BLAS's blocks (bench-small's 128) each gate is the same sum, rounded once.
    CopyPlan rows;
    rows.rank = 2, rows.shape[0] = G.dim(0), rows.shape[1] = 4 * D;
    rows.src_stride[0] = 0, rows.src_stride[1] = 1, rows.dst_stride[0] = 4 * D, rows.dst_stride[1] = 1;
    be(s.a.x).copy_strided(bias_row, G, rows);
    mm(s.X, s.Wx, G, false, false, 1.0);
  } else {
    mm(s.X, s.Wx, G, false, false);
    be(s.a.x).binary(BinaryOp::Add, G, bias_row, G, make_broadcast_plan(G.shape(), G.shape(), bias_row.shape()));
  }
  Tensor c_prev = s.a.c0, m_prev = s.a.m0;
  // Under bf16 the step kernels write the GEMMs' operands: the previous output (m_op) and h (h_op),
  // into one step's scratch, or, saved (Seq::bf16_saved), into M_op and H_op, where step t + 1's
  // rows of M_op are step t's output rounded and h's f32 values are one step's scratch.
  const bool saved = s.bf16_saved();
  // A buffer of its own (the step kernels write its rows), never a weight's shared bf16 copy.
  Tensor m_op = saved ? s.M_op : s.rounds ? s.a.m0.to(DType::BF16) : Tensor();
  Tensor h_op = saved ? s.H_op : bf16_buffer(s.rounds && s.projected, s.B, D, s.a.x.device());
  if (saved) {
    Tensor first = m_op.rows(0, s.B);
    be(s.a.x).cast(s.a.m0, first);
  }
  auto op_rows = [&](const Tensor& buf, int64_t t) { return saved ? s.step(buf, t) : buf.rows(0, s.n[t]); };
  auto or_null = [](Tensor& t) { return t.defined() ? &t : nullptr; };
  for (int64_t t = 0; t < T; ++t) {
    const int64_t n = s.n[t];
    Tensor g = s.step(s.G, t), c = s.step(s.C, t), m = s.step(s.M, t), y = s.step(s.Y, t);
    Tensor h = saved ? s.H : s.step(s.H, t);
    Tensor h_copy = h_op.defined() ? op_rows(h_op, t) : Tensor();
    Tensor y_copy = !s.rounds ? Tensor() : !saved ? m_op.rows(0, n) : t + 1 < T ? s.step(m_op, t + 1) : Tensor();
    mm(s.rounds ? op_rows(m_op, t) : m_prev.rows(0, n), s.Wh_op, g, false, false, 1.0);
    // Without a projection h is the output: its copy is the next step's operand.
    be(s.a.x).lstm_cell(g, c_prev.rows(0, n), 1.0, s.a.cell_clip, c, h, or_null(s.projected ? h_copy : y_copy));
    if (s.projected) mm(h_copy.defined() ? h_copy : h, s.WP_op, m, false, false);
    if (s.a.proj_clip > 0 || (s.projected && y_copy.defined())) be(s.a.x).lstm_output(m, s.a.proj_clip, y, or_null(y_copy));
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
  Tensor dG, dM, gh, m_before;
  Tensor dM_op, dG_op;  // under bf16: a step's output and gate gradients as the GEMMs take them
  // W_h and W_P transposed, so the per-step GEMMs of the backward run untransposed: a BLAS repacks a
  // transposed right operand on every call, which made the step GEMMs of a few rows (packed
  // sentences near their ends) 2-3x slower on the CPU.
  Tensor WhT, WPT;
};

// With `step_buffers` false (a stacked sequence) only what weight_grads writes: the stack holds
// the rest.
Grads alloc_grads(const Seq& s, const Tensor& gc, const Tensor& gm, bool step_buffers = true) {
  Grads g;
  g.gW = like(s.a.W);
  if (!s.bf16_saved()) g.m_before = Tensor::empty({s.N, s.P}, s.a.x.dtype(), s.a.x.device());
  if (s.projected) g.gWP = like(s.a.W_P);
  g.gbias = Tensor::empty({1, 4 * s.D}, s.a.x.dtype(), s.a.x.device());
  g.gx = Tensor::empty({s.N, s.in}, s.a.x.dtype(), s.a.x.device());
  if (!step_buffers) return g;
  g.dG = like(s.G);
  if (s.projected) g.dM = like(s.M);  // without a projection the output's gradient goes to gh
  g.gm0 = gm.defined() ? gm.clone() : zeros_like(s.a.m0);  // becomes d m0 after the loop
  g.gc0 = gc.defined() ? gc.clone() : zeros_like(s.a.c0);  // becomes d c0 after the loop
  g.gh = like(s.a.c0);
  g.dM_op = bf16_buffer(s.rounds && s.projected, s.B, s.P, s.a.x.device());
  g.dG_op = bf16_buffer(s.rounds, s.B, 4 * s.D, s.a.x.device());
  NoGrad ng;
  // The weights as the forward's GEMMs took them (rounded under bf16), transposed: one copy each.
  g.WhT = transpose(s.Wh_op.defined() ? s.Wh_op : s.Wh, 0, 1);
  if (s.projected) g.WPT = transpose(s.WP_op.defined() ? s.WP_op : s.a.W_P, 0, 1);
  return g;
}

// The gradients of x and the weights from the gates' and projections' gradients (g.dG, g.dM):
// one GEMM each over all steps.
void weight_grads(const Seq& s, Grads& g) {
  const int64_t T = s.T, in = s.in, P = s.P;
  Tensor gWx = g.gW.rows(0, in), gWh = g.gW.rows(in, in + P);
  mm(s.X, g.dG, gWx, true, false);
  // m_{t-1} of every step's rows: m0, then the previous step's outputs (unpacked: two copies;
  // under bf16 the forward saved them as the GEMM takes them, M_op, and h likewise, H_op).
  const bool saved = s.bf16_saved();
  if (!saved) {
    if (s.a.steps.empty()) {
      g.m_before.rows(0, s.B).copy_from(s.a.m0);
      if (T > 1) g.m_before.rows(s.B, s.N).copy_from(s.Y.rows(0, s.N - s.B));
    } else {
      for (int64_t t = 0; t < T; ++t)
        s.step(g.m_before, t).copy_from(t > 0 ? s.step(s.Y, t - 1).rows(0, s.n[t]) : s.a.m0);
    }
  }
  mm(saved ? s.M_op : g.m_before, g.dG, gWh, true, false);
  if (s.projected) mm(saved ? s.H_op : s.H, g.dM, g.gWP, true, false);
  be(s.a.x).sum_to(g.dG, g.gbias, make_broadcast_plan(g.dG.shape(), g.dG.shape(), g.gbias.shape()), false);
  mm(g.dG, s.Wx, g.gx, false, true);
}

// Hands a sequence's gradients (g.gc0 and g.gm0 hold d c0 and d m0) to its inputs.
void accumulate_grads(const Seq& s, const Grads& g) {
  accumulate_grad(s.a.x, g.gx.view(s.a.x.shape()), true);
  accumulate_grad(s.a.W, g.gW, true);
  accumulate_grad(s.a.bias, g.gbias.view(s.a.bias.shape()), true);
  accumulate_grad(s.a.W_P, g.gWP, true);
  accumulate_grad(s.a.c0, g.gc0, true);
  accumulate_grad(s.a.m0, g.gm0, true);
}

// The recurrent gradients live in g.gm0 and g.gc0 (B rows). Step t reads and writes only its first
// n[t] rows, so the row of a sequence that ends at step t still holds its final state's gradient
// when the loop reaches t.
void backward_one(const Seq& s, const Tensor& gy_in, Grads& g) {
  const int64_t T = s.T, P = s.P;
  const double pc = s.a.proj_clip;
  const Tensor gy = gy_in.defined() ? gy_in.view({s.N, P}) : Tensor();
  Tensor dmv, dgv;
  for (int64_t t = T - 1; t >= 0; --t) {
    const int64_t n = s.n[t];
    Tensor dm_rec = g.gm0.rows(0, n), dc_rec = g.gc0.rows(0, n), gh = g.gh.rows(0, n);
    const Tensor gyt = gy.defined() ? s.step(gy, t) : Tensor();
    // Without a projection the output's gradient is h's: written straight into gh.
    Tensor dmt = s.projected ? s.step(g.dM, t) : gh;
    be(s.a.x).lstm_output_backward(s.step(s.M, t), gyt.defined() ? &gyt : nullptr, dm_rec, pc, dmt,
                                   bf16_rows(g.dM_op, n, dmv));
    if (s.projected) mm(s.rounds ? g.dM_op.rows(0, n) : dmt, g.WPT, gh, false, false);
    const Tensor cp = t > 0 ? s.step(s.C, t - 1).rows(0, n) : s.a.c0;
    Tensor dg = s.step(g.dG, t);
    // d c_prev overwrites the recurrent d c in place.
    be(s.a.x).lstm_cell_backward(s.step(s.G, t), cp, s.step(s.C, t), 1.0, s.a.cell_clip, &dc_rec, &gh, dg, &dc_rec,
                                 bf16_rows(g.dG_op, n, dgv));
    mm(s.rounds ? g.dG_op.rows(0, n) : dg, g.WhT, dm_rec, false, false);
  }
  weight_grads(s, g);
}


// A sequence's forward or backward launches a fixed chain of ~4 small kernels a step: on CUDA
// with SA_CUDA_GRAPHS=1 it is recorded and started as one graph (Backend::run_as_graph). The key
// holds what decides which kernels the chain launches, so each shape keeps a graph of its own,
// and the sequence's place in the call, so that a call's sequences of one shape (a layer's two
// directions) do not take turns updating one graph, and a shape seen once is never made a graph.
template <typename F>
void as_one_graph(const Seq& s, int index, uint64_t pass, F f) {
  uint64_t key = 0xcbf29ce484222325ULL ^ pass;
  auto mix = [&](int64_t v) { key = (key ^ static_cast<uint64_t>(v)) * 0x100000001b3ULL; };
  for (int64_t v : {int64_t{index}, s.T, s.N, s.B, s.in, s.D, s.P, static_cast<int64_t>(s.a.x.dtype()),
                    int64_t{s.rounds}, int64_t{s.projected}, int64_t{s.a.proj_clip > 0}, int64_t{s.a.cell_clip > 0},
                    int64_t{s.bf16_saved()}, int64_t{s.a.steps.empty()}})
    mix(v);
  for (int64_t n : s.n) mix(n);
  run_as_graph(s.a.x.device(), key, f);
}

// Whether CUDA runs a call's sequences side by side, each on a stream of its own
// (SA_LSTM_STREAMS=1; read at each call, so tests and benchmarks compare both): the steps of
// one sequence are a chain of small dependent kernels that leaves most of the GPU idle.
bool sequences_on_streams() {
  const char* e = std::getenv("SA_LSTM_STREAMS");
  return e && std::string(e) == "1";
}

// Runs f(i) for every sequence: on the CPU each in its own thread (its GEMMs single-threaded:
// small recurrent GEMMs gain more from running side by side than from splitting); on CUDA in
// turn, on one stream or (sequences_on_streams) each on its own lane of the backend.
template <typename F>
void for_each_sequence(const std::vector<Seq>& seqs, F f) {
  const int n = static_cast<int>(seqs.size());
  const Device dev = seqs[0].a.x.device();
  if (n > 1 && !dev.is_cuda()) {
    // No more threads than the caller allows (a job of xling_eval runs on one). A captured step
    // keeps each sequence's work as its lane, to replay side by side.
    StepReplay* r = StepReplay::capturing_on(dev);
    if (r) r->parallel_begin();
#pragma omp parallel for num_threads(std::min(n, omp_get_max_threads())) schedule(static, 1)
    for (int i = 0; i < n; ++i) {
      const StepReplay::Lane lane(i);
      f(i);
    }
    if (r) r->parallel_end();
  } else if (n > 1 && sequences_on_streams()) {
    struct Lanes {  // joined on every way out; a failed join while an error unwinds is not thrown again
      Backend& be;
      int unwinding = std::uncaught_exceptions();
      Lanes(Backend& b, int count) : be(b) { be.fork_lanes(count); }
      ~Lanes() noexcept(false) {
        if (std::uncaught_exceptions() == unwinding) {
          be.join_lanes();
          return;
        }
        try {
          be.join_lanes();
        } catch (...) {
        }
      }
    } lanes(backend_uncounted(dev), n);
    for (int i = 0; i < n; ++i) {
      lanes.be.use_lane(i);
      f(i);
    }
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

// Sequences of one shape stacked (docs/design.md §3.5): every step runs once for all of them, the
// recurrent and projection GEMMs as one batched GEMM (an item per sequence, each with its own
// weights) and the cell and the clips over all their rows, so a bidirectional layer takes half
// the launches of stepping each direction. The step buffers are time-major and sequence-minor:
// rows [(t * S + i) * B, (t * S + i + 1) * B) are sequence i's rows of step t, so a step's rows of
// every sequence are contiguous. What runs once per sequence (the input GEMM, the outputs, the
// weight gradients) reads its rows through strided batches or copies.
struct Stack {
  std::vector<Seq> seq;  // the members' sizes, inputs and GEMM operands (no step buffers)
  int64_t S = 0, T = 0, B = 0, D = 0, P = 0;
  double cell_clip = 0, proj_clip = 0;
  Tensor G, C, H, M, Y;   // [T * S * B, 4D | D | D | P | P]
  Tensor c0, m0;          // [S * B, D], [S * B, P]: the members' initial states
  Tensor Wh_op, WP_op;    // [S * P, 4D], [S * D, P]: each member's W_h and W_P (rounded under bf16)
  std::vector<Tensor> y;  // each member's output [T * B, P], contiguous (the op's output and saved)
  Tensor step(const Tensor& x, int64_t t) const { return x.rows(t * S * B, (t + 1) * S * B); }
  // Member i's rows of every step as one contiguous [T * B, width] tensor.
  Tensor member(const Tensor& x, int64_t i) const {
    NoGrad ng;
    return slice(x.view({T, S, B, x.dim(1)}), 1, i, i + 1).view({T * B, x.dim(1)});
  }
};

// One batched GEMM over the members: item i is c_i = a_i op(b_i) (+ c_i with beta = 1), where a_i,
// b_i and c_i are consecutive blocks of rows of a, b and c.
void mm_members(int64_t S, const Tensor& a, const Tensor& b, Tensor& c, bool tb, double beta = 0) {
  GemmArgs g;
  g.trans_b = tb, g.beta = beta, g.batch = S;
  g.m = c.dim(0) / S, g.n = c.dim(1), g.k = a.dim(1);
  g.stride_a = g.m * g.k, g.stride_b = b.numel() / S, g.stride_c = g.m * g.n;
  be(a).gemm(g, gemm_operand(a), gemm_operand(b), c);
}

// Whether the call runs stacked: two or more projected, unpacked sequences of one shape and clips,
// each asking for Stacked. Not by default: on an H200 the stacked steps trained elmo.cfg slower
// than stepping each direction (fewer launches, but the stacking copies cost more).
bool runs_stacked(const std::vector<LstmSequenceArgs>& args) {
  if (args.size() < 2) return false;
  const LstmSequenceArgs& f = args[0];
  for (const LstmSequenceArgs& a : args) {
    const bool wanted = a.path == LstmPath::Stacked;
    if (!wanted || !a.W_P.defined() || !a.steps.empty() || a.x.shape() != f.x.shape() || a.W.shape() != f.W.shape() ||
        a.W_P.shape() != f.W_P.shape() || a.c0.shape() != f.c0.shape() || a.m0.shape() != f.m0.shape() ||
        a.x.device() != f.x.device() || a.x.dtype() != f.x.dtype() || a.cell_clip != f.cell_clip ||
        a.proj_clip != f.proj_clip)
      return false;
  }
  return true;
}

Stack stack_forward(const std::vector<LstmSequenceArgs>& args) {
  Stack k;
  for (const LstmSequenceArgs& a : args) k.seq.push_back(prepare(a, false));
  const Seq& f = k.seq[0];
  k.S = static_cast<int64_t>(args.size()), k.T = f.T, k.B = f.B, k.D = f.D, k.P = f.P;
  k.cell_clip = f.a.cell_clip, k.proj_clip = f.a.proj_clip;
  const int64_t S = k.S, T = k.T, B = k.B, D = k.D, P = k.P, rows = T * S * B;
  const DType dt = f.a.x.dtype();
  const Device dev = f.a.x.device();
  std::vector<Tensor> c0, m0, Wh, WP, bias;
  for (const Seq& q : k.seq) {
    c0.push_back(q.a.c0), m0.push_back(q.a.m0), Wh.push_back(q.Wh), WP.push_back(q.a.W_P);
    bias.push_back(q.a.bias.view({1, 4 * D}));
  }
  k.c0 = concat(c0, 0), k.m0 = concat(m0, 0);
  k.Wh_op = gemm_operand(concat(Wh, 0)), k.WP_op = gemm_operand(concat(WP, 0));
  k.G = Tensor::empty({rows, 4 * D}, dt, dev), k.C = Tensor::empty({rows, D}, dt, dev), k.H = like(k.C);
  k.M = Tensor::empty({rows, P}, dt, dev), k.Y = k.proj_clip > 0 ? like(k.M) : k.M;
  // The input GEMMs, hoisted over all steps: member i's item t writes its block of step t.
  for (int64_t i = 0; i < S; ++i) {
    GemmArgs g;
    g.m = B, g.n = 4 * D, g.k = f.in, g.batch = T;
    g.stride_a = B * f.in, g.stride_b = 0, g.stride_c = S * B * 4 * D;
    Tensor Gi = k.G.rows(i * B, rows);
    be(f.a.x).gemm(g, gemm_operand(k.seq[i].X), k.seq[i].Wx, Gi);
  }
  const Tensor biases = concat(bias, 0).view({1, S, 1, 4 * D});
  Tensor G4 = k.G.view({T, S, B, 4 * D});
  be(f.a.x).binary(BinaryOp::Add, G4, biases, G4, make_broadcast_plan(G4.shape(), G4.shape(), biases.shape()));
  // Under bf16 the step kernels write the GEMMs' operands (see Seq::rounds).
  const bool rounds = f.rounds;
  Tensor m_op = rounds ? gemm_operand(k.m0) : Tensor(), h_op = bf16_buffer(rounds, S * B, D, dev);
  for (int64_t t = 0; t < T; ++t) {
    Tensor g = k.step(k.G, t), c = k.step(k.C, t), h = k.step(k.H, t), m = k.step(k.M, t), y = k.step(k.Y, t);
    mm_members(S, rounds ? m_op : t > 0 ? k.step(k.Y, t - 1) : k.m0, k.Wh_op, g, false, 1.0);
    be(f.a.x).lstm_cell(g, t > 0 ? k.step(k.C, t - 1) : k.c0, 1.0, k.cell_clip, c, h, rounds ? &h_op : nullptr);
    mm_members(S, rounds ? h_op : h, k.WP_op, m, false);
    if (k.proj_clip > 0 || rounds) be(f.a.x).lstm_output(m, k.proj_clip, y, rounds ? &m_op : nullptr);
  }
  for (int64_t i = 0; i < S; ++i) k.y.push_back(k.member(k.Y, i));
  return k;
}

// The gradients of every member: gs holds (gy, gc, gm) per member, as the op's outputs come.
void stack_backward(const Stack& k, const std::vector<Tensor>& gs) {
  const int64_t S = k.S, T = k.T, B = k.B, D = k.D, P = k.P;
  const Seq& f = k.seq[0];
  const DType dt = f.a.x.dtype();
  const Device dev = f.a.x.device();
  std::vector<Tensor> gy, gc, gm;
  bool any_gy = false;
  for (int64_t i = 0; i < S; ++i) {
    const Seq& q = k.seq[i];
    any_gy = any_gy || gs[3 * i].defined();
    gy.push_back(gs[3 * i].defined() ? gs[3 * i].view({T, 1, B, P}) : Tensor::zeros({T, 1, B, P}, dt, dev));
    gc.push_back(gs[3 * i + 1].defined() ? gs[3 * i + 1] : zeros_like(q.a.c0));
    gm.push_back(gs[3 * i + 2].defined() ? gs[3 * i + 2] : zeros_like(q.a.m0));
  }
  NoGrad ng;
  const Tensor GY = any_gy ? concat(gy, 1).view({T * S * B, P}) : Tensor();
  Tensor dc_rec = concat(gc, 0), dm_rec = concat(gm, 0);  // become d c0 and d m0 after the loop
  Tensor dG = like(k.G), dM = like(k.M), gh = like(k.c0);
  Tensor dM_op = bf16_buffer(f.rounds, S * B, P, dev), dG_op = bf16_buffer(f.rounds, S * B, 4 * D, dev);
  // The members' W_h and W_P transposed (see Grads::WhT).
  const Tensor WhT = permute(k.Wh_op.view({S, P, 4 * D}), {0, 2, 1});  // already rounded under bf16
  const Tensor WPT = permute(k.WP_op.view({S, D, P}), {0, 2, 1});
  for (int64_t t = T - 1; t >= 0; --t) {
    Tensor dmt = k.step(dM, t);
    const Tensor gyt = any_gy ? k.step(GY, t) : Tensor();
    be(f.a.x).lstm_output_backward(k.step(k.M, t), any_gy ? &gyt : nullptr, dm_rec, k.proj_clip, dmt,
                                   f.rounds ? &dM_op : nullptr);
    mm_members(S, f.rounds ? dM_op : dmt, WPT, gh, false);
    Tensor dg = k.step(dG, t);
    be(f.a.x).lstm_cell_backward(k.step(k.G, t), t > 0 ? k.step(k.C, t - 1) : k.c0, k.step(k.C, t), 1.0, k.cell_clip,
                                 &dc_rec, &gh, dg, &dc_rec, f.rounds ? &dG_op : nullptr);
    mm_members(S, f.rounds ? dG_op : dg, WhT, dm_rec, false);
  }
  for (int64_t i = 0; i < S; ++i) {
    Seq q = k.seq[i];
    q.H = k.member(k.H, i), q.Y = k.y[i];
    Grads g = alloc_grads(q, Tensor(), Tensor(), false);
    g.dG = k.member(dG, i), g.dM = k.member(dM, i);
    g.gc0 = dc_rec.rows(i * B, (i + 1) * B), g.gm0 = dm_rec.rows(i * B, (i + 1) * B);
    weight_grads(q, g);
    accumulate_grads(q, g);
  }
}

std::vector<std::vector<Tensor>> lstm_sequences_stacked(const std::vector<LstmSequenceArgs>& args) {
  std::shared_ptr<const Stack> k;
  {
    NoGrad ng;
    k = std::make_shared<const Stack>(stack_forward(args));
  }
  std::vector<std::vector<Tensor>> outs;
  std::vector<Tensor> inputs, flat_outs;
  const int64_t last = (k->T - 1) * k->S * k->B;
  for (int64_t i = 0; i < k->S; ++i) {
    const LstmSequenceArgs& a = args[i];
    // Fresh handles for the outputs (record marks them as requiring grad; the buffers stay saved).
    const int64_t r = last + i * k->B;
    outs.push_back({k->y[i].view({k->T, k->B, k->P}), k->C.rows(r, r + k->B).clone(), k->Y.rows(r, r + k->B).clone()});
    for (const Tensor& t : {a.x, a.W, a.bias, a.W_P, a.c0, a.m0}) inputs.push_back(t);
    for (const Tensor& t : outs.back()) flat_outs.push_back(t);
  }
  record(Op::lstm_sequence, inputs, flat_outs, [k](const std::vector<Tensor>& gs) { stack_backward(*k, gs); });
  return outs;
}

}  // namespace

bool lstm_uses_cudnn(Device dev, LstmPath path, double cell_clip, double proj_clip, int64_t cell_dim,
                     int64_t projection_dim) {
  if (!dev.is_cuda() || path == LstmPath::Steps || path == LstmPath::Stacked) return false;
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
  if (runs_stacked(args)) return lstm_sequences_stacked(args);
  std::vector<Seq> seqs;
  for (const LstmSequenceArgs& a : args) seqs.push_back(prepare(a));
  {
    NoGrad ng;
    for_each_sequence(seqs, [&](int i) { as_one_graph(seqs[i], i, 1, [&] { forward(seqs[i]); }); });
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
    for_each_sequence(seqs, [&](int i) {
      as_one_graph(seqs[i], i, gs[3 * i].defined() ? 2 : 3, [&] { backward_one(seqs[i], gs[3 * i], grads[i]); });
    });
    for (size_t i = 0; i < seqs.size(); ++i) accumulate_grads(seqs[i], grads[i]);
  });
  return outs;
}

std::vector<Tensor> lstm_sequence(const Tensor& x, const Tensor& W, const Tensor& bias, const Tensor& W_P,
                                  const Tensor& c0, const Tensor& m0, double cell_clip, double proj_clip) {
  return lstm_sequences({{x, W, bias, W_P, c0, m0, cell_clip, proj_clip}})[0];
}

}  // namespace sa::ops
