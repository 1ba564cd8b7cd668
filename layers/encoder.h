// The contextual encoder every tool embeds with: token sequences in, per-layer vectors out. ELMo
// implements it (layers/elmo_encoder.h); load_encoder (layers/load_encoder.h) makes one from a run
// directory or a bilm-tf bundle, so tools never name a model class.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace sa {

using Sentences = std::vector<std::vector<std::string>>;

// What a stateful encoder carries from one batch to the next; made by the encoder.
struct EncoderState {
  virtual ~EncoderState() = default;
};

class ContextualEncoder {
 public:
  virtual ~ContextualEncoder() = default;
  // One tensor per sentence, [n_layers(), n_tokens, dim()] (layer 0 is the token layer). Stateless
  // without `state`; with one (from new_state), sentence k starts from the state sentence k of the
  // previous call ended in.
  virtual std::vector<Tensor> embed(const Sentences& batch, EncoderState* state = nullptr) const = 0;
  // A state for batches of at most max_batch sentences.
  virtual std::unique_ptr<EncoderState> new_state(int max_batch) const = 0;
  virtual int n_layers() const = 0;
  virtual int64_t dim() const = 0;
  virtual Device device() const = 0;
  // Whether it reads whole words (ELMo: a word's characters) from a corpus segmented into words,
  // so that text given one CJK character a token should be regrouped into those words first.
  // False for encoders that split words themselves (BERT's pieces) or look sentences up
  // (precomputed vectors).
  virtual bool reads_segmented_words() const { return false; }

  bool lowercase = false;  // trained on lowercased text: tools lowercase their input
  std::string origin;      // the files it came from, for messages
};

// Embeds every sentence statelessly in batches of similar length (longest first, so that a batch
// pads little) and calls f(i, embedding of sentences[i]) for each. With a `label`, prints a
// progress line (sentences, tokens/s, ETA) to stderr. For tools that need every sentence once.
void embed_all(const ContextualEncoder& encoder, const Sentences& sentences, int batch_size, const std::string& label,
               const std::function<void(size_t, const Tensor&)>& f);

}  // namespace sa
