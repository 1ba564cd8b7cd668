// The linear-chain CRF of the NER tagger: its loss by the forward algorithm (gradients by
// forward-backward) and Viterbi decoding.
#include "engine/ops/op_util.h"
#include "engine/ops/ops.h"

namespace sa::ops {
using namespace detail;

namespace {

void check_crf(const char* op, const Tensor& em, const Tensor* tags, const Tensor& lengths, const Tensor& trans,
               const Tensor& start, const Tensor& end) {
  check_same(op, {em, trans, start, end});
  SA_CHECK(em.rank() == 3, "{}: emissions {} must be [B, T, K]", op, describe(em));
  const int64_t B = em.dim(0), T = em.dim(1), K = em.dim(2);
  SA_CHECK(trans.shape() == (Shape{K, K}) && start.shape() == Shape{K} && end.shape() == Shape{K},
           "{}: transitions {}, start {} and end {} must be [{}, {}], [{}] and [{}]", op, describe(trans),
           describe(start), describe(end), K, K, K, K);
  SA_CHECK(lengths.dtype() == DType::I32 && lengths.shape() == Shape{B} && lengths.device() == em.device(),
           "{}: lengths {} must be i32 [{}] on {}", op, describe(lengths), B, em.device().str());
  SA_CHECK(!tags || (tags->dtype() == DType::I32 && tags->shape() == (Shape{B, T}) && tags->device() == em.device()),
           "{}: tags {} must be i32 [{}, {}] on {}", op, tags ? describe(*tags) : "", B, T, em.device().str());
  // Lengths and tags index the scores: check them on the host (a few hundred values).
  const std::vector<double> len = lengths.to(Device::cpu()).values();
  for (int64_t b = 0; b < B; ++b) SA_CHECK(len[b] >= 1 && len[b] <= T, "{}: sentence {} has length {} (1..{})", op, b, len[b], T);
  if (tags) {
    const std::vector<double> y = tags->to(Device::cpu()).values();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < len[b]; ++t)
        SA_CHECK(y[b * T + t] >= 0 && y[b * T + t] < K, "{}: tag {} at sentence {}, position {} is not in 0..{}", op,
                 y[b * T + t], b, t, K - 1);
  }
}

}  // namespace

Tensor crf_nll(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans, const Tensor& start,
               const Tensor& end) {
  check_crf("crf_nll", em, &tags, lengths, trans, start, end);
  const int64_t B = em.dim(0), T = em.dim(1), K = em.dim(2);
  Tensor loss = Tensor::empty({B}, em.dtype(), em.device());
  Tensor alpha = Tensor::empty({B, T, K}, DType::F64, em.device()), log_z = Tensor::empty({B}, DType::F64, em.device());
  be(em).crf_nll(em, tags, lengths, trans, start, end, loss, alpha, log_z);
  record(Op::crf_nll, {em, trans, start, end}, {loss}, [=](const std::vector<Tensor>& gs) {
    Tensor gem = like(em), gtrans = zeros_like(trans), gstart = zeros_like(start), gend = zeros_like(end);
    Tensor beta = Tensor::empty({B, T, K}, DType::F64, em.device());
    be(em).crf_nll_backward(em, tags, lengths, trans, end, alpha, log_z, gs[0], beta, gem, gtrans, gstart, gend);
    accumulate_grad(em, gem, true);
    accumulate_grad(trans, gtrans, true);
    accumulate_grad(start, gstart, true);
    accumulate_grad(end, gend, true);
  });
  return loss;
}

Tensor crf_viterbi(const Tensor& em, const Tensor& lengths, const Tensor& trans, const Tensor& start, const Tensor& end) {
  check_crf("crf_viterbi", em, nullptr, lengths, trans, start, end);
  const int64_t B = em.dim(0), T = em.dim(1), K = em.dim(2);
  Tensor path = Tensor::empty({B, T}, DType::I32, em.device());
  Tensor delta = Tensor::empty({B, 2 * K}, DType::F64, em.device()), back = Tensor::empty({B, T, K}, DType::I32, em.device());
  be(em).crf_viterbi(em, lengths, trans, start, end, delta, back, path);
  return path;
}

}  // namespace sa::ops
