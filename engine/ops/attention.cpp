// Scaled dot-product attention with a key padding mask and dropout, as one op.
#include "engine/ops/op_util.h"
#include "engine/ops/ops.h"

namespace sa::ops {
using namespace detail;

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, double scale, double p,
                 Generator* gen) {
  check_same("attention", {q, k, v});
  SA_CHECK(q.rank() == 4 && k.shape() == q.shape() && v.shape() == q.shape(),
           "attention: q {}, k {} and v {} must be one [B, H, T, d] shape", describe(q), describe(k), describe(v));
  const int64_t B = q.dim(0), H = q.dim(1), T = q.dim(2);
  SA_CHECK(key_mask.dtype() == DType::U8 && key_mask.device() == q.device() && key_mask.shape() == Shape({B, T}),
           "attention: key_mask must be u8 [{}, {}] on {}, got {}", B, T, q.device().str(), describe(key_mask));
  SA_CHECK(p >= 0 && p < 1 && (p == 0 || gen), "attention: dropout {} needs a probability in [0, 1) and a generator", p);
  const uint64_t seed = gen ? gen->seed : 0, offset = p > 0 ? gen->take(static_cast<uint64_t>(B * H * T * T)) : 0;
  Tensor out = like(q), lse = Tensor::empty({B, H, T}, q.dtype(), q.device());
  be(q).attention(q, k, v, key_mask, scale, p, seed, offset, out, lse);
  record(Op::attention, {q, k, v}, {out}, [=](const std::vector<Tensor>& gs) {
    Tensor gq = like(q), gk = like(k), gv = like(v);
    be(q).attention_backward(q, k, v, key_mask, scale, p, seed, offset, out, lse, gs[0], gq, gk, gv);
    accumulate_grad(q, gq, true);
    accumulate_grad(k, gk, true);
    accumulate_grad(v, gv, true);
  });
  return out;
}

}  // namespace sa::ops
