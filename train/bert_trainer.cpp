#include "train/bert_trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <random>

#include "data/atomic_file.h"
#include "data/mlm_batches.h"
#include "data/run_files.h"
#include "data/safetensors.h"
#include "data/wordpiece_trainer.h"
#include "engine/dist/communicator.h"
#include "sense/selection.h"
#include "sense/sense_head.h"
#include "sense/sense_softmax.h"
#include "engine/optim/optimizer.h"
#include "train/run_session.h"

namespace sa {

namespace fs = std::filesystem;

namespace {

// The run's vocabulary: the run directory's own copy wins, so a resumed run keeps its ids.
WordPieceVocab run_wordpieces(const TrainConfig& c, const BasicTokenizerOptions& basic) {
  const std::string saved = run_files::vocab(c.run_dir);
  if (fs::exists(saved)) return WordPieceVocab::load(saved);
  WordPieceVocab v = !c.vocab_file.empty() ? WordPieceVocab::load(c.vocab_file)
                     : c.word_pieces
                         ? word_level_vocab({c.train_prefix}, c.vocab_min_count, c.vocab_max_size, basic)
                         : train_wordpiece({c.train_prefix}, {c.vocab_max_size > 0 ? c.vocab_max_size : 30522, 2, basic});
  v.save(saved);
  return v;
}

struct BertState {
  BertModel model;
  Adam opt;
  Generator dropout;
  int64_t step = 0;
  std::unique_ptr<SenseHead> head;  // SaBERT: the sense-aware output layer over the MLM transform

