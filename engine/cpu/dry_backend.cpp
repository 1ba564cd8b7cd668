// The CPU backend without its arithmetic: every primitive returns at once, so a training step
// costs only its host path (ops' checks and allocations, the tape, batch assembly, sampling, the
// sense schedule): the work a GPU step waits on while the device computes. Float outputs are left
// as they were (small blocks come zeroed: allocator.h); ids are made as before.
#include <algorithm>

#include "engine/backend.h"
#include "engine/core/error.h"
#include "engine/cpu/cpu_backend.h"

namespace sa {
namespace {

// Ids and masks (i32, u8) are still computed where they are made or moved: they are few, and the
// host indexes with what it reads of them (a sense's usage window, a seeding). Floats are not.
bool ids(const Tensor& t) { return t.dtype() == DType::I32 || t.dtype() == DType::U8; }

class DryBackend final : public Backend {
 public:
  Device device() const override { return Device::cpu(); }
  CachingAllocator& allocator() override { return host_allocator(); }

  void fill(Tensor& t, double value) override {
    if (ids(t)) real_.fill(t, value);
  }
  void copy_strided(const Tensor& src, Tensor& dst, const CopyPlan& plan) override {
    if (ids(dst)) real_.copy_strided(src, dst, plan);
  }
  void cast(const Tensor& src, Tensor& dst) override {
    if (ids(dst)) real_.cast(src, dst);
  }
  void gemm(const GemmArgs& g, const Tensor& a, const Tensor& b, Tensor& c) override {}
  void unary(UnaryOp op, const Tensor& x, Tensor& y, double p0, double p1) override {
    if (ids(y)) real_.unary(op, x, y, p0, p1);
  }
  void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& gy, Tensor& gx, double p0,
                      double p1, bool accumulate) override {}
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out, const BroadcastPlan& p) override {
    if (ids(out)) real_.binary(op, a, b, out, p);
  }
  void sum_to(const Tensor& g, Tensor& out, const BroadcastPlan& p, bool accumulate) override {}
  void axpy(double alpha, const Tensor& x, Tensor& y) override {}
  void masked_fill(const Tensor& x, const Tensor& mask, double value, Tensor& y, const BroadcastPlan& p) override {
    if (ids(y)) real_.masked_fill(x, mask, value, y, p);
  }
  void sum_squares(const Tensor& x, Tensor& out) override {}
  void reduce(ReduceOp op, const Tensor& x, int64_t outer, int64_t n, int64_t inner, Tensor& out,
              Tensor* argmax) override {}
  void reduce_max_backward(const Tensor& gy, const Tensor& argmax, int64_t outer, int64_t n, int64_t inner,
                           Tensor& gx) override {}
  void softmax(const Tensor& x, Tensor& y, bool log) override {}
  void softmax_backward(const Tensor& y, const Tensor& gy, Tensor& gx, bool log, bool accumulate) override {}
  void logsumexp(const Tensor& x, Tensor& out) override {}
  void cross_entropy(const Tensor& x, const Tensor& labels, Tensor& loss, Tensor& lse) override {}
  void cross_entropy_backward(const Tensor& x, const Tensor& labels, const Tensor& lse, const Tensor& gloss,
                              Tensor& gx, bool accumulate) override {}
  void soft_cross_entropy(const Tensor& x, const Tensor& t, Tensor& loss, Tensor& lse) override {}
  void soft_cross_entropy_backward(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss,
                                   Tensor& gx, bool accumulate) override {}
  void candidate_softmax(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc, const Tensor& bc,
                         const Tensor& own_ids, const Tensor& cand_ids, const Tensor& own_w, Tensor& loss,
                         Tensor& lse, Tensor* logp = nullptr) override {}
  void candidate_softmax_backward(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc,
                                  const Tensor& bc, const Tensor& own_ids, const Tensor& cand_ids,
                                  const Tensor& own_w, const Tensor& lse, const Tensor& gloss, Tensor& gx,
                                  Tensor& gwt, Tensor& gbt, Tensor& gWc, Tensor& gbc, Tensor* logp = nullptr) override {}
  void select_rows(const Tensor& u, const Tensor& v, const Tensor& rows, const Tensor& enabled, Tensor& out) override {
    first_candidates(rows, out);
  }
  void select_candidate_softmax(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& u, const Tensor& v,
                                const Tensor& rows, const Tensor& enabled, const Tensor& Wc, const Tensor& bc,
                                const Tensor& cand_ids, Tensor& loss, Tensor& lse, Tensor& selected) override {
    first_candidates(rows, selected);
  }
  void gather_rows(const Tensor& table, const Tensor& idx, Tensor& out) override {
    if (ids(out)) real_.gather_rows(table, idx, out);
  }
  void scatter_add_rows(const Tensor& src, const Tensor& idx, Tensor& table) override {}
  std::pair<Tensor, Tensor> coalesce_rows(const Tensor& ids, const Tensor& rows, bool allow_padding) override;
  void conv1d_max(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, Tensor& argmax) override {}
  void conv1d_max_backward(const Tensor& x, const Tensor& w, const Tensor& argmax, const Tensor& gy, Tensor* gx,
                           Tensor* gw, Tensor* gb) override {}
  void dropout_mask(uint64_t seed, uint64_t offset, double p, Tensor& mask) override {}
  void draw_distinct(const Tensor& list, uint64_t key, Tensor& out) override {
    std::copy_n(list.data<int32_t>(), out.numel(), out.data<int32_t>());  // distinct, not drawn
  }
  void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y, Tensor& mean,
                  Tensor& rstd) override {}
  void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                           const Tensor& gy, Tensor* gx, Tensor* ggamma, Tensor* gbeta) override {}
  void lstm_cell(const Tensor& gates, const Tensor& c_prev, double forget_bias, double cell_clip, Tensor& c,
                 Tensor& h, Tensor* h_bf16 = nullptr) override {}
  void lstm_cell_backward(const Tensor& gates, const Tensor& c_prev, const Tensor& c, double forget_bias,
                          double cell_clip, const Tensor* gc, const Tensor* gh, Tensor& ggates,
                          Tensor* gc_prev, Tensor* ggates_bf16 = nullptr) override {}
  void lstm_output(const Tensor& m, double proj_clip, Tensor& y, Tensor* y_bf16) override {}
  void lstm_output_backward(const Tensor& m, const Tensor* gy, const Tensor& grec, double proj_clip, Tensor& gm,
                            Tensor* gm_bf16) override {}
  void highway(const Tensor& carry, const Tensor& transform, const Tensor& x, Tensor& y) override {}
  void highway_backward(const Tensor& carry, const Tensor& transform, const Tensor& x, const Tensor& gy,
                        Tensor& gcarry, Tensor& gtransform, Tensor& gx) override {}
  void adagrad(Tensor& w, Tensor& acc, const Tensor& g, double lr) override {}
  void adagrad_rows(Tensor& w, Tensor& acc, const Tensor& ids, const Tensor& g, double lr) override {}
  void multi_sum_squares(const std::vector<Tensor>& xs, Tensor& out) override {}
  void multi_scale(const std::vector<Tensor>& xs, const Tensor& factor) override {}
  void multi_adagrad(const std::vector<Tensor>& w, const std::vector<Tensor>& acc, const std::vector<Tensor>& g,
                     double lr) override {}
  void multi_adam(const std::vector<Tensor>& w, const std::vector<Tensor>& m, const std::vector<Tensor>& v,
                  const std::vector<Tensor>& g, const std::vector<double>& weight_decay, const AdamHyper& h) override {}
  void multi_cast(const std::vector<Tensor>& src, const std::vector<Tensor>& dst) override {}
  void crf_nll(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans, const Tensor& start,
               const Tensor& end, Tensor& loss, Tensor& alpha, Tensor& log_z) override {}
  void crf_nll_backward(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans,
                        const Tensor& end, const Tensor& alpha, const Tensor& log_z, const Tensor& gloss, Tensor& beta,
                        Tensor& gem, Tensor& gtrans, Tensor& gstart, Tensor& gend) override {}
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, double scale, double p,
                 uint64_t seed, uint64_t offset, Tensor& out, Tensor& lse) override {}
  void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, double scale,
                          double p, uint64_t seed, uint64_t offset, const Tensor& out, const Tensor& lse,
                          const Tensor& gout, Tensor& gq, Tensor& gk, Tensor& gv) override {}
  void crf_viterbi(const Tensor& em, const Tensor& lengths, const Tensor& trans, const Tensor& start,
                   const Tensor& end, Tensor& delta, Tensor& back, Tensor& path) override {}
  int64_t count_nonfinite(const Tensor& x, bool allow_neg_inf) override;
 private:
  // A selection takes each token's first candidate row (as when none is enabled): a valid row.
  static void first_candidates(const Tensor& rows, Tensor& out) {
    const int64_t N = out.numel(), K = rows.numel() / std::max<int64_t>(N, 1);
    for (int64_t n = 0; n < N; ++n) out.data<int32_t>()[n] = rows.data<int32_t>()[n * K];
  }
  CpuBackend real_;
};

// Padding, as CUDA returns it (backend.h): no distinct id, every slot -1.
std::pair<Tensor, Tensor> DryBackend::coalesce_rows(const Tensor& ids, const Tensor& rows, bool allow_padding) {
  SA_CHECK(allow_padding, "coalesce_rows without arithmetic needs a caller that accepts padding");
  Tensor out_ids = Tensor::empty({ids.numel()}, DType::I32, device());
  std::fill_n(out_ids.data<int32_t>(), ids.numel(), -1);
  return {out_ids, Tensor::empty({ids.numel(), rows.dim(1)}, rows.dtype(), device())};
}

int64_t DryBackend::count_nonfinite(const Tensor& x, bool allow_neg_inf) { return 0; }

}  // namespace

Backend& dry_cpu_backend() {
  static DryBackend b;
  return b;
}

}  // namespace sa
