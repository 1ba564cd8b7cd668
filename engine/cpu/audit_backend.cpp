// The replay audit (engine/replay_audit.h): a layer over the CPU backend that records each
// primitive's signature (its shapes, its scalar arguments, its buffers) before running it, and
// compares every step with the step before.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "engine/cpu/cpu_backend.h"
#include "engine/replay_audit.h"

namespace sa {
namespace {

// What a replay fixes at capture, in three parts: shapes and kinds (a capture per shape), scalar
// arguments (values the kernels would read from device memory instead), buffers (the pool's).
struct Sig {
  uint64_t shape = 1, value = 1, addr = 1;
};
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

struct Record {
  const char* prim;
  Sig sig;
};
using Tapes = std::vector<std::pair<std::thread::id, std::vector<Record>>>;

struct Audit {
  std::atomic<bool> on{false}, recording{false};
  std::atomic<uint64_t> generation{1};
  std::mutex mu;
  Tapes current, previous;
  bool have_previous = false;
  ReplayAudit totals;
} g_audit;

thread_local std::vector<Record>* t_tape = nullptr;
thread_local uint64_t t_generation = 0;

std::vector<Record>& tape_of_this_thread() {
  const uint64_t gen = g_audit.generation.load();
  if (t_generation != gen) {
    std::lock_guard lock(g_audit.mu);
    const auto id = std::this_thread::get_id();
    auto it = std::find_if(g_audit.current.begin(), g_audit.current.end(), [&](const auto& t) { return t.first == id; });
    if (it == g_audit.current.end()) {
      g_audit.current.reserve(64);  // no reallocation under a thread's cached pointer (threads per step: a few)
      SA_CHECK(g_audit.current.size() < 64, "replay audit: more than 64 threads ran primitives in one step");
      it = g_audit.current.emplace(g_audit.current.end(), id, std::vector<Record>{});
    }
    t_tape = &it->second, t_generation = gen;
  }
  return *t_tape;
}

// Adds the step `now` to `a`, each thread's primitives against the same thread's the step before.
void compare(const Tapes& before, const Tapes& now, ReplayAudit& a) {
  ++a.steps;
  for (const auto& [id, tape] : now) {
    a.launches += static_cast<int64_t>(tape.size());
    auto it = std::find_if(before.begin(), before.end(), [&](const auto& t) { return t.first == id; });
    const std::vector<Record> none;
    const std::vector<Record>& old = it == before.end() ? none : it->second;
    size_t i = 0;
    for (; i < tape.size() && i < old.size(); ++i) {
      const Record &r = tape[i], &o = old[i];
      if (std::strcmp(r.prim, o.prim) != 0) break;
      if (r.sig.shape != o.sig.shape)
        ++a.shapes, ++a.shapes_by[r.prim];
      else if (r.sig.value != o.sig.value)
        ++a.values, ++a.values_by[r.prim];
      else if (r.sig.addr != o.sig.addr)
        ++a.buffers;
      else
        ++a.same;
    }
    a.order += static_cast<int64_t>(tape.size() - i);
  }
}

// The CPU backend (with arithmetic or without), each primitive noted first.
class AuditBackend final : public Backend {
 public:
  Device device() const override { return Device::cpu(); }
  CachingAllocator& allocator() override { return host_allocator(); }
  void synchronize() override { in().synchronize(); }

