#include "train/bert_trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
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
#include "train/optimizer.h"
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
  SA_CHECK(f.metadata.value("vocab_size", -1) == vocab_size, "{}: checkpoint of a vocabulary of {} pieces, the run has {}",
           path, f.metadata.value("vocab_size", -1), vocab_size);
  for (auto& [name, t] : state_tensors(s)) take_tensor(f, path, name, t);
  s.step = f.metadata.at("step").get<int64_t>();
  s.dropout.offset = f.metadata.at("dropout_offset").get<uint64_t>();
  s.opt.set_steps(f.metadata.at("adam_steps").get<int64_t>());
  if (s.head) s.head->restore(f, path, BertState::kSensePrefix, f.metadata.value("pca_fitted", false));
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
  std::vector<int32_t> sel = select_senses(head.table, ctx, b.labels, head.proj.matrix(), mean, o.seed_centers());
  Tensor per_row = o.negatives == SenseOptions::Negatives::Full
                       ? sense_full_loss(x, head.table, sel)
                       : sense_sampled_loss(x, head.table, sel, sample_enabled_rows(head.table, c.n_negative_samples_batch, *rng));
  *step = {ctx, std::move(sel), b.labels};
  return ops::mean(per_row);
}

double heldout_perplexity(BertState& s, const MlmData& data, const TrainConfig& c, Device dev) {
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

TrainResult train_bert(const TrainConfig& c, int64_t max_new_steps, bool quiet) {
  SA_CHECK(dist::size() == 1, "{}: data-parallel training (mpirun) is implemented for ELMo and SaELMo; train BERT "
           "in one process", c.run_dir);
  SA_CHECK(c.sense.negatives != SenseOptions::Negatives::LogUniform, "{}: SaBERT takes sense_negatives = \"full\" or "
           "\"uniform\"", c.run_dir);
  const bool sense = c.sense.n_context >= 2;
  TrainConfig cfg;
  RunSession session(c, cfg);
  const std::string& dir = c.run_dir;
  const Device dev = resolve_device(c.device);
  BasicTokenizerOptions basic;
  basic.lowercase = c.lowercase;
  const WordPieceTokenizer tok(run_wordpieces(c, basic), basic);
  const int V = tok.vocab().size();
  cfg.bert.vocab_size = V;
  write_file_atomically(run_files::config(dir), cfg.to_toml());
  cfg.bert.save_hf_json(dir + "/config.json");

  const MlmData train(c.train_prefix, tok, {c.max_seq_length, c.mask_prob, c.max_predictions, c.seed});
  std::unique_ptr<MlmData> heldout;
  if (!c.heldout_prefix.empty())
    heldout = std::make_unique<MlmData>(c.heldout_prefix, tok,
                                        MlmOptions{c.max_seq_length, c.mask_prob, c.max_predictions, 12345});
  const int64_t per_epoch = std::max<int64_t>(1, static_cast<int64_t>(train.sequences()) / c.batch_size);
  const int64_t total = c.n_steps > 0 ? c.n_steps : c.n_epochs * per_epoch;

  auto fresh_state = [&] {
    BertState s{BertModel::init(cfg.bert, c.seed, dev), Adam(c.learning_rate, 0.9, 0.999, c.adam_eps, c.weight_decay),
                Generator(c.seed * 7919 + 17), 0, nullptr};
    s.opt.set_bias_correction(c.bias_correction);
    if (sense) {  // Adam is dense: the sense table's rows get dense gradients here
      s.head = std::make_unique<SenseHead>(V, c.sense, cfg.bert.hidden, c.seed + 101, dev);
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
  };
  BertState s = fresh_state();
  const std::string resumed = session.restore_newest([&](const std::string& p) { restore_state(p, s, V); },
                                                      [&] { s = fresh_state(); }).first;
  session.open_metrics(s.step);
  const std::string hf_weights = dir + "/model.safetensors";
  // SaBERT's sense tables go into model.safetensors under names of their own (Hugging Face's
  // loader leaves unknown names alone).
  auto hf_extra = [&] {
    std::vector<std::pair<std::string, Tensor>> t;
    if (!s.head) return t;
    const SenseTable& st = s.head->table;
    t = {{"sense.output.weight", st.W}, {"sense.output.bias", ops::reshape(st.b, {st.rows()})}, {"sense.centers", st.centers},
         {"sense.enabled", Tensor::from(st.enabled, {st.rows()})}, {"sense.projection", s.head->proj.matrix()}};
    return t;
  };
  if (!resumed.empty() && (!fs::exists(hf_weights) || fs::last_write_time(hf_weights) < fs::last_write_time(resumed)))
    s.model.save_hf_weights(hf_weights, hf_extra());
  std::vector<Tensor> params = tensors_of(s.named());
  if (!quiet) {
    int64_t n_params = 0;
    for (const Tensor& p : params) n_params += p.numel();
    if (!resumed.empty())
      std::printf("resuming %s from %s (step %ld)\n", dir.c_str(), fs::path(resumed).filename().c_str(), (long)s.step);
    if (sense)
      std::printf("sense table: %d pieces x %d senses x %d dims (%s softmax over the enabled rows)\n", V, c.sense.n_context,
                  cfg.bert.hidden, c.sense.negatives == SenseOptions::Negatives::Full ? "exact" : "sampled");
    std::printf("train: %s, %d pieces, %.2fM parameters, %zu sequences of <= %d pieces (%ld pieces/epoch), "
                "%ld steps of %d sequences, device %s\n",
                sense ? "SaBERT" : "BERT", V, n_params / 1e6, train.sequences(), c.max_seq_length, (long)train.pieces(), (long)total, c.batch_size,
                dev.str().c_str());
  }
  auto save = [&] {
    save_state(run_files::checkpoint(dir, s.step), s, V);
    s.model.save_hf_weights(hf_weights, hf_extra());
    session.prune_checkpoints(c.keep_checkpoints);
  };
  TrainResult res;
  const int64_t first = s.step;
  const auto t0 = std::chrono::steady_clock::now();
  auto t_warm = t0;
  int64_t pieces = 0, pieces_warm = 0;
  const int64_t warm = 5;  // steps before the steady rate is timed (allocation warm-up)
  double smooth = 0;
  while (s.step < total && (max_new_steps <= 0 || s.step - first < max_new_steps)) {
    const MlmBatch b = train.batch(s.step, c.batch_size, dev);
    ++s.step;
    std::mt19937_64 sample_rng(c.seed * 1000003 + static_cast<uint64_t>(s.step));
    SenseStep picked;
    Tensor loss = mlm_loss(s, c, b, &s.dropout, &picked, &sample_rng);
    const double lv = loss.item();
    SA_CHECK(std::isfinite(lv), "step {}: the loss is {} (lower learning_rate?)", s.step, lv);
    backward(loss);
    clip_global_norm(params, c.all_clip_norm_val);
    s.opt.set_lr(bert_learning_rate(c.learning_rate, s.step, c.warmup_steps, total));
    s.opt.step(params);
    if (sense) {
      const SenseEvents ev = after_step(*s.head, c.sense, s.step, picked);
      if (ev.warmup_ended && !quiet) std::printf("step %ld: warm-up done, senses 1..%d enabled\n", (long)s.step, c.sense.n_context - 1);
      if (ev.pruned >= 0) {
        session.log({{"step", s.step}, {"senses_removed", ev.pruned}});
        if (!quiet) std::printf("step %ld: pruning removed %d senses\n", (long)s.step, ev.pruned);
      }
    }
    pieces += b.pieces;
    smooth = s.step == first + 1 ? lv : 0.95 * smooth + 0.05 * lv;
    res.last_loss = lv;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    res.tokens_per_s = static_cast<double>(pieces) / el;
    if (s.step - first == warm) t_warm = std::chrono::steady_clock::now(), pieces_warm = pieces;
    if (s.step - first > warm)
      res.steady_tokens_per_s = static_cast<double>(pieces - pieces_warm) /
                                std::chrono::duration<double>(std::chrono::steady_clock::now() - t_warm).count();
    if (s.step % c.log_every == 0 || s.step == total) {
      session.log({{"step", s.step}, {"loss", lv}, {"perplexity", std::exp(lv)}, {"tokens_per_s", res.tokens_per_s},
                   {"learning_rate", bert_learning_rate(c.learning_rate, s.step, c.warmup_steps, total)},
                   {"elapsed_s", el}});
      if (!quiet) {
        std::printf("step %ld/%ld | %.0f tokens/s | ETA %s | smoothed MLM loss %.3f | perplexity %.1f\n", (long)s.step,
                    (long)total, res.tokens_per_s, clock_str(el / (s.step - first) * (total - s.step)).c_str(), smooth,
                    std::exp(smooth));
        std::fflush(stdout);
      }
    }
    const bool final_step = s.step == total;
    if (heldout && ((c.heldout_every > 0 && s.step % c.heldout_every == 0) || final_step)) {
      res.heldout_perplexity = heldout_perplexity(s, *heldout, c, dev);
      session.log({{"step", s.step}, {"heldout_perplexity", res.heldout_perplexity}});
      if (!quiet) std::printf("step %ld: held-out MLM perplexity %.1f\n", (long)s.step, res.heldout_perplexity);
    }
    if (s.step % c.checkpoint_every == 0 || final_step) save();
  }
  res.steps_done = s.step;
  return res;
}

}  // namespace sa
