// A trained run as the sense tools read it (bin/senses, the pseudo-word evaluation): the encoder,
// the vocabulary, how the run read its text, and for SaELMo the sense settings and each
// direction's sense head from the newest checkpoint. Needs nothing of the trainer: options.json
// describes the run.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/vocab.h"
#include "layers/elmo_encoder.h"
#include "sense/sense_head.h"

namespace sa {

struct SenseModel {
  std::unique_ptr<ElmoEncoder> encoder;
  Vocab vocab;
  SenseOptions options{.n_context = 0};
  std::vector<SenseHead> heads;  // [direction]; empty for plain ELMo
  std::string run_dir;
  std::string train_prefix, train_prefix_l2;  // the corpora (a joint run has two)
  bool lowercase = false;
  bool sense() const { return !heads.empty(); }
  int64_t dim() const { return encoder->model.opt.projection_dim; }
};

SenseModel load_sense_model(const std::string& run_dir, Device dev = Device::cpu());

}  // namespace sa