  // The trainable parameters with their names: BERT's, then the sense table's.
  std::vector<NamedTensor> named() {
    std::vector<NamedTensor> v = model.named();
    if (head)
      for (const NamedTensor& nt : head->params(kSensePrefix)) v.push_back(nt);
    return v;
  }
  static constexpr const char* kSensePrefix = "sense/0/";
};

std::vector<std::pair<std::string, Tensor>> state_tensors(BertState& s) {
  std::vector<std::pair<std::string, Tensor>> t;
  for (NamedTensor& nt : s.named()) {
    auto& [m, v] = s.opt.moments(*nt.tensor);
    t.emplace_back(nt.name, *nt.tensor);
    t.emplace_back("adam/m/" + nt.name, m);
    t.emplace_back("adam/v/" + nt.name, v);
  }
  return t;
}

void save_state(const std::string& path, BertState& s, int vocab_size) {
  std::vector<std::pair<std::string, Tensor>> t = state_tensors(s);
  if (s.head) s.head->save(t, BertState::kSensePrefix);
  save_safetensors(path, t,
                   {{"step", s.step}, {"dropout_offset", s.dropout.offset}, {"adam_steps", s.opt.steps()},
                    {"vocab_size", vocab_size}, {"pca_fitted", s.head && s.head->proj.fitted()}});
}

void restore_state(const std::string& path, BertState& s, int vocab_size) {
  const SafetensorsFile f = load_safetensors(path);
  SA_CHECK(f.meta<int>("vocab_size", -1) == vocab_size, "{}: checkpoint of a vocabulary of {} pieces, the run has {}",
           path, f.meta<int>("vocab_size", -1), vocab_size);
  for (auto& [name, t] : state_tensors(s)) take_tensor(f, path, name, t);
  s.step = f.meta<int64_t>("step");
  s.dropout.offset = f.meta<uint64_t>("dropout_offset");
  s.opt.set_steps(f.meta<int64_t>("adam_steps"));
  if (s.head) s.head->restore(f, path, BertState::kSensePrefix, f.meta<bool>("pca_fitted", false));
}

// The final hidden vectors [n, H] of a batch's predicted positions.
Tensor predicted_hidden(const BertModel& m, const MlmBatch& b, Generator* gen) {
  const std::vector<Tensor> hidden = m.forward({b.ids, b.types, b.mask}, gen);
  const int64_t N = b.ids.numel(), n = static_cast<int64_t>(b.positions.size());
  Tensor top = ops::reshape(hidden.back(), {N, m.config.hidden});
  return ops::gather_rows(top, Tensor::from(b.positions, {n}, m.device()));
}

// Mean loss of the predicted positions. BERT: cross entropy over the vocabulary. SaBERT: the
// masked position's final hidden vector selects a sense of the target word (the same selection,
// centring, projection and seeding as SaELMo's, sense/selection.h), and the MLM transform's output
// is scored against the enabled sense rows: all of them (sense_negatives = "full"), or the
// selected row against uniform samples. In evaluation (no `step`), SaBERT's loss is the word's
// probability summed over its senses, on BERT's scale.
Tensor mlm_loss(BertState& s, const TrainConfig& c, const MlmBatch& b, Generator* gen, SenseStep* step,
                std::mt19937_64* rng) {
  const BertModel& m = s.model;
  const Tensor h = predicted_hidden(m, b, gen);
  const int64_t n = h.dim(0);
  if (!s.head) return ops::mean(ops::cross_entropy(m.mlm_logits(h), Tensor::from(b.labels, {n}, m.device())));
  SenseHead& head = *s.head;
  const Tensor x = m.mlm_transform(h);
  if (!step) return ops::mean(sense_word_nll(x, head.table, b.labels));
  const SenseOptions& o = c.sense;
  const Tensor ctx = h.detach();
  const Tensor mean = selection_mean(head.table, o, head.proj.mean(), b.labels,
                                     o.selection_mean == SenseOptions::SelectionMean::WordOffset ? ops::mean(ctx, 0, true)
                                                                                                  : Tensor());
  // The selection stays on the device, except where seeding makes it sequential on the host.
  const Tensor sel = o.seed_centers()
                         ? Tensor::from(select_senses(head.table, ctx, b.labels, head.proj.matrix(), mean, true), {n},
                                        m.device())
                         : select_sense_rows(head.table, ctx, b.labels, head.proj.matrix(), mean);
  // Uniform negatives drawn on the device from the head's list of enabled rows (after_step renews it).
  const Tensor negatives = o.negatives == SenseOptions::Negatives::Full
                               ? Tensor()
                               : head.uniform_negatives(c.n_negative_samples_batch, (*rng)());
  Tensor per_row = negatives.defined() ? sense_sampled_loss(x, head.table, sel, negatives)
                                       : sense_full_loss(x, head.table, sel);
  *step = {ctx, sel, b.labels, {}, negatives};
  return ops::mean(per_row);
}

double bert_heldout_perplexity(BertState& s, const MlmData& data, const TrainConfig& c, Device dev) {
  NoGrad ng;
  double total = 0, count = 0;
  for (int i = 0; i < c.heldout_batches; ++i) {
    const MlmBatch b = data.batch(i, c.batch_size, dev);
    const double n = static_cast<double>(b.positions.size());
    total += mlm_loss(s, c, b, nullptr, nullptr, nullptr).item() * n, count += n;
  }
  return std::exp(total / count);
}

}  // namespace

double bert_learning_rate(double peak, int64_t step, int64_t warmup, int64_t total) {
  if (warmup > 0 && step <= warmup) return peak * static_cast<double>(step) / static_cast<double>(warmup);
  return peak * std::max(0.0, static_cast<double>(total - step) / static_cast<double>(std::max<int64_t>(1, total - warmup)));
}

void validate_bert_config(const TrainConfig& c, const ConfigCheck& k) {
  for (auto [key, v] : {std::pair{"bert.hidden", c.bert.hidden}, {"bert.layers", c.bert.layers}, {"bert.heads", c.bert.heads},
                        {"bert.intermediate", c.bert.intermediate}, {"bert.max_positions", c.bert.max_positions},
                        {"bert.type_vocab", c.bert.type_vocab}, {"max_predictions", c.max_predictions}})
    k.positive(key, v);
  k.check(c.bert.hidden % std::max(c.bert.heads, 1) == 0, "bert.hidden",
          fmt::format("({}) must be a multiple of bert.heads ({})", c.bert.hidden, c.bert.heads));
  k.check(c.max_seq_length >= 3 && c.max_seq_length <= c.bert.max_positions, "max_seq_length",
          fmt::format("must be in [3, bert.max_positions = {}], got {}", c.bert.max_positions, c.max_seq_length));
  k.check(c.mask_prob > 0 && c.mask_prob < 1, "mask_prob", fmt::format("must be in (0, 1), got {}", c.mask_prob));
  k.check(c.bert.hidden_dropout >= 0 && c.bert.hidden_dropout < 1 && c.bert.attention_dropout >= 0 &&
              c.bert.attention_dropout < 1,
          "bert.hidden_dropout", "and bert.attention_dropout must be in [0, 1)");
  k.non_negative("warmup_steps", static_cast<double>(c.warmup_steps));
  k.non_negative("weight_decay", c.weight_decay);
  k.positive("adam_eps", c.adam_eps);
  k.check(c.sense.n_context == 0 || c.sense.n_context >= 2, "n_context", "must be 0 (BERT) or at least 2 (SaBERT)");
  k.check(c.train_prefix_l2.empty() && c.dictionary.empty(), "train_prefix_l2",
          "and dictionary are not supported for BERT yet (monolingual masked LM)");
  k.check(c.precision != "f64", "precision", "\"f64\" is for ELMo and SaELMo (BERT trains in f32, tf32 or bf16)");
  k.check(c.sense_tables != "sharded", "sense_tables", "\"sharded\" is for SaELMo's sense tables");
}

void export_bert_run(const std::string& run, const std::string& out) {
  SA_CHECK(open_run_directory(run).kind == RunDirectory::Kind::Bert, "{}: not a BERT run (no config.json)", run);
  const TrainConfig c = TrainConfig::load(run_files::config(run));
  const WordPieceVocab vocab = WordPieceVocab::load(run_files::vocab(run));
  BertConfig bc = c.bert;
  bc.vocab_size = vocab.size();
  const std::string ckpt = run_files::newest_checkpoint(run);
  const SafetensorsFile f = load_safetensors(ckpt);
  BertModel m = BertModel::init(bc, 0);
  for (NamedTensor& nt : m.named()) take_tensor(f, ckpt, nt.name, *nt.tensor);
  fs::create_directories(out);
  bc.save_hf_json(out + "/config.json", c.sense.n_context < 2);
  m.save_hf_weights(out + "/model.safetensors",
                    hf_sense_tensors(f.tensors));
  vocab.save(out + "/vocab.txt");
  const nlohmann::json tok = {{"tokenizer_class", "BertTokenizer"}, {"do_lower_case", c.lowercase},
                              {"model_max_length", bc.max_positions}};
  write_file_atomically(out + "/tokenizer_config.json", tok.dump(2) + "\n");
  std::printf("export: %s (step %ld) -> %s/{config.json,model.safetensors,vocab.txt,tokenizer_config.json}\n",
              ckpt.c_str(), static_cast<long>(f.meta<int64_t>("step", 0)), out.c_str());
}

namespace {

// BERT and SaBERT (model = "bert"): the tokenizer, the masked-LM data and the state of a run.
class BertFamily final : public ModelFamily {
 public:
  BertFamily(const TrainConfig& c, TrainConfig& cfg, const RunOutput& out)
      : c_(c), out_(out), dev_(resolve_device(c.device)), precision_(dev_, c.precision, out.quiet),
        sense_(c.sense.n_context >= 2) {
    SA_CHECK(c.sense.negatives != SenseOptions::Negatives::LogUniform, "{}: SaBERT takes sense_negatives = \"full\" or "
             "\"uniform\"", c.run_dir);
    const std::string& dir = c.run_dir;
    BasicTokenizerOptions basic;
    basic.lowercase = c.lowercase;
    tok_.emplace(run_wordpieces(c, basic), basic);
    V_ = tok_->vocab().size();
    cfg.bert.vocab_size = V_;
    bert_ = cfg.bert;
    write_file_atomically(run_files::config(dir), cfg.to_toml());
    cfg.bert.save_hf_json(dir + "/config.json", c.sense.n_context < 2);
    train_.emplace(c.train_prefix, *tok_, MlmOptions{c.max_seq_length, c.mask_prob, c.max_predictions, c.seed});
    if (!c.heldout_prefix.empty())
      heldout_.emplace(c.heldout_prefix, *tok_, MlmOptions{c.max_seq_length, c.mask_prob, c.max_predictions, 12345});
    const int64_t per_epoch = std::max<int64_t>(1, static_cast<int64_t>(train_->sequences()) / c.batch_size);
    total_ = c.n_steps > 0 ? c.n_steps : c.n_epochs * per_epoch;
    s_.emplace(fresh_state());
    const std::string resumed =
        out.session->restore_newest([&](const std::string& p) { restore_state(p, *s_, V_); }, [&] { s_.emplace(fresh_state()); })
            .first;
    out.session->open_metrics(s_->step);
    if (!resumed.empty() && (!fs::exists(hf_weights()) || fs::last_write_time(hf_weights()) < fs::last_write_time(resumed)))
      s_->model.save_hf_weights(hf_weights(), hf_extra());
    params_ = tensors_of(s_->named());
    if (!out.quiet) {
      int64_t n_params = 0;
      for (const Tensor& p : params_) n_params += p.numel();
      if (!resumed.empty())
        std::printf("resuming %s from %s (step %ld)\n", dir.c_str(), fs::path(resumed).filename().c_str(), (long)s_->step);
      if (sense_)
        std::printf("sense table: %d pieces x %d senses x %d dims (%s softmax over the enabled rows)\n", V_, c.sense.n_context,
                    bert_.hidden, c.sense.negatives == SenseOptions::Negatives::Full ? "exact" : "sampled");
      std::printf("train: %s, %d pieces, %.2fM parameters, %zu sequences of <= %d pieces (%ld pieces/epoch), "
                  "%ld steps of %d sequences, device %s\n",
                  sense_ ? "SaBERT" : "BERT", V_, n_params / 1e6, train_->sequences(), c.max_seq_length,
                  (long)train_->pieces(), (long)total_, c.batch_size, dev_.str().c_str());
    }
  }

