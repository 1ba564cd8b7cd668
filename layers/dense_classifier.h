// The sentiment task's classifier (xling_eval sent): a review's features (the mean of its frozen
// contextual vectors) -> dense to `hidden` with ReLU and dropout -> dense to the classes. The paper
// says only "two dense layers"; hidden 256 and dropout 0.5 are our choices (docs/design.md §5.6).
#pragma once
#include <cstdint>
#include <vector>

#include "engine/engine.h"

namespace sa {

struct DenseClassifier {
  Tensor W1, b1, W2, b2;  // [in, hidden], [hidden], [hidden, classes], [classes]
  double dropout = 0.5;

  // Glorot-uniform weights from `seed`, zero biases.
  static DenseClassifier init(int64_t in, int64_t hidden, int64_t classes, double dropout, uint64_t seed,
                              Device dev);
  // x [B, in] -> logits [B, classes]; dropout only when `train`.
  Tensor logits(const Tensor& x, bool train, Generator& gen) const;
  std::vector<Tensor> params() const { return {W1, b1, W2, b2}; }
};

}  // namespace sa
