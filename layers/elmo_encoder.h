// ELMo as a contextual encoder, bilm-tf/AllenNLP style: per sentence [n_layers + 1, n_tokens, 2P]
// (layer 0 = the token vector twice, then each LSTM layer's forward and backward outputs side by
// side), <S>/</S> removed. Stateless by default; with a state it reproduces bilm-tf's stateful
// inference, where the final LSTM state of batch row k is the initial state of row k next batch.
#pragma once
#include "layers/bilm.h"
#include "layers/encoder.h"

namespace sa {

class ElmoEncoder : public ContextualEncoder {
 public:
  explicit ElmoEncoder(ElmoModel model) : model(std::move(model)) {}
  std::vector<Tensor> embed(const Sentences& batch, EncoderState* state = nullptr) const override;
  std::unique_ptr<EncoderState> new_state(int max_batch) const override;
  int n_layers() const override { return model.opt.n_layers + 1; }
  int64_t dim() const override { return 2 * static_cast<int64_t>(model.opt.projection_dim); }
  Device device() const override { return model.device(); }
  bool reads_segmented_words() const override { return true; }

  ElmoModel model;
};

}  // namespace sa
