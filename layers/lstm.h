// LSTM with projection, TF1 LSTMCell semantics: gates [x ; m_prev] W + B in order i, j, f, o,
// forget bias +1 at run time, c clipped to cell_clip, m = clip((o * tanh c) W_P, proj_clip).
// The input GEMM of all time steps is hoisted into one call; the cell math is one fused op.
// This is the step-by-step composition, which handles padded rows (lengths); training runs whole
// sequences as one node with ops::lstm_sequences (layers/bilm.cpp).
#pragma once
#include <vector>

#include "engine/engine.h"

namespace sa {

struct LstmWeights {
  Tensor W;    // [in + P, 4D], rows [input ; previous m] (bilm-tf W_0)
  Tensor B;    // [4D] (no forget bias stored)
  Tensor W_P;  // [D, P]
};

struct LstmState {
  Tensor c;  // [B, D]
  Tensor m;  // [B, P]
};

// Runs the layer over x [B, T, in] from `state`, which is replaced by the final state; returns
// m for every step [B, T, P]. With `lengths`, row r stops at lengths[r]: its state is frozen
// after that and its outputs are zero (TF dynamic_rnn with sequence_length).
Tensor lstm_forward(const LstmWeights& w, const Tensor& x, LstmState& state, double cell_clip, double proj_clip,
                    const std::vector<int>* lengths = nullptr);

}  // namespace sa
