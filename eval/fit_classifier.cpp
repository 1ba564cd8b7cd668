#include "eval/fit_classifier.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>

#include "engine/optim/optimizer.h"

namespace sa {

FitResult fit_classifier(const std::vector<Tensor>& params, int64_t n_examples,
                         const std::function<Tensor(const std::vector<int64_t>&, Generator&)>& batch_loss,
                         const std::function<double()>& dev_score, const FitOptions& o) {
  SA_CHECK(n_examples > 0, "fit_classifier: no training examples");
  Adam opt(o.lr);
  double lr = o.lr;
  int since_gain = 0;  // epochs since the best dev score, or since the last halving (SGD)
  const bool sgd = o.schedule == FitOptions::Schedule::SgdAnneal;
  std::vector<Tensor> best;
  {
    NoGrad ng;
    for (const Tensor& p : params) best.push_back(p.clone());
  }
  std::mt19937_64 rng(o.seed);
  Generator gen(o.seed * 7919 + 3);
  std::vector<int64_t> order(static_cast<size_t>(n_examples));
  std::iota(order.begin(), order.end(), 0);
  FitResult r;
  r.best_dev = -1;
  for (int epoch = 1; epoch <= o.max_epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    std::shuffle(order.begin(), order.end(), rng);
    double total = 0;
    auto shown = t0;
    for (int64_t b = 0; b < n_examples; b += o.batch_size) {
      const auto now = std::chrono::steady_clock::now();
      if (!o.label.empty() && o.epoch_progress && b > 0 && now - shown > std::chrono::seconds(2)) {  // the epoch in progress
        const double el = std::chrono::duration<double>(now - t0).count();
        std::fprintf(stderr, "\r%s: epoch %d | %lld/%lld examples | ETA %.0f s   ", o.label.c_str(), epoch,
                     static_cast<long long>(b), static_cast<long long>(n_examples),
                     el / static_cast<double>(b) * static_cast<double>(n_examples - b));
        shown = now;
      }
      std::vector<int64_t> rows(order.begin() + b, order.begin() + std::min<int64_t>(n_examples, b + o.batch_size));
      Tensor loss = batch_loss(rows, gen);
      total += loss.item() * static_cast<double>(rows.size());
      backward(loss);
      if (sgd) {
        // The clip's scale goes into the step: one pass over each gradient, not two.
        const double norm = global_norm(params), scale = norm > o.clip ? o.clip / norm : 1.0;
        NoGrad ng;
        for (const Tensor& p : params)
          if (Tensor g = p.grad(); g.defined()) {
            Tensor w = p;
            backend(p.device()).axpy(-lr * scale, g, w);
            p.zero_grad();
          }
      } else {
        clip_global_norm(params, o.clip);
        opt.step(params);
      }
    }
    double dev;
    {
      NoGrad ng;
      dev = dev_score();
    }
    r.epochs = epoch;
    if (dev > r.best_dev) {
      r.best_dev = dev, r.best_epoch = epoch, since_gain = 0;
      NoGrad ng;
      for (size_t i = 0; i < params.size(); ++i) best[i].copy_from(params[i]);
    } else {
      ++since_gain;
    }
    if (!o.label.empty())
      std::fprintf(stderr, "\r%s: epoch %d | lr %.4g | loss %.4f | dev %.4f%s | %.1f s\n", o.label.c_str(), epoch, lr,
                   total / static_cast<double>(n_examples), dev, r.best_epoch == epoch ? " (best)" : "",
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (since_gain >= o.patience) {
      if (!sgd) break;
      lr *= 0.5, since_gain = 0;
      if (lr < o.min_lr) break;
    }
  }
  NoGrad ng;
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i];
    p.copy_from(best[i]);
  }
  return r;
}

}  // namespace sa
