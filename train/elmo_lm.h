// The plain ELMo language model being trained: the biLM, one softmax table shared by both
// directions (bilm-tf), dropout where bilm-tf puts it (each LSTM layer's input, before the
// residual add, and the top output), and LSTM state carried between batches.
#pragma once
#include <array>
#include <random>

#include "data/lm_batches.h"
#include "layers/elmo.h"
#include "layers/softmax.h"
#include "train/sense_head.h"

namespace sa {

struct ElmoLM {
  ElmoModel bilm;
  Tensor softmax_W;  // [V, P], row-sparse gradients (plain ELMo: one table for both directions)
  Tensor softmax_b;  // [V, 1], row-sparse gradients
  std::vector<SenseHead> heads;  // SaELMo: one sense head per direction instead

  static ElmoLM init(const ElmoOptions& opt, int vocab_size, uint64_t seed, Device dev, DType dt = DType::F32);
  static ElmoLM init_sense(const ElmoOptions& opt, const SenseOptions& so, int vocab_size, uint64_t seed, Device dev);
  bool sense() const { return !heads.empty(); }
  // The bilm-tf names plus softmax/W and softmax/b (or sense/d/W and sense/d/b); the trainable tensors.
  std::vector<NamedTensor> named();
  std::vector<Tensor> params();
  void set_trainable();
};

// Carried LSTM state: [direction][layer].
struct CarriedState {
  std::vector<LstmState> dir[2];
  static CarriedState zeros(const ElmoOptions& o, int rows, Device dev, DType dt);
  void detach();
  // Zeroes each row's state (all layers, both directions) with probability p; the draw depends
  // on `seed` only, so a resumed run resets the same rows.
  void reset_rows(double p, uint64_t seed);
};

struct LossOptions {
  bool training = true;        // dropout on, sampled softmax
  double dropout = 0.0;
  int n_samples = 0;           // sampled softmax negatives; 0 = full softmax
};

// Token vectors [B, T, P] of the inputs of both directions' batches, each distinct token encoded
// once (the encoder is shared by the two directions).
std::pair<Tensor, Tensor> encode_batches(const ElmoLM& lm, const LmBatch& fwd, const LmBatch& bwd);

// The top LSTM output [B, T, P] of one direction (dropout p on each layer's input and on the
// output, as bilm-tf); advances `state`.
Tensor lm_top(const ElmoModel& m, int dir, const Tensor& tokens, std::vector<LstmState>& state, double p,
              Generator& dropout_gen);
// Both directions at once (tokens and states in direction order): each layer runs the two LSTMs
// as one op, side by side on the CPU.
// `undropped`: the top outputs before the output dropout, too.
std::array<Tensor, 2> lm_tops(const ElmoModel& m, const std::array<Tensor, 2>& tokens, CarriedState& state, double p,
                              Generator& dropout_gen, std::array<Tensor, 2>* undropped = nullptr);

// Mean token loss of one direction from its token vectors [B, T, P] and the batch's targets;
// advances `state`.
Tensor direction_loss(ElmoLM& lm, int dir, const Tensor& tokens, const LmBatch& batch, std::vector<LstmState>& state,
                      const LossOptions& o, Generator& dropout_gen, const LogUniformSampler* sampler,
                      std::mt19937_64* sample_rng);
// The same from the direction's top output [B, T, P] (lm_tops).
Tensor direction_loss(ElmoLM& lm, const Tensor& top, const LmBatch& batch, const LossOptions& o,
                      const LogUniformSampler* sampler, std::mt19937_64* sample_rng);

}  // namespace sa
