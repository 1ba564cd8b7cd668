// BERT as a contextual encoder (layers/encoder.h), so bin/embed, wsd_eval and xling_eval take BERT
// runs and Hugging Face BERT directories unchanged: per sentence [layers + 1, n_words, hidden]
// (layer 0 = the embeddings' output), one vector per input word, the mean of its WordPiece
// vectors or the first one. A sentence longer than the position table is cut at word boundaries
// into windows that are encoded apart. Stateless.
#pragma once
#include "data/wordpiece.h"
#include "layers/bert.h"
#include "layers/encoder.h"

namespace sa {

enum class PiecePooling { Mean, First };

class BertEncoder : public ContextualEncoder {
 public:
  BertEncoder(BertModel model, WordPieceTokenizer tokenizer, PiecePooling pooling = PiecePooling::Mean)
      : model(std::move(model)), tokenizer(std::move(tokenizer)), pooling(pooling) {}
  std::vector<Tensor> embed(const Sentences& batch, EncoderState* state = nullptr) const override;
  std::unique_ptr<EncoderState> new_state(int max_batch) const override;
  int n_layers() const override { return model.config.layers + 1; }
  int64_t dim() const override { return model.config.hidden; }
  Device device() const override { return model.device(); }

  BertModel model;
  WordPieceTokenizer tokenizer;
  PiecePooling pooling;
};

// Whether `dir` holds a BERT model: a Hugging Face directory (config.json of model_type "bert")
// or one of our BERT runs.
bool is_bert_dir(const std::string& dir);
// model.safetensors + config.json + vocab.txt; lowercasing from our run's config.cfg or Hugging
// Face's tokenizer_config.json (do_lower_case, default true).
std::unique_ptr<BertEncoder> load_bert_encoder(const std::string& dir, Device dev, PiecePooling pooling);

}  // namespace sa
