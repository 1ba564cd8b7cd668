// The checkpoint schema: everything a training run needs to continue bit-exactly, saved and
// restored through one list of names.
//   <bilm-tf name>, softmax/W, softmax/b, sense/<d>/W, sense/<d>/b   the model (ElmoLM::named)
//   adagrad/<any of those>                                           Adagrad's accumulators
//   state/<d>/<layer>/c, state/<d>/<layer>/m                         the carried LSTM state
//   sense/<d>/{centers,enabled,projection,pca_queue,usage}           the sense heads (SenseHead::save)
//   metadata: step, dropout_offset (the dropout stream's position), seed, pca_fitted,
//             vocab_checksum (so a changed vocab.txt is an error, not silent garbage),
//             ranks (data-parallel processes; a resume needs as many)
// The data streams and per-step samplers are seeded from (seed, step), so `step` positions them.
#pragma once
#include <string>

#include "data/safetensors.h"
#include "train/elmo_lm.h"
#include "engine/optim/optimizer.h"

namespace sa {

struct TrainingState {
  ElmoLM lm;
  Adagrad opt;
  BilmState carried;
  Generator dropout;
  int64_t step = 0;
  uint64_t seed = 0;
  uint64_t vocab_checksum = 0;  // Vocab::checksum of the run's vocabulary
  int ranks = 1;                 // data-parallel ranks; `carried` holds the rows of all of them when saved
};

// A checkpoint that is intact but belongs to another vocabulary than the run's: not damage, so
// the trainer stops instead of falling back to an older checkpoint.
struct VocabularyMismatch : Error {
  using Error::Error;
};

// With sharded sense tables the ranks' rows are gathered first (collective: every rank calls it,
// and only the one with `write` writes). The file is the same as an unsharded run's.
void save_checkpoint(const std::string& path, TrainingState& s, bool write = true);
// Restores every part of `s` (allocated with the run's shapes) from the checkpoint at `path`.
// Throws VocabularyMismatch when the checkpoint records another vocabulary than s.vocab_checksum.
void restore_checkpoint(const std::string& path, TrainingState& s);
// Every metadata field of an ELMo-family checkpoint has its type (CheckpointDamaged otherwise).
void check_checkpoint_metadata(const SafetensorsFile& f);
// Restores only the model (parameters and sense heads), for tools that use a trained run; returns
// the checkpoint's step.
int64_t restore_model(const std::string& path, ElmoLM& lm);

}  // namespace sa
