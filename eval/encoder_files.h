// The contextual encoder a tool embeds with: our run directory (options.json + weights.hdf5, and
// config.cfg for lowercasing), or a bilm-tf model (options.json + weights.hdf5). Shared by
// bin/embed, bin/wsd_eval and the alignment tools so that all read models the same way.
#pragma once
#include <string>

#include "layers/elmo.h"

namespace sa {

struct EncoderFiles {
  std::string run_dir;           // ours; sets options and weights
  std::string options, weights;  // bilm-tf
};

struct LoadedEncoder {
  ElmoModel model;
  bool lowercase = false;  // the run was trained on lowercased text
  std::string origin;      // for messages
};

LoadedEncoder load_encoder(const EncoderFiles& files, Device dev);

}  // namespace sa
