// The backend interface: every compute primitive the ops need, implemented once for the CPU
// (the reference) and once for CUDA. Ops allocate outputs and check shapes; backends only compute.
// Tensors passed here are contiguous, on the backend's device, of a float dtype unless noted.
//
// Adding a differentiable op:
//  1. engine/ops/op_table.h: its name in SA_DIFFERENTIABLE_OPS (the tape records it as Op::name).
//  2. engine/ops/ops.h: the declaration, with shapes.
//  3. engine/ops/<group>.cpp: the checks, the forward through backend(), and record(Op::name, ...)
//     with the backward.
//  When no primitive below computes it:
//  4. here: the primitive, pure virtual in Backend and again in SA_BACKEND_OVERRIDES (a new
//     UnaryOp/BinaryOp/ReduceOp goes in engine/core/op_kinds.h and engine/core/scalar_math.h);
//  5. engine/cpu/cpu_<group>.cpp: the reference implementation;
//  6. engine/cuda/cuda_<group>.cu: the kernel (cuda_stub.cpp has no backend to extend).
//  Then:
//  7. tests/op_cases.cpp: a case add(Op::name, ...). The f64 gradient check and the CUDA-vs-CPU
//     test run every case; GradCheckCoverage fails while a table op has none.
//  8. train/tools/bench.cpp: a bench_ops line when the op is on the training hot path.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/allocator.h"
#include "engine/core/op_kinds.h"
#include "engine/core/copy_plan.h"
#include "engine/core/device_counters.h"
#include "engine/core/tensor.h"
#include "engine/device_capture.h"

namespace sa {

// Strides (in elements; 0 on broadcast axes) that map an output index to each input.
struct BroadcastPlan {
  static constexpr int kMaxRank = 6;
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride_a[kMaxRank] = {};
  int64_t stride_b[kMaxRank] = {};
};
BroadcastPlan make_broadcast_plan(const Shape& out, const Shape& a, const Shape& b);
// A broadcast as rows: output element i = o * inner + j reads a at o * so[0] + j * si[0] and b at
// o * so[1] + j * si[1]. Found for the common cases (a bias row [N, D] + [D], a leading-axis
// broadcast [B, T, H] + [T, H], a column [N, D] * [N, 1]), the widest rows first; not for an
// operand broadcast on both sides of every split ([P, 1, S] + [Q, 1]). A GPU kernel then divides
// once per element instead of twice per dimension and operand.
struct BroadcastRows {
  int64_t inner = 1, so[2] = {}, si[2] = {};
};
bool broadcast_as_rows(const BroadcastPlan& p, BroadcastRows* rows);

struct GemmArgs {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;     // C[m,n] = alpha * op(A)[m,k] op(B)[k,n] + beta * C
  double alpha = 1, beta = 0;
  int64_t batch = 1;               // batched: consecutive matrices
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between batch items (0 = shared)
};

// One Adam step's constants: c1 and c2 are the bias corrections (1 - beta^t, or 1 without).
struct AdamHyper {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, c1 = 1, c2 = 1;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual CachingAllocator& allocator() = 0;
  virtual void synchronize() {}
  // f32 matrix products on TF32 tensor cores (10-bit mantissa inputs, f32 accumulation): several
  // times the f32 rate, results within ~1e-3 relative. Off by default; the CPU ignores it.
  virtual void set_tf32(bool on) {}
  // Independent work side by side (the LSTM's sequences): after fork_lanes(n), use_lane(i) sends
  // the calling thread's work to lane i, each lane ordered after all work queued before the fork;
  // join_lanes() orders later work after every lane's. Blocks freed between fork and join are
  // reused only after the join (a lane could still be reading them). No-ops where the device runs
  // one queue (the CPU).
  virtual void fork_lanes(int n) {}
  virtual void use_lane(int i) {}
  virtual void join_lanes() {}
  // Runs `body`, a fixed chain of primitives (the LSTM's step loop), and returns whether the device
  // started it as one recorded graph instead of launch by launch (CUDA with SA_CUDA_GRAPHS=1: the
  // launches are recorded, the graph made for `key` is updated with them and started). `body` must
  // not read from or upload to the device, and may run twice (once more, launch by launch, when
  // the recording fails). The CPU runs it and answers as a GPU would, so counts compare.
  virtual bool run_as_graph(uint64_t key, const std::function<void()>& body) {
    body();
    return cuda_graphs_enabled();
  }
  static bool cuda_graphs_enabled();  // SA_CUDA_GRAPHS=1 or step, read at each call (tests compare both)
  // A training step's work recorded as CUDA graphs (StepGraphs below, with SA_CUDA_GRAPHS=step):
  // between open_step and close_step, each run of launches between two meetings with the host (a
  // read, an upload, a wait, cudaFree) is recorded, updated into the graph kept for its place in
  // the step, and started; the host work runs as before. `key` names the kind of step: a key's
  // first step is launched kernel by kernel. `completed` false: an error ends the step, and what
  // was recorded is dropped. The CPU records nothing and counts what a GPU would start.
  virtual void open_step(uint64_t key) { counters::step_begun(true); }
  virtual void close_step(bool completed) {
    if (!completed) counters::step_piece(false);  // the piece being recorded is dropped
    counters::step_ended();
  }
  static bool step_graphs_enabled();  // SA_CUDA_GRAPHS=step
  // Opens the capture of the work that follows as one graph, for a step replay (SA_STEP_REPLAY=1,
  // engine/step_replay.h): null, with the reason, where the device cannot. The CPU keeps its
  // primitives instead (its recording layer), so only a GPU answers.
  virtual std::unique_ptr<DeviceCapture> begin_capture(std::string* why) {
    *why = "this device captures no graphs";
    return nullptr;
  }