  int64_t step() const override { return s_->step; }
  int64_t total_steps() const override { return total_; }
  Device device() const override { return dev_; }
  const char* loss_name() const override { return "MLM loss"; }
  std::string host_reads_per_step() const override {
    return sense_ ? kSenseScheduleHostReads : "";
  }
  bool scores_heldout() const override { return heldout_.has_value(); }
  double heldout_perplexity() override { return bert_heldout_perplexity(*s_, *heldout_, c_, dev_); }

  StepStats train_step(StepPhases& phases) override {
    const TrainConfig& c = c_;
    BertState& s = *s_;
    const MlmBatch b = train_->batch(s.step, c.batch_size, dev_);
    ++s.step;
    std::mt19937_64 sample_rng(c.seed * 1000003 + static_cast<uint64_t>(s.step));
    phases.mark("batch");
    phases.profile_forward_ops(true);
    SenseStep picked;
    Bf16WeightCopies copies(params_, bf16_wanted_);  // under bf16: made at once, taken until the update
    Tensor loss = mlm_loss(s, c, b, &s.dropout, &picked, &sample_rng);
    phases.profile_forward_ops(false);
    phases.mark("forward and loss");
    phases.profile_backward_ops(true);
    backward(loss);
    copies.close();
    phases.profile_backward_ops(false);
    phases.mark("backward");
    clip_by_global_norm(params_, c.all_clip_norm_val);
    s.opt.set_lr(bert_learning_rate(c.learning_rate, s.step, c.warmup_steps, total_));
    s.opt.step(params_);
    phases.mark("update");
    if (sense_) {
      report_sense_events(out_, s.step, c.sense, after_step(*s.head, c.sense, s.step, picked));
      if (s.step % c.log_every == 0) s.head->usage.flush();  // on a step that reads the loss anyway
      phases.mark("sense schedule");
    }
    return {loss.detach(), b.pieces, 0};
  }

