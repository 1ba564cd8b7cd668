// Layer norm, the fused hot-path cells (LSTM pointwise math, highway combine), the candidate
// softmax and sense selection.
#include "engine/ops/op_util.h"
#include "engine/ops/ops.h"

namespace sa::ops {
using namespace detail;

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  check_same("layer_norm", {x, gamma, beta});
  const int64_t d = x.dim(-1);
  SA_CHECK(gamma.shape() == Shape{d} && beta.shape() == Shape{d},
           "layer_norm: gamma {} and beta {} must be [{}] for input {}", describe(gamma), describe(beta), d,
           describe(x));
  Tensor y = like(x);
  Tensor mu = Tensor::empty({x.numel() / d}, x.dtype(), x.device()), rs = like(mu);
  be(x).layer_norm(x, gamma, beta, eps, y, mu, rs);
  record(Op::layer_norm, {x, gamma, beta}, {y}, [=](const std::vector<Tensor>& gs) {
    Tensor gx = x.requires_grad() ? like(x) : Tensor();
    Tensor gg = gamma.requires_grad() ? like(gamma) : Tensor();
    Tensor gb = beta.requires_grad() ? like(beta) : Tensor();
    be(x).layer_norm_backward(x, gamma, mu, rs, gs[0], gx.defined() ? &gx : nullptr, gg.defined() ? &gg : nullptr,
                              gb.defined() ? &gb : nullptr);
    accumulate_grad(x, gx, true);
    accumulate_grad(gamma, gg, true);
    accumulate_grad(beta, gb, true);
  });
  return y;
}

std::pair<Tensor, Tensor> lstm_cell(const Tensor& gates, const Tensor& c_prev, double forget_bias, double cell_clip) {
  check_same("lstm_cell", {gates, c_prev});
  const int64_t h = c_prev.dim(-1);
  Shape gshape = c_prev.shape();
  gshape.back() = 4 * h;
  SA_CHECK(gates.shape() == gshape, "lstm_cell: gates {} must be {} for c_prev {}", describe(gates), to_string(gshape),
           describe(c_prev));
  Tensor c = like(c_prev), hh = like(c_prev);
  be(gates).lstm_cell(gates, c_prev, forget_bias, cell_clip, c, hh);
  record(Op::lstm_cell, {gates, c_prev}, {c, hh}, [=](const std::vector<Tensor>& gs) {
    Tensor gg = like(gates);
    Tensor gcp = c_prev.requires_grad() ? like(c_prev) : Tensor();
    be(gates).lstm_cell_backward(gates, c_prev, c, forget_bias, cell_clip, gs[0].defined() ? &gs[0] : nullptr,
                                 gs[1].defined() ? &gs[1] : nullptr, gg, gcp.defined() ? &gcp : nullptr);
    accumulate_grad(gates, gg, true);
    accumulate_grad(c_prev, gcp, true);
  });
  return {c, hh};
}

Tensor highway(const Tensor& carry, const Tensor& transform, const Tensor& x) {
  check_same("highway", {carry, transform, x});
  SA_CHECK(carry.shape() == x.shape() && transform.shape() == x.shape(),
           "highway: carry {}, transform {} and x {} must have one shape", describe(carry), describe(transform),
           describe(x));
  Tensor y = like(x);
  be(x).highway(carry, transform, x, y);
  record(Op::highway, {carry, transform, x}, {y}, [=](const std::vector<Tensor>& gs) {
    Tensor ga = like(x), gt = like(x), gx = like(x);
    be(x).highway_backward(carry, transform, x, gs[0], ga, gt, gx);
    accumulate_grad(carry, ga, true);
    accumulate_grad(transform, gt, true);
    accumulate_grad(x, gx, true);
  });
  return y;
}

