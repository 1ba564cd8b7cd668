// Fits a small downstream classifier on frozen features (xling_eval): minibatches in a seeded
// order, the gradient norm clipped, a dev score per epoch, and the best-dev parameters restored at
// the end. Two schedules: Adam with early stopping (sentiment, XNLI), or plain SGD whose learning
// rate is halved after `patience` epochs without a gain, stopping below `min_lr` (Flair's
// SequenceTagger training, for NER).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace sa {

struct FitOptions {
  enum class Schedule { AdamEarlyStop, SgdAnneal } schedule = Schedule::AdamEarlyStop;
  int batch_size = 32;
  int max_epochs = 50;
  int patience = 5;      // epochs without a better dev score before stopping (Adam) or halving (SGD)
  double lr = 1e-3;      // Adam's, or SGD's starting learning rate
  double min_lr = 1e-4;  // SGD stops when the rate falls below it
  double clip = 5.0;     // global gradient norm
  uint64_t seed = 1;     // batch order
  std::string label;     // when set, a line per epoch on stderr (dev score, time)
  bool epoch_progress = true;  // with a label, also a progress line (ETA) within each epoch
};

struct FitResult {
  int epochs = 0, best_epoch = 0;
  double best_dev = 0;
};

// `batch_loss(rows, gen)`: the mean loss of examples `rows` in training mode (dropout from gen);
// `dev_score()`: the dev metric in evaluation mode, higher is better. On return `params` hold the
// values of the best-dev epoch.
FitResult fit_classifier(const std::vector<Tensor>& params, int64_t n_examples,
                         const std::function<Tensor(const std::vector<int64_t>&, Generator&)>& batch_loss,
                         const std::function<double()>& dev_score, const FitOptions& options);

}  // namespace sa
