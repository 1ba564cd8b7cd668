// Differentiable ops. Each runs its forward on the inputs' device through the backend and, when an
// input requires a gradient, records its backward on the tape (engine/core/autograd.h) under its
// name in engine/ops/op_table.h. Adding an op: see the checklist atop engine/backend.h.
// Rows/softmax axes are the last axis. Index tensors are i32, masks u8.
#pragma once
#include <utility>
#include <vector>

#include "engine/core/autograd.h"
#include "engine/core/tensor.h"

namespace sa {

// Counter-based random stream (Philox): identical on CPU and CUDA for the same seed and offset.
struct Generator {
  uint64_t seed = 0;
  uint64_t offset = 0;  // counter of the next unused value
  explicit Generator(uint64_t s = 0) : seed(s) {}
  // Reserves n values and returns the offset of the first.
  uint64_t take(uint64_t n) {
    uint64_t o = offset;
    offset += (n + 3) & ~uint64_t(3);  // whole Philox blocks, so streams never overlap
    return o;
  }
};

namespace ops {

// linear algebra
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);  // 2-D
Tensor bmm(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);     // 3-D batched
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias = Tensor());  // x[..., in] w[in, out]

// broadcasting elementwise arithmetic
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor scale(const Tensor& x, double s);
Tensor add_scalar(const Tensor& x, double s);

// activations and pointwise functions
Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor gelu(const Tensor& x);      // tanh approximation (BERT's reference code, Hugging Face's "gelu_new")
Tensor gelu_erf(const Tensor& x);  // exact: x Phi(x) (Hugging Face's "gelu")
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor neg(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor square(const Tensor& x);
Tensor clip(const Tensor& x, double lo, double hi);
Tensor cast(const Tensor& x, DType dtype);
// y = mask ? value : x, mask u8 broadcast to x
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
// inverted dropout with a Philox mask; identity when p == 0
Tensor dropout(const Tensor& x, double p, Generator& gen);
// min(n, list.numel()) distinct entries of the i32 vector `list`, drawn uniformly without
// replacement by the permutation that `key` picks (philox.h permuted_index), on list's device:
// no host work beyond the launch. No gradient.
Tensor draw_distinct(const Tensor& list, int64_t n, uint64_t key);

// softmax family and losses (last axis)
Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);
Tensor logsumexp(const Tensor& x);
// per-row loss [rows]; labels i32 [rows], -1 = ignored row (loss 0, no gradient)
Tensor cross_entropy(const Tensor& logits, const Tensor& labels);
// per-row loss [rows] against a target distribution of the logits' shape (targets are constants)
Tensor soft_cross_entropy(const Tensor& logits, const Tensor& targets);

// rows, embeddings, convolution
// table [V, D], idx i32 of any shape -> [idx.shape..., D]. A table marked set_sparse_grad()
// gets a row-sparse gradient (only the gathered rows); otherwise a dense one.
Tensor gather_rows(const Tensor& table, const Tensor& idx);
// base [V, D] plus src [n, D] added at rows idx [n] (duplicates sum)
Tensor scatter_add_rows(const Tensor& base, const Tensor& idx, const Tensor& src);
// x [N, L, Cin], w [W, Cin, Cout], b [Cout] -> [N, Cout]: max over positions of the valid
// convolution plus bias (bias before the max, as bilm-tf)
Tensor conv1d_max(const Tensor& x, const Tensor& w, const Tensor& b);

// shapes
Tensor reshape(const Tensor& x, const Shape& shape);  // one extent may be -1
Tensor permute(const Tensor& x, const std::vector<int>& perm);
Tensor transpose(const Tensor& x, int axis0, int axis1);
Tensor slice(const Tensor& x, int axis, int64_t begin, int64_t end);
Tensor concat(const std::vector<Tensor>& xs, int axis);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int axis);
// The slices along axis 0 as views (no copy); one backward node assembles their gradients.
std::vector<Tensor> unbind(const Tensor& x);

// reductions
Tensor sum(const Tensor& x);  // all elements -> [1]
Tensor sum(const Tensor& x, int axis, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, int axis, bool keepdim = false);
Tensor max(const Tensor& x, int axis, bool keepdim = false);

// normalization and fused cells
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps = 1e-12);
// gates [N, 4H] (i, j, f, o), c_prev [N, H] -> (c, h) with h = sig(o) * tanh(c) (before projection)
std::pair<Tensor, Tensor> lstm_cell(const Tensor& gates, const Tensor& c_prev, double forget_bias = 1.0,
                                    double cell_clip = 0.0);
// A whole LSTM-with-projection sequence (TF gate order i, j, f, o; forget bias 1; cell_clip and
// proj_clip when > 0) as one tape node: x [T, B, in] time-major, W [in + P, 4D] (input rows, then
// recurrent rows), bias [4D], W_P [D, P], initial state c0 [B, D], m0 [B, P]. Returns the outputs
// y [T, B, P] and the final c [B, D] and m [B, P]. Equal to stepping lstm_cell with two GEMMs.
std::vector<Tensor> lstm_sequence(const Tensor& x, const Tensor& W, const Tensor& bias, const Tensor& W_P,
                                  const Tensor& c0, const Tensor& m0, double cell_clip, double proj_clip);
