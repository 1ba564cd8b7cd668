// The ELMo language model being trained: the biLM (its forward is layers/bilm.h) and its output
// layer, one softmax table shared by both directions (bilm-tf) or, for SaELMo, a sense head per
// direction.
#pragma once
#include <array>
#include <random>

#include "data/lm_batches.h"
#include "layers/bilm.h"
#include "layers/softmax.h"
#include "sense/sense_head.h"

namespace sa {

struct ElmoLM {
  ElmoModel bilm;
  Tensor softmax_W;  // [V, P], row-sparse gradients (plain ELMo: one table for both directions)
  Tensor softmax_b;  // [V, 1], row-sparse gradients
  std::vector<SenseHead> heads;  // SaELMo: one sense head per direction instead

  static ElmoLM init(const ElmoOptions& opt, int vocab_size, uint64_t seed, Device dev, DType dt = DType::F32);
  // `shard`: the part of the sense tables this rank stores (sense_tables = "sharded").
  static ElmoLM init_sense(const ElmoOptions& opt, const SenseOptions& so, int vocab_size, uint64_t seed, Device dev,
                           DType dt = DType::F32, TableShard shard = {});
  // init_sense when so.n_context >= 2 (SaELMo), init otherwise.
  static ElmoLM make(const ElmoOptions& opt, const SenseOptions& so, int vocab_size, uint64_t seed, Device dev,
                     DType dt = DType::F32, TableShard shard = {});
  bool sense() const { return !heads.empty(); }
  // The bilm-tf names plus softmax/W and softmax/b (or sense/d/W and sense/d/b); the trainable tensors.
  std::vector<NamedTensor> named();
  std::vector<Tensor> params();
  void set_trainable();
};

struct LossOptions {
  bool training = true;        // dropout on, sampled softmax
  double dropout = 0.0;
  int n_samples = 0;           // sampled softmax negatives; 0 = full softmax
};

// Token vectors [B, T, P] of the inputs of both directions' batches, each distinct token encoded
// once (the encoder is shared by the two directions); `distinct` gets their number.
std::pair<Tensor, Tensor> encode_batches(const ElmoLM& lm, const LmBatch& fwd, const LmBatch& bwd,
                                         int64_t* distinct = nullptr);

// Mean token loss of one direction from its top output [B, T, P] (bilm_forward's `top`).
Tensor direction_loss(ElmoLM& lm, const Tensor& top, const LmBatch& batch, const LossOptions& o,
                      const LogUniformSampler* sampler, std::mt19937_64* sample_rng);

}  // namespace sa