  nlohmann::json step_metrics() const override {
    return {{"learning_rate", bert_learning_rate(c_.learning_rate, s_->step, c_.warmup_steps, total_)}};
  }

  void save() override {
    save_state(run_files::checkpoint(c_.run_dir, s_->step), *s_, V_);
    s_->model.save_hf_weights(hf_weights(), hf_extra());
    out_.session->prune_checkpoints(c_.keep_checkpoints);
  }

 private:
  BertState fresh_state() const {
    const TrainConfig& c = c_;
    BertState s{BertModel::init(bert_, c.seed, dev_), Adam(c.learning_rate, 0.9, 0.999, c.adam_eps, c.weight_decay),
                Generator(c.seed * 7919 + 17), 0, nullptr};
    s.opt.set_bias_correction(c.bias_correction);
    if (sense_) {  // Adam is dense: the sense table's rows get dense gradients here
      s.head = std::make_unique<SenseHead>(V_, c.sense, bert_.hidden, c.seed + 101, dev_);
      s.head->table.W.set_sparse_grad(false);
      s.head->table.b.set_sparse_grad(false);
    }
    for (NamedTensor& nt : s.named()) {
      nt.tensor->set_requires_grad();
      // No decay on LayerNorm parameters and biases (the sense table's bias is "sense/0/b").
      if (nt.name.find("LayerNorm") != std::string::npos || nt.name.ends_with("bias") || nt.name.ends_with("/b"))
        s.opt.no_decay(*nt.tensor);
    }
    return s;
  }
  std::string hf_weights() const { return c_.run_dir + "/model.safetensors"; }
  std::vector<std::pair<std::string, Tensor>> hf_extra() const {
    if (!s_->head) return {};
    std::map<std::string, Tensor> ours;
    std::vector<std::pair<std::string, Tensor>> saved;
    s_->head->save(saved, BertState::kSensePrefix);
    for (auto& [n, t] : saved) ours[n] = t;
    ours[std::string(BertState::kSensePrefix) + "W"] = s_->head->table.W;
    ours[std::string(BertState::kSensePrefix) + "b"] = s_->head->table.b;
    return hf_sense_tensors(ours);
  }

  const TrainConfig& c_;
  RunOutput out_;
  Device dev_;
  PrecisionScope precision_;
  bool sense_;
  BertConfig bert_;
  std::optional<WordPieceTokenizer> tok_;
  int V_ = 0;
  std::optional<MlmData> train_, heldout_;
  int64_t total_ = 0;
  std::optional<BertState> s_;
  std::vector<Tensor> params_;
  std::vector<char> bf16_wanted_;  // the weights whose bf16 copies a step takes (Bf16WeightCopies)
};

}  // namespace

std::unique_ptr<ModelFamily> make_bert_family(const TrainConfig& c, TrainConfig& resolved, const RunOutput& out) {
  return std::make_unique<BertFamily>(c, resolved, out);
}

}  // namespace sa
