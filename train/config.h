// Training configuration: a TOML file (configs/*.cfg) whose keys follow bilm-tf's options where
// they exist ([char_cnn], [lstm], batch_size, unroll_steps, n_negative_samples_batch, dropout,
// all_clip_norm_val, learning_rate, n_epochs, n_train_tokens), plus ours (corpus, run directory,
// schedule). Unknown keys and wrong types are errors naming the file, the line and the valid keys.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <functional>
#include <string>
#include <vector>

#include "layers/bert.h"
#include "layers/elmo_options.h"
#include "sense/sense_options.h"

namespace sa {

// Checks a config's values; a failure names the file and line that set the key ("--set" for an
// override) and what was expected.
class ConfigCheck {
 public:
  explicit ConfigCheck(std::function<std::string(const std::string&)> where) : where_(std::move(where)) {}
  void check(bool ok, const std::string& key, const std::string& what) const;
  void positive(const std::string& key, double v) const;
  void non_negative(const std::string& key, double v) const;

 private:
  std::function<std::string(const std::string&)> where_;
};

struct TrainConfig {
  // "elmo" (ELMo and SaELMo: [char_cnn], [lstm]) or "bert" (BERT and SaBERT: [bert] and the
  // masked-LM keys below; batch_size counts sequences, all_clip_norm_val is BERT's global-norm clip).
  std::string model_type = "elmo";
  ElmoOptions model;
  BertConfig bert;
  // BERT's masked LM (train/bert_trainer.h)
  int max_seq_length = 128;      // pieces per packed sequence, [CLS] and [SEP] included
  double mask_prob = 0.15;       // share of positions predicted
  int max_predictions = 20;      // per sequence
  int64_t warmup_steps = 0;      // linear warm-up of the learning rate, then linear decay to 0
  double weight_decay = 0.01;    // AdamW's decoupled decay; none on LayerNorm parameters and biases
  double adam_eps = 1e-6;
  bool bias_correction = false;  // BERT's optimizer has none
  bool word_pieces = false;      // vocabulary built from the corpus: whole words (released SaBERT) or WordPiece
  // SaELMo (n_context >= 2; 0 = plain ELMo with the shared sampled softmax)
  SenseOptions sense{.n_context = 0};
  // bilm-tf training keys
  int batch_size = 128;
  int unroll_steps = 20;
  int n_negative_samples_batch = 8192;
  double dropout = 0.1;
  double all_clip_norm_val = 10.0;
  double learning_rate = 0.2;
  // Ours: each batch row's carried LSTM state is zeroed with this probability before a batch, so
  // the model also learns to start from the zero state that stateless inference uses
  // (docs/design.md §1.3). bilm-tf never resets (0); SaELMo otherwise latches cell units it then depends on.
  double state_reset = 0.0;
  // Ours: the char CNN's distinct tokens padded up to a multiple of this, never past the batch's
  // token count (0: not padded), so that its shapes repeat from step to step, as a replayed step
  // needs (docs/design.md §6.7). A bucket of at least the batch's tokens gives every step one shape.
  int64_t char_tokens_bucket = 0;
  int n_epochs = 10;
  int64_t n_train_tokens = 0;  // 0: count the corpus at the first start
  // data
  std::string train_prefix;    // a file or a glob of shards
  // bilingual (Joint-ELMo, Bi-SaELMo): a second language's corpus, mixed sentence by sentence into
  // one joint vocabulary; and the dictionary of the translation loss (SaELMo only)
  std::string train_prefix_l2;
  double l1_sample_ratio = 0.5;
  std::string dictionary;                // "" = none
  std::string dictionary_format = "muse";  // muse, cedict, edict or ding
  bool dictionary_both_ways = false;     // add every pair reversed too (released: one direction)
  // Each token looks up its own language's side: train_prefix's words the dictionary's sources,
  // train_prefix_l2's the reversed pairs (with dictionary_both_ways) or nothing. Released (false):
  // by string, whatever the language.
  bool dictionary_by_language = false;
  int dictionary_per_word = 4;
  std::string heldout_prefix;  // optional
  std::string vocab_file;      // optional: built from the training corpus when empty
  int vocab_min_count = 1;
  int vocab_max_size = 0;      // 0: no limit
  bool lowercase = false;
  // run
  std::string run_dir;
  std::string device = "auto";
  // "f32", "tf32" (CUDA matrix products on TF32 tensor cores), "bf16" (matrix products of bf16
  // operands with f32 accumulation, on the CPU too; weights, softmax and loss in f32) or "f64"
  // (ELMo and SaELMo: every parameter and activation in double, e.g. to compare runs to rounding)
  std::string precision = "f32";
  // SaELMo's sense tables: "replicated" (every data-parallel rank holds them whole) or "sharded"
  // (rank r of N stores the rows of words [V*r/N, V*(r+1)/N); each step gathers the rows it reads,
  // docs/design.md §6.9). The checkpoints are the same, so a run may switch when it resumes.
  std::string sense_tables = "replicated";
  uint64_t seed = 1;
  int64_t n_steps = 0;         // 0: n_epochs * n_train_tokens / (batch_size * unroll_steps)
  int log_every = 10;
  int checkpoint_every = 1250;
  int keep_checkpoints = 2;
  int heldout_every = 0;       // 0: only at the end
  int heldout_batches = 20;

  // The config file a tool was given: `name` itself when it is a file, else configs/NAME under the
  // working directory or next to the tool (bin/../configs), so `bin/train elmo.cfg` reads
  // configs/elmo.cfg. Fails naming every place it looked.
  static std::string find(const std::string& name);
  // Reads `path` and applies `overrides` ("key=value", value in TOML syntax or a bare string).
  // Every value is checked here, errors naming the file and line (or the --set) that set it;
  // with check_files (bin/train), the corpora must exist too.
  static TrainConfig load(const std::string& path, const std::vector<std::string>& overrides = {},
                          bool check_files = false);
  // Every key with its value, in TOML (written to the run directory as config.cfg).
  std::string to_toml() const;
  // options.json for this model and vocabulary size: bilm-tf's keys (proj_clip as the model applies
  // it), the released SaELMo's, and a "sensealign" section (lowercase, corpora, sense settings).
  nlohmann::json bilm_options(int n_tokens_vocab) const;
  // The valid keys, for messages and docs.
  static std::vector<std::string> keys();
  // The keys that may change when a run resumes: how long it runs, how often it logs, evaluates
  // and checkpoints, and where. Every other key defines what the steps compute.
  static const std::vector<std::string>& resumable_keys();
  // The changes from `saved` (the run's config.cfg) that a resume refuses, as "key: old -> new".
  // n_train_tokens = 0 means "count the corpus" and matches any count; lstm.cudnn may change when
  // the model's proj_clip stays the same.
  std::vector<std::string> refused_changes(const TrainConfig& saved) const;
};

}  // namespace sa