  void fill(Tensor& t, double value) override {
    note(__func__, t, value);
    in().fill(t, value);
  }
  void copy_strided(const Tensor& src, Tensor& dst, const CopyPlan& plan) override {
    note(__func__, src, dst, plan);
    in().copy_strided(src, dst, plan);
  }
  void cast(const Tensor& src, Tensor& dst) override {
    note(__func__, src, dst);
    in().cast(src, dst);
  }
  void gemm(const GemmArgs& g, const Tensor& a, const Tensor& b, Tensor& c) override {
    note(__func__, g, a, b, c);
    in().gemm(g, a, b, c);
  }
  void unary(UnaryOp op, const Tensor& x, Tensor& y, double p0, double p1) override {
    note(__func__, op, x, y, p0, p1);
    in().unary(op, x, y, p0, p1);
  }
  void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& gy, Tensor& gx, double p0, double p1, bool accumulate) override {
    note(__func__, op, x, y, gy, gx, p0, p1, accumulate);
    in().unary_backward(op, x, y, gy, gx, p0, p1, accumulate);
  }
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out, const BroadcastPlan& p) override {
    note(__func__, op, a, b, out, p);
    in().binary(op, a, b, out, p);
  }
  void sum_to(const Tensor& g, Tensor& out, const BroadcastPlan& p, bool accumulate) override {
    note(__func__, g, out, p, accumulate);
    in().sum_to(g, out, p, accumulate);
  }
  void axpy(double alpha, const Tensor& x, Tensor& y) override {
    note(__func__, alpha, x, y);
    in().axpy(alpha, x, y);
  }
  void masked_fill(const Tensor& x, const Tensor& mask, double value, Tensor& y, const BroadcastPlan& p) override {
    note(__func__, x, mask, value, y, p);
    in().masked_fill(x, mask, value, y, p);
  }
  void sum_squares(const Tensor& x, Tensor& out) override {
    note(__func__, x, out);
    in().sum_squares(x, out);
  }
  void reduce(ReduceOp op, const Tensor& x, int64_t outer, int64_t n, int64_t inner, Tensor& out, Tensor* argmax) override {
    note(__func__, op, x, outer, n, inner, out, argmax);
    in().reduce(op, x, outer, n, inner, out, argmax);
  }
  void reduce_max_backward(const Tensor& gy, const Tensor& argmax, int64_t outer, int64_t n, int64_t inner, Tensor& gx) override {
    note(__func__, gy, argmax, outer, n, inner, gx);
    in().reduce_max_backward(gy, argmax, outer, n, inner, gx);
  }
  void softmax(const Tensor& x, Tensor& y, bool log) override {
    note(__func__, x, y, log);
    in().softmax(x, y, log);
  }
  void softmax_backward(const Tensor& y, const Tensor& gy, Tensor& gx, bool log, bool accumulate) override {
    note(__func__, y, gy, gx, log, accumulate);
    in().softmax_backward(y, gy, gx, log, accumulate);
  }
  void logsumexp(const Tensor& x, Tensor& out) override {
    note(__func__, x, out);
    in().logsumexp(x, out);
  }
  void cross_entropy(const Tensor& x, const Tensor& labels, Tensor& loss, Tensor& lse) override {
    note(__func__, x, labels, loss, lse);
    in().cross_entropy(x, labels, loss, lse);
  }
  void cross_entropy_backward(const Tensor& x, const Tensor& labels, const Tensor& lse, const Tensor& gloss, Tensor& gx, bool accumulate) override {
    note(__func__, x, labels, lse, gloss, gx, accumulate);
    in().cross_entropy_backward(x, labels, lse, gloss, gx, accumulate);
  }
  void soft_cross_entropy(const Tensor& x, const Tensor& t, Tensor& loss, Tensor& lse) override {
    note(__func__, x, t, loss, lse);
    in().soft_cross_entropy(x, t, loss, lse);
  }
  void soft_cross_entropy_backward(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss, Tensor& gx, bool accumulate) override {
    note(__func__, x, t, lse, gloss, gx, accumulate);
    in().soft_cross_entropy_backward(x, t, lse, gloss, gx, accumulate);
  }
  void candidate_softmax(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc, const Tensor& bc, const Tensor& own_ids, const Tensor& cand_ids, const Tensor& own_w, Tensor& loss, Tensor& lse, Tensor* logp = nullptr) override {
    note(__func__, x, wt, bt, Wc, bc, own_ids, cand_ids, own_w, loss, lse, logp);
    in().candidate_softmax(x, wt, bt, Wc, bc, own_ids, cand_ids, own_w, loss, lse, logp);
  }
  void candidate_softmax_backward(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc, const Tensor& bc, const Tensor& own_ids, const Tensor& cand_ids, const Tensor& own_w, const Tensor& lse, const Tensor& gloss, Tensor& gx, Tensor& gwt, Tensor& gbt, Tensor& gWc, Tensor& gbc, Tensor* logp = nullptr) override {
    note(__func__, x, wt, bt, Wc, bc, own_ids, cand_ids, own_w, lse, gloss, gx, gwt, gbt, gWc, gbc, logp);
    in().candidate_softmax_backward(x, wt, bt, Wc, bc, own_ids, cand_ids, own_w, lse, gloss, gx, gwt, gbt, gWc, gbc, logp);
  }
  void select_rows(const Tensor& u, const Tensor& v, const Tensor& rows, const Tensor& enabled, Tensor& out) override {
    note(__func__, u, v, rows, enabled, out);
    in().select_rows(u, v, rows, enabled, out);
  }
  void select_candidate_softmax(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& u, const Tensor& v, const Tensor& rows, const Tensor& enabled, const Tensor& Wc, const Tensor& bc, const Tensor& cand_ids, Tensor& loss, Tensor& lse, Tensor& selected) override {
    note(__func__, x, W, b, u, v, rows, enabled, Wc, bc, cand_ids, loss, lse, selected);
    in().select_candidate_softmax(x, W, b, u, v, rows, enabled, Wc, bc, cand_ids, loss, lse, selected);
  }
  void gather_rows(const Tensor& table, const Tensor& idx, Tensor& out) override {
    note(__func__, table, idx, out);
    in().gather_rows(table, idx, out);
  }
  void scatter_add_rows(const Tensor& src, const Tensor& idx, Tensor& table) override {
    note(__func__, src, idx, table);
    in().scatter_add_rows(src, idx, table);
  }
  std::pair<Tensor, Tensor> coalesce_rows(const Tensor& ids, const Tensor& rows, bool allow_padding) override {
    note(__func__, ids, rows, allow_padding);
    return in().coalesce_rows(ids, rows, allow_padding);
  }
  void conv1d_max(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, Tensor& argmax) override {
    note(__func__, x, w, b, y, argmax);
    in().conv1d_max(x, w, b, y, argmax);
  }
  void conv1d_max_backward(const Tensor& x, const Tensor& w, const Tensor& argmax, const Tensor& gy, Tensor* gx, Tensor* gw, Tensor* gb) override {
    note(__func__, x, w, argmax, gy, gx, gw, gb);
    in().conv1d_max_backward(x, w, argmax, gy, gx, gw, gb);
  }
  void dropout_mask(uint64_t seed, uint64_t offset, double p, Tensor& mask) override {
    note(__func__, seed, offset, p, mask);
    in().dropout_mask(seed, offset, p, mask);
  }
  void draw_distinct(const Tensor& list, uint64_t key, Tensor& out) override {
    note(__func__, list, key, out);
    in().draw_distinct(list, key, out);
  }
  void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y, Tensor& mean, Tensor& rstd) override {
    note(__func__, x, gamma, beta, eps, y, mean, rstd);
    in().layer_norm(x, gamma, beta, eps, y, mean, rstd);
  }
  void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, const Tensor& gy, Tensor* gx, Tensor* ggamma, Tensor* gbeta) override {
    note(__func__, x, gamma, mean, rstd, gy, gx, ggamma, gbeta);
    in().layer_norm_backward(x, gamma, mean, rstd, gy, gx, ggamma, gbeta);
  }
  void lstm_cell(const Tensor& gates, const Tensor& c_prev, double forget_bias, double cell_clip, Tensor& c, Tensor& h, Tensor* h_bf16 = nullptr) override {
    note(__func__, gates, c_prev, forget_bias, cell_clip, c, h, h_bf16);
    in().lstm_cell(gates, c_prev, forget_bias, cell_clip, c, h, h_bf16);
  }
  void lstm_cell_backward(const Tensor& gates, const Tensor& c_prev, const Tensor& c, double forget_bias, double cell_clip, const Tensor* gc, const Tensor* gh, Tensor& ggates, Tensor* gc_prev, Tensor* ggates_bf16 = nullptr) override {
    note(__func__, gates, c_prev, c, forget_bias, cell_clip, gc, gh, ggates, gc_prev, ggates_bf16);
    in().lstm_cell_backward(gates, c_prev, c, forget_bias, cell_clip, gc, gh, ggates, gc_prev, ggates_bf16);
  }
  void lstm_output(const Tensor& m, double proj_clip, Tensor& y, Tensor* y_bf16) override {
    note(__func__, m, proj_clip, y, y_bf16);
    in().lstm_output(m, proj_clip, y, y_bf16);
  }
  void lstm_output_backward(const Tensor& m, const Tensor* gy, const Tensor& grec, double proj_clip, Tensor& gm, Tensor* gm_bf16) override {
    note(__func__, m, gy, grec, proj_clip, gm, gm_bf16);
    in().lstm_output_backward(m, gy, grec, proj_clip, gm, gm_bf16);
  }
  void highway(const Tensor& carry, const Tensor& transform, const Tensor& x, Tensor& y) override {
    note(__func__, carry, transform, x, y);
    in().highway(carry, transform, x, y);
  }
  void highway_backward(const Tensor& carry, const Tensor& transform, const Tensor& x, const Tensor& gy, Tensor& gcarry, Tensor& gtransform, Tensor& gx) override {
    note(__func__, carry, transform, x, gy, gcarry, gtransform, gx);
    in().highway_backward(carry, transform, x, gy, gcarry, gtransform, gx);
  }
  void adagrad(Tensor& w, Tensor& acc, const Tensor& g, double lr) override {
    note(__func__, w, acc, g, lr);
    in().adagrad(w, acc, g, lr);
  }
  void adagrad_rows(Tensor& w, Tensor& acc, const Tensor& ids, const Tensor& g, double lr) override {
    note(__func__, w, acc, ids, g, lr);
    in().adagrad_rows(w, acc, ids, g, lr);
  }
  void multi_sum_squares(const std::vector<Tensor>& xs, Tensor& out) override {
    note(__func__, xs, out);
    in().multi_sum_squares(xs, out);
  }
  void multi_scale(const std::vector<Tensor>& xs, const Tensor& factor) override {
    note(__func__, xs, factor);
    in().multi_scale(xs, factor);
  }
  void multi_adagrad(const std::vector<Tensor>& w, const std::vector<Tensor>& acc, const std::vector<Tensor>& g, double lr) override {
    note(__func__, w, acc, g, lr);
    in().multi_adagrad(w, acc, g, lr);
  }
  void multi_adam(const std::vector<Tensor>& w, const std::vector<Tensor>& m, const std::vector<Tensor>& v, const std::vector<Tensor>& g, const std::vector<double>& weight_decay, const AdamHyper& h) override {
    note(__func__, w, m, v, g, weight_decay, h);
    in().multi_adam(w, m, v, g, weight_decay, h);
  }
  void multi_cast(const std::vector<Tensor>& src, const std::vector<Tensor>& dst) override {
    note(__func__, src, dst);
    in().multi_cast(src, dst);
  }
  void crf_nll(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans, const Tensor& start, const Tensor& end, Tensor& loss, Tensor& alpha, Tensor& log_z) override {
    note(__func__, em, tags, lengths, trans, start, end, loss, alpha, log_z);
    in().crf_nll(em, tags, lengths, trans, start, end, loss, alpha, log_z);
  }
  void crf_nll_backward(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans, const Tensor& end, const Tensor& alpha, const Tensor& log_z, const Tensor& gloss, Tensor& beta, Tensor& gem, Tensor& gtrans, Tensor& gstart, Tensor& gend) override {
    note(__func__, em, tags, lengths, trans, end, alpha, log_z, gloss, beta, gem, gtrans, gstart, gend);
    in().crf_nll_backward(em, tags, lengths, trans, end, alpha, log_z, gloss, beta, gem, gtrans, gstart, gend);
  }
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, double scale, double p, uint64_t seed, uint64_t offset, Tensor& out, Tensor& lse) override {
    note(__func__, q, k, v, key_mask, scale, p, seed, offset, out, lse);
    in().attention(q, k, v, key_mask, scale, p, seed, offset, out, lse);
  }
  void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, double scale, double p, uint64_t seed, uint64_t offset, const Tensor& out, const Tensor& lse, const Tensor& gout, Tensor& gq, Tensor& gk, Tensor& gv) override {
    note(__func__, q, k, v, key_mask, scale, p, seed, offset, out, lse, gout, gq, gk, gv);
    in().attention_backward(q, k, v, key_mask, scale, p, seed, offset, out, lse, gout, gq, gk, gv);
  }
  void crf_viterbi(const Tensor& em, const Tensor& lengths, const Tensor& trans, const Tensor& start, const Tensor& end, Tensor& delta, Tensor& back, Tensor& path) override {
    note(__func__, em, lengths, trans, start, end, delta, back, path);
    in().crf_viterbi(em, lengths, trans, start, end, delta, back, path);
  }
  int64_t count_nonfinite(const Tensor& x, bool allow_neg_inf) override {
    note(__func__, x, allow_neg_inf);
    return in().count_nonfinite(x, allow_neg_inf);
  }

 private:
  static Backend& in() { return computing_cpu_backend(); }
  template <typename... A>
  static void note(const char* prim, const A&... args) {
    if (!g_audit.recording.load(std::memory_order_relaxed)) return;
    Record r{prim, {}};
    (add(r.sig, args), ...);
    tape_of_this_thread().push_back(r);
  }
};