namespace {

// candidate_softmax's backward: accumulates the gradients of x and the candidates (Wc, bc), and
// returns those of the own rows (wt, bt), which callers route to where the rows came from.
struct CandidateGrads {
  Tensor wt, bt;
};
CandidateGrads candidate_grads(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc, const Tensor& bc,
                               const Tensor& own_ids, const Tensor& cand_ids, const Tensor& own_w, const Tensor& lse,
                               const Tensor& gloss, Tensor logp = Tensor()) {
  Tensor gx = like(x), gwt = like(wt), gbt = like(bt), gWc = like(Wc), gbc = like(bc);
  be(x).candidate_softmax_backward(x, wt, bt, Wc, bc, own_ids, cand_ids, own_w, lse, gloss, gx, gwt, gbt, gWc, gbc,
                                   logp.defined() ? &logp : nullptr);
  accumulate_grad(x, gx, true);
  accumulate_grad(Wc, gWc, true);
  accumulate_grad(bc, gbc, true);
  return {gwt, gbt};
}

}  // namespace

Tensor candidate_softmax(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc, const Tensor& bc,
                         const Tensor& own_ids, const Tensor& cand_ids, const Tensor& own_w) {
  check_same("candidate_softmax", {x, wt, bt, Wc, bc, own_w});
  const int64_t N = x.rank() == 2 ? x.dim(0) : -1, P = x.rank() == 2 ? x.dim(1) : -1, S = Wc.rank() == 2 ? Wc.dim(0) : -1;
  const int64_t H = N > 0 ? own_ids.numel() / N : 1;
  SA_CHECK(N >= 0 && H >= 1 && own_ids.numel() == N * H && wt.numel() == N * H * P && wt.dim(-1) == P &&
               bt.numel() == N * H && own_w.numel() == N * H && S >= 0 && Wc.dim(1) == P && bc.numel() == S &&
               own_ids.dtype() == DType::I32 && cand_ids.dtype() == DType::I32 && cand_ids.numel() == S &&
               own_ids.device() == x.device() && cand_ids.device() == x.device(),
           "candidate_softmax: x {}, wt {}, bt {}, Wc {}, bc {}, own_ids {}, cand_ids {}, own_w {} (expected [N,P], "
           "[N,H,P], [N,H], [S,P], [S], i32 [N,H], i32 [S], [N,H] on one device)",
           describe(x), describe(wt), describe(bt), describe(Wc), describe(bc), describe(own_ids), describe(cand_ids),
           describe(own_w));
  Tensor loss = Tensor::empty({N}, x.dtype(), x.device()), lse = like(loss);
  // The CPU keeps the candidates' log probabilities for the backward when they are small (bench-small's
  // 640 x 1024, SaELMo-small's ~640 x 6k): recomputing them was a third of the backward's GEMMs.
  // Large ones (the paper's sizes) and CUDA's are recomputed, as the op's memory bound promises.
  constexpr int64_t kKeptBytes = int64_t{64} << 20;
  Tensor logp = !x.device().is_cuda() && any_requires_grad({x, wt, bt, Wc, bc}) && S > 0 &&
                        N * S * static_cast<int64_t>(dtype_size(x.dtype())) <= kKeptBytes
                    ? Tensor::empty({N, S}, x.dtype(), x.device())
                    : Tensor();
  be(x).candidate_softmax(x, wt, bt, Wc, bc, own_ids, cand_ids, own_w, loss, lse, logp.defined() ? &logp : nullptr);
  record(Op::candidate_softmax, {x, wt, bt, Wc, bc}, {loss}, [=](const std::vector<Tensor>& gs) {
    CandidateGrads g = candidate_grads(x, wt, bt, Wc, bc, own_ids, cand_ids, own_w, lse, gs[0], logp);
    accumulate_grad(wt, g.wt, true);
    accumulate_grad(bt, g.bt, true);
  });
  return loss;
}

Tensor candidate_softmax(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc, const Tensor& bc,
                         const Tensor& true_ids, const Tensor& cand_ids) {
  SA_CHECK(x.rank() == 2 && wt.shape() == x.shape() && true_ids.numel() == x.dim(0),
           "candidate_softmax: x {}, wt {}, true_ids {} (expected [N,P], [N,P], i32 [N])", describe(x), describe(wt),
           describe(true_ids));
  return candidate_softmax(x, wt, bt, Wc, bc, true_ids, cand_ids, Tensor::full({x.dim(0)}, 1.0, x.dtype(), x.device()));
}

