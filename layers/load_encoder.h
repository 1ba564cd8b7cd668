// One factory for every model a tool can read: our run directory (options.json + weights.hdf5,
// both rewritten with every checkpoint), a bilm-tf/AllenNLP bundle (options.json +
// weights.hdf5), or a BERT directory (ours or Hugging Face's: config.json of model_type "bert",
// model.safetensors, vocab.txt). Shared by bin/embed, bin/wsd_eval, bin/align and bin/senses.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "layers/elmo_encoder.h"

namespace sa {

struct EncoderSource {
  std::string run_dir;           // ours (ELMo or BERT), or a Hugging Face BERT directory
  std::string options, weights;  // bilm-tf
  std::string pieces = "mean";   // BERT: a word's vector is the mean of its pieces' or the first's
};

std::unique_ptr<ContextualEncoder> load_encoder(const EncoderSource& source, Device dev);
// The same, for tools that need ELMo itself (its weights, its sense heads).
std::unique_ptr<ElmoEncoder> load_elmo(const EncoderSource& source, Device dev);
// The files load_encoder reads for `source`: what its vectors depend on besides BERT's `pieces`
// (xling_eval keys its cache by their bytes).
std::vector<std::string> encoder_files(const EncoderSource& source);

}  // namespace sa
