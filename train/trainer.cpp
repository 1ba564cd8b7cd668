#include "train/trainer.h"

#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "data/atomic_file.h"
#include "data/dictionary.h"
#include "data/run_files.h"
#include "data/target_counts.h"
#include "engine/dist/communicator.h"
#include "engine/dist/tensor_collectives.h"
#include "engine/engine.h"
#include "train/checkpoint.h"
#include "train/run_session.h"
#include "train/step_phases.h"

namespace sa {

namespace fs = std::filesystem;

namespace {

// On `rows` rows: a data-parallel run's rank 0 scores the global batch's shape alone, as one
// process with the whole batch would.
double heldout_perplexity(ElmoLM& lm, const TrainConfig& c, const Vocab& vocab, Device dev, DType dt, int rows) {
  NoGrad ng;
  Generator gen(0);
  LossOptions lo{false, 0.0, 0};
  auto stream = [&](bool reverse) {
    return LmStream(std::make_unique<ShardedCorpus>(c.heldout_prefix, 0, c.lowercase, false), vocab, rows,
                    c.unroll_steps, reverse);
  };
  LmStream fwd = stream(false), bwd = stream(true);
  BilmState st = BilmState::zeros(c.model, rows, dev, dt);
  std::mt19937_64 rng(0);
  double total[2] = {0, 0};
  LmBatch b[2];
  for (int i = 0; i < c.heldout_batches; ++i) {
    fwd.next(b[0]);
    bwd.next(b[1]);
    auto [tf, tb] = encode_batches(lm, b[0], b[1]);
    BilmOutputs out = bilm_forward(lm.bilm, {tf, tb}, st, 0.0, gen);
    for (int d = 0; d < 2; ++d)
      total[d] += lm.sense() ? sense_direction_loss(lm.heads[d], out.top[d], b[d], c.sense, 0, false, rng).item()
                             : direction_loss(lm, d, out.top[d], b[d], lo, nullptr, nullptr).item();
  }
  return std::exp((total[0] + total[1]) / (2 * c.heldout_batches));
}

// The run's vocabulary: the run directory's own copy wins, so a resumed run keeps its ids.
Vocab run_vocab(const TrainConfig& c) {
  const std::string saved = run_files::vocab(c.run_dir);
  if (fs::exists(saved)) return Vocab::load(saved);
  Vocab v = !c.vocab_file.empty() ? Vocab::load(c.vocab_file)
                                  : build_vocab(c.train_prefix_l2.empty() ? std::vector<std::string>{c.train_prefix}
                                                                          : std::vector<std::string>{c.train_prefix, c.train_prefix_l2},
                                                c.vocab_min_count, c.vocab_max_size, c.lowercase);
  v.save(saved);
  return v;
}

// The translation loss's dictionary (Bi-SaELMo) over the joint vocabulary; null without one.
std::unique_ptr<TranslationTable> run_dictionary(const TrainConfig& c, const Vocab& vocab, bool quiet) {
  if (c.dictionary.empty()) return nullptr;
  Dictionary d = read_dictionary(c.dictionary, c.dictionary_format);
  const int per_word = static_cast<int>(c.dictionary_per_word);
  std::unique_ptr<TranslationTable> t;
  if (c.dictionary_by_language) {  // the first language's words look up sources, the second's targets
    t = std::make_unique<TranslationTable>(translation_table(d, vocab, per_word));
    t->ids_l2 = c.dictionary_both_ways ? translation_table(reversed(d), vocab, per_word).ids
                                       : std::vector<int32_t>(t->ids.size(), -1);
  } else {
    if (c.dictionary_both_ways) {
      Dictionary r = reversed(d);
      d.pairs.insert(d.pairs.end(), r.pairs.begin(), r.pairs.end());
    }
    t = std::make_unique<TranslationTable>(translation_table(d, vocab, per_word));
  }
  if (!quiet) std::printf("%s: %s\n", c.dictionary.c_str(), describe(d, *t).c_str());
  return t;
}

void print_setup(const TrainConfig& c, const TrainConfig& cfg, const ElmoLM& lm, int vocab, int64_t total, Device dev) {
  if (lm.sense()) {
    const int shards = c.sense_tables == "sharded" ? dist::size() : 1;
    std::printf("sense tables: 2 directions x %d words x %d senses x %d dims: %.1f MiB each (W, b, centers, Adagrad)%s\n",
                vocab, c.sense.n_context, c.model.projection_dim,
                SenseTable::bytes_needed(vocab, c.sense.n_context, c.model.projection_dim, DType::F32, shards) / 1048576.0,
                c.sense_tables == "sharded" ? fmt::format(" per rank, sharded over {} rank{}", shards, shards == 1 ? "" : "s").c_str() : "");
  }
  int64_t n_params = 0;
  for (const Tensor& p : const_cast<ElmoLM&>(lm).params()) n_params += p.numel();
  std::printf("train: vocab %d, %.2fM parameters (%.1f MiB + as much for Adagrad), %ld tokens/epoch, %ld steps of %dx%d, device %s\n",
              vocab, n_params / 1e6, n_params * 4.0 / 1048576, (long)cfg.n_train_tokens, (long)total, c.batch_size,
              c.unroll_steps, dev.str().c_str());
  if (dev.is_cuda()) {
    if (c.precision == "tf32") std::printf("matrix products on %s: TF32 tensor cores\n", dev.str().c_str());
    const ElmoOptions& m = c.model;
    std::printf("LSTM on %s: %s\n", dev.str().c_str(),
                ops::lstm_uses_cudnn(dev, m.lstm_path(), m.effective_cell_clip(), m.effective_proj_clip(), m.lstm_dim,
                                     m.projection_dim)
                    ? (m.cell_clip > 0 || m.proj_clip > 0
                           ? "cuDNN RNN (lstm.cudnn = \"on\": the model has no cell_clip or proj_clip)"
                           : "cuDNN RNN")
                    : "step kernels with exact clips (lstm.cudnn = \"on\" takes cuDNN without them)");
  }
}

}  // namespace

TrainResult train_elmo(const TrainConfig& c, int64_t max_new_steps, bool quiet, bool time_phases) {
  const std::string& dir = c.run_dir;
  // Data parallel (mpirun -np N): every rank takes batch_size rows of a global batch of N x
  // batch_size and the ranks average their gradients, so N ranks take the steps one process
  // with the whole batch would (docs/design.md §6.8). Rank 0 owns the run directory.
  const int ranks = dist::size(), rank = dist::rank();
  const bool writer = rank == 0;
  quiet = quiet || !writer;
  TrainConfig cfg = c;
  std::optional<RunSession> session;
  if (writer) session.emplace(c, cfg);
  Device dev = resolve_device(c.device);
  // Ranks sharing a machine share its GPUs: rank r takes GPU (local rank mod GPUs) unless the
  // config names one.
  if (ranks > 1 && dev.is_cuda() && c.device.find(':') == std::string::npos)
    dev = Device::cuda(dist::local_rank() % cuda_device_count());
  const DType dt = c.precision == "f64" ? DType::F64 : DType::F32;
  // The precision holds for this run only: the backend is shared with whatever runs next.
  struct Tf32Scope {
    Device dev;
    Tf32Scope(Device d, bool on) : dev(d) { backend(dev).set_tf32(on); }
    ~Tf32Scope() { backend(dev).set_tf32(false); }
  } tf32(dev, c.precision == "tf32");
  // The writer builds (or checks) the vocabulary and the saved config first; the others read them.
  std::optional<Vocab> own_vocab;
  if (writer) own_vocab = run_vocab(c);
  dist::barrier();
  if (!writer) {
    own_vocab = Vocab::load(run_files::vocab(dir));
    if (fs::exists(run_files::config(dir)) && cfg.n_train_tokens == 0)
      cfg.n_train_tokens = TrainConfig::load(run_files::config(dir)).n_train_tokens;
  }
  const Vocab& vocab = *own_vocab;
  SA_CHECK(c.n_negative_samples_batch <= vocab.size(),
           "n_negative_samples_batch ({}) exceeds the vocabulary size ({})", c.n_negative_samples_batch, vocab.size());

  // Bilingual: an epoch is twice the larger corpus, as released (n_train_tokens = max(n1, n2) * 2).
  if (cfg.n_train_tokens == 0)
    cfg.n_train_tokens = c.train_prefix_l2.empty() ? count_tokens(c.train_prefix, c.lowercase)
                                                   : 2 * std::max(count_tokens(c.train_prefix, c.lowercase),
                                                                  count_tokens(c.train_prefix_l2, c.lowercase));
  const int64_t tokens_per_step = static_cast<int64_t>(c.batch_size) * c.unroll_steps * ranks;
  const int64_t total = c.n_steps > 0 ? c.n_steps : std::max<int64_t>(1, c.n_epochs * cfg.n_train_tokens / tokens_per_step);
  if (writer) {
    write_file_atomically(run_files::config(dir), cfg.to_toml());
    write_file_atomically(run_files::options(dir), cfg.bilm_options(vocab.size()).dump(2) + "\n");
  }

  const bool sense = c.sense.n_context >= 2;
  // Sharded sense tables: each rank stores a slice of the words' rows and a step gathers the rows
  // it reads into a working table per direction (sense/working_table.h).
  const bool sharded = sense && c.sense_tables == "sharded";
  const TableShard shard = sharded ? TableShard{rank, ranks} : TableShard{};
  // The carried LSTM state is checkpointed for the global batch (every rank's rows): a state holds
  // all of them while it is saved or restored, and the rank's own rows while it trains. Each rank
  // draws its own dropout masks (rank 0 those of a single process).
  auto fresh_state = [&] {
    return TrainingState{ElmoLM::make(c.model, c.sense, vocab.size(), c.seed, dev, dt, shard), Adagrad(c.learning_rate, 1.0),
                         BilmState::zeros(c.model, static_cast<int64_t>(c.batch_size) * ranks, dev, dt),
                         Generator(c.seed * 7919 + 17 + 104729 * static_cast<uint64_t>(rank)), 0, c.seed,
                         vocab.checksum(), ranks};
  };
  TrainingState s = fresh_state();
  ElmoLM& lm = s.lm;
  int64_t& step = s.step;
  auto restore = [&](const std::string& p) {
    try {
      restore_checkpoint(p, s);
    } catch (const VocabularyMismatch& e) {
      fail("{}: {} (was vocab.txt changed or cut?)", run_files::vocab(dir), e.what());
    }
  };
  // Resume from the newest intact checkpoint; a damaged one is moved aside, not deleted. The
  // writer chooses it; the others restore the same file.
  std::string resumed;
  bool fell_back = false;
  if (writer) std::tie(resumed, fell_back) = session->restore_newest(restore, [&] { s = fresh_state(); });
  dist::broadcast(resumed);
  if (!writer && !resumed.empty()) restore(resumed);
  s.carried = s.carried.rows(static_cast<int64_t>(rank) * c.batch_size, c.batch_size);
  // Metric lines after the step resumed from (or all, starting over) are dropped, and with them a
  // line a kill cut short.
  if (writer) session->open_metrics(step);
  if (writer && !resumed.empty()) {
    // weights.hdf5 follows the newest checkpoint (a kill between the two, or a deleted file).
    const std::string weights = run_files::weights(dir);
    if (fell_back || !fs::exists(weights) || fs::last_write_time(weights) < fs::last_write_time(resumed))
      lm.bilm.save_bilm(weights);
    if (!quiet) std::printf("resuming %s from %s (step %ld)\n", dir.c_str(), fs::path(resumed).filename().c_str(), (long)step);
  }
  if (!quiet) print_setup(c, cfg, lm, vocab.size(), total, dev);
  const bool nccl = ranks > 1 && dist::gradients_use_nccl(dev);  // every rank: the ranks decide together
  if (!quiet && ranks > 1)
    std::printf("data parallel: %d ranks x %d rows = batches of %d x %d; tokens/s below count all ranks%s\n", ranks,
                c.batch_size, c.batch_size * ranks, c.unroll_steps,
                !dev.is_cuda() ? ""
                : nccl         ? "; dense gradients summed on the GPUs by NCCL"
                               : "; dense gradients summed through host memory (NCCL needs libnccl.so.2 and a GPU per rank)");

  // Each direction draws its own sentences (bilingual: each picks the language independently).
  auto corpus = [&](uint64_t seed) {
    auto one = std::make_unique<ShardedCorpus>(c.train_prefix, seed, c.lowercase);
    if (!c.train_prefix_l2.empty())
      one->mix_with(std::make_unique<ShardedCorpus>(c.train_prefix_l2, seed + 1000003, c.lowercase), c.l1_sample_ratio);
    return one;
  };
  // Every rank reads the global batch and keeps its rows: its share of the stream, in the order one
  // process with the whole batch would see it.
  const int global_rows = c.batch_size * ranks, first_row = c.batch_size * rank;
  LmStream fwd(corpus(c.seed * 2 + 1), vocab, global_rows, c.unroll_steps, false);
  LmStream bwd(corpus(c.seed * 2 + 2), vocab, global_rows, c.unroll_steps, true);
  std::unique_ptr<TranslationTable> dict = run_dictionary(c, vocab, quiet);
  LmBatch bf, bb;
  // The targets seen so far (the global batch's): the negatives' unigram mass and the rare words.
  TargetCounts seen(vocab.size());
  auto read_batches = [&] {
    fwd.next(bf);
    bwd.next(bb);
    seen.add(bf.targets);
    seen.add(bb.targets);
  };
  for (int64_t i = 0; i < step; ++i) read_batches();  // replay the data stream up to the checkpoint
  auto next_batches = [&] {
    read_batches();
    if (ranks > 1) bf = batch_rows(bf, first_row, c.batch_size), bb = batch_rows(bb, first_row, c.batch_size);
  };

  LogUniformSampler sampler(vocab.size());
  LossOptions lo{true, c.dropout, c.n_negative_samples_batch};
  auto log_metrics = [&](const nlohmann::json& j) {
    if (writer) session->log(j);
  };
  TrainResult res;
  auto t0 = std::chrono::steady_clock::now();
  const int64_t first = step;
  const int64_t warm = 5;
  auto t_warm = t0;
  double smooth = 0;
  auto save = [&]() {
    // The global batch's carried state and sharded tables, gathered on every rank, written by rank 0.
    const BilmState own = s.carried;
    if (ranks > 1)
      for (auto& d : s.carried.dir)
        for (LstmState& l : d) l = {dist::allgather_rows(l.c), dist::allgather_rows(l.m)};
    save_checkpoint(run_files::checkpoint(dir, step), s, writer);
    s.carried = own;
    if (!writer) return;
    lm.bilm.save_bilm(run_files::weights(dir));  // bilm-tf bundle for bin/embed and AllenNLP
    session->prune_checkpoints(c.keep_checkpoints);
  };

  StepPhases phases(time_phases, dev);
  while (step < total && (max_new_steps <= 0 || step - first < max_new_steps)) {
    // batch
    phases.start();
    next_batches();
    ++step;
    s.carried.reset_rows(c.state_reset, c.seed * 998244353 + static_cast<uint64_t>(step), first_row, global_rows);
    std::mt19937_64 sample_rng(c.seed * 1000003 + static_cast<uint64_t>(step));
    phases.mark("batch");
    // forward
    int64_t distinct = 0;
    auto [tf, tb] = encode_batches(lm, bf, bb, &distinct);
    if (step - first > warm) res.encoded_tokens += distinct;
    BilmOutputs out = bilm_forward(lm.bilm, {tf, tb}, s.carried, c.dropout, s.dropout);
    phases.mark("forward");
    // loss
    const LmBatch* batches[2] = {&bf, &bb};
    Tensor dir_loss[2];
    SenseStep picked[2];
    std::vector<int32_t> drawn[2];  // ELMo's negatives (word ids)
    std::optional<WorkingTable> work[2];
    for (int d = 0; d < 2; ++d) {
      if (sense) {
        const Tensor select_top = c.sense.select_after_dropout ? Tensor() : out.clean_top(d);
        if (sharded)
          work[d].emplace(step_working_table(lm.heads[d].table, c.sense, batches[d]->targets, c.n_negative_samples_batch,
                                             sample_rng, dict.get()));
        dir_loss[d] = sense_direction_loss(lm.heads[d], out.top[d], *batches[d], c.sense, c.n_negative_samples_batch,
                                           true, sample_rng, &picked[d], dict.get(), select_top,
                                           work[d] ? &*work[d] : nullptr);
      } else {
        dir_loss[d] = direction_loss(lm, d, out.top[d], *batches[d], lo, &sampler, &sample_rng, &drawn[d]);
      }
    }
    out = BilmOutputs();  // the tape keeps what backward needs; hold no other activations through it
    Tensor loss = ops::scale(ops::add(dir_loss[0], dir_loss[1]), 0.5);
    double lv = dist::mean_over_ranks(loss.item());  // the global batch's loss (equal rows per rank)
    SA_CHECK(std::isfinite(lv), "step {}: the loss is {} (lower learning_rate or all_clip_norm_val?)", step, lv);
    phases.mark("loss");
    // backward (bilm-tf differentiates total_loss * unroll_steps), clip, update
    phases.profile_backward_ops(true);
    backward(loss, Tensor::full(loss.shape(), c.unroll_steps, loss.dtype(), dev));
    phases.profile_backward_ops(false);
    phases.mark("backward");
    std::vector<Tensor> params = lm.params();
    for (auto& w : work)  // the working tables carry the sense tables' gradients
      if (w) params.insert(params.end(), {w->table.W, w->table.b});
    if (ranks > 1) {
      dist::average_gradients(params);
      phases.mark("all-reduce gradients");
    }
    coalesce_sparse_grads(params);
    phases.mark("coalesce sparse gradients");
    clip_global_norm(params, c.all_clip_norm_val);
    phases.mark("clip");
    for (int d = 0; d < 2; ++d)  // each rank updates the rows it stores
      if (work[d])
        for (auto [from, to] : {std::pair{work[d]->table.W, lm.heads[d].table.W}, std::pair{work[d]->table.b, lm.heads[d].table.b}})
          if (auto [ids, g] = work[d]->stored_gradient(from); ids.defined()) s.opt.step_rows(to, ids, g);
    s.opt.step(sharded ? lm.params() : params);
    s.carried.detach();
    phases.mark("update");
    // sense schedule
    if (sense) {
      SenseEvents ev[2];
      const std::vector<int32_t> rare =
          step == c.sense.contextual_warmup && c.sense.split_min_count > 0 ? seen.rarer_than(c.sense.split_min_count)
                                                                          : std::vector<int32_t>{};
      for (int d = 0; d < 2; ++d)
        ev[d] = after_step(lm.heads[d], c.sense, step, picked[d], work[d] ? &*work[d] : nullptr, rare);
      if (ev[0].warmup_ended) {
        // Copied senses take sense 0's Adagrad state too: with a fresh accumulator their first steps
        // would be as large as a new word's.
        if (c.sense.warmup_init_copy())
          for (int d = 0; d < (lm.shared_tables ? 1 : 2); ++d)
            for (Tensor* t : {&lm.heads[d].table.W, &lm.heads[d].table.b})
              lm.heads[d].table.copy_first_sense(s.opt.accumulator(*t));
        if (!quiet)
          std::printf("step %ld: warm-up done, senses 1..%d enabled%s\n", (long)step, c.sense.n_context - 1,
                      rare.empty() ? "" : fmt::format(" ({} words seen fewer than {} times keep one)", rare.size(),
                                                      c.sense.split_min_count).c_str());
      }
      if (ev[0].pruned >= 0) {
        const int removed = ev[0].pruned + ev[1].pruned;
        log_metrics({{"step", step}, {"senses_removed", removed}});
        if (!quiet) std::printf("step %ld: pruning removed %d senses\n", (long)step, removed);
      }
      phases.mark("sense schedule");
    }
    // progress
    smooth = step == first + 1 ? lv : 0.95 * smooth + 0.05 * lv;
    res.last_loss = lv;
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    res.tokens_per_s = static_cast<double>(step - first) * tokens_per_step / el;
    if (step - first == warm) {
      t_warm = std::chrono::steady_clock::now();
      phases.reset();
    }
    if (step - first > warm)
      res.steady_tokens_per_s = static_cast<double>(step - first - warm) * tokens_per_step /
                                std::chrono::duration<double>(std::chrono::steady_clock::now() - t_warm).count();
    if (step % c.log_every == 0 || step == total) {
      // What the negatives covered, the mean of the two directions: distinct words and their share
      // of the text, on one scale for ELMo and SaELMo.
      double words = 0, mass = 0, rows = 0;
      for (int d = 0; d < 2; ++d) {
        std::vector<int32_t> w = sense ? picked[d].negative_rows : drawn[d];
        rows += static_cast<double>(w.size()) / 2;
        if (sense)
          for (int32_t& r : w) r /= c.sense.n_context;
        const NegativeCoverage cov = seen.coverage(w);
        words += cov.words / 2.0, mass += cov.mass / 2;
      }
      log_metrics({{"step", step}, {"loss", lv}, {"perplexity", std::exp(lv)}, {"tokens_per_s", res.tokens_per_s},
                   {"elapsed_s", el}, {"negative_rows", rows}, {"negative_words", words},
                   {"negative_unigram_mass", mass}});
      if (!quiet) {
        // The console smooths (a moving average); metrics.jsonl logs each step's own loss.
        std::printf("step %ld/%ld | %.0f tokens/s | ETA %s | smoothed loss %.3f | perplexity %.1f\n", (long)step, (long)total,
                    res.tokens_per_s, clock_str(el / (step - first) * (total - step)).c_str(), smooth, std::exp(smooth));
        std::fflush(stdout);
      }
    }
    // A sharded table's held-out score is collective: every rank scores, rank 0 logs.
    if ((writer || sharded) && !c.heldout_prefix.empty() && c.heldout_every > 0 && step % c.heldout_every == 0) {
      res.heldout_perplexity = heldout_perplexity(lm, c, vocab, dev, dt, global_rows);
      log_metrics({{"step", step}, {"heldout_perplexity", res.heldout_perplexity}});
      if (!quiet) std::printf("step %ld: held-out perplexity %.1f\n", (long)step, res.heldout_perplexity);
    }
    // checkpoint
    if (step % c.checkpoint_every == 0 || step == total) save();
  }
  // The final held-out line, once: a rerun of a finished run trains nothing and logs nothing.
  if ((writer || sharded) && step == total && first < total && !c.heldout_prefix.empty() &&
      (c.heldout_every == 0 || total % c.heldout_every != 0)) {
    res.heldout_perplexity = heldout_perplexity(lm, c, vocab, dev, dt, global_rows);
    log_metrics({{"step", step}, {"heldout_perplexity", res.heldout_perplexity}});
    if (!quiet) std::printf("held-out perplexity %.1f\n", res.heldout_perplexity);
  }
  res.steps_done = step;
  res.phase_seconds = phases.totals();
  res.backward_op_seconds = phases.backward_ops();
  return res;
}

}  // namespace sa
