// The smallest ELMo the tests and the fuzz targets build (no GoogleTest here: the fuzz driver
// includes it too).
#pragma once
#include "layers/elmo_options.h"

namespace sa::testing {

// A tiny ELMo (3 chars dims, 2 filters, 1 highway, 2 LSTM layers of 3 cells, projection 4 that
// differs from the 5 filters so the token projection exists, skip connection) for fast tests.
inline ElmoOptions tiny_elmo_options() {
  ElmoOptions o;
  o.char_dim = 3;
  o.filters = {{1, 2}, {2, 3}};
  o.n_highway = 1;
  o.lstm_dim = 3;
  o.projection_dim = 4;
  o.n_layers = 2;
  o.cell_clip = 3;
  o.proj_clip = 3;
  o.use_skip_connections = true;
  return o;
}

}  // namespace sa::testing
