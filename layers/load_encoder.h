// One factory for every model a tool can read: our run directory (options.json + weights.hdf5,
// both rewritten with every checkpoint) or a bilm-tf/AllenNLP bundle (options.json +
// weights.hdf5). Shared by bin/embed, bin/wsd_eval, bin/align and bin/senses.
#pragma once
#include <memory>
#include <string>

#include "layers/elmo_encoder.h"

namespace sa {

struct EncoderSource {
  std::string run_dir;           // ours; sets options and weights
  std::string options, weights;  // bilm-tf
};

std::unique_ptr<ContextualEncoder> load_encoder(const EncoderSource& source, Device dev);
// The same, for tools that need ELMo itself (its weights, its sense heads).
std::unique_ptr<ElmoEncoder> load_elmo(const EncoderSource& source, Device dev);

}  // namespace sa