// Which implementation runs an LSTM sequence on CUDA: Auto takes cuDNN's RNN where it is exact
// (proj_clip 0, projection smaller than the cell, built with cuDNN) and the step kernels otherwise;
// Cudnn takes cuDNN whenever it can run the shapes (the fast path: callers pass no clips); Steps
// always steps (exact clips). The CPU always steps. cuDNN has no proj_clip, and its cell clip is not
// TF's (on an H100, cuDNN 9.19, it matched neither c clipped and carried nor any simple variant),
// so it runs only layers without either clip. Stacked: the step kernels, with the call's sequences
// of one shape stacked into one batched GEMM and one cell kernel per step (only when asked: Auto,
// Cudnn and Steps step each sequence on its own, side by side on the CPU).
enum class LstmPath { Auto, Cudnn, Steps, Stacked };
// Several independent sequences (the forward and backward LMs' layers) as one node; the CPU runs
// them side by side, one thread each. W_P may be undefined: no projection (P = D, the output is h,
// proj_clip 0). `steps`, when given, packs sequences of different lengths (rows sorted longest
// first): step t runs only the first steps[t] rows (positive, non-increasing, steps[0] = B), x is
// [sum(steps), in] with step after step's rows, y is [sum(steps), P], and the final c and m hold
// each row's state after its own last step. Packed and unprojected sequences always step.
struct LstmSequenceArgs {
  Tensor x, W, bias, W_P, c0, m0;
  double cell_clip = 0, proj_clip = 0;
  LstmPath path = LstmPath::Auto;
  std::vector<int64_t> steps = {};
};
std::vector<std::vector<Tensor>> lstm_sequences(const std::vector<LstmSequenceArgs>& args);
// Whether lstm_sequences takes cuDNN for a layer of these sizes and clips: Auto where both clips
// are 0, Cudnn wherever the sizes fit (fails when it comes with a clip, or on CUDA in a binary
// built without cuDNN).
bool lstm_uses_cudnn(Device dev, LstmPath path, double cell_clip, double proj_clip, int64_t cell_dim,
                     int64_t projection_dim);
// Whether cuDNN's RNN can run a layer of these sizes at all: it projects only to fewer units.
inline bool cudnn_lstm_fits(int64_t cell_dim, int64_t projection_dim) { return projection_dim < cell_dim; }
// bilm-tf highway combine: g = sig(carry), y = g * relu(transform) + (1 - g) * x
Tensor highway(const Tensor& carry, const Tensor& transform, const Tensor& x);

// Scaled dot-product attention as one op (BERT's self-attention): q, k, v [B, H, T, d], key_mask
// u8 [B, T] (1 = a token to attend to, 0 = padding; every row needs at least one 1). out [B, H, T, d]
// = dropout(softmax(scale * q k^T, padding keys left out)) v. Dropout (inverted, probability p)
// drops the probability of query i and key j of head (b, h) with Philox element ((b*H + h)*T + i)*T
// + j of the generator's stream, so the CPU and CUDA draw the same. The CPU runs batched GEMMs; CUDA
// one fused kernel that never writes the [T, T] scores (online softmax), the backward recomputing
// them from the saved row log-sum-exps.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, double scale,
                 double dropout_p = 0, Generator* gen = nullptr);

// sampled softmax and sense selection
// Per-row loss [N] of a softmax over one true row and S candidate rows, holding all [N, S] logits
// only where they are small (the CPU keeps up to 64 MiB of them for the backward): x [N, P], wt
// [N, P] and bt [N] or [N, 1] (the true rows), Wc [S, P] and bc [S] or [S, 1] (the candidates); a
// candidate whose id (cand_ids i32 [S]) equals the row's true id (true_ids i32 [N]) is left out
// (accidental hit). Equal to cross_entropy over [t | x Wc^T + bc] with those masked.
Tensor candidate_softmax(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc, const Tensor& bc,
                         const Tensor& true_ids, const Tensor& cand_ids);
// The same with H own rows per row and soft targets (Bi-SaELMo's translation loss): wt [N, H, P],
// bt [N, H], own_ids i32 [N, H] (-1: absent, at least one present per row), own_w [N, H] the
// target weights (summing to 1; no gradient). Every present own row is in the denominator and
// masks the candidates with its id. Equal to soft_cross_entropy over [own | x Wc^T + bc].
Tensor candidate_softmax(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc, const Tensor& bc,
                         const Tensor& own_ids, const Tensor& cand_ids, const Tensor& own_w);
// Sense selection (no gradient): per token n, the enabled one of its K candidate rows whose
// projected center has the highest cosine with u_n (ties: the first; none enabled: the first
// candidate). u [N, d], v [N*K, d], rows i32 [N*K], enabled u8 [N*K] -> i32 [N] chosen rows.
Tensor select_rows(const Tensor& u, const Tensor& v, const Tensor& rows, const Tensor& enabled);
// SaELMo's sense-aware sampled softmax in one op: select_rows picks each token's sense row, whose
// vector (W [R, P], b [R, 1]; row-sparse gradients when the table keeps them) is the token's one
// own row of candidate_softmax against the shared candidates (Wc, bc, cand_ids). Returns the
// per-row loss [N] and the selected rows (i32 [N]). CUDA selects and runs the forward in one kernel.
std::pair<Tensor, Tensor> select_candidate_softmax(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& u,
                                                   const Tensor& v, const Tensor& rows, const Tensor& enabled,
                                                   const Tensor& Wc, const Tensor& bc, const Tensor& cand_ids);

// Linear-chain CRF (the NER tagger's output layer). Emission scores em [B, T, K]; gold tags i32
// [B, T] and lengths i32 [B] (1..T: positions past a sentence's length are ignored); transitions
// trans [K, K] (row: previous tag, column: next), start [K] and end [K] scores. Returns the
// per-sentence loss [B] = log Z - score(gold path); gradients for em, trans, start and end.
Tensor crf_nll(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans, const Tensor& start,
               const Tensor& end);
// The highest-scoring tag path per sentence (Viterbi; ties to the lower tag), i32 [B, T], 0 past
// each length. No gradient.
Tensor crf_viterbi(const Tensor& em, const Tensor& lengths, const Tensor& trans, const Tensor& start, const Tensor& end);

}  // namespace ops
}  // namespace sa