  // memory and conversion (any dtype)
  virtual void fill(Tensor& t, double value) = 0;
  virtual void copy_strided(const Tensor& src, Tensor& dst, const CopyPlan& plan) = 0;
  virtual void cast(const Tensor& src, Tensor& dst) = 0;

  // dense linear algebra; bf16 A/B with f32 C is allowed on CUDA
  virtual void gemm(const GemmArgs& g, const Tensor& a, const Tensor& b, Tensor& c) = 0;

  // elementwise
  virtual void unary(UnaryOp op, const Tensor& x, Tensor& y, double p0, double p1) = 0;
  // gx = gy * d op(x)/dx, using y = op(x) where cheaper; accumulates into gx when `accumulate`.
  virtual void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& gy, Tensor& gx,
                              double p0, double p1, bool accumulate) = 0;
  virtual void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out, const BroadcastPlan& p) = 0;
  // out[j] (+)= sum of g over the axes where out is broadcast (stride_b of plan describes out).
  virtual void sum_to(const Tensor& g, Tensor& out, const BroadcastPlan& p, bool accumulate) = 0;
  // y (+)= alpha * x
  virtual void axpy(double alpha, const Tensor& x, Tensor& y) = 0;
  // y = mask ? value : x, mask u8 broadcast by plan (a = x, b = mask)
  virtual void masked_fill(const Tensor& x, const Tensor& mask, double value, Tensor& y, const BroadcastPlan& p) = 0;

  // out (f64 [1]) = the sum of x's squared elements, accumulated in double in a fixed order:
  // gradient norms without a squared copy of every gradient.
  virtual void sum_squares(const Tensor& x, Tensor& out) = 0;
  // x viewed as [outer, n, inner]; out [outer, inner]; argmax (i32, may be null) for Max
  virtual void reduce(ReduceOp op, const Tensor& x, int64_t outer, int64_t n, int64_t inner, Tensor& out,
                      Tensor* argmax) = 0;
  // gx[o, argmax[o,i], i] += gy[o,i]   (gx pre-zeroed by the caller)
  virtual void reduce_max_backward(const Tensor& gy, const Tensor& argmax, int64_t outer, int64_t n,
                                   int64_t inner, Tensor& gx) = 0;

  // rows are the last axis
  virtual void softmax(const Tensor& x, Tensor& y, bool log) = 0;
  virtual void softmax_backward(const Tensor& y, const Tensor& gy, Tensor& gx, bool log, bool accumulate) = 0;
  virtual void logsumexp(const Tensor& x, Tensor& out) = 0;
  // integer labels (i32, -1 = ignored row): loss[r] = lse[r] - x[r,label]
  virtual void cross_entropy(const Tensor& x, const Tensor& labels, Tensor& loss, Tensor& lse) = 0;
  virtual void cross_entropy_backward(const Tensor& x, const Tensor& labels, const Tensor& lse, const Tensor& gloss,
                                      Tensor& gx, bool accumulate) = 0;
  // soft labels t[r,:]: loss[r] = sum_c t[r,c] * (lse[r] - x[r,c])
  virtual void soft_cross_entropy(const Tensor& x, const Tensor& t, Tensor& loss, Tensor& lse) = 0;
  virtual void soft_cross_entropy_backward(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss,
                                           Tensor& gx, bool accumulate) = 0;
  // Softmax over candidate rows without the [N, S] logits in memory (the CPU works in chunks of
  // rows, CUDA streams a log-sum-exp per row). Row n has H own rows (H = own_ids.numel() / N):
  // logits t_nh = x_n.wt_nh + bt_nh (wt [N*H, P], bt [N*H]; an own id of -1 is absent, logit -inf;
  // at least one must be present), and the shared candidates x_n.Wc_s + bc_s, except those whose
  // cand_ids[s] equals one of the row's own ids (accidental hits). lse[n] is over both;
  // loss[n] = lse[n] - sum_h own_w[n,h] t_nh (the soft targets own_w sum to 1 per row).
  // `logp`, when given ([N, S], where the caller can afford it), receives the candidates' log
  // probabilities (-inf for accidental hits), so the backward need not recompute them; a backend
  // may leave it unwritten (CUDA does) and then gets nullptr in the backward.
  virtual void candidate_softmax(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc,
                                 const Tensor& bc, const Tensor& own_ids, const Tensor& cand_ids, const Tensor& own_w,
                                 Tensor& loss, Tensor& lse, Tensor* logp = nullptr) = 0;
  // All five gradients are overwritten (gWc and gbc sum over the rows). `logp`: the forward's,
  // consumed (the backward overwrites it), or nullptr to recompute.
  virtual void candidate_softmax_backward(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc,
                                          const Tensor& bc, const Tensor& own_ids, const Tensor& cand_ids,
                                          const Tensor& own_w, const Tensor& lse, const Tensor& gloss, Tensor& gx,
                                          Tensor& gwt, Tensor& gbt, Tensor& gWc, Tensor& gbc,
                                          Tensor* logp = nullptr) = 0;

  // Sense selection (no gradient): u [N, d] projected contexts, v [N*K, d] the projected centers of
  // each token's K candidate rows (i32 rows [N*K], u8 enabled [N*K]); out i32 [N] = the chosen row
  // (math::select_by_cosine), or the first candidate's row when none is enabled.
  virtual void select_rows(const Tensor& u, const Tensor& v, const Tensor& rows, const Tensor& enabled,
                           Tensor& out) = 0;

  // SaELMo's forward in one pass: select_rows on (u, v, rows, enabled) into `selected`, then the
  // candidate softmax of x over the selected row of the table (W [R, P], b [R]) as the one own row
  // and the shared candidates (Wc, bc, cand_ids). loss, lse [N] as candidate_softmax.
  virtual void select_candidate_softmax(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& u,
                                        const Tensor& v, const Tensor& rows, const Tensor& enabled, const Tensor& Wc,
                                        const Tensor& bc, const Tensor& cand_ids, Tensor& loss, Tensor& lse,
                                        Tensor& selected) = 0;

  // rows of a 2-D table by i32 index
  virtual void gather_rows(const Tensor& table, const Tensor& idx, Tensor& out) = 0;
  virtual void scatter_add_rows(const Tensor& src, const Tensor& idx, Tensor& table) = 0;
  // Sums the rows that share an id (a row-sparse gradient's entries): ids i32 [M], rows [M, d] ->
  // the distinct ids in increasing order (i32 [U]) and their summed rows [U, d]. Each sum adds its
  // rows in the order they come, so the result is deterministic and the same on every backend.
  // allow_padding: the backend may return M slots instead, the U distinct ids first and then -1
  // with zero rows (CUDA does, to keep U on the device; the CPU only in a captured step,
  // engine/step_replay.h). Consumers skip id -1.
  virtual std::pair<Tensor, Tensor> coalesce_rows(const Tensor& ids, const Tensor& rows, bool allow_padding) = 0;

  // 1-D convolution over positions then max over positions:
  // x [N,L,Cin], w [W,Cin,Cout], b [Cout] -> y [N,Cout] = max_t (sum conv + b), argmax i32 [N,Cout]
  virtual void conv1d_max(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, Tensor& argmax) = 0;
  // gx, gw, gb (any may be null) are accumulated into: pass zeroed buffers for plain gradients.
  virtual void conv1d_max_backward(const Tensor& x, const Tensor& w, const Tensor& argmax, const Tensor& gy,
                                   Tensor* gx, Tensor* gw, Tensor* gb) = 0;

  // inverted-dropout mask: 0 with probability p, else 1/(1-p); element i uses Philox(seed, offset+i)
  virtual void dropout_mask(uint64_t seed, uint64_t offset, double p, Tensor& mask) = 0;
  // out[i] = list[permuted_index(i, n, key)] for i < out.numel() <= n = list.numel() (i32 both):
  // distinct entries of the list, drawn uniformly without replacement (philox.h).
  virtual void draw_distinct(const Tensor& list, uint64_t key, Tensor& out) = 0;

  // layer norm over the last axis; mean/rstd [rows] saved for backward
  virtual void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                          Tensor& mean, Tensor& rstd) = 0;
  virtual void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                                   const Tensor& gy, Tensor* gx, Tensor* ggamma, Tensor* gbeta) = 0;

  // fused LSTM cell pointwise math (TF gate order i,j,f,o):
  // c = clip(sig(f+forget_bias)*c_prev + sig(i)*tanh(j), cell_clip); h = sig(o)*tanh(c). cell_clip<=0: none
  // With h_bf16 (f32 only) it also writes h rounded to bf16: the operand the next GEMM takes under
  // precision = "bf16", written by the kernel that makes h instead of by a cast of its own.
  virtual void lstm_cell(const Tensor& gates, const Tensor& c_prev, double forget_bias, double cell_clip, Tensor& c,
                         Tensor& h, Tensor* h_bf16 = nullptr) = 0;
  // gc_prev may be gc itself (each element is read before it is written); ggates_bf16 as h_bf16.
  virtual void lstm_cell_backward(const Tensor& gates, const Tensor& c_prev, const Tensor& c, double forget_bias,
                                  double cell_clip, const Tensor* gc, const Tensor* gh, Tensor& ggates,
                                  Tensor* gc_prev, Tensor* ggates_bf16 = nullptr) = 0;
  // The LSTM's projected output (bilm-tf's proj_clip): y = clip(m, -proj_clip, proj_clip), or m where
  // proj_clip <= 0 (y may be m); with y_bf16 (f32 only) also y rounded to bf16.
  virtual void lstm_output(const Tensor& m, double proj_clip, Tensor& y, Tensor* y_bf16) = 0;
  // Its backward, summed with the recurrent gradient in the same pass: gm = (grec + gy) where
  // -proj_clip <= m <= proj_clip and 0 elsewhere (everywhere kept where proj_clip <= 0); gy may be
  // null; gm_bf16 as y_bf16.
  virtual void lstm_output_backward(const Tensor& m, const Tensor* gy, const Tensor& grec, double proj_clip,
                                    Tensor& gm, Tensor* gm_bf16) = 0;
  // fused highway combine (bilm-tf): g = sig(carry), t = relu(transform), y = g*t + (1-g)*x
  virtual void highway(const Tensor& carry, const Tensor& transform, const Tensor& x, Tensor& y) = 0;
  virtual void highway_backward(const Tensor& carry, const Tensor& transform, const Tensor& x, const Tensor& gy,
                                Tensor& gcarry, Tensor& gtransform, Tensor& gx) = 0;

  // Adagrad (TF): acc += g^2; w -= lr * g / sqrt(acc). Dense, or on rows `ids` (unique, i32) of
  // w and acc with g [n_ids, width].
  virtual void adagrad(Tensor& w, Tensor& acc, const Tensor& g, double lr) = 0;
  virtual void adagrad_rows(Tensor& w, Tensor& acc, const Tensor& ids, const Tensor& g, double lr) = 0;

  // Multi-tensor primitives: one launch for a whole list (an optimizer's parameters), so a step's
  // update costs a few launches instead of a few per parameter. The lists pair up element by element
  // (same shapes); every tensor of one float dtype. Tensors in w, acc, m, v and xs are written.
  // out f64 [1] = the sum of squares of every element, summed per tensor and then over the tensors
  // in order (on the CPU bit for bit what sum_squares per tensor and adding gives).
  virtual void multi_sum_squares(const std::vector<Tensor>& xs, Tensor& out) = 0;
  // x *= factor for every x; factor f64 [1] on this device, read there (the host never waits).
  virtual void multi_scale(const std::vector<Tensor>& xs, const Tensor& factor) = 0;
  // adagrad() over lists.
  virtual void multi_adagrad(const std::vector<Tensor>& w, const std::vector<Tensor>& acc,
                             const std::vector<Tensor>& g, double lr) = 0;
  // Adam with decoupled weight decay (math::adam_step): weight_decay[i] for w[i].
  virtual void multi_adam(const std::vector<Tensor>& w, const std::vector<Tensor>& m, const std::vector<Tensor>& v,
                          const std::vector<Tensor>& g, const std::vector<double>& weight_decay,
                          const AdamHyper& h) = 0;
  // cast() over lists: dst[i] = src[i] in dst's dtype (a step's bf16 weight copies, one launch for
  // all; Bf16WeightCopies). Pairs of one size; src of one dtype, dst of another one dtype.
  virtual void multi_cast(const std::vector<Tensor>& src, const std::vector<Tensor>& dst) = 0;

  // Linear-chain CRF over B sentences (engine/core/crf_math.h): em [B, T, K], tags [B, T] and
  // lengths [B] i32 (1 <= length <= T), trans [K, K], start and end [K]. loss [B] = log Z - the
  // gold path's score; alpha f64 [B, T, K] and log_z f64 [B] are kept for the backward.
  virtual void crf_nll(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans,
                       const Tensor& start, const Tensor& end, Tensor& loss, Tensor& alpha, Tensor& log_z) = 0;
  // gem is overwritten (0 past each length); gtrans, gstart and gend are accumulated into (pass
  // them zeroed). beta f64 [B, T, K] is scratch.
  virtual void crf_nll_backward(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans,
                                const Tensor& end, const Tensor& alpha, const Tensor& log_z, const Tensor& gloss,
                                Tensor& beta, Tensor& gem, Tensor& gtrans, Tensor& gstart, Tensor& gend) = 0;
  // The best tag path per sentence into path i32 [B, T] (0 past each length); delta f64 [B, 2K]
  // and back i32 [B, T, K] are scratch.
  virtual void crf_viterbi(const Tensor& em, const Tensor& lengths, const Tensor& trans, const Tensor& start,
                           const Tensor& end, Tensor& delta, Tensor& back, Tensor& path) = 0;

  // Attention (ops::attention): q, k, v, out [B, H, T, d], key_mask u8 [B, T]; lse f32/f64 [B, H, T]
  // gets each query row's log-sum-exp of its scaled, unmasked scores (the backward recomputes the
  // probabilities from it). Dropout element ((b*H + h)*T + i)*T + j uses Philox(seed, offset + it).
  virtual void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, double scale,
                         double p, uint64_t seed, uint64_t offset, Tensor& out, Tensor& lse) = 0;
  // gq, gk, gv are overwritten.
  virtual void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask,
                                  double scale, double p, uint64_t seed, uint64_t offset, const Tensor& out,
                                  const Tensor& lse, const Tensor& gout, Tensor& gq, Tensor& gk, Tensor& gv) = 0;

  // number of NaN/Inf elements (-inf not counted when allow_neg_inf)
  virtual int64_t count_nonfinite(const Tensor& x, bool allow_neg_inf = false) = 0;
};

