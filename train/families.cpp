#include "train/families.h"

#include <fmt/format.h>

#include <optional>

#include "engine/core/error.h"
#include "engine/dist/communicator.h"
#include "train/bert_trainer.h"
#include "train/trainer.h"

namespace sa {

const std::vector<ModelFamilyInfo>& model_families() {
  static const std::vector<ModelFamilyInfo> families = {
      {"elmo", "ELMo and SaELMo (char CNN, biLSTM, sampled or sense-aware softmax)", make_elmo_family, validate_elmo_config, export_elmo_run,
       [](const TrainConfig& c) { return fmt::format("{}x{} tokens", c.batch_size, c.unroll_steps); }, true, true, true},
      {"bert", "BERT and SaBERT (masked LM)", make_bert_family, validate_bert_config, export_bert_run,
       [](const TrainConfig& c) {
         return fmt::format("{} sequences of <= {} pieces (tokens = pieces)", c.batch_size, c.max_seq_length);
       },
       false, false, false},
  };
  return families;
}

const ModelFamilyInfo* find_model_family(const std::string& model) {
  for (const ModelFamilyInfo& f : model_families())
    if (model == f.model) return &f;
  return nullptr;
}

std::string model_family_names() {
  std::string known;
  for (const ModelFamilyInfo& f : model_families()) known += fmt::format("{}\"{}\"", known.empty() ? "" : " or ", f.model);
  return known;
}

const ModelFamilyInfo& model_family(const std::string& model) {
  const ModelFamilyInfo* f = find_model_family(model);
  SA_CHECK(f, "model must be {}, got \"{}\"", model_family_names(), model);
  return *f;
}

TrainResult train_model(const TrainConfig& c, const TrainOptions& opts) {
  const ModelFamilyInfo& info = model_family(c.model_type);
  SA_CHECK(info.data_parallel || dist::size() == 1, "{}: data-parallel training (mpirun) is not implemented for {}; "
           "train it in one process", c.run_dir, info.description);
  // Rank 0 owns the run directory: the lock, the resume check, metrics.jsonl.
  TrainConfig resolved = c;
  std::optional<RunSession> session;
  if (dist::rank() == 0) session.emplace(c, resolved);
  const RunOutput out{session ? &*session : nullptr, opts.quiet || dist::rank() != 0};
  std::unique_ptr<ModelFamily> family = info.make(c, resolved, out);
  StepPhases phases(opts.time_phases, family->device());
  return run_training(*family, c, out, opts, phases);
}

}  // namespace sa
