// Sense tables of one direction: output vectors W and biases b with n_context rows per word
// (row of word w, sense s = w*C + s), cluster centers of the same shape (moved by the online
// k-means update, never by gradients), and an enabled score per row (> 1e-6 = enabled).
#pragma once
#include <string>
#include <vector>

#include "engine/engine.h"
#include "sense/sense_options.h"

namespace sa {

class SenseTable {
 public:
  SenseTable(int vocab, int n_context, int dim, uint64_t seed, Device dev = Device::cpu(), DType dt = DType::F32);

  Tensor W;        // [V*C, P], trainable, row-sparse gradients, N(0, 1/sqrt(P))
  Tensor b;        // [V*C, 1], trainable, row-sparse gradients, 0
  Tensor centers;  // [V*C, P], N(0, 16), no gradient
  std::vector<float> enabled;  // score per row

  int vocab() const { return vocab_; }
  int n_context() const { return C_; }
  int rows() const { return vocab_ * C_; }
  int row(int w, int s) const { return w * C_ + s; }
  bool is_enabled(int r) const { return enabled[static_cast<size_t>(r)] > 1e-6f; }
  std::vector<int32_t> enabled_rows() const;
  int64_t enabled_count() const;

  // Warm-up: sense 0 only. After it: senses 1..C-1 only (their rows start from sense 0's when
  // `copy`, else from their initialization).
  void begin_warmup();
  void end_warmup(bool copy);
  // Centers of senses 1..C-1 set to zero: the state the released schedule reaches when its
  // 20000-step warm-up decays them (x 0.99 per step) below float32's range.
  void zero_new_centers();

  // Bytes of W, b, centers and Adagrad accumulators for this shape, before allocating anything.
  static double bytes_needed(int64_t vocab, int n_context, int dim, DType dt);

 private:
  int vocab_, C_;
};

}  // namespace sa
