#include "layers/encoder.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "data/progress_line.h"

namespace sa {

void embed_all(const ContextualEncoder& encoder, const Sentences& sentences, int batch_size, const std::string& label,
               const std::function<void(size_t, const Tensor&)>& f) {
  NoGrad ng;
  std::vector<size_t> order(sentences.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sentences[a].size() > sentences[b].size(); });
  const auto t0 = std::chrono::steady_clock::now();
  size_t tokens = 0;
  ProgressLine progress;
  for (size_t b = 0; b < order.size(); b += static_cast<size_t>(batch_size)) {
    const size_t e = std::min(order.size(), b + static_cast<size_t>(batch_size));
    Sentences batch;
    for (size_t i = b; i < e; ++i) batch.push_back(sentences[order[i]]), tokens += sentences[order[i]].size();
    std::vector<Tensor> embs = encoder.embed(batch);
    for (size_t i = b; i < e; ++i) f(order[i], embs[i - b]);
    if (label.empty()) continue;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    progress.update(fmt::format("{}: {}/{} sentences | {:.0f} tokens/s | ETA {:.0f} s", label, e, order.size(),
                                tokens / std::max(el, 1e-9), el / e * (order.size() - e)),
                    e == order.size());
  }
}

}  // namespace sa
