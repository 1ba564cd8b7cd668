// One bidirectional LSTM layer without projection over padded sentences, for the downstream
// models of xling_eval (the NER tagger, the NLI pair model). The backward LSTM reads each row
// reversed within its length, so padding never reaches a real position. Both directions run packed
// (only the rows still inside their sentence at each step) as one lstm_sequences node, side by
// side on the CPU.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "layers/lstm.h"

namespace sa {

struct BiLstm {
  LstmWeights fwd, bwd;  // hidden H each; no projection (W_P undefined)
  int64_t hidden = 0;

  // Glorot-uniform W, zero B, drawn from rng.
  static BiLstm init(int64_t in, int64_t hidden, std::mt19937_64& rng, Device dev);
  // x [B, T, in] -> [B, T, 2H] (forward outputs, then backward ones); zeros past each length.
  Tensor forward(const Tensor& x, const std::vector<int>& lengths) const;
  // The same over packed sentences, no padding anywhere: x [N, in], sentence i in rows
  // packed_offsets(lengths)[i] onwards -> [N, 2H] in the same rows.
  Tensor forward_packed(const Tensor& x, const std::vector<int>& lengths) const;
  std::vector<Tensor> params() const { return {fwd.W, fwd.B, bwd.W, bwd.B}; }
};

// The step-by-step composition of one direction (BiLstm::forward runs both as one lstm_sequences
// node and is tested against it): x [B, T, in] through one LSTM without projection (w.W_P unused)
// from a zero state -> [B, T, H], zeros past each row's length: lstm_forward with `lengths` and an identity projection. The rows
// run sorted by length, longest first, so step t computes only the rows still inside their
// sentence, a prefix (as packed sequences do): no work and no masking ops on padding, about half
// of a CoNLL batch.
Tensor packed_lstm(const LstmWeights& w, const Tensor& x, const std::vector<int>& lengths);

// A [rows, cols] tensor with Glorot-uniform values from rng, requiring a gradient.
Tensor glorot_uniform(int64_t rows, int64_t cols, std::mt19937_64& rng, Device dev);
// Where each packed sentence starts: 0, l0, l0 + l1, ... (B + 1 values, the last N).
std::vector<int64_t> packed_offsets(const std::vector<int>& lengths);
// Lengths as i32 [B] on dev.
Tensor lengths_tensor(const std::vector<int>& lengths, Device dev);

}  // namespace sa
