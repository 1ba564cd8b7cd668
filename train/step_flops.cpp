#include "train/step_flops.h"

#include <cmath>

namespace sa {

std::vector<StepGemm> elmo_step_gemms(const TrainConfig& c, double encoded_tokens, double softmax_rows) {
  const ElmoOptions& o = c.model;
  const int64_t B = c.batch_size, T = c.unroll_steps, N = B * T, P = o.projection_dim, H = o.lstm_dim;
  const int64_t u = std::max<int64_t>(1, std::llround(encoded_tokens)), F = o.n_filters();
  std::vector<StepGemm> g;
  for (auto [width, filters] : o.filters) {  // a convolution as the product of its windows and filters
    const int64_t windows = o.max_characters_per_token - width + 1;
    g.push_back({"char CNN width " + std::to_string(width), u * windows, filters,
                 static_cast<int64_t>(o.char_dim) * width, 1, 2.0 / static_cast<double>(windows)});
  }
  for (int l = 0; l < o.n_highway; ++l) g.push_back({"highway", u, 2 * F, F, 1});
  if (o.use_proj()) g.push_back({"token projection", u, P, F, 1});
  for (int l = 0; l < o.n_layers; ++l) {  // two directions each
    g.push_back({"LSTM input gates", N, 4 * H, P, 2});
    g.push_back({"LSTM recurrent gates", B, 4 * H, P, 2.0 * T});
    g.push_back({"LSTM projection", B, P, H, 2.0 * T});
  }
  // The candidate softmax of each direction: every token against the shared negatives.
  const int64_t S = softmax_rows > 0 ? std::max<int64_t>(1, std::llround(softmax_rows)) : c.n_negative_samples_batch;
  g.push_back({"softmax logits", N, S, P, 2});
  return g;
}

}  // namespace sa
