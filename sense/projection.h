// The projection P used for sense selection (Alg. 2): the top d' principal components of a queue of
// the last Q selection vectors, refitted every M steps; random N(0, 1) before the first fit. It is
// applied to raw (uncentered) vectors, as released; the fit itself centers the queue (as sklearn).
// Each queued vector remembers the training step that pushed it, so a refit can see only the
// recent steps (pca_queue_steps): the representation drifts while the model trains.
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

#include "engine/engine.h"

namespace sa {

class PcaProjection {
 public:
  PcaProjection(int dim, int k, int queue_size, uint64_t seed);
  // Appends the rows of `vectors` [n, dim] (any device), pushed at training step `step`, and drops
  // the oldest beyond the queue size. The rows stay on their device until something reads the
  // queue (refit, drop_before, queued, a checkpoint): then they come to the host in one read, so a
  // push never waits for the device.
  void push(const Tensor& vectors, int64_t step = 0);
  // Drops the vectors pushed before step `first`.
  void drop_before(int64_t first);
  // Refits P to the queue: eigenvectors of the covariance for the k largest eigenvalues (LAPACK
  // dsyevr), sorted by decreasing variance. Fails when the queue holds fewer than 2 vectors.
  void refit();
  const Tensor& matrix() const { return P_; }  // [dim, k], f32, CPU
  const Tensor& mean() const { return mean_; }  // [1, dim]: the queue's mean at the last fit (zeros before)
  std::vector<double> explained_variance() const { return variance_; }
  bool fitted() const { return fitted_; }
  size_t queued() const {
    take_pending();
    return queue_.size();
  }
  int64_t oldest_step() const {
    take_pending();
    return steps_.empty() ? -1 : steps_.front();
  }

  // For checkpoints: the queue as [n, dim], the step of each row [n], the mean and the matrix. A
  // checkpoint from before the steps and the mean were kept restores with them undefined: every
  // row counts as step 0 and the mean is the queue's.
  Tensor queue_tensor() const;
  Tensor queue_steps_tensor() const;
  void restore(const Tensor& queue, const Tensor& steps, const Tensor& mean, const Tensor& matrix, bool fitted);

 private:
  void take_pending() const;

  int dim_, k_, cap_;
  // The queue is whole whenever read: const readers first take the pushes still on the device.
  mutable std::deque<std::vector<float>> queue_;
  mutable std::deque<int64_t> steps_;  // the step that pushed each queued vector
  mutable std::deque<std::pair<Tensor, int64_t>> pending_;  // pushes not yet read, with their steps
  mutable int64_t pending_rows_ = 0;
  Tensor P_, mean_;
  std::vector<double> variance_;
  bool fitted_ = false;
};

}  // namespace sa
