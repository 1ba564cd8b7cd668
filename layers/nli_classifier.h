// The XNLI task's model, the NYU MultiNLI BiLSTM baseline over frozen vectors: premise and
// hypothesis each through its own BiLSTM (not shared), mean-pooled over the true length ->
// [u; v; u - v; u * v] -> dense with ReLU -> dropout -> dense to the 3 labels.
#pragma once
#include <cstdint>
#include <vector>

#include "layers/bilstm.h"

namespace sa {

struct NliClassifier {
  BiLstm premise, hypothesis;  // hidden H per direction each
  Tensor W1, b1, W2, b2;       // [8H, dense], [dense], [dense, 3], [3]
  double dropout = 0.5;

  static NliClassifier init(int64_t features, int64_t hidden, int64_t dense, double dropout, uint64_t seed,
                            Device dev);
  // Padded premises p [B, Tp, F] and hypotheses h [B, Th, F] -> logits [B, 3].
  Tensor logits(const Tensor& p, const std::vector<int>& p_len, const Tensor& h, const std::vector<int>& h_len,
                bool train, Generator& gen) const;
  std::vector<Tensor> params() const;
};

}  // namespace sa
