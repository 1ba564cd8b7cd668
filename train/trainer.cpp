#include "train/trainer.h"

#include "data/dictionary.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/engine.h"
#include "train/checkpoint.h"
#include "train/elmo_lm.h"
#include "train/optimizer.h"
#include "train/run_dir.h"
#include "train/sense_head.h"

namespace sa {

namespace fs = std::filesystem;

namespace {

std::string ckpt_name(int64_t step) {
  char b[64];
  std::snprintf(b, sizeof b, "ckpt-%08ld.safetensors", static_cast<long>(step));
  return b;
}

// Checkpoints in the run directory, oldest first.
std::vector<fs::path> checkpoints(const fs::path& dir) {
  std::vector<fs::path> v;
  if (fs::exists(dir / "checkpoints"))
    for (auto& e : fs::directory_iterator(dir / "checkpoints"))
      if (e.path().extension() == ".safetensors") v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

std::string clock_str(double s) {
  char b[32];
  int t = static_cast<int>(s);
  if (t >= 3600)
    std::snprintf(b, sizeof b, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(b, sizeof b, "%d:%02d", t / 60, t % 60);
  return b;
}

// Drops metric lines of steps after `step` (written after the checkpoint a resume starts from).
void truncate_metrics(const fs::path& path, int64_t step) {
  if (!fs::exists(path)) return;
  std::ifstream in(path);
  std::string kept, line;
  while (std::getline(in, line)) {
    try {
      if (nlohmann::json::parse(line).value("step", int64_t{0}) <= step) kept += line + "\n";
    } catch (const nlohmann::json::exception&) {  // a line cut by a crash
    }
  }
  write_file_atomically(path.string(), kept);
}

double heldout_perplexity(ElmoLM& lm, const TrainConfig& c, const Vocab& vocab, Device dev) {
  NoGrad ng;
  Generator gen(0);
  LossOptions lo{false, 0.0, 0};
  double total = 0;
  int n = 0;
  for (int d = 0; d < 2; ++d) {
    LmStream s(std::make_unique<ShardedCorpus>(c.heldout_prefix, 0, c.lowercase, false), vocab, c.batch_size,
               c.unroll_steps, d == 1);
    CarriedState st = CarriedState::zeros(c.model, c.batch_size, dev, DType::F32);
    LmBatch b;
    std::mt19937_64 rng(0);
    for (int i = 0; i < c.heldout_batches; ++i) {
      s.next(b);
      Tensor tokens = lm.bilm.encode_tokens(b.char_ids, {b.rows, b.steps});
      total += lm.sense() ? sense_direction_loss(lm.heads[d], lm_top(lm.bilm, d, tokens, st.dir[d], 0.0, gen), b, c.sense,
                                                 0, false, rng)
                                .item()
                          : direction_loss(lm, d, tokens, b, st.dir[d], lo, gen, nullptr, nullptr).item();
      ++n;
    }
  }
  return std::exp(total / n);
}

}  // namespace

TrainResult train_elmo(const TrainConfig& c, int64_t max_new_steps, bool quiet) {
  const fs::path dir(c.run_dir);
  fs::create_directories(dir / "checkpoints");
  Device dev = resolve_device(c.device);

  // Vocabulary: the run directory's own copy wins, so a resumed run keeps its ids.
  Vocab vocab = fs::exists(dir / "vocab.txt") ? Vocab::load((dir / "vocab.txt").string())
                : !c.vocab_file.empty()     ? Vocab::load(c.vocab_file)
                                            : build_vocab(c.train_prefix_l2.empty() ? std::vector<std::string>{c.train_prefix}
                                                                                    : std::vector<std::string>{c.train_prefix, c.train_prefix_l2},
                                                          c.vocab_min_count, c.vocab_max_size, c.lowercase);
  if (!fs::exists(dir / "vocab.txt")) vocab.save((dir / "vocab.txt").string());
  SA_CHECK(c.n_negative_samples_batch <= vocab.size(),
           "n_negative_samples_batch ({}) exceeds the vocabulary size ({})", c.n_negative_samples_batch, vocab.size());

  TrainConfig cfg = c;
  // Bilingual: an epoch is twice the larger corpus, as released (n_train_tokens = max(n1, n2) * 2).
  if (cfg.n_train_tokens == 0)
    cfg.n_train_tokens = c.train_prefix_l2.empty() ? count_tokens(c.train_prefix, c.lowercase)
                                                   : 2 * std::max(count_tokens(c.train_prefix, c.lowercase),
                                                                  count_tokens(c.train_prefix_l2, c.lowercase));
  const int64_t tokens_per_step = static_cast<int64_t>(c.batch_size) * c.unroll_steps;
  const int64_t total = c.n_steps > 0 ? c.n_steps : std::max<int64_t>(1, c.n_epochs * cfg.n_train_tokens / tokens_per_step);
  write_file_atomically((dir / "config.cfg").string(), cfg.to_toml());
  write_file_atomically((dir / "options.json").string(), cfg.bilm_options(vocab.size()).dump(2) + "\n");

  const bool sense = c.sense.n_context >= 2;
  if (sense && !quiet)
    std::printf("sense tables: 2 directions x %d words x %d senses x %d dims: %.1f MiB each (W, b, centers, Adagrad)\n",
                vocab.size(), c.sense.n_context, c.model.projection_dim,
                SenseTable::bytes_needed(vocab.size(), c.sense.n_context, c.model.projection_dim, DType::F32) / 1048576.0);
  ElmoLM lm = sense ? ElmoLM::init_sense(c.model, c.sense, vocab.size(), c.seed, dev)
                    : ElmoLM::init(c.model, vocab.size(), c.seed, dev);
  Adagrad opt(c.learning_rate, 1.0);
  CarriedState state = CarriedState::zeros(c.model, c.batch_size, dev, DType::F32);
  Generator gen(c.seed * 7919 + 17);
  int64_t step = 0;

  std::vector<fs::path> ckpts = checkpoints(dir);
  if (!ckpts.empty()) {
    SafetensorsFile f = load_safetensors(ckpts.back().string());
    const std::string origin = ckpts.back().string();
    restore_model(lm, f, origin, vocab.size());
    for (auto& nt : lm.named()) take_tensor(f, origin, "adagrad/" + nt.name, opt.accumulator(*nt.tensor));
    for (int d = 0; d < 2; ++d)
      for (size_t l = 0; l < state.dir[d].size(); ++l) {
        std::string p = "state/" + std::to_string(d) + "/" + std::to_string(l);
        take_tensor(f, origin, p + "/c", state.dir[d][l].c);
        take_tensor(f, origin, p + "/m", state.dir[d][l].m);
      }
    step = f.metadata.at("step").get<int64_t>();
    gen.offset = f.metadata.at("dropout_offset").get<uint64_t>();
    truncate_metrics(dir / "metrics.jsonl", step);
    if (!quiet) std::printf("resuming %s from %s (step %ld)\n", c.run_dir.c_str(), ckpts.back().filename().c_str(), (long)step);
  }

  int64_t n_params = 0;
  for (const Tensor& p : lm.params()) n_params += p.numel();
  if (!quiet)
    std::printf("train: vocab %d, %.2fM parameters (%.1f MiB + as much for Adagrad), %ld tokens/epoch, %ld steps of %dx%d, device %s\n",
                vocab.size(), n_params / 1e6, n_params * 4.0 / 1048576, (long)cfg.n_train_tokens, (long)total,
                c.batch_size, c.unroll_steps, dev.str().c_str());
  if (dev.is_cuda() && !quiet) {
    const ElmoOptions& m = c.model;
    std::printf("LSTM on %s: %s\n", dev.str().c_str(),
                ops::lstm_uses_cudnn(dev, m.lstm_path(), m.proj_clip, m.lstm_dim, m.projection_dim)
                    ? (m.proj_clip > 0 ? "cuDNN RNN (lstm.cudnn = \"on\": proj_clip is not applied)" : "cuDNN RNN")
                    : "step kernels with exact proj_clip (lstm.cudnn = \"on\" takes cuDNN without it)");
  }

  // Each direction draws its own sentences (bilingual: each picks the language independently).
  auto corpus = [&](uint64_t seed) {
    auto one = std::make_unique<ShardedCorpus>(c.train_prefix, seed, c.lowercase);
    if (!c.train_prefix_l2.empty())
      one->mix_with(std::make_unique<ShardedCorpus>(c.train_prefix_l2, seed + 1000003, c.lowercase), c.l1_sample_ratio);
    return one;
  };
  LmStream fwd(corpus(c.seed * 2 + 1), vocab, c.batch_size, c.unroll_steps, false);
  LmStream bwd(corpus(c.seed * 2 + 2), vocab, c.batch_size, c.unroll_steps, true);
  // The translation loss's dictionary (Bi-SaELMo), over the joint vocabulary.
  std::unique_ptr<TranslationTable> dict;
  if (!c.dictionary.empty()) {
    Dictionary d = read_dictionary(c.dictionary, c.dictionary_format);
    if (c.dictionary_both_ways) {
      Dictionary r = reversed(d);
      d.pairs.insert(d.pairs.end(), r.pairs.begin(), r.pairs.end());
    }
    dict = std::make_unique<TranslationTable>(translation_table(d, vocab, static_cast<int>(c.dictionary_per_word)));
    if (!quiet) std::printf("%s: %s\n", c.dictionary.c_str(), describe(d, *dict).c_str());
  }
  LmBatch bf, bb;
  for (int64_t i = 0; i < step; ++i) {  // replay the data stream up to the checkpoint
    fwd.next(bf);
    bwd.next(bb);
  }

  LogUniformSampler sampler(vocab.size());
  LossOptions lo{true, c.dropout, c.n_negative_samples_batch};
  std::ofstream metrics(dir / "metrics.jsonl", std::ios::app);
  TrainResult res;
  auto t0 = std::chrono::steady_clock::now();
  const int64_t first = step;
  const int64_t warm = 5;
  auto t_warm = t0;
  double smooth = 0;
  auto save = [&]() {
    std::vector<std::pair<std::string, Tensor>> ts;
    for (auto& nt : lm.named()) {
      ts.emplace_back(nt.name, *nt.tensor);
      ts.emplace_back("adagrad/" + nt.name, opt.accumulator(*nt.tensor));
    }
    for (int d = 0; d < 2; ++d)
      for (size_t l = 0; l < state.dir[d].size(); ++l) {
        std::string p = "state/" + std::to_string(d) + "/" + std::to_string(l);
        ts.emplace_back(p + "/c", state.dir[d][l].c);
        ts.emplace_back(p + "/m", state.dir[d][l].m);
      }
    for (size_t d = 0; d < lm.heads.size(); ++d) {
      SenseHead& h = lm.heads[d];
      std::string p = "sense/" + std::to_string(d) + "/";
      ts.emplace_back(p + "centers", h.table.centers);
      ts.emplace_back(p + "enabled", Tensor::from(h.table.enabled, {h.table.rows()}));
      ts.emplace_back(p + "projection", h.proj.matrix());
      ts.emplace_back(p + "pca_queue", h.proj.queue_tensor());
      ts.emplace_back(p + "usage", h.usage.to_tensor(vocab.size()));
    }
    save_safetensors((dir / "checkpoints" / ckpt_name(step)).string(), ts,
                     {{"step", step}, {"dropout_offset", gen.offset}, {"seed", c.seed},
                      {"pca_fitted", sense && lm.heads[0].proj.fitted()}});
    lm.bilm.save_bilm((dir / "weights.hdf5.tmp").string());  // bilm-tf bundle for bin/embed and AllenNLP
    fs::rename(dir / "weights.hdf5.tmp", dir / "weights.hdf5");
    std::vector<fs::path> all = checkpoints(dir);
    for (size_t i = 0; i + static_cast<size_t>(c.keep_checkpoints) < all.size(); ++i) fs::remove(all[i]);
  };

  while (step < total && (max_new_steps <= 0 || step - first < max_new_steps)) {
    fwd.next(bf);
    bwd.next(bb);
    ++step;
    state.reset_rows(c.state_reset, c.seed * 998244353 + static_cast<uint64_t>(step));
    std::mt19937_64 sample_rng(c.seed * 1000003 + static_cast<uint64_t>(step));
    auto [tf, tb] = encode_batches(lm, bf, bb);
    Tensor lf, lb, ctx[2];
    std::array<Tensor, 2> undropped;
    const bool before = sense && !c.sense.select_after_dropout;
    auto [top_f, top_b] = lm_tops(lm.bilm, {tf, tb}, state, c.dropout, gen, before ? &undropped : nullptr);
    if (sense) {
      lf = sense_direction_loss(lm.heads[0], top_f, bf, c.sense, c.n_negative_samples_batch, true, sample_rng, &ctx[0],
                                dict.get(), undropped[0]);
      lb = sense_direction_loss(lm.heads[1], top_b, bb, c.sense, c.n_negative_samples_batch, true, sample_rng, &ctx[1],
                                dict.get(), undropped[1]);
    } else {
      lf = direction_loss(lm, top_f, bf, lo, &sampler, &sample_rng);
      lb = direction_loss(lm, top_b, bb, lo, &sampler, &sample_rng);
    }
    Tensor loss = ops::scale(ops::add(lf, lb), 0.5);
    double lv = loss.item();
    SA_CHECK(std::isfinite(lv), "step {}: the loss is {} (lower learning_rate or all_clip_norm_val?)", step, lv);
    // bilm-tf differentiates total_loss * unroll_steps.
    backward(loss, Tensor::full(loss.shape(), c.unroll_steps, loss.dtype(), dev));
    std::vector<Tensor> params = lm.params();
    coalesce_sparse_grads(params);
    clip_global_norm(params, c.all_clip_norm_val);
    opt.step(params);
    state.detach();
    if (sense) {
      // Alg. 2: refit the projection every pca_every steps on the queue of selection vectors.
      if (step % c.sense.pca_every == 1 % c.sense.pca_every)
        for (int d = 0; d < 2; ++d) {
          lm.heads[d].proj.push(ctx[d]);
          lm.heads[d].proj.refit();
        }
      if (step == c.sense.contextual_warmup) {
        for (SenseHead& h : lm.heads) {
          h.table.end_warmup(c.sense.warmup_init_copy);
          if (c.sense.warmup_zero_centers) h.table.zero_new_centers();
        }
        if (!quiet) std::printf("step %ld: warm-up done, senses 1..%d enabled\n", (long)step, c.sense.n_context - 1);
      }
      if (step >= c.sense.prune_first && step % c.sense.prune_every == 0) {
        int removed = 0;
        for (SenseHead& h : lm.heads) removed += h.usage.prune(h.table, c.sense.remove_less_freqent_contexts);
        metrics << nlohmann::json{{"step", step}, {"senses_removed", removed}}.dump() << "\n" << std::flush;
        if (!quiet) std::printf("step %ld: pruning removed %d senses\n", (long)step, removed);
      }
    }
    smooth = step == first + 1 ? lv : 0.95 * smooth + 0.05 * lv;
    res.last_loss = lv;
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    res.tokens_per_s = static_cast<double>(step - first) * tokens_per_step / el;
    if (step - first == warm) t_warm = std::chrono::steady_clock::now();
    if (step - first > warm)
      res.steady_tokens_per_s = static_cast<double>(step - first - warm) * tokens_per_step /
                                std::chrono::duration<double>(std::chrono::steady_clock::now() - t_warm).count();
    if (step % c.log_every == 0 || step == total) {
      metrics << nlohmann::json{{"step", step}, {"loss", lv}, {"perplexity", std::exp(lv)},
                                {"tokens_per_s", res.tokens_per_s}, {"elapsed_s", el}}.dump()
              << "\n" << std::flush;
      if (!quiet) {
        std::printf("step %ld/%ld | %.0f tokens/s | ETA %s | loss %.3f | perplexity %.1f\n", (long)step, (long)total,
                    res.tokens_per_s, clock_str(el / (step - first) * (total - step)).c_str(), smooth, std::exp(smooth));
        std::fflush(stdout);
      }
    }
    bool heldout_now = !c.heldout_prefix.empty() && c.heldout_every > 0 && step % c.heldout_every == 0;
    if (heldout_now) {
      res.heldout_perplexity = heldout_perplexity(lm, c, vocab, dev);
      metrics << nlohmann::json{{"step", step}, {"heldout_perplexity", res.heldout_perplexity}}.dump() << "\n" << std::flush;
      if (!quiet) std::printf("step %ld: held-out perplexity %.1f\n", (long)step, res.heldout_perplexity);
    }
    if (step % c.checkpoint_every == 0 || step == total) save();
  }
  if (step == total && !c.heldout_prefix.empty() && (c.heldout_every == 0 || total % c.heldout_every != 0)) {
    res.heldout_perplexity = heldout_perplexity(lm, c, vocab, dev);
    metrics << nlohmann::json{{"step", step}, {"heldout_perplexity", res.heldout_perplexity}}.dump() << "\n" << std::flush;
    if (!quiet) std::printf("held-out perplexity %.1f\n", res.heldout_perplexity);
  }
  res.steps_done = step;
  return res;
}

}  // namespace sa
