#include "train/trainer.h"

#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>

#include "data/atomic_file.h"
#include "data/dictionary.h"
#include "data/run_files.h"
#include "data/target_counts.h"
#include "engine/dist/communicator.h"
#include "engine/dist/tensor_collectives.h"
#include "engine/engine.h"
#include "engine/step_replay.h"
#include "train/checkpoint.h"
#include "train/run_dir.h"
#include "train/run_session.h"
#include "train/step_dump.h"
#include "train/step_phases.h"
#include "train/train_loop.h"

namespace sa {

namespace fs = std::filesystem;

namespace {

// On `rows` rows: a data-parallel run's rank 0 scores the global batch's shape alone, as one
// process with the whole batch would.
double elmo_heldout_perplexity(ElmoLM& lm, const TrainConfig& c, const Vocab& vocab, Device dev, DType dt, int rows) {
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

// ELMo and SaELMo (model = "elmo"): the state, data streams and step of one training process.
class ElmoFamily final : public ModelFamily {
 public:
  ElmoFamily(const TrainConfig& c, TrainConfig& cfg, const RunOutput& out)
      : c_(c), out_(out), writer_(dist::rank() == 0), dev_(run_device(c)),
        dt_(c.precision == "f64" ? DType::F64 : DType::F32), precision_(dev_, c.precision, out.quiet || dist::rank() != 0) {
    const std::string& dir = c.run_dir;
    const int ranks = dist::size(), rank = dist::rank();
    // The writer builds (or checks) the vocabulary and the saved config first; the others read them.
    if (writer_) vocab_ = run_vocab(c);
    dist::barrier();
    if (!writer_) {
      vocab_ = Vocab::load(run_files::vocab(dir));
      if (fs::exists(run_files::config(dir)) && cfg.n_train_tokens == 0)
        cfg.n_train_tokens = TrainConfig::load(run_files::config(dir)).n_train_tokens;
    }
    const Vocab& vocab = *vocab_;
    SA_CHECK(c.n_negative_samples_batch <= vocab.size(),
             "n_negative_samples_batch ({}) exceeds the vocabulary size ({})", c.n_negative_samples_batch, vocab.size());
    // Bilingual: an epoch is twice the larger corpus, as released (n_train_tokens = max(n1, n2) * 2).
    if (cfg.n_train_tokens == 0)
      cfg.n_train_tokens = c.train_prefix_l2.empty() ? count_tokens(c.train_prefix, c.lowercase)
                                                     : 2 * std::max(count_tokens(c.train_prefix, c.lowercase),
                                                                    count_tokens(c.train_prefix_l2, c.lowercase));
    tokens_per_step_ = static_cast<int64_t>(c.batch_size) * c.unroll_steps * ranks;
    total_ = elmo_total_steps(cfg, ranks);
    if (writer_) {
      write_file_atomically(run_files::config(dir), cfg.to_toml());
      write_file_atomically(run_files::options(dir), cfg.bilm_options(vocab.size()).dump(2) + "\n");
    }
    // Sharded sense tables: each rank stores a slice of the words' rows and a step gathers the rows
    // it reads into a working table per direction (sense/working_table.h).
    sense_ = c.sense.n_context >= 2;
    sharded_ = sense_ && c.sense_tables == "sharded";
    // SA_DUMP_STEPS: plain ELMo in one process (the reference runs the same graph).
    if (std::string d = step_dump_dir(); !d.empty()) {
      SA_CHECK(!sharded_ && ranks == 1 && c.dictionary.empty(),
               "SA_DUMP_STEPS writes ELMo's and monolingual SaELMo's steps in one process (no mpirun, no sharded tables, "
               "no dictionary)");
      dump_dir_ = d;
    }
    replay_wanted_ = step_replay_enabled();
    if (replay_wanted_) {
      replay_off_ = sense_          ? "no step captured: a sense model's schedule reads and changes its tables between steps"
                    : ranks > 1     ? "no step captured: not over several ranks"
                                    : "";
      if (!replay_off_.empty() && !out.quiet) std::printf("SA_STEP_REPLAY: %s\n", replay_off_.c_str());
    }
    s_.emplace(fresh_state());
    auto restore = [&](const std::string& p) {
      try {
        restore_checkpoint(p, *s_);
      } catch (const VocabularyMismatch& e) {
        fail("{}: {} (was vocab.txt changed or cut?)", run_files::vocab(dir), e.what());
      }
    };
    // Resume from the newest intact checkpoint; a damaged one is moved aside, not deleted. The
    // writer chooses it; the others restore the same file.
    std::string resumed;
    bool fell_back = false;
    if (writer_) std::tie(resumed, fell_back) = out.session->restore_newest(restore, [&] { s_.emplace(fresh_state()); });
    dist::broadcast(resumed);
    if (!writer_ && !resumed.empty()) restore(resumed);
    s_->carried = s_->carried.rows(static_cast<int64_t>(rank) * c.batch_size, c.batch_size);
    // Metric lines after the step resumed from (or all, starting over) are dropped, and with them a
    // line a kill cut short.
    if (writer_) out.session->open_metrics(s_->step);
    if (writer_ && !resumed.empty()) {
      // weights.hdf5 follows the newest checkpoint (a kill between the two, or a deleted file).
      const std::string weights = run_files::weights(dir);
      if (fell_back || !fs::exists(weights) || fs::last_write_time(weights) < fs::last_write_time(resumed))
        s_->lm.bilm.save_bilm(weights);
      if (!out.quiet)
        std::printf("resuming %s from %s (step %ld)\n", dir.c_str(), fs::path(resumed).filename().c_str(), (long)s_->step);
    }
    if (!out.quiet) print_setup(c, cfg, s_->lm, vocab.size(), total_, dev_);
    const bool nccl = ranks > 1 && dist::gradients_use_nccl(dev_);  // every rank: the ranks decide together
    if (!out.quiet && ranks > 1)
      std::printf("data parallel: %d ranks x %d rows = batches of %d x %d; tokens/s below count all ranks%s\n", ranks,
                  c.batch_size, c.batch_size * ranks, c.unroll_steps,
                  !dev_.is_cuda() ? ""
                  : nccl          ? "; dense gradients summed on the GPUs by NCCL"
                                  : "; dense gradients summed through host memory (NCCL needs libnccl.so.2 and a GPU per rank)");
    // Each direction draws its own sentences (bilingual: each picks the language independently).
    auto corpus = [&](uint64_t seed) {
      auto one = std::make_unique<ShardedCorpus>(c.train_prefix, seed, c.lowercase);
      if (!c.train_prefix_l2.empty())
        one->mix_with(std::make_unique<ShardedCorpus>(c.train_prefix_l2, seed + 1000003, c.lowercase), c.l1_sample_ratio);
      return one;
    };
    // Every rank reads the global batch and keeps its rows: its share of the stream, in the order
    // one process with the whole batch would see it.
    global_rows_ = c.batch_size * ranks, first_row_ = c.batch_size * rank;
    fwd_.emplace(corpus(c.seed * 2 + 1), vocab, global_rows_, c.unroll_steps, false);
    bwd_.emplace(corpus(c.seed * 2 + 2), vocab, global_rows_, c.unroll_steps, true);
    dict_ = run_dictionary(c, vocab, out.quiet);
    seen_.emplace(vocab.size());
    for (int64_t i = 0; i < s_->step; ++i) take_batches(read_batches(0));  // replay the data stream up to the checkpoint
    sampler_ = &tabulated_log_uniform(vocab.size());
  }

  int64_t step() const override { return s_->step; }
  int64_t total_steps() const override { return total_; }
  Device device() const override { return dev_; }
  const char* loss_name() const override { return "loss"; }
  const char* divergence_hint() const override { return "lower learning_rate or all_clip_norm_val?"; }
  std::string host_reads_per_step() const override {
    return sense_ ? kSenseScheduleHostReads : "";
  }
  bool scores_heldout() const override {
    // A sharded table's held-out score is collective: every rank scores, rank 0 logs.
    return (writer_ || sharded_) && !c_.heldout_prefix.empty();
  }
  double heldout_perplexity() override {
    return elmo_heldout_perplexity(s_->lm, c_, *vocab_, dev_, dt_, global_rows_);
  }

  StepStats train_step(StepPhases& phases) override {
    const TrainConfig& c = c_;
    TrainingState& s = *s_;
    ElmoLM& lm = s.lm;
    // batch
    const int64_t step = s.step + 1;
    next_batches(step);
    if (!dump_dir_.empty() && step == 1) save_checkpoint(dump_dir_ + "/ckpt-0.safetensors", s);  // the weights before it
    s.step = step;
    const std::vector<std::vector<uint8_t>> resets =
        s.carried.reset_masks(c.state_reset, c.seed * 998244353 + static_cast<uint64_t>(step), first_row_, global_rows_);
    phases.mark("batch");
    if (replay_ && replay_->replay(step_inputs(resets))) {
      phases.mark("replayed step");
      s.carried = replay_carried_out_;  // what the replay wrote (a launched step may have moved it)
      StepStats st = stats_of_inputs();
      st.loss = replay_loss_;
      return st;
    }
    // With SA_STEP_REPLAY=1 the second step a process runs is captured, for later steps to replay.
    std::vector<Tensor> carried_in;
    if (replay_wanted_ && replay_off_.empty() && !replay_ && ++launched_ == 2) {
      replay_.emplace();
      replay_->begin(&s.dropout, dev_);
      carried_in = s.carried.tensors();
      if (StepReplay::capturing() != &*replay_ && !out_.quiet)
        std::printf("step %ld: not captured for replay: %s\n", (long)s.step, replay_->why_not().c_str());
    }
    struct AbandonIfFailed {  // a step that throws leaves no capture open
      StepReplay* r;
      ~AbandonIfFailed() {
        if (r && StepReplay::capturing() == r) r->abandon("the captured step failed");
      }
    } abandon{replay_ && StepReplay::capturing() == &*replay_ ? &*replay_ : nullptr};
    s.carried.reset_rows(resets);
    std::mt19937_64 sample_rng(c.seed * 1000003 + static_cast<uint64_t>(step));
    phases.profile_forward_ops(true);
    // Under bf16 the weights' bf16 copies, made at once and taken by every product until the update.
    Bf16WeightCopies copies(lm.params(), bf16_wanted_);
    // forward
    StepStats st = stats_of_inputs();
    auto [tf, tb] = encode_batches(lm, in_.tokens, in_.fwd.rows, in_.fwd.steps);
    BilmOutputs out = bilm_forward(lm.bilm, {tf, tb}, s.carried, c.dropout, s.dropout);
    phases.mark("forward");
    // loss
    const LmBatch* batches[2] = {&in_.fwd, &in_.bwd};
    Tensor dir_loss[2];
    std::optional<WorkingTable> work[2];
    for (int d = 0; d < 2; ++d) {
      picked_[d] = SenseStep();
      if (sense_) {
        const Tensor select_top = c.sense.select_after_dropout ? Tensor() : out.clean_top(d);
        if (sharded_)
          work[d].emplace(step_working_table(lm.heads[d].table, c.sense, batches[d]->targets, c.n_negative_samples_batch,
                                             sample_rng, dict_.get()));
        dir_loss[d] = sense_direction_loss(lm.heads[d], out.top[d], *batches[d], c.sense, c.n_negative_samples_batch,
                                           true, sample_rng, &picked_[d], dict_.get(), select_top,
                                           work[d] ? &*work[d] : nullptr,
                                           in_.sense_words.empty() ? nullptr : &in_.sense_words[static_cast<size_t>(d)]);
      } else {
        dir_loss[d] = direction_loss(lm, d, out.top[d], *batches[d], in_.negatives[d]);
      }
    }
    if (sense_)
      for (int d = 0; d < 2; ++d) st.softmax_rows += static_cast<double>(picked_[d].negative_count()) / 2;
    out = BilmOutputs();  // the tape keeps what backward needs; hold no other activations through it
    Tensor loss = ops::scale(ops::add(dir_loss[0], dir_loss[1]), 0.5);
    // The global batch's loss (equal rows per rank); one process keeps it on the device.
    st.loss = dist::size() > 1 ? Tensor::full(loss.shape(), dist::mean_over_ranks(loss.item()), loss.dtype(), dev_)
                               : loss.detach();
    if (!dump_dir_.empty()) dump_step(dump_dir_, step, batches, in_.negatives, sense_ ? picked_ : nullptr, st.loss);
    phases.profile_forward_ops(false);
    phases.mark("loss");
    // backward (bilm-tf differentiates total_loss * unroll_steps), clip, update
    phases.profile_backward_ops(true);
    backward(loss, Tensor::full(loss.shape(), c.unroll_steps, loss.dtype(), dev_));
    copies.close();
    phases.profile_backward_ops(false);
    phases.mark("backward");
    std::vector<Tensor> params = lm.params();
    for (auto& w : work)  // the working tables carry the sense tables' gradients
      if (w) params.insert(params.end(), {w->table.W, w->table.b});
    if (dist::size() > 1) {
      dist::average_gradients(params);
      phases.mark("all-reduce gradients");
    }
    coalesce_sparse_grads(params);
    phases.mark("coalesce sparse gradients");
    clip_by_global_norm(params, c.all_clip_norm_val);
    phases.mark("clip");
    for (int d = 0; d < 2; ++d)  // each rank updates the rows it stores
      if (work[d])
        for (auto [from, to] : {std::pair{work[d]->table.W, lm.heads[d].table.W}, std::pair{work[d]->table.b, lm.heads[d].table.b}})
          if (auto [ids, g] = work[d]->stored_gradient(from); ids.defined()) s.opt.step_rows(to, ids, g);
    s.opt.step(sharded_ ? lm.params() : params);
    s.carried.detach();
    if (replay_ && StepReplay::capturing() == &*replay_)
      end_capture(carried_in, resets, st.loss);
    else if (replay_ && replay_->usable()) {  // a step launched after the capture: the next replay starts from its state
      const std::vector<Tensor> now = s.carried.tensors();
      for (size_t i = 0; i < now.size(); ++i) replay_carried_in_[i].copy_from(now[i]);
    }
    phases.mark("update");
    if (sense_) {
      sense_schedule(step, work);
      phases.mark("sense schedule");
    }
    return st;
  }

  // What a replay runs: a GPU's graph, or the CPU's kept work.
  const char* kept_what() const { return dev_.is_cuda() ? "nodes in its CUDA graph" : "primitives and copies"; }
  std::string replay_summary() const override {
    if (!replay_wanted_) return "";
    if (!replay_) return replay_off_;
    if (!replay_->usable()) return "the captured step cannot replay: " + replay_->why_not();
    return fmt::format("{} steps replayed the step captured at step {} ({} {}; its pool {:.0f} MiB){}",
                       replay_->replays(), replay_step_, replay_->kept(), kept_what(), replay_->pool_bytes() / 1048576.0,
                       replay_->replays() < s_->step - replay_step_
                           ? "; the others' inputs had other sizes (char_tokens_bucket pads the distinct tokens)"
                           : "");
  }

  // What the negatives covered, the mean of the two directions: distinct words and their share of
  // the text, on one scale for ELMo and SaELMo.
  nlohmann::json step_metrics() const override {
    double words = 0, mass = 0, rows = 0;
    for (int d = 0; d < 2; ++d) {
      std::vector<int32_t> w = sense_ ? picked_[d].negatives() : in_.negatives[d].sampled;
      rows += static_cast<double>(w.size()) / 2;
      if (sense_)
        for (int32_t& r : w) r /= c_.sense.n_context;
      const NegativeCoverage cov = seen_->coverage(w);
      words += cov.words / 2.0, mass += cov.mass / 2;
    }
    nlohmann::json m = {{"negative_rows", rows}, {"negative_words", words}, {"negative_unigram_mass", mass}};
    // The share of the directions whose log-uniform words were drawn ahead and taken (read_batches).
    if (!in_.sense_words.empty())
      m["negatives_drawn_ahead"] = (in_.sense_words[0].taken + in_.sense_words[1].taken) / 2.0;
    return m;
  }

  void save() override {
    // The global batch's carried state and sharded tables, gathered on every rank, written by rank 0.
    TrainingState& s = *s_;
    const BilmState own = s.carried;
    if (dist::size() > 1)
      for (auto& d : s.carried.dir)
        for (LstmState& l : d) l = {dist::allgather_rows(l.c), dist::allgather_rows(l.m)};
    save_checkpoint(run_files::checkpoint(c_.run_dir, s.step), s, writer_);
    s.carried = own;
    if (!writer_) return;
    s.lm.bilm.save_bilm(run_files::weights(c_.run_dir));  // bilm-tf bundle for bin/embed and AllenNLP
    out_.session->prune_checkpoints(c_.keep_checkpoints);
  }

 private:
  // Ranks sharing a machine share its GPUs: rank r takes GPU (local rank mod GPUs) unless the
  // config names one.
  static Device run_device(const TrainConfig& c) {
    Device dev = resolve_device(c.device);
    if (dist::size() > 1 && dev.is_cuda() && c.device.find(':') == std::string::npos)
      dev = Device::cuda(dist::local_rank() % cuda_device_count());
    return dev;
  }

  // The carried LSTM state is checkpointed for the global batch (every rank's rows): a state holds
  // all of them while it is saved or restored, and the rank's own rows while it trains. Each rank
  // draws its own dropout masks (rank 0 those of a single process).
  TrainingState fresh_state() const {
    const TrainConfig& c = c_;
    const int ranks = dist::size(), rank = dist::rank();
    const TableShard shard = sharded_ ? TableShard{rank, ranks} : TableShard{};
    return TrainingState{ElmoLM::make(c.model, c.sense, vocab_->size(), c.seed, dev_, dt_, shard), Adagrad(c.learning_rate, 1.0),
                         BilmState::zeros(c.model, static_cast<int64_t>(c.batch_size) * ranks, dev_, dt_),
                         Generator(c.seed * 7919 + 17 + 104729 * static_cast<uint64_t>(rank)), 0, c.seed,
                         vocab_->checksum(), ranks};
  }

  // A step's batches (this rank's rows) and the host work made from them before the step.
  struct StepInputs {
    LmBatch fwd, bwd;
    std::vector<int32_t> all_targets[2];  // every rank's targets (data parallel only: else fwd's and bwd's)
    DistinctTokens tokens;                // both directions' input tokens, each once
    SampledCandidates negatives[2];       // ELMo's sampled softmax
    std::vector<WordsDrawnAhead> sense_words;  // SaELMo's log-uniform words, one a direction (or none)
  };
  // How many log-uniform words each direction's sense negatives take with the senses enabled now
  // (0: drawn otherwise, or in the step: a sharded table's working tables draw their own).
  std::array<int, 2> sense_words_now() const {
    std::array<int, 2> w{};
    if (!sense_ || sharded_ || c_.sense.negatives != SenseOptions::Negatives::LogUniform || c_.n_negative_samples_batch <= 0)
      return w;
    for (int d = 0; d < 2; ++d) {
      const SenseTable& t = s_->lm.heads[d].table;
      w[static_cast<size_t>(d)] = log_uniform_words(t.vocab(), t.enabled_count(), c_.n_negative_samples_batch,
                                                    c_.sense.negative_budget, c_.sense.negative_rows_max);
    }
    return w;
  }
  // The batches of step `step` and their host work (step 0: the batches alone, as a resume replays
  // the stream). Reads the streams and the sampler's table, nothing a step changes. `sense_words`:
  // sense_words_now() when the step before began; the step draws anew if its schedule changed them.
  StepInputs read_batches(int64_t step, std::array<int, 2> sense_words = {}) {
    // The negatives do not depend on the batch: drawn beside the reading, from the seed the step's
    // own draw takes, one direction after the other. ELMo draws n ids a direction, SaELMo the words
    // it will expand into their enabled senses.
    const std::array<int, 2> counts = !sense_ ? std::array<int, 2>{c_.n_negative_samples_batch, c_.n_negative_samples_batch}
                                              : sense_words;
    std::future<std::vector<WordsDrawnAhead>> drawing;
    if (step > 0 && counts[0] > 0)
      drawing = std::async(std::launch::async, [this, step, counts] {
        std::mt19937_64 rng(c_.seed * 1000003 + static_cast<uint64_t>(step));
        std::vector<WordsDrawnAhead> drawn;
        for (int n : counts) drawn.push_back(draw_words_ahead(sampler_->range(), n, rng));
        return drawn;
      });
    StepInputs in;
    // The two streams are independent: each read on its own thread (a resume's replay, in turn).
    std::future<void> backward_read = std::async(step > 0 ? std::launch::async : std::launch::deferred,
                                                 [this, &in] { bwd_->next(in.bwd); });
    fwd_->next(in.fwd);
    backward_read.get();
    if (dist::size() > 1) {
      in.all_targets[0] = in.fwd.targets, in.all_targets[1] = in.bwd.targets;
      in.fwd = batch_rows(in.fwd, first_row_, c_.batch_size), in.bwd = batch_rows(in.bwd, first_row_, c_.batch_size);
    }
    if (step == 0) return in;
    in.tokens = distinct_batch_tokens(in.fwd, in.bwd);
    pad_distinct_tokens(in.tokens, c_.char_tokens_bucket);
    if (drawing.valid()) {
      std::vector<WordsDrawnAhead> drawn = drawing.get();
      for (int d = 0; d < 2; ++d)
        shift_labels(drawn[static_cast<size_t>(d)].draw, d == 0 ? in.fwd.targets : in.bwd.targets, *sampler_);
      if (sense_)
        in.sense_words = std::move(drawn);
      else
        for (int d = 0; d < 2; ++d) in.negatives[d] = std::move(drawn[static_cast<size_t>(d)].draw);
    }
    return in;
  }
  // The step's inputs; the target counts (the global batch's: the negatives' unigram mass and the
  // rare words) see them when their step takes them.
  void take_batches(StepInputs in) {
    in_ = std::move(in);
    for (int d = 0; d < 2; ++d)
      seen_->add(!in_.all_targets[d].empty() ? in_.all_targets[d] : d == 0 ? in_.fwd.targets : in_.bwd.targets);
  }
  // The step's counts that its inputs decide (ELMo's negative rows; a sense model adds its own).
  StepStats stats_of_inputs() const {
    StepStats st;
    st.tokens = tokens_per_step_;
    st.encoded_tokens = in_.tokens.count();
    if (!sense_)
      for (int d = 0; d < 2; ++d) st.softmax_rows += static_cast<double>(in_.negatives[d].sampled.size()) / 2;
    return st;
  }

  // The step's tensors made from host values, in the order the step makes them: the carried
  // state's reset masks, the distinct tokens, then each direction's targets, negatives and their
  // log-Q shifts. A replay copies them into the captured step's (checked against them at capture).
  std::vector<HostBytes> step_inputs(const std::vector<std::vector<uint8_t>>& resets) const {
    std::vector<HostBytes> v;
    for (const std::vector<uint8_t>& m : resets) v.push_back(bytes_of(m));
    v.push_back(bytes_of(in_.tokens.chars));
    v.push_back(bytes_of(in_.tokens.index));
    for (int d = 0; d < 2; ++d) {
      const SampledCandidates& n = in_.negatives[d];
      for (HostBytes b : {bytes_of((d == 0 ? in_.fwd : in_.bwd).targets), bytes_of(n.sampled), bytes_of(n.true_shift),
                          bytes_of(n.sampled_shift)})
        v.push_back(b);
    }
    return v;
  }

  // Closes the capture: the state the step carried out goes back into what it read, and the
  // inputs the step made must be the ones step_inputs lists.
  void end_capture(const std::vector<Tensor>& carried_in, const std::vector<std::vector<uint8_t>>& resets,
                   const Tensor& loss) {
    replay_->carry(s_->carried.tensors(), carried_in);
    replay_->end();
    replay_carried_in_ = carried_in, replay_carried_out_ = s_->carried;
    if (const std::string why = replay_->check_inputs(step_inputs(resets)); !why.empty()) replay_->refuse(why);
    replay_loss_ = loss;
    replay_step_ = s_->step;
    if (out_.quiet) return;
    const int64_t tokens = static_cast<int64_t>(in_.tokens.index.size());
    const std::string hint = c_.char_tokens_bucket >= tokens ? ""
                             : fmt::format("; steps with another count of distinct tokens (after char_tokens_bucket's "
                                           "padding) run launched: char_tokens_bucket = {} gives every step one", tokens);
    std::printf("step %ld: %s\n", (long)s_->step,
                replay_->usable() ? fmt::format("captured for replay ({} {}){}", replay_->kept(), kept_what(), hint).c_str()
                                  : ("not replayed: " + replay_->why_not()).c_str());
  }

  // The step's inputs, read and prepared ahead on a thread of their own while the step before ran:
  // reading 2 x 5,120 words and their characters, making the tokens distinct and drawing the
  // negatives are milliseconds of host work a GPU step would wait on. The same inputs in the same
  // order.
  void next_batches(int64_t step) {
    // Counted anew only after a schedule event that may change them (a scan of every row: ~1 ms
    // at 800k words x 6 senses); a count gone stale costs a draw in the step, never other bits.
    if (!sense_words_) sense_words_ = sense_words_now();
    const std::array<int, 2> words = *sense_words_;
    take_batches(ahead_.valid() ? ahead_.get() : read_batches(step, words));
    if (step < total_)
      ahead_ = std::async(std::launch::async, [this, step, words] { return read_batches(step + 1, words); });
  }

  // Warm-up end, center updates, PCA refits and pruning, after the step's update.
  void sense_schedule(int64_t step, std::optional<WorkingTable> (&work)[2]) {
    const TrainConfig& c = c_;
    ElmoLM& lm = s_->lm;
    SenseEvents ev[2];
    const std::vector<int32_t> rare = step == c.sense.contextual_warmup && c.sense.split_min_count > 0
                                          ? seen_->rarer_than(c.sense.split_min_count)
                                          : std::vector<int32_t>{};
    for (int d = 0; d < 2; ++d) {
      ev[d] = after_step(lm.heads[d], c.sense, step, picked_[d], work[d] ? &*work[d] : nullptr, rare);
      if (ev[d].warmup_ended || ev[d].pruned > 0) sense_words_.reset();
    }
    // The selections reach the usage windows on logging steps, which read the loss anyway.
    if (step % c.log_every == 0)
      for (SenseHead& h : lm.heads) h.usage.flush();
    // Copied senses take sense 0's Adagrad state too: with a fresh accumulator their first steps
    // would be as large as a new word's.
    if (ev[0].warmup_ended && c.sense.warmup_init_copy())
      for (int d = 0; d < (lm.shared_tables ? 1 : 2); ++d)
        for (Tensor* t : {&lm.heads[d].table.W, &lm.heads[d].table.b}) lm.heads[d].table.copy_first_sense(s_->opt.accumulator(*t));
    const std::string note = rare.empty() ? "" : fmt::format(" ({} words seen fewer than {} times keep one)", rare.size(),
                                                             c.sense.split_min_count);
    report_sense_events(out_, step, c.sense, {ev[0].warmup_ended, ev[0].pruned < 0 ? -1 : ev[0].pruned + ev[1].pruned}, note);
  }

  const TrainConfig& c_;
  RunOutput out_;
  bool writer_;
  Device dev_;
  DType dt_;
  PrecisionScope precision_;
  std::optional<Vocab> vocab_;
  int64_t tokens_per_step_ = 0, total_ = 0;
  bool sense_ = false, sharded_ = false;
  std::optional<TrainingState> s_;
  int global_rows_ = 0, first_row_ = 0;
  std::optional<LmStream> fwd_, bwd_;
  std::optional<std::array<int, 2>> sense_words_;  // sense_words_now() since the last event that changes it
  std::unique_ptr<TranslationTable> dict_;
  std::optional<TargetCounts> seen_;
  const LogUniformSampler* sampler_ = nullptr;  // log-uniform negatives, ELMo's and SaELMo's words (tabulated; shared, read only)
  StepInputs in_;
  std::future<StepInputs> ahead_;  // the next step's inputs (next_batches); waited for first when destroyed
  SenseStep picked_[2];
  // SA_STEP_REPLAY=1: a captured step that later steps replay (engine/step_replay.h): a CUDA graph on a GPU.
  bool replay_wanted_ = false;
  std::string dump_dir_;    // SA_DUMP_STEPS (train/step_dump.h)
  std::string replay_off_;  // why no step is captured
  int launched_ = 0;        // steps this process launched
  std::optional<StepReplay> replay_;
  Tensor replay_loss_;
  int64_t replay_step_ = 0;
  std::vector<Tensor> replay_carried_in_;  // the state the captured step reads, and what it carries out
  BilmState replay_carried_out_;
  std::vector<char> bf16_wanted_;  // the weights whose bf16 copies a step takes (Bf16WeightCopies)
};

}  // namespace

int64_t elmo_total_steps(const TrainConfig& c, int ranks) {
  const int64_t per_step = static_cast<int64_t>(c.batch_size) * c.unroll_steps * ranks;
  return c.n_steps > 0 ? c.n_steps : std::max<int64_t>(1, c.n_epochs * c.n_train_tokens / per_step);
}

void validate_elmo_config(const TrainConfig& c, const ConfigCheck& k) {
  const ElmoOptions& m = c.model;
  k.positive("lstm.dim", m.lstm_dim);
  k.positive("lstm.projection_dim", m.projection_dim);
  k.positive("lstm.n_layers", m.n_layers);
  k.positive("char_cnn.embedding.dim", m.char_dim);
  k.non_negative("char_cnn.n_highway", m.n_highway);
  k.non_negative("lstm.cell_clip", m.cell_clip);
  k.non_negative("lstm.proj_clip", m.proj_clip);
  k.check(m.max_characters_per_token == 50, "char_cnn.max_characters_per_token", "must be 50");
  k.check(m.n_characters == 261 || m.n_characters == 262, "char_cnn.n_characters",
          fmt::format("must be 261 (training) or 262 (bilm-tf's inference value), got {}", m.n_characters));
  k.check(m.cudnn == "auto" || m.cudnn == "on" || m.cudnn == "off" || m.cudnn == "stacked", "lstm.cudnn",
          fmt::format("must be \"auto\", \"on\", \"off\" or \"stacked\", got \"{}\"", m.cudnn));
}

void export_elmo_run(const std::string& run, const std::string& out) {
  LoadedRun r = load_run(run);
  fs::create_directories(out);
  r.lm.bilm.save_bilm(out + "/weights.hdf5");
  nlohmann::json options = r.config.bilm_options(r.vocab.size());
  options["char_cnn"]["n_characters"] = 262;  // bilm-tf's inference graph requires it
  write_file_atomically(out + "/options.json", options.dump(2) + "\n");
  r.vocab.save(out + "/vocab.txt");
  std::printf("export: %s (step %ld) -> %s/{options.json,weights.hdf5,vocab.txt}\n", r.checkpoint.c_str(),
              static_cast<long>(r.step), out.c_str());
}

std::unique_ptr<ModelFamily> make_elmo_family(const TrainConfig& c, TrainConfig& resolved, const RunOutput& out) {
  return std::make_unique<ElmoFamily>(c, resolved, out);
}

}  // namespace sa
