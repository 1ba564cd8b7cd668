// A layer over the CPU backend (with arithmetic or without) that notes each primitive for the
// replay audit (engine/replay_audit.h) and, while a step is captured (engine/step_replay.h), keeps
// it with copies of its tensors to run again on replay. cpu_backend() answers with it while either
// is on.
#include <algorithm>
#include <bit>
#include <optional>
#include <type_traits>
#include <vector>

#include "engine/cpu/cpu_backend.h"
#include "engine/replay_audit.h"
#include "engine/step_replay.h"

namespace sa {
namespace {

using Sig = PrimitiveSignature;
void mix(uint64_t& h, uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); }

void add(Sig& s, const Tensor& t) {
  if (!t.defined()) return mix(s.shape, 0);
  mix(s.shape, static_cast<uint64_t>(t.dtype()) + 1);
  for (int64_t d : t.shape()) mix(s.shape, static_cast<uint64_t>(d));
  mix(s.addr, reinterpret_cast<uintptr_t>(t.raw()));
}
void add(Sig& s, const Tensor* t) { t ? add(s, *t) : mix(s.shape, 0); }
void add(Sig& s, const std::vector<Tensor>& v) {
  mix(s.shape, v.size());
  for (const Tensor& t : v) add(s, t);
}
// Counts and extents are shapes; seeds, keys and factors are values.
void add(Sig& s, int64_t n) { mix(s.shape, static_cast<uint64_t>(n)); }
void add(Sig& s, bool b) { mix(s.shape, b); }
void add(Sig& s, uint64_t v) { mix(s.value, v); }
void add(Sig& s, double v) { mix(s.value, std::bit_cast<uint64_t>(v)); }
void add(Sig& s, const std::vector<double>& v) {
  for (double x : v) add(s, x);
}
template <typename E>
  requires std::is_enum_v<E>
void add(Sig& s, E e) {
  mix(s.shape, static_cast<uint64_t>(e));
}
void add(Sig& s, const GemmArgs& g) {
  for (int64_t v : {int64_t{g.trans_a}, int64_t{g.trans_b}, g.m, g.n, g.k, g.batch, g.stride_a, g.stride_b, g.stride_c})
    add(s, v);
  add(s, g.alpha), add(s, g.beta);
}
template <typename Plan>  // BroadcastPlan, CopyPlan: the strides and extents of shapes
void add_plan_rank(Sig& s, const Plan& p) {
  add(s, int64_t{p.rank});
  for (int k = 0; k < p.rank; ++k) add(s, p.shape[k]);
}
void add(Sig& s, const BroadcastPlan& p) {
  add_plan_rank(s, p);
  for (int k = 0; k < p.rank; ++k) add(s, p.stride_a[k]), add(s, p.stride_b[k]);
}
void add(Sig& s, const CopyPlan& p) {
  add_plan_rank(s, p);
  for (int k = 0; k < p.rank; ++k) add(s, p.src_stride[k]), add(s, p.dst_stride[k]);
  add(s, p.src_offset), add(s, p.dst_offset);
}
void add(Sig& s, const AdamHyper& h) {
  for (double v : {h.lr, h.beta1, h.beta2, h.eps, h.c1, h.c2}) add(s, v);
}

// What kept work names: the tensors' memory, not kept alive (the capture's pool keeps it), and an
// optional output held by value (the caller's pointer is gone by replay).
Tensor alias(const Tensor& t) { return StepReplay::alias(t); }
std::vector<Tensor> aliases(const std::vector<Tensor>& v) {
  std::vector<Tensor> a;
  for (const Tensor& t : v) a.push_back(alias(t));
  return a;
}
std::optional<Tensor> held(const Tensor* t) { return t ? std::optional<Tensor>(alias(*t)) : std::nullopt; }
Tensor* ptr(std::optional<Tensor>& t) { return t ? &*t : nullptr; }

class RecordingBackend final : public Backend {
 public:
  Device device() const override { return Device::cpu(); }
  CachingAllocator& allocator() override { return host_allocator(); }
  void synchronize() override { in().synchronize(); }
  void fill(Tensor& t, double value) override {
    forward(__func__, [=, t = alias(t)](Backend& be, uint64_t) mutable { be.fill(t, value); }, t, value);
  }
  void copy_strided(const Tensor& src, Tensor& dst, const CopyPlan& plan) override {
    forward(__func__, [=, src = alias(src), dst = alias(dst)](Backend& be, uint64_t) mutable { be.copy_strided(src,
        dst, plan); }, src, dst, plan);
  }
  void cast(const Tensor& src, Tensor& dst) override {
    forward(__func__, [=, src = alias(src), dst = alias(dst)](Backend& be, uint64_t) mutable { be.cast(src, dst); },
        src, dst);
  }
  void gemm(const GemmArgs& g, const Tensor& a, const Tensor& b, Tensor& c) override {
    forward(__func__, [=, a = alias(a), b = alias(b), c = alias(c)](Backend& be, uint64_t) mutable { be.gemm(g, a, b,
        c); }, g, a, b, c);
  }
  void unary(UnaryOp op, const Tensor& x, Tensor& y, double p0, double p1) override {
    forward(__func__, [=, x = alias(x), y = alias(y)](Backend& be, uint64_t) mutable { be.unary(op, x, y, p0, p1); },
        op, x, y, p0, p1);
  }
  void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& gy, Tensor& gx, double p0,
      double p1, bool accumulate) override {
    forward(__func__, [=, x = alias(x), y = alias(y), gy = alias(gy), gx = alias(gx)](Backend& be,
        uint64_t) mutable { be.unary_backward(op, x, y, gy, gx, p0, p1, accumulate); }, op, x, y, gy, gx, p0, p1,
        accumulate);
  }
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out, const BroadcastPlan& p) override {
    forward(__func__, [=, a = alias(a), b = alias(b), out = alias(out)](Backend& be,
        uint64_t) mutable { be.binary(op, a, b, out, p); }, op, a, b, out, p);
  }
  void sum_to(const Tensor& g, Tensor& out, const BroadcastPlan& p, bool accumulate) override {
    forward(__func__, [=, g = alias(g), out = alias(out)](Backend& be, uint64_t) mutable { be.sum_to(g, out, p,
        accumulate); }, g, out, p, accumulate);
  }
  void axpy(double alpha, const Tensor& x, Tensor& y) override {
    forward(__func__, [=, x = alias(x), y = alias(y)](Backend& be, uint64_t) mutable { be.axpy(alpha, x, y); },
        alpha, x, y);
  }
  void masked_fill(const Tensor& x, const Tensor& mask, double value, Tensor& y, const BroadcastPlan& p) override {
    forward(__func__, [=, x = alias(x), mask = alias(mask), y = alias(y)](Backend& be,
        uint64_t) mutable { be.masked_fill(x, mask, value, y, p); }, x, mask, value, y, p);
  }
  void sum_squares(const Tensor& x, Tensor& out) override {
    forward(__func__, [=, x = alias(x), out = alias(out)](Backend& be, uint64_t) mutable { be.sum_squares(x, out); },
        x, out);
  }
  void reduce(ReduceOp op, const Tensor& x, int64_t outer, int64_t n, int64_t inner, Tensor& out,
      Tensor* argmax) override {
    forward(__func__, [=, x = alias(x), out = alias(out), argmax_ = held(argmax)](Backend& be,
        uint64_t) mutable { be.reduce(op, x, outer, n, inner, out, ptr(argmax_)); }, op, x, outer, n, inner, out,
        argmax);
  }
  void reduce_max_backward(const Tensor& gy, const Tensor& argmax, int64_t outer, int64_t n, int64_t inner,
      Tensor& gx) override {
    forward(__func__, [=, gy = alias(gy), argmax = alias(argmax), gx = alias(gx)](Backend& be,
        uint64_t) mutable { be.reduce_max_backward(gy, argmax, outer, n, inner, gx); }, gy, argmax, outer, n, inner,
        gx);
  }
  void softmax(const Tensor& x, Tensor& y, bool log) override {
    forward(__func__, [=, x = alias(x), y = alias(y)](Backend& be, uint64_t) mutable { be.softmax(x, y, log); }, x,
        y, log);
  }
  void softmax_backward(const Tensor& y, const Tensor& gy, Tensor& gx, bool log, bool accumulate) override {
    forward(__func__, [=, y = alias(y), gy = alias(gy), gx = alias(gx)](Backend& be,
        uint64_t) mutable { be.softmax_backward(y, gy, gx, log, accumulate); }, y, gy, gx, log, accumulate);
  }
  void logsumexp(const Tensor& x, Tensor& out) override {
    forward(__func__, [=, x = alias(x), out = alias(out)](Backend& be, uint64_t) mutable { be.logsumexp(x, out); },
        x, out);
  }
  void cross_entropy(const Tensor& x, const Tensor& labels, Tensor& loss, Tensor& lse) override {
    forward(__func__, [=, x = alias(x), labels = alias(labels), loss = alias(loss), lse = alias(lse)](Backend& be,
        uint64_t) mutable { be.cross_entropy(x, labels, loss, lse); }, x, labels, loss, lse);
  }
  void cross_entropy_backward(const Tensor& x, const Tensor& labels, const Tensor& lse, const Tensor& gloss,
      Tensor& gx, bool accumulate) override {
    forward(__func__, [=, x = alias(x), labels = alias(labels), lse = alias(lse), gloss = alias(gloss),
        gx = alias(gx)](Backend& be, uint64_t) mutable { be.cross_entropy_backward(x, labels, lse, gloss, gx,
        accumulate); }, x, labels, lse, gloss, gx, accumulate);
  }
  void soft_cross_entropy(const Tensor& x, const Tensor& t, Tensor& loss, Tensor& lse) override {
    forward(__func__, [=, x = alias(x), t = alias(t), loss = alias(loss), lse = alias(lse)](Backend& be,
        uint64_t) mutable { be.soft_cross_entropy(x, t, loss, lse); }, x, t, loss, lse);
  }
  void soft_cross_entropy_backward(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss,
      Tensor& gx, bool accumulate) override {
    forward(__func__, [=, x = alias(x), t = alias(t), lse = alias(lse), gloss = alias(gloss),
        gx = alias(gx)](Backend& be, uint64_t) mutable { be.soft_cross_entropy_backward(x, t, lse, gloss, gx,
        accumulate); }, x, t, lse, gloss, gx, accumulate);
  }
  void candidate_softmax(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc, const Tensor& bc,
      const Tensor& own_ids, const Tensor& cand_ids, const Tensor& own_w, Tensor& loss, Tensor& lse,
      Tensor* logp = nullptr) override {
    forward(__func__, [=, x = alias(x), wt = alias(wt), bt = alias(bt), Wc = alias(Wc), bc = alias(bc),
        own_ids = alias(own_ids), cand_ids = alias(cand_ids), own_w = alias(own_w), loss = alias(loss),
        lse = alias(lse), logp_ = held(logp)](Backend& be, uint64_t) mutable { be.candidate_softmax(x, wt, bt, Wc,
        bc, own_ids, cand_ids, own_w, loss, lse, ptr(logp_)); }, x, wt, bt, Wc, bc, own_ids, cand_ids, own_w, loss,
        lse, logp);
  }
  void candidate_softmax_backward(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc,
      const Tensor& bc, const Tensor& own_ids, const Tensor& cand_ids, const Tensor& own_w, const Tensor& lse,
      const Tensor& gloss, Tensor& gx, Tensor& gwt, Tensor& gbt, Tensor& gWc, Tensor& gbc,
      Tensor* logp = nullptr) override {
    forward(__func__, [=, x = alias(x), wt = alias(wt), bt = alias(bt), Wc = alias(Wc), bc = alias(bc),
        own_ids = alias(own_ids), cand_ids = alias(cand_ids), own_w = alias(own_w), lse = alias(lse),
        gloss = alias(gloss), gx = alias(gx), gwt = alias(gwt), gbt = alias(gbt), gWc = alias(gWc), gbc = alias(gbc),
        logp_ = held(logp)](Backend& be, uint64_t) mutable { be.candidate_softmax_backward(x, wt, bt, Wc, bc,
        own_ids, cand_ids, own_w, lse, gloss, gx, gwt, gbt, gWc, gbc, ptr(logp_)); }, x, wt, bt, Wc, bc, own_ids,
        cand_ids, own_w, lse, gloss, gx, gwt, gbt, gWc, gbc, logp);
  }
  void select_rows(const Tensor& u, const Tensor& v, const Tensor& rows, const Tensor& enabled,
      Tensor& out) override {
    forward(__func__, [=, u = alias(u), v = alias(v), rows = alias(rows), enabled = alias(enabled),
        out = alias(out)](Backend& be, uint64_t) mutable { be.select_rows(u, v, rows, enabled, out); }, u, v, rows,
        enabled, out);
  }
  void select_candidate_softmax(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& u, const Tensor& v,
      const Tensor& rows, const Tensor& enabled, const Tensor& Wc, const Tensor& bc, const Tensor& cand_ids,
      Tensor& loss, Tensor& lse, Tensor& selected) override {
    forward(__func__, [=, x = alias(x), W = alias(W), b = alias(b), u = alias(u), v = alias(v), rows = alias(rows),
        enabled = alias(enabled), Wc = alias(Wc), bc = alias(bc), cand_ids = alias(cand_ids), loss = alias(loss),
        lse = alias(lse), selected = alias(selected)](Backend& be, uint64_t) mutable { be.select_candidate_softmax(x,
        W, b, u, v, rows, enabled, Wc, bc, cand_ids, loss, lse, selected); }, x, W, b, u, v, rows, enabled, Wc, bc,
        cand_ids, loss, lse, selected);
  }
  void gather_rows(const Tensor& table, const Tensor& idx, Tensor& out) override {
    forward(__func__, [=, table = alias(table), idx = alias(idx), out = alias(out)](Backend& be,
        uint64_t) mutable { be.gather_rows(table, idx, out); }, table, idx, out);
  }
  void scatter_add_rows(const Tensor& src, const Tensor& idx, Tensor& table) override {
    forward(__func__, [=, src = alias(src), idx = alias(idx), table = alias(table)](Backend& be,
        uint64_t) mutable { be.scatter_add_rows(src, idx, table); }, src, idx, table);
  }
  void conv1d_max(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, Tensor& argmax) override {
    forward(__func__, [=, x = alias(x), w = alias(w), b = alias(b), y = alias(y),
        argmax = alias(argmax)](Backend& be, uint64_t) mutable { be.conv1d_max(x, w, b, y, argmax); }, x, w, b, y,
        argmax);
  }
  void conv1d_max_backward(const Tensor& x, const Tensor& w, const Tensor& argmax, const Tensor& gy, Tensor* gx,
      Tensor* gw, Tensor* gb) override {
    forward(__func__, [=, x = alias(x), w = alias(w), argmax = alias(argmax), gy = alias(gy), gx_ = held(gx),
        gw_ = held(gw), gb_ = held(gb)](Backend& be, uint64_t) mutable { be.conv1d_max_backward(x, w, argmax, gy,
        ptr(gx_), ptr(gw_), ptr(gb_)); }, x, w, argmax, gy, gx, gw, gb);
  }
  void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y, Tensor& mean,
      Tensor& rstd) override {
    forward(__func__, [=, x = alias(x), gamma = alias(gamma), beta = alias(beta), y = alias(y), mean = alias(mean),
        rstd = alias(rstd)](Backend& be, uint64_t) mutable { be.layer_norm(x, gamma, beta, eps, y, mean, rstd); }, x,
        gamma, beta, eps, y, mean, rstd);
  }
  void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
      const Tensor& gy, Tensor* gx, Tensor* ggamma, Tensor* gbeta) override {
    forward(__func__, [=, x = alias(x), gamma = alias(gamma), mean = alias(mean), rstd = alias(rstd), gy = alias(gy),
        gx_ = held(gx), ggamma_ = held(ggamma), gbeta_ = held(gbeta)](Backend& be,
        uint64_t) mutable { be.layer_norm_backward(x, gamma, mean, rstd, gy, ptr(gx_), ptr(ggamma_), ptr(gbeta_)); },
        x, gamma, mean, rstd, gy, gx, ggamma, gbeta);
  }
  void lstm_cell(const Tensor& gates, const Tensor& c_prev, double forget_bias, double cell_clip, Tensor& c,
      Tensor& h, Tensor* h_bf16 = nullptr) override {
    forward(__func__, [=, gates = alias(gates), c_prev = alias(c_prev), c = alias(c), h = alias(h),
        h_bf16_ = held(h_bf16)](Backend& be, uint64_t) mutable { be.lstm_cell(gates, c_prev, forget_bias, cell_clip,
        c, h, ptr(h_bf16_)); }, gates, c_prev, forget_bias, cell_clip, c, h, h_bf16);
  }
  void lstm_cell_backward(const Tensor& gates, const Tensor& c_prev, const Tensor& c, double forget_bias,
      double cell_clip, const Tensor* gc, const Tensor* gh, Tensor& ggates, Tensor* gc_prev,
      Tensor* ggates_bf16 = nullptr) override {
    forward(__func__, [=, gates = alias(gates), c_prev = alias(c_prev), c = alias(c), gc_ = held(gc), gh_ = held(gh),
        ggates = alias(ggates), gc_prev_ = held(gc_prev), ggates_bf16_ = held(ggates_bf16)](Backend& be,
        uint64_t) mutable { be.lstm_cell_backward(gates, c_prev, c, forget_bias, cell_clip, ptr(gc_), ptr(gh_),
        ggates, ptr(gc_prev_), ptr(ggates_bf16_)); }, gates, c_prev, c, forget_bias, cell_clip, gc, gh, ggates,
        gc_prev, ggates_bf16);
  }
  void lstm_output(const Tensor& m, double proj_clip, Tensor& y, Tensor* y_bf16) override {
    forward(__func__, [=, m = alias(m), y = alias(y), y_bf16_ = held(y_bf16)](Backend& be,
        uint64_t) mutable { be.lstm_output(m, proj_clip, y, ptr(y_bf16_)); }, m, proj_clip, y, y_bf16);
  }
  void lstm_output_backward(const Tensor& m, const Tensor* gy, const Tensor& grec, double proj_clip, Tensor& gm,
      Tensor* gm_bf16) override {
    forward(__func__, [=, m = alias(m), gy_ = held(gy), grec = alias(grec), gm = alias(gm),
        gm_bf16_ = held(gm_bf16)](Backend& be, uint64_t) mutable { be.lstm_output_backward(m, ptr(gy_), grec,
        proj_clip, gm, ptr(gm_bf16_)); }, m, gy, grec, proj_clip, gm, gm_bf16);
  }
  void highway(const Tensor& carry, const Tensor& transform, const Tensor& x, Tensor& y) override {
    forward(__func__, [=, carry = alias(carry), transform = alias(transform), x = alias(x),
        y = alias(y)](Backend& be, uint64_t) mutable { be.highway(carry, transform, x, y); }, carry, transform, x, y);
  }
  void highway_backward(const Tensor& carry, const Tensor& transform, const Tensor& x, const Tensor& gy,
      Tensor& gcarry, Tensor& gtransform, Tensor& gx) override {
    forward(__func__, [=, carry = alias(carry), transform = alias(transform), x = alias(x), gy = alias(gy),
        gcarry = alias(gcarry), gtransform = alias(gtransform), gx = alias(gx)](Backend& be,
        uint64_t) mutable { be.highway_backward(carry, transform, x, gy, gcarry, gtransform, gx); }, carry,
        transform, x, gy, gcarry, gtransform, gx);
  }
  void adagrad(Tensor& w, Tensor& acc, const Tensor& g, double lr) override {
    forward(__func__, [=, w = alias(w), acc = alias(acc), g = alias(g)](Backend& be,
        uint64_t) mutable { be.adagrad(w, acc, g, lr); }, w, acc, g, lr);
  }
  void adagrad_rows(Tensor& w, Tensor& acc, const Tensor& ids, const Tensor& g, double lr) override {
    forward(__func__, [=, w = alias(w), acc = alias(acc), ids = alias(ids), g = alias(g)](Backend& be,
        uint64_t) mutable { be.adagrad_rows(w, acc, ids, g, lr); }, w, acc, ids, g, lr);
  }
  void multi_sum_squares(const std::vector<Tensor>& xs, Tensor& out) override {
    forward(__func__, [=, xs = aliases(xs), out = alias(out)](Backend& be,
        uint64_t) mutable { be.multi_sum_squares(xs, out); }, xs, out);
  }
  void multi_scale(const std::vector<Tensor>& xs, const Tensor& factor) override {
    forward(__func__, [=, xs = aliases(xs), factor = alias(factor)](Backend& be,
        uint64_t) mutable { be.multi_scale(xs, factor); }, xs, factor);
  }
  void multi_adagrad(const std::vector<Tensor>& w, const std::vector<Tensor>& acc, const std::vector<Tensor>& g,
      double lr) override {
    forward(__func__, [=, w = aliases(w), acc = aliases(acc), g = aliases(g)](Backend& be,
        uint64_t) mutable { be.multi_adagrad(w, acc, g, lr); }, w, acc, g, lr);
  }
  void multi_adam(const std::vector<Tensor>& w, const std::vector<Tensor>& m, const std::vector<Tensor>& v,
      const std::vector<Tensor>& g, const std::vector<double>& weight_decay, const AdamHyper& h) override {
    refuse_capture("Adam's learning rate and bias corrections are the step's own");
    forward(__func__, [=, w = aliases(w), m = aliases(m), v = aliases(v), g = aliases(g)](Backend& be,
        uint64_t) mutable { be.multi_adam(w, m, v, g, weight_decay, h); }, w, m, v, g, weight_decay, h);
  }
  void multi_cast(const std::vector<Tensor>& src, const std::vector<Tensor>& dst) override {
    forward(__func__, [=, src = aliases(src), dst = aliases(dst)](Backend& be, uint64_t) mutable { be.multi_cast(src,
        dst); }, src, dst);
  }
  void crf_nll(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans, const Tensor& start,
      const Tensor& end, Tensor& loss, Tensor& alpha, Tensor& log_z) override {
    forward(__func__, [=, em = alias(em), tags = alias(tags), lengths = alias(lengths), trans = alias(trans),
        start = alias(start), end = alias(end), loss = alias(loss), alpha = alias(alpha),
        log_z = alias(log_z)](Backend& be, uint64_t) mutable { be.crf_nll(em, tags, lengths, trans, start, end, loss,
        alpha, log_z); }, em, tags, lengths, trans, start, end, loss, alpha, log_z);
  }
  void crf_nll_backward(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans,
      const Tensor& end, const Tensor& alpha, const Tensor& log_z, const Tensor& gloss, Tensor& beta, Tensor& gem,
      Tensor& gtrans, Tensor& gstart, Tensor& gend) override {
    forward(__func__, [=, em = alias(em), tags = alias(tags), lengths = alias(lengths), trans = alias(trans),
        end = alias(end), alpha = alias(alpha), log_z = alias(log_z), gloss = alias(gloss), beta = alias(beta),
        gem = alias(gem), gtrans = alias(gtrans), gstart = alias(gstart), gend = alias(gend)](Backend& be,
        uint64_t) mutable { be.crf_nll_backward(em, tags, lengths, trans, end, alpha, log_z, gloss, beta, gem,
        gtrans, gstart, gend); }, em, tags, lengths, trans, end, alpha, log_z, gloss, beta, gem, gtrans, gstart,
        gend);
  }
  void crf_viterbi(const Tensor& em, const Tensor& lengths, const Tensor& trans, const Tensor& start,
      const Tensor& end, Tensor& delta, Tensor& back, Tensor& path) override {
    forward(__func__, [=, em = alias(em), lengths = alias(lengths), trans = alias(trans), start = alias(start),
        end = alias(end), delta = alias(delta), back = alias(back), path = alias(path)](Backend& be,
        uint64_t) mutable { be.crf_viterbi(em, lengths, trans, start, end, delta, back, path); }, em, lengths, trans,
        start, end, delta, back, path);
  }
  // Dropout's and attention's random offsets move on replay as the step's own draws would.
  void dropout_mask(uint64_t seed, uint64_t offset, double p, Tensor& mask) override {
    check_seed(seed);
    forward(__func__, [=, mask = alias(mask)](Backend& be, uint64_t shift) mutable {
      be.dropout_mask(seed, offset + shift, p, mask);
    }, seed, offset, p, mask);
  }
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, double scale, double p,
                 uint64_t seed, uint64_t offset, Tensor& out, Tensor& lse) override {
    if (p > 0) check_seed(seed);
    forward(__func__, [=, q = alias(q), k = alias(k), v = alias(v), key_mask = alias(key_mask), out = alias(out),
                       lse = alias(lse)](Backend& be, uint64_t shift) mutable {
      be.attention(q, k, v, key_mask, scale, p, seed, offset + shift, out, lse);
    }, q, k, v, key_mask, scale, p, seed, offset, out, lse);
  }
  void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, double scale,
                          double p, uint64_t seed, uint64_t offset, const Tensor& out, const Tensor& lse,
                          const Tensor& gout, Tensor& gq, Tensor& gk, Tensor& gv) override {
    if (p > 0) check_seed(seed);
    forward(__func__, [=, q = alias(q), k = alias(k), v = alias(v), key_mask = alias(key_mask), out = alias(out),
                       lse = alias(lse), gout = alias(gout), gq = alias(gq), gk = alias(gk),
                       gv = alias(gv)](Backend& be, uint64_t shift) mutable {
      be.attention_backward(q, k, v, key_mask, scale, p, seed, offset + shift, out, lse, gout, gq, gk, gv);
    }, q, k, v, key_mask, scale, p, seed, offset, out, lse, gout, gq, gk, gv);
  }
  void draw_distinct(const Tensor& list, uint64_t key, Tensor& out) override {
    refuse_capture("draw_distinct's key is the step's own");
    forward(__func__, [=, list = alias(list), out = alias(out)](Backend& be, uint64_t) mutable {
      be.draw_distinct(list, key, out);
    }, list, key, out);
  }
  int64_t count_nonfinite(const Tensor& x, bool allow_neg_inf) override {
    refuse_capture("the step counts non-finite values on the host");
    if (!inside()) note(__func__, x, allow_neg_inf);
    const StepReplay::InsidePrimitive in_primitive;
    return in().count_nonfinite(x, allow_neg_inf);
  }
  // While a step is captured, padded to one row an entry as CUDA returns them (ids -1, rows 0):
  // shapes that do not change with the step's distinct ids. A replay coalesces into them.
  std::pair<Tensor, Tensor> coalesce_rows(const Tensor& ids, const Tensor& rows, bool allow_padding) override {
    if (inside()) return in().coalesce_rows(ids, rows, allow_padding);
    note(__func__, ids, rows, allow_padding);
    const StepReplay::InsidePrimitive in_primitive;
    StepReplay* r = StepReplay::capturing_on(Device::cpu());
    if (!r || !allow_padding) {
      if (r) r->refuse("coalesce_rows without padding has the step's own shape");
      return in().coalesce_rows(ids, rows, allow_padding);
    }
    Tensor out_ids = Tensor::empty({ids.numel()}, DType::I32, device());
    Tensor out_rows = Tensor::empty({ids.numel(), rows.dim(1)}, rows.dtype(), device());
    auto coalesce_into = [ids = alias(ids), rows = alias(rows), out_ids = alias(out_ids),
                          out_rows = alias(out_rows)]() mutable {
      auto [u_ids, u_rows] = in().coalesce_rows(ids, rows, true);
      pad_into(u_ids, out_ids, -1);
      pad_into(u_rows, out_rows, 0);
    };
    r->keep([coalesce_into](uint64_t) mutable { coalesce_into(); });
    coalesce_into();
    return {out_ids, out_rows};
  }

 private:
  static Backend& in() { return computing_cpu_backend(); }
  // `from`'s rows, then `fill` up to `to`'s rows (without arithmetic: as the dry backend leaves them).
  static void pad_into(const Tensor& from, Tensor& to, double fill) {
    if (!cpu_arithmetic() && to.dtype() != DType::I32) return;
    const size_t row = static_cast<size_t>(to.numel() / std::max<int64_t>(to.dim(0), 1)) * dtype_size(to.dtype());
    const size_t have = static_cast<size_t>(from.dim(0)) * row;
    if (have > 0) std::memcpy(to.raw(), from.raw(), have);
    Tensor rest = to.rows(from.dim(0), to.dim(0));
    if (rest.numel() > 0) in().fill(rest, fill);
  }
  template <typename... A>
  static void note(const char* prim, const A&... args) {
    if (!replay_audit::on()) return;
    Sig s;
    (add(s, args), ...);
    replay_audit::note(prim, s);
  }
  // Work started inside a primitive (its scratch fills) is that primitive's: neither noted nor kept.
  static bool inside() { return StepReplay::InsidePrimitive::active(); }
  static void check_seed(uint64_t seed) {
    if (StepReplay* r = StepReplay::capturing_on(Device::cpu()); r && !inside()) r->check_dropout_seed(seed);
  }
  static void refuse_capture(const char* why) {
    if (StepReplay* r = StepReplay::capturing_on(Device::cpu()); r && !inside()) r->refuse(why);
  }
  // Notes the primitive, keeps it while a step is captured, and runs it. `f(backend, shift)`: shift
  // is how far dropout's offsets moved since the capture (0 when run now).
  template <typename F, typename... A>
  static void forward(const char* prim, F f, const A&... args) {
    if (!inside()) {
      note(prim, args...);
      if (StepReplay* r = StepReplay::capturing_on(Device::cpu())) r->keep([f](uint64_t shift) mutable { f(in(), shift); });
    }
    const StepReplay::InsidePrimitive in_primitive;
    f(in(), 0);
  }
};

}  // namespace

Backend& recording_cpu_backend() {
  static RecordingBackend b;
  return b;
}

}  // namespace sa
