// The matrix products of one ELMo or SaELMo training step (SaELMo's sense softmax has the sampled
// softmax's shape; selection is not counted), counted from the config's shapes:
// what `bench train` reports as the model's FLOPs per token, and times through the raw BLAS at
// the same shapes to say what fraction of the machine's GEMM throughput training achieves.
// Elementwise work (cells, activations, softmax normalizers) is not counted, as in the usual
// model-FLOPs accounting. The char CNN counts every window; the CPU computes each distinct one
// once (about a fifth at bench-small), so its step can beat the raw BLAS's time for these shapes.
#pragma once
#include <string>
#include <vector>

#include "train/config.h"

namespace sa {

// A forward product [m, k] x [k, n], `calls` times per step. Its backward does `backward` times
// the forward's work: 2 for a product (the input's and the weight's gradients); the char CNN's
// max-pooled convolution back-propagates through each filter's winning window only.
struct StepGemm {
  std::string what;
  int64_t m, n, k;
  double calls;
  double backward = 2;
  double flops() const { return (1 + backward) * 2.0 * static_cast<double>(m) * static_cast<double>(n) * k * calls; }
};

// One step's products. `encoded_tokens` is the number of distinct tokens the char CNN encoded per
// step (the trainer encodes each once; TrainResult::encoded_tokens over the steps);
// `softmax_rows` the sampled softmax's candidate rows per direction (SaELMo's sense rows can be
// several times n_negative_samples_batch), 0 for n_negative_samples_batch.
std::vector<StepGemm> elmo_step_gemms(const TrainConfig& c, double encoded_tokens, double softmax_rows = 0);

}  // namespace sa