Tensor select_rows(const Tensor& u, const Tensor& v, const Tensor& rows, const Tensor& enabled) {
  const int64_t N = u.rank() == 2 ? u.dim(0) : -1, d = u.rank() == 2 ? u.dim(1) : -1;
  const int64_t K = N > 0 ? rows.numel() / N : 1;
  SA_CHECK(N >= 0 && K >= 1 && rows.numel() == N * K && enabled.numel() == N * K && v.shape() == (Shape{N * K, d}) &&
               rows.dtype() == DType::I32 && enabled.dtype() == DType::U8 && v.dtype() == u.dtype() &&
               v.device() == u.device() && rows.device() == u.device() && enabled.device() == u.device(),
           "select_rows: u {}, v {}, rows {}, enabled {} (expected [N,d], [N*K,d], i32 [N*K], u8 [N*K] on one device)",
           describe(u), describe(v), describe(rows), describe(enabled));
  Tensor out = Tensor::empty({N}, DType::I32, u.device());
  be(u).select_rows(u, v, rows, enabled, out);
  return out;
}

std::pair<Tensor, Tensor> select_candidate_softmax(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& u,
                                                   const Tensor& v, const Tensor& rows, const Tensor& enabled,
                                                   const Tensor& Wc, const Tensor& bc, const Tensor& cand_ids) {
  check_same("select_candidate_softmax", {x, W, b, u, v, Wc, bc});
  const int64_t N = x.rank() == 2 ? x.dim(0) : -1, P = x.rank() == 2 ? x.dim(1) : -1;
  const int64_t R = W.rank() == 2 ? W.dim(0) : -1, S = Wc.rank() == 2 ? Wc.dim(0) : -1;
  const int64_t d = u.rank() == 2 ? u.dim(1) : -1, K = N > 0 ? rows.numel() / N : 1;
  SA_CHECK(N >= 0 && R >= 1 && W.dim(1) == P && b.shape() == (Shape{R, 1}) && u.shape() == (Shape{N, d}) &&
               v.shape() == (Shape{N * K, d}) && rows.numel() == N * K && enabled.numel() == N * K && S >= 0 &&
               Wc.dim(1) == P && bc.numel() == S && cand_ids.numel() == S && rows.dtype() == DType::I32 &&
               enabled.dtype() == DType::U8 && cand_ids.dtype() == DType::I32 && rows.device() == x.device() &&
               enabled.device() == x.device() && cand_ids.device() == x.device(),
           "select_candidate_softmax: x {}, W {}, b {}, u {}, v {}, rows {}, enabled {}, Wc {}, bc {}, cand_ids {} "
           "(expected [N,P], [R,P], [R,1], [N,d], [N*K,d], i32 [N*K], u8 [N*K], [S,P], [S], i32 [S] on one device)",
           describe(x), describe(W), describe(b), describe(u), describe(v), describe(rows), describe(enabled),
           describe(Wc), describe(bc), describe(cand_ids));
  Tensor loss = Tensor::empty({N}, x.dtype(), x.device()), lse = like(loss);
  Tensor selected = Tensor::empty({N}, DType::I32, x.device());
  be(x).select_candidate_softmax(x, W, b, u, v, rows, enabled, Wc, bc, cand_ids, loss, lse, selected);
  // The backward is candidate_softmax's on the selected rows, which it gathers again.
  record(Op::select_candidate_softmax, {x, W, b, Wc, bc}, {loss}, [=](const std::vector<Tensor>& gs) {
    Tensor wt = Tensor::empty({N, P}, x.dtype(), x.device()), bt = Tensor::empty({N, 1}, x.dtype(), x.device());
    be(x).gather_rows(W, selected, wt);
    be(x).gather_rows(b, selected, bt);
    const Tensor ones = Tensor::full({N}, 1.0, x.dtype(), x.device());
    CandidateGrads g = candidate_grads(x, wt, bt, Wc, bc, selected, cand_ids, ones, lse, gs[0]);
    accumulate_rows(W, selected, g.wt);
    accumulate_rows(b, selected, g.bt);
  });
  return {loss, selected};
}

}  // namespace sa::ops
