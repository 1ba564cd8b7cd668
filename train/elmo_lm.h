// The ELMo language model being trained: the biLM (its forward is layers/bilm.h) and its output
// layer: softmax tables (one shared by both directions as bilm-tf, or one per direction) or, for
// SaELMo, a sense head per direction (their W and b shared when softmax_tables = "shared").
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
  // Plain ELMo: [V, P] and [V, 1] with row-sparse gradients, per direction; with shared tables both
  // entries are the same tensors.
  std::array<Tensor, 2> softmax_W, softmax_b;
  std::vector<SenseHead> heads;  // SaELMo: one sense head per direction instead
  bool shared_tables = true;

  static ElmoLM init(const ElmoOptions& opt, int vocab_size, uint64_t seed, Device dev, DType dt = DType::F32,
                     bool shared_tables = true);
  // `shard`: the part of the sense tables this rank stores (sense_tables = "sharded").
  static ElmoLM init_sense(const ElmoOptions& opt, const SenseOptions& so, int vocab_size, uint64_t seed, Device dev,
                           DType dt = DType::F32, TableShard shard = {});
  // init_sense when so.n_context >= 2 (SaELMo), init otherwise.
  static ElmoLM make(const ElmoOptions& opt, const SenseOptions& so, int vocab_size, uint64_t seed, Device dev,
                     DType dt = DType::F32, TableShard shard = {});
  bool sense() const { return !heads.empty(); }
  // The bilm-tf names plus softmax/W and softmax/b (per direction: direction 1's as softmax/1/W and
  // softmax/1/b), or sense/d/W and sense/d/b (shared: sense/0/ only); the trainable tensors.
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
// Both directions' input tokens made distinct (encode_batches' host half), and their encoding.
DistinctTokens distinct_batch_tokens(const LmBatch& fwd, const LmBatch& bwd);
std::pair<Tensor, Tensor> encode_batches(const ElmoLM& lm, const DistinctTokens& tokens, int rows, int steps);

// Mean token loss of direction `d` from its top output [B, T, P] (bilm_forward's `top`); the
// sampled negatives' word ids go to `drawn` when given.
Tensor direction_loss(ElmoLM& lm, int d, const Tensor& top, const LmBatch& batch, const LossOptions& o,
                      const LogUniformSampler* sampler, std::mt19937_64* sample_rng,
                      std::vector<int32_t>* drawn = nullptr);
// The same, training, with the sampled softmax's candidates drawn beforehand for the batch's targets.
Tensor direction_loss(ElmoLM& lm, int d, const Tensor& top, const LmBatch& batch, const SampledCandidates& c);

}  // namespace sa