// The compute primitives every backend overrides (one list for the CPU and CUDA classes).
#define SA_BACKEND_OVERRIDES \
  void fill(Tensor& t, double value) override; \
  void copy_strided(const Tensor& src, Tensor& dst, const CopyPlan& plan) override; \
  void cast(const Tensor& src, Tensor& dst) override; \
  void gemm(const GemmArgs& g, const Tensor& a, const Tensor& b, Tensor& c) override; \
  void unary(UnaryOp op, const Tensor& x, Tensor& y, double p0, double p1) override; \
  void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& gy, Tensor& gx, double p0, \
                      double p1, bool accumulate) override; \
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out, const BroadcastPlan& p) override; \
  void sum_to(const Tensor& g, Tensor& out, const BroadcastPlan& p, bool accumulate) override; \
  void axpy(double alpha, const Tensor& x, Tensor& y) override; \
  void masked_fill(const Tensor& x, const Tensor& mask, double value, Tensor& y, const BroadcastPlan& p) override; \
  void sum_squares(const Tensor& x, Tensor& out) override; \
  void reduce(ReduceOp op, const Tensor& x, int64_t outer, int64_t n, int64_t inner, Tensor& out, \
              Tensor* argmax) override; \
  void reduce_max_backward(const Tensor& gy, const Tensor& argmax, int64_t outer, int64_t n, int64_t inner, \
                           Tensor& gx) override; \
  void softmax(const Tensor& x, Tensor& y, bool log) override; \
  void softmax_backward(const Tensor& y, const Tensor& gy, Tensor& gx, bool log, bool accumulate) override; \
  void logsumexp(const Tensor& x, Tensor& out) override; \
  void cross_entropy(const Tensor& x, const Tensor& labels, Tensor& loss, Tensor& lse) override; \
  void cross_entropy_backward(const Tensor& x, const Tensor& labels, const Tensor& lse, const Tensor& gloss, \
                              Tensor& gx, bool accumulate) override; \
  void soft_cross_entropy(const Tensor& x, const Tensor& t, Tensor& loss, Tensor& lse) override; \
  void soft_cross_entropy_backward(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss, \
                                   Tensor& gx, bool accumulate) override; \
  void candidate_softmax(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc, const Tensor& bc, \
                         const Tensor& own_ids, const Tensor& cand_ids, const Tensor& own_w, Tensor& loss, \
                         Tensor& lse, Tensor* logp = nullptr) override; \
  void candidate_softmax_backward(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc, \
                                  const Tensor& bc, const Tensor& own_ids, const Tensor& cand_ids, \
                                  const Tensor& own_w, const Tensor& lse, const Tensor& gloss, Tensor& gx, \
                                  Tensor& gwt, Tensor& gbt, Tensor& gWc, Tensor& gbc, Tensor* logp = nullptr) override; \
  void select_rows(const Tensor& u, const Tensor& v, const Tensor& rows, const Tensor& enabled, Tensor& out) override; \
  void select_candidate_softmax(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& u, const Tensor& v, \
                                const Tensor& rows, const Tensor& enabled, const Tensor& Wc, const Tensor& bc, \
                                const Tensor& cand_ids, Tensor& loss, Tensor& lse, Tensor& selected) override; \
  void gather_rows(const Tensor& table, const Tensor& idx, Tensor& out) override; \
  void scatter_add_rows(const Tensor& src, const Tensor& idx, Tensor& table) override; \
  std::pair<Tensor, Tensor> coalesce_rows(const Tensor& ids, const Tensor& rows, bool allow_padding) override; \
  void conv1d_max(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, Tensor& argmax) override; \
  void conv1d_max_backward(const Tensor& x, const Tensor& w, const Tensor& argmax, const Tensor& gy, Tensor* gx, \
                           Tensor* gw, Tensor* gb) override; \
  void dropout_mask(uint64_t seed, uint64_t offset, double p, Tensor& mask) override; \
  void draw_distinct(const Tensor& list, uint64_t key, Tensor& out) override; \
  void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y, Tensor& mean, \
                  Tensor& rstd) override; \
  void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, \
                           const Tensor& gy, Tensor* gx, Tensor* ggamma, Tensor* gbeta) override; \
  void lstm_cell(const Tensor& gates, const Tensor& c_prev, double forget_bias, double cell_clip, Tensor& c, \
                 Tensor& h, Tensor* h_bf16 = nullptr) override; \
  void lstm_cell_backward(const Tensor& gates, const Tensor& c_prev, const Tensor& c, double forget_bias, \
                          double cell_clip, const Tensor* gc, const Tensor* gh, Tensor& ggates, \
                          Tensor* gc_prev, Tensor* ggates_bf16 = nullptr) override; \
  void lstm_output(const Tensor& m, double proj_clip, Tensor& y, Tensor* y_bf16) override; \
  void lstm_output_backward(const Tensor& m, const Tensor* gy, const Tensor& grec, double proj_clip, Tensor& gm, \
                            Tensor* gm_bf16) override; \
  void highway(const Tensor& carry, const Tensor& transform, const Tensor& x, Tensor& y) override; \
  void highway_backward(const Tensor& carry, const Tensor& transform, const Tensor& x, const Tensor& gy, \
                        Tensor& gcarry, Tensor& gtransform, Tensor& gx) override; \
  void adagrad(Tensor& w, Tensor& acc, const Tensor& g, double lr) override; \
  void adagrad_rows(Tensor& w, Tensor& acc, const Tensor& ids, const Tensor& g, double lr) override; \
  void multi_sum_squares(const std::vector<Tensor>& xs, Tensor& out) override; \
  void multi_scale(const std::vector<Tensor>& xs, const Tensor& factor) override; \
  void multi_adagrad(const std::vector<Tensor>& w, const std::vector<Tensor>& acc, const std::vector<Tensor>& g, \
                     double lr) override; \
  void multi_adam(const std::vector<Tensor>& w, const std::vector<Tensor>& m, const std::vector<Tensor>& v, \
                  const std::vector<Tensor>& g, const std::vector<double>& weight_decay, const AdamHyper& h) override; \
  void multi_cast(const std::vector<Tensor>& src, const std::vector<Tensor>& dst) override; \
  void crf_nll(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans, const Tensor& start, \
               const Tensor& end, Tensor& loss, Tensor& alpha, Tensor& log_z) override; \
  void crf_nll_backward(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans, \
                        const Tensor& end, const Tensor& alpha, const Tensor& log_z, const Tensor& gloss, Tensor& beta, \
                        Tensor& gem, Tensor& gtrans, Tensor& gstart, Tensor& gend) override; \
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, double scale, double p, \
                 uint64_t seed, uint64_t offset, Tensor& out, Tensor& lse) override; \
  void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, double scale, \
                          double p, uint64_t seed, uint64_t offset, const Tensor& out, const Tensor& lse, \
                          const Tensor& gout, Tensor& gq, Tensor& gk, Tensor& gv) override; \
  void crf_viterbi(const Tensor& em, const Tensor& lengths, const Tensor& trans, const Tensor& start, \
                   const Tensor& end, Tensor& delta, Tensor& back, Tensor& path) override; \
  int64_t count_nonfinite(const Tensor& x, bool allow_neg_inf) override;

