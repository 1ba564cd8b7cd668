// The one biLM forward: both directions' LSTM stacks over token vectors. Training runs it with the
// state carried between batches and dropout; embedding with a zero (or carried) state and none.
// Dropout sits where bilm-tf puts it: on each layer's input (before the residual add) and on the
// top output.
#pragma once
#include <array>
#include <vector>

#include "layers/elmo.h"

namespace sa {

// LSTM state of both directions: [direction][layer].
struct BilmState {
  std::vector<LstmState> dir[2];
  static BilmState zeros(const ElmoOptions& o, int64_t rows, Device dev, DType dt);
  void detach();
  // Zeroes each row's state (all layers, both directions) with probability p; the draw depends
  // on `seed` only, so a resumed run resets the same rows. A data-parallel rank holding rows
  // [first_row, first_row + rows) of a batch of `all_rows` draws for all of them and keeps its own,
  // so the ranks reset the rows one process with the whole batch would.
  void reset_rows(double p, uint64_t seed, int64_t first_row = 0, int64_t all_rows = 0);
  // reset_rows in two halves: the draw (a mask per direction with state, 1 = reset, on the host),
  // and its use. A replayed step (engine/step_replay.h) takes the masks as inputs.
  std::vector<std::vector<uint8_t>> reset_masks(double p, uint64_t seed, int64_t first_row = 0, int64_t all_rows = 0) const;
  void reset_rows(const std::vector<std::vector<uint8_t>>& masks);
  // Every state tensor (direction, layer, c then m), in a fixed order.
  std::vector<Tensor> tensors() const;
  // Copies of rows [first, first + n) of every state.
  BilmState rows(int64_t first, int64_t n) const;
};

struct BilmOutputs {
  std::array<std::vector<Tensor>, 2> layers;  // [direction][layer]: [B, T, P], before the output dropout
  std::array<Tensor, 2> top;                  // each direction's top layer after the output dropout
  // The top layer's LSTM output and its undropped input (with a skip connection and dropout).
  std::array<Tensor, 2> top_lstm, top_input;
  // The top layer with its skip connection adding the undropped input, not the dropped one
  // (equal to layers.back() without dropout): what SaELMo selects senses on when
  // select_after_dropout is false. Computed on demand, without gradient.
  Tensor clean_top(int d) const;
};

// Runs both stacks over tokens[d] [B, T, P] (direction 1's rows already in reading order, i.e.
// reversed) from `state`, which is advanced. Dropout p (drawn from `gen`). With `lengths`, row r
// stops after lengths[r] steps: its state stays at the row's end and later outputs are zero (bilm-tf
// stateful inference); without, every row runs T steps as one sequence op per layer.
BilmOutputs bilm_forward(const ElmoModel& m, const std::array<Tensor, 2>& tokens, BilmState& state, double p,
                         Generator& gen, const std::vector<int>* lengths = nullptr);

}  // namespace sa