std::string top(const std::map<std::string, int64_t>& by, int64_t steps) {
  std::vector<std::pair<int64_t, std::string>> v;
  for (const auto& [name, n] : by) v.push_back({-n, name});
  std::sort(v.begin(), v.end());
  std::string s;
  for (size_t i = 0; i < v.size() && i < 4; ++i)
    s += fmt::format("{}{} {:.1f}", i ? ", " : "", v[i].second, static_cast<double>(-v[i].first) / steps);
  return s.empty() ? "" : " (" + s + ")";
}

}  // namespace

Backend& audit_cpu_backend() {
  static AuditBackend b;
  return b;
}

namespace replay_audit {

void start() {
  std::lock_guard lock(g_audit.mu);
  g_audit.totals = {}, g_audit.have_previous = false, g_audit.current.clear(), g_audit.previous.clear();
  g_audit.generation.fetch_add(1);
  g_audit.on = true;
}
void stop() {
  g_audit.on = false;
  g_audit.recording = false;
}
bool on() { return g_audit.on.load(std::memory_order_relaxed); }

void step_begun() {
  if (!on()) return;
  std::lock_guard lock(g_audit.mu);
  g_audit.current.clear();
  g_audit.generation.fetch_add(1);
  g_audit.recording = true;
}

void step_ended() {
  if (!on()) return;
  g_audit.recording = false;
  std::lock_guard lock(g_audit.mu);
  if (g_audit.have_previous) compare(g_audit.previous, g_audit.current, g_audit.totals);
  g_audit.previous = std::move(g_audit.current);
  g_audit.current.clear();
  g_audit.generation.fetch_add(1);
  g_audit.have_previous = true;
}

ReplayAudit totals() {
  std::lock_guard lock(g_audit.mu);
  return g_audit.totals;
}
void reset_totals() {
  std::lock_guard lock(g_audit.mu);
  g_audit.totals = {};
}

std::string summary(const ReplayAudit& a) {
  if (a.steps == 0) return "replay audit: no step had a step before it";
  const double n = static_cast<double>(a.steps);
  return fmt::format(
      "replay audit, each of {} steps against the step before: {:.1f} primitives a step; {:.1f} as before, "
      "{:.1f} on other buffers only, {:.1f} with other scalar arguments{}, {:.1f} of other shapes{}, {:.1f} at or past "
      "a change in the sequence of primitives",
      a.steps, a.launches / n, a.same / n, a.buffers / n, a.values / n, top(a.values_by, a.steps), a.shapes / n,
      top(a.shapes_by, a.steps), a.order / n);
}

}  // namespace replay_audit
}  // namespace sa