// The backend of `d`, to start one compute primitive (counted as a launch, device_counters.h).
Backend& backend(Device d);
// The same backend for what starts no work: its allocator, synchronize, settings.
Backend& backend_uncounted(Device d);
Backend& cpu_backend();
// Off: the CPU's primitives compute nothing and leave their outputs as they are (bench train
// --no-arithmetic), so a CPU step costs what its host path costs: the work a GPU step waits on.
// Ids and masks are still made (the host indexes with them). Turn it off after the model is set up
// (its weights stay finite); small host blocks come zeroed from then on (allocator.h). Process-wide;
// for measurement only: nothing trained without arithmetic means anything.
void set_cpu_arithmetic(bool on);
bool cpu_arithmetic();
// Records the work from its making to close() as one step of kind `key` on the device of `d`
// (Backend::open_step) when SA_CUDA_GRAPHS=step; else does nothing. Destroyed unclosed, it closes
// the step, unless an error unwinds: then what the step's current piece recorded is dropped.
// Steps do not nest.
class StepGraphs {
 public:
  StepGraphs(Device d, uint64_t key);
  ~StepGraphs() noexcept(false);
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;
  void close();

 private:
  Device d_;
  bool open_ = false;
  int unwinding_ = 0;  // std::uncaught_exceptions() when made
};

// Backend::run_as_graph on the device of `d`, counted (device_counters.h: graphs, in_graphs, and a
// graph_break when `body` read or uploaded). `key` names the chain: the same key, the same kernels.
void run_as_graph(Device d, uint64_t key, const std::function<void()>& body);

// CUDA entry points; with CUDA=0 these are stubs (built() false, others fail).
namespace cuda {
bool built();
int device_count();
Backend& backend(int device);
// The stream (a cudaStream_t) the backend of `device` queues the calling thread's work on, for the
// libraries that take one (cuDNN, NCCL).
void* stream_of(int device);
// host<->device and device<->device copies of `bytes` bytes
void copy(void* dst, Device dst_dev, const void* src, Device src_dev, size_t bytes);
// A short description ("NVIDIA H100 80GB HBM3, compute 9.0, 79 GiB, CUDA runtime 12.4, cuDNN 9.1.0").
std::string describe_device(int device);
// Whether the fused attention runs on tensor cores on `device` at this head size, under bf16 (else
// tf32): compute 8.0 or later with the shared memory its backward asks (docs/design.md §4b.2).
bool fused_attention_on_tensor_cores(int device, int64_t head_dim, bool bf16);
}  // namespace cuda

}  // namespace sa
