// precision = "bf16": every matrix product of the ops (matmul, bmm, linear, the LSTM's GEMMs)
// takes both operands rounded to bf16 and accumulates and returns f32, as cuBLAS's bf16 GEMM does;
// weights, gradients, softmaxes and losses stay f32. The CPU rounds at the same points (its bf16
// GEMM widens the rounded operands exactly), so a CPU run shows what bf16 does to training.
// Process-wide, not per thread: the LSTM's directions run on worker threads.
#pragma once
#include <mutex>
#include <vector>

#include "engine/core/tensor.h"

namespace sa {

bool bf16_matmuls();
void set_bf16_matmuls(bool on);

// The operand a GEMM takes: x rounded to bf16 while bf16_matmuls() is on and x is f32, else x. A
// weight (or a view of one) comes from the open Bf16WeightCopies, already rounded.
Tensor gemm_operand(const Tensor& x);

// f32 master weights, bf16 working copies: under bf16, the copies of a model's weights for one
// step's forward and backward, made together in one primitive (multi_cast) when the scope opens,
// and taken by gemm_operand in place of rounding a weight at each product. Which weights to copy
// at once it learns from the steps before (`wanted`, one flag per weight, kept by the caller): a
// weight first taken inside a scope is copied then, alone; a view of less than a quarter of a
// weight (a few rows of a large table) is rounded on its own, as without the scope. The copies
// equal the roundings they replace bit for bit. The scope must close before any weight changes (a
// trainer opens it before the forward and closes it after the backward). One at a time,
// process-wide (the CPU's LSTM directions run on worker threads): one opened while another is
// open does nothing, and neither does one while bf16 is off or SA_BF16_WEIGHT_COPIES=0 (to compare).
class Bf16WeightCopies {
 public:
  Bf16WeightCopies(const std::vector<Tensor>& weights, std::vector<char>& wanted);
  ~Bf16WeightCopies() { close(); }
  Bf16WeightCopies(const Bf16WeightCopies&) = delete;
  Bf16WeightCopies& operator=(const Bf16WeightCopies&) = delete;
  void close();
  // x's bf16 copy if x lies in one of the weights (and covers a quarter of it); else undefined.
  Tensor find(const Tensor& x);

 private:
  bool open_ = false;
  std::vector<Tensor> weights_, copies_;
  std::vector<char>* wanted_ = nullptr;
  std::vector<char> taken_;  // which weights this scope's products took
  std::mutex mu_;
};
// The same values kept in f32, for a kernel that does its products itself (the char CNN's
// convolution): its f32 products of rounded operands equal a bf16 GEMM's up to summation order.
Tensor bf16_rounded(const Tensor& x);

}  // namespace sa
