// Adagrad as TF implements it (acc += g^2; w -= lr * g / sqrt(acc)), with row-sparse updates for
// tables whose gradient is a SparseGrad (only touched rows are read or written), and global-norm
// clipping over dense and sparse gradients together (bilm-tf's all_clip_norm_val).
#pragma once
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/engine.h"

namespace sa {

// Sums each sparse gradient's duplicate rows in place (one entry of unique rows per table; on a
// GPU followed by padding slots of id -1, so that nothing waits for the count of rows).
void coalesce_sparse_grads(const std::vector<Tensor>& params);

// Global L2 norm of all gradients; when it exceeds max_norm, scales them all by max_norm / norm.
// Call after coalesce_sparse_grads (duplicates change the norm). The norm and the factor stay on
// the device (the host never waits): returns the norm before clipping, f64 [1] on the device
// (undefined when no parameter has a gradient).
Tensor clip_by_global_norm(const std::vector<Tensor>& params, double max_norm);
// The same, returning the norm on the host (one read).
double clip_global_norm(const std::vector<Tensor>& params, double max_norm);
// The global L2 norm of the gradients (dense and sparse rows), leaving them as they are.
double global_norm(const std::vector<Tensor>& params);

class Adagrad {
 public:
  Adagrad(double lr, double initial_accumulator = 1.0) : lr_(lr), init_(initial_accumulator) {}
  // Applies and clears the gradients of `params` (dense or row-sparse).
  void step(const std::vector<Tensor>& params);
  // Applies a row gradient given apart from p: rows `ids` (unique, i32) of p get g [n_ids, width].
  void step_rows(const Tensor& p, const Tensor& ids, const Tensor& g);
  // The accumulator of a parameter (created on first use), e.g. for checkpoints.
  Tensor& accumulator(const Tensor& p);

 private:
  double lr_, init_;
  std::unordered_map<TensorImpl*, Tensor> acc_;
};

// Adam (Kingma and Ba), with decoupled weight decay when weight_decay > 0 (AdamW): for the
// downstream classifiers and BERT. Dense gradients only. BERT's optimizer is this without bias
// correction, with eps 1e-6 and no decay on LayerNorm parameters and biases (no_decay).
class Adam {
 public:
  Adam(double lr, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8, double weight_decay = 0)
      : lr_(lr), b1_(beta1), b2_(beta2), eps_(eps), wd_(weight_decay) {}
  // Applies and clears the gradients of `params`; a parameter without a gradient is left as it is.
  void step(const std::vector<Tensor>& params);
  int64_t steps() const { return t_; }
  void set_steps(int64_t t) { t_ = t; }  // restoring a checkpoint
  void set_lr(double lr) { lr_ = lr; }    // a schedule
  void set_bias_correction(bool on) { bias_correction_ = on; }
  // `p` gets no weight decay.
  void no_decay(const Tensor& p) { no_decay_.insert(p.impl()); }
  // The first and second moments of `p` (zeros until its first step), e.g. for checkpoints.
  std::pair<Tensor, Tensor>& moments(const Tensor& p);

 private:
  double lr_, b1_, b2_, eps_, wd_;
  bool bias_correction_ = true;
  int64_t t_ = 0;
  std::unordered_map<TensorImpl*, std::pair<Tensor, Tensor>> moments_;  // m, v
  std::unordered_set<TensorImpl*> no_decay_;
};

}  // namespace sa
