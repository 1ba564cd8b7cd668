// Contextual embeddings of whole sentences, bilm-tf/AllenNLP style: for each sentence
// [n_layers + 1, n_tokens, 2P] (layer 0 = the token vector twice), <S>/</S> removed.
// Stateless by default; stateful mode reproduces bilm-tf, where the final LSTM state of batch row
// k is the initial state of row k in the next batch.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "layers/elmo.h"

namespace sa {

class ElmoEmbedder {
 public:
  ElmoEmbedder(const ElmoModel& model, bool stateful, int max_batch);
  // One result per sentence (tokens without <S>/</S>); at most max_batch sentences.
  std::vector<Tensor> embed(const std::vector<std::vector<std::string>>& sentences);

 private:
  const ElmoModel& m_;
  bool stateful_;
  int max_batch_;
  std::vector<LstmState> state_[2];  // [direction][layer], [max_batch, ...] when stateful
};

// Embeds every sentence statelessly in batches of similar length (longest first, so that a batch
// pads little) and calls f(i, embedding of sentences[i]) for each. With a `label`, prints a
// progress line (sentences, tokens/s, ETA) to stderr. For tools that need every sentence once.
void embed_all(const ElmoModel& model, const std::vector<std::vector<std::string>>& sentences, int batch_size,
               const std::string& label, const std::function<void(size_t, const Tensor&)>& f);

}  // namespace sa
