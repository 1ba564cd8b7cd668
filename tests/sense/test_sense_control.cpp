// SaELMo against ELMo without confounds (docs/design.md §2.12): with senses never released, the
// same negative sampler and the same table layout, SaELMo trains exactly as ELMo; the negatives'
// word budget and coverage log; the output table layouts; what the warm-up's end hands the new
// senses (Adagrad state) and which words it leaves unsplit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "data/char_ids.h"
#include "data/run_files.h"
#include "data/safetensors.h"
#include "data/target_counts.h"
#include "sense/sense_model.h"
#include "sense/sense_softmax.h"
#include "tests/test_util.h"
#include "train/config.h"
#include "train/elmo_lm.h"
#include "train/families.h"

namespace sa {
namespace {

namespace fs = std::filesystem;

// Every metrics.jsonl line with a loss, by step.
std::map<int64_t, nlohmann::json> step_lines(const std::string& run) {
  std::map<int64_t, nlohmann::json> m;
  std::ifstream f(run + "/metrics.jsonl");
  for (std::string line; std::getline(f, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("loss")) m[j["step"].get<int64_t>()] = j;
  }
  return m;
}

// A tiny model on the first 300 sentences of Brown, trained in this process; `extra` adds keys.
// Returns the run directory ("" when the shared data is missing).
std::string train_tiny(const std::string& name, const std::string& extra, int steps = 12) {
  const std::string corpus = "../shared/data/corpus/brown.txt";
  if (!fs::exists(corpus)) return "";
  const std::string dir = ::testing::TempDir() + "/sense-control-" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ifstream in(corpus);
    std::ofstream out(dir + "/corpus.txt");
    std::string line;
    for (int i = 0; i < 300 && std::getline(in, line); ++i) out << line << "\n";
  }
  std::ofstream(dir + "/tiny.cfg") << "train_prefix = \"" << dir << "/corpus.txt\"\nrun_dir = \"" << dir << "/run\"\n"
                                   << "batch_size = 8\nunroll_steps = 10\nn_negative_samples_batch = 64\n"
                                   << "n_steps = " << steps << "\nlog_every = 1\ncheckpoint_every = 1000\n"
                                   << "heldout_every = 0\nseed = 5\ndevice = \"cpu\"\nstate_reset = 0.2\ndropout = 0.1\n"
                                   << extra
                                   << "[char_cnn]\nembedding.dim = 8\nfilters = [[1, 16], [2, 16]]\nn_highway = 1\n"
                                   << "[lstm]\ndim = 32\nprojection_dim = 16\nn_layers = 2\n";
  train_model(TrainConfig::load(dir + "/tiny.cfg"), {.quiet = true});
  return dir + "/run";
}

const char* kOneSense =
    "n_context = 2\ncontextual_warmup = 1000000000\nsense_negatives = \"log_uniform\"\ncluster_proj_dim = 4\n"
    "pca_every = 5\npca_sample = 200\nprune_first = 6\nprune_every = 3\ncontext_record_window = 5\n";

// Item 5 of the comparison: the control that must tie. Senses never released, log-uniform sense
// negatives (with one live sense they are ELMo's words, shifts and accidental hits) and the same
// layout: every step's loss and negative coverage equal ELMo's. The one-sense table starts from
// ELMo's random stream (softmax_init_rows), so this holds from the first step.
TEST(SenseControl, OneSenseSaelmoTrainsExactlyAsElmo) {
  for (const char* layout : {"shared", "per_direction"}) {
    SCOPED_TRACE(layout);
    const std::string tables = std::string("softmax_tables = \"") + layout + "\"\n";
    const std::string elmo = train_tiny(std::string("elmo-") + layout, tables);
    if (elmo.empty()) GTEST_SKIP() << "no ../shared/data here";
    for (const char* budget : {"rows", "words"}) {
      SCOPED_TRACE(budget);
      const std::string sa = train_tiny(std::string("saelmo-") + layout + "-" + budget,
                                        tables + kOneSense + "sense_negative_budget = \"" + budget + "\"\n");
      auto e = step_lines(elmo), s = step_lines(sa);
      ASSERT_EQ(e.size(), 12u);
      ASSERT_EQ(s.size(), 12u);
      for (auto& [step, line] : e) {
        EXPECT_NEAR(line["loss"].get<double>(), s[step]["loss"].get<double>(), 1e-5) << "step " << step;
        EXPECT_EQ(line["negative_words"], s[step]["negative_words"]) << "step " << step;
        EXPECT_DOUBLE_EQ(line["negative_unigram_mass"].get<double>(), s[step]["negative_unigram_mass"].get<double>());
      }
      EXPECT_EQ(e[12]["negative_words"].get<double>(), 64.0);  // n_negative_samples_batch distinct words
      EXPECT_GT(e[12]["negative_unigram_mass"].get<double>(), 0.3);  // log-uniform favours frequent words
    }
  }
  // A different table layout breaks the tie (the test can fail).
  const std::string elmo = ::testing::TempDir() + "/sense-control-elmo-shared/run";
  const std::string sa = train_tiny("saelmo-crossed", std::string("softmax_tables = \"per_direction\"\n") + kOneSense);
  EXPECT_GT(std::abs(step_lines(elmo)[12]["loss"].get<double>() - step_lines(sa)[12]["loss"].get<double>()), 1e-4);
}

// Item 1: the words budget draws n distinct words whatever the live senses, each with all of them;
// the row cap draws fewer words so that rows stay near the cap.
TEST(SenseControl, WordBudgetDrawsElmosWordCountWithEverySense) {
  SenseTable t(400, 4, 2, 1, Device::cpu(), DType::F64);
  t.end_warmup(false);         // 3 enabled senses per word
  t.enabled[t.row(0, 3)] = 0;  // word 0 keeps 2
  for (auto [budget, cap, words] : {std::tuple{SenseOptions::NegativeBudget::Rows, 0, 30},
                                    std::tuple{SenseOptions::NegativeBudget::Words, 0, 90},
                                    std::tuple{SenseOptions::NegativeBudget::Words, 150, 50}}) {
    std::mt19937_64 rng(5);
    SenseNegatives neg = sample_log_uniform_senses(t, 90, {0, 5}, rng, budget, cap);
    std::map<int, int> senses;
    for (int32_t r : neg.rows) ++senses[r / 4];
    EXPECT_EQ(static_cast<int>(senses.size()), words);
    EXPECT_EQ(neg.words, words);
    for (auto& [w, n] : senses) EXPECT_EQ(n, w == 0 ? 2 : 3) << w;
    EXPECT_EQ(neg.true_shift.size(), 2u);
  }
  EXPECT_EQ(log_uniform_words(400, 1200, 5000, SenseOptions::NegativeBudget::Words, 0), 400);  // at most V
}

// The coverage log's arithmetic: distinct words once, mass from the targets seen so far.
TEST(SenseControl, TargetCountsGiveDistinctWordsAndUnigramMass) {
  TargetCounts c(6);
  c.add({3, 3, 3, 4, 5, 1, 3, 4});
  const NegativeCoverage cov = c.coverage({3, 4, 3, 0});
  EXPECT_EQ(cov.words, 3);
  EXPECT_DOUBLE_EQ(cov.mass, 6.0 / 8.0);  // 3 (four times) and 4 (twice) of eight targets; 0 unseen
  EXPECT_EQ(c.rarer_than(2), (std::vector<int32_t>{0, 1, 2, 5}));
  EXPECT_THROW(c.add({6}), std::exception);
}

// Item 5's starting point: sense 0 of a one-sense SaELMo table is ELMo's table, row for row, in
// both layouts and on every shard.
TEST(SenseControl, SenseZeroStartsAsElmosTable) {
  ElmoOptions o = testing::tiny_elmo_options();
  SenseOptions so;
  so.n_context = 3, so.cluster_proj_dim = 2, so.pca_sample = 50;
  for (auto layout : {SenseOptions::TableLayout::Shared, SenseOptions::TableLayout::PerDirection}) {
    so.softmax_tables = layout;
    SenseOptions plain = so;
    plain.n_context = 0;
    ElmoLM e = ElmoLM::make(o, plain, 30, 4, Device::cpu(), DType::F64);
    ElmoLM s = ElmoLM::make(o, so, 30, 4, Device::cpu(), DType::F64);
    for (int d = 0; d < 2; ++d) {
      std::vector<double> ew = e.softmax_W[d].values(), sw = s.heads[d].table.W.values();
      for (int w = 0; w < 30; ++w)
        for (int p = 0; p < o.projection_dim; ++p)
          ASSERT_EQ(ew[w * o.projection_dim + p], sw[(w * 3) * o.projection_dim + p]) << d << " " << w;
    }
    const bool shared = layout == SenseOptions::TableLayout::Shared;
    EXPECT_EQ(e.softmax_W[0].impl() == e.softmax_W[1].impl(), shared);
    EXPECT_EQ(s.heads[0].table.W.impl() == s.heads[1].table.W.impl(), shared);
    EXPECT_EQ(s.heads[0].table.centers.impl() == s.heads[1].table.centers.impl(), false);  // centers per direction
    std::set<std::string> names;
    for (auto& nt : e.named()) names.insert(nt.name);
    for (auto& nt : s.named()) names.insert(nt.name);
    EXPECT_EQ(names.count("softmax/1/W"), shared ? 0u : 1u);
    EXPECT_EQ(names.count("sense/1/W"), shared ? 0u : 1u);
    EXPECT_EQ(names.count("sense/0/W"), 1u);
  }
  // A shard holds the unsharded table's rows, sense 0 included.
  SenseTable whole(10, 3, 4, 9, Device::cpu(), DType::F64, {}, 77), part(10, 3, 4, 9, Device::cpu(), DType::F64, {1, 2}, 77);
  std::vector<double> a = whole.W.values(), b = part.W.values();
  EXPECT_EQ(std::vector<double>(a.begin() + part.first_row() * 4, a.end()), b);
}

// Item 2: the whole SaELMo loss (both directions, log-uniform sense negatives) against finite
// differences in f64, in each layout: a shared table's gradient is both directions' sum.
TEST(SenseControl, SaelmoWholeLossGradientInBothLayouts) {
  Vocab v = Vocab::from_words({"<S>", "</S>", "<UNK>", "the", "cat", "sat", "on", "a", "mat", "."});
  const std::vector<std::string> words = {"<S>", "the", "cat", "sat", "on", "a", "mat", ".", "</S>", "dog"};
  auto batch = [&](const std::vector<std::string>& tokens) {
    LmBatch b;
    b.rows = 2, b.steps = 3;
    b.char_ids.resize(6 * chars::kPerToken);
    for (int i = 0; i < 6; ++i) {
      chars::token_ids(tokens[i], &b.char_ids[static_cast<size_t>(i) * chars::kPerToken]);
      b.targets.push_back(v.id(tokens[i + 1]));
    }
    return b;
  };
  LmBatch bf = batch(words), bb = batch({words.rbegin(), words.rend()});
  for (auto layout : {SenseOptions::TableLayout::Shared, SenseOptions::TableLayout::PerDirection}) {
    SCOPED_TRACE(enum_name(layout));
    SenseOptions so;
    so.n_context = 3, so.cluster_proj_dim = 2, so.pca_sample = 50, so.negatives = SenseOptions::Negatives::LogUniform;
    so.softmax_tables = layout;
    ElmoLM lm = ElmoLM::make(testing::tiny_elmo_options(), so, v.size(), 3, Device::cpu(), DType::F64);
    for (SenseHead& h : lm.heads) h.table.end_warmup(false);
    auto loss = [&]() {
      BilmState st = BilmState::zeros(testing::tiny_elmo_options(), 2, Device::cpu(), DType::F64);
      Generator gen(11);
      std::mt19937_64 rng(5);
      auto [tf, tb] = encode_batches(lm, bf, bb);
      BilmOutputs out = bilm_forward(lm.bilm, {tf, tb}, st, 0.0, gen);
      const LmBatch* b[2] = {&bf, &bb};
      Tensor l[2];
      for (int d = 0; d < 2; ++d) l[d] = sense_direction_loss(lm.heads[d], out.top[d], *b[d], so, 4, true, rng);
      return ops::scale(ops::add(l[0], l[1]), 0.5);
    };
    backward(loss());
    int checked = 0;
    for (NamedTensor& nt : lm.named()) {
      if (nt.name.find("sense/") != 0) continue;  // the biLM's gradients are ELMo's test
      Tensor p = *nt.tensor;
      ASSERT_TRUE(p.is_sparse_grad());
      std::vector<double> analytic = p.sparse_grad().to_dense(p.dim(0), p.dim(1)).values();
      double* data = p.data<double>();
      for (int64_t e = 0; e < p.numel(); ++e) {
        if (analytic[e] == 0 && e % 11) continue;  // every touched entry, and some untouched ones
        NoGrad ng;
        const double keep = data[e], eps = 1e-6;
        data[e] = keep + eps;
        const double up = loss().item();
        data[e] = keep - eps;
        const double down = loss().item();
        data[e] = keep;
        const double numeric = (up - down) / (2 * eps);
        EXPECT_NEAR(analytic[e], numeric, 1e-7 + 1e-5 * std::abs(numeric)) << nt.name << " element " << e;
        ++checked;
      }
    }
    EXPECT_GT(checked, 50);
  }
}

// Item 3: with warmup_init = "copy", the new senses take sense 0's Adagrad accumulators as well
// as its rows; with "random" they start from the initial accumulator.
TEST(SenseControl, CopiedSensesTakeSenseZerosAdagradState) {
  for (const char* init : {"copy", "random"}) {
    SCOPED_TRACE(init);
    const std::string run = train_tiny(std::string("acc-") + init,
                                       std::string("n_context = 3\ncontextual_warmup = 6\ncluster_proj_dim = 4\n"
                                                   "prune_first = 1000\nwarmup_init = \"") + init + "\"\n",
                                       6);
    if (run.empty()) GTEST_SKIP() << "no ../shared/data here";
    SafetensorsFile f = load_safetensors(run_files::checkpoint(run, 6));
    for (int d = 0; d < 2; ++d) {
      const std::vector<double> acc = f.tensors.at("adagrad/sense/" + std::to_string(d) + "/W").values();
      const int64_t P = 16, rows = static_cast<int64_t>(acc.size()) / P;
      int differ = 0, trained = 0;
      for (int64_t w = 0; w < rows / 3; ++w) {
        const double a0 = acc[w * 3 * P];
        trained += a0 != 1.0;
        for (int s = 1; s < 3; ++s) differ += acc[(w * 3 + s) * P] != a0;
      }
      EXPECT_GT(trained, 20);
      if (std::string(init) == "copy")
        EXPECT_EQ(differ, 0);
      else
        EXPECT_GT(differ, 20);
    }
  }
}

// Item 4: words seen fewer than split_min_count times as targets before the warm-up ends keep
// sense 0 alone; the others switch to senses 1..C-1.
TEST(SenseControl, RareWordsKeepTheirOneSense) {
  const std::string run = train_tiny("rare", "n_context = 3\ncontextual_warmup = 6\ncluster_proj_dim = 4\n"
                                             "prune_first = 1000\nsplit_min_count = 3\n", 6);
  if (run.empty()) GTEST_SKIP() << "no ../shared/data here";
  SafetensorsFile f = load_safetensors(run_files::checkpoint(run, 6));
  const std::vector<double> en = f.tensors.at("sense/0/enabled").values();
  int one = 0, split = 0;
  for (size_t w = 0; w < en.size() / 3; ++w) {
    const bool first = en[w * 3] > 1e-6, rest = en[w * 3 + 1] > 1e-6 && en[w * 3 + 2] > 1e-6;
    ASSERT_NE(first, rest) << "word " << w;  // either one sense or the split ones
    one += first, split += rest;
  }
  EXPECT_LT(en[1 * 3], 1e-6);  // </S>, a target in every sentence: split
  EXPECT_GT(one, 100);          // 6 steps of 80 tokens leave most words rare
  EXPECT_GT(split, 5);
  // The tools read the run as trained: bin/senses shows the rare word's one sense.
  SenseModel m = load_sense_model(run);
  EXPECT_EQ(m.options.split_min_count, 3);
  EXPECT_TRUE(m.heads[0].table.is_enabled(m.heads[0].table.row(static_cast<int>(en.size() / 3) - 1, 0)));
}

// A shared layout's run reads back with one W for both directions, in load_sense_model and bin/senses.
TEST(SenseControl, SharedTablesRunReadsBackInTheTools) {
  const std::string run = train_tiny("shared-tools", "n_context = 3\ncontextual_warmup = 4\ncluster_proj_dim = 4\n"
                                                     "prune_first = 1000\nsoftmax_tables = \"shared\"\n", 6);
  if (run.empty()) GTEST_SKIP() << "no ../shared/data here";
  SafetensorsFile f = load_safetensors(run_files::checkpoint(run, 6));
  EXPECT_EQ(f.tensors.count("sense/1/W"), 0u);
  SenseModel m = load_sense_model(run);
  EXPECT_EQ(m.heads[0].table.W.impl(), m.heads[1].table.W.impl());
  EXPECT_EQ(m.heads[0].table.W.values(), f.tensors.at("sense/0/W").values());
  const auto r = testing::run_tool("./bin/senses list --model " + run + " --word the --top 2");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(testing::contains(r.out, "backward direction, 'the'")) << r.out;
}

// One list of sense settings (SenseOptions::visit) drives the config, its echo and options.json:
// every setting, set away from its default, survives config -> config.cfg -> options.json -> load.
TEST(SenseControl, EverySenseSettingRoundTrips) {
  std::vector<std::string> sets;
  SenseOptions{}.visit([&](const char* name, auto& f) {
    using F = std::decay_t<decltype(f)>;
    std::string v;
    if constexpr (std::is_enum_v<F>)
      v = std::string(enum_names<F>()[(static_cast<size_t>(f) + 1) % enum_names<F>().size()]);
    else if constexpr (std::is_same_v<F, bool>)
      v = f ? "false" : "true";
    else if constexpr (std::is_same_v<F, double>)
      v = fmt::format("{}", f / 2);
    else
      v = fmt::format("{}", f + 3);
    sets.push_back(std::string(name) + "=" + v);
  });
  EXPECT_EQ(sets.size(), 22u);
  const TrainConfig c = TrainConfig::load("configs/saelmo-small.cfg", sets);
  int changed = 0;
  SenseOptions defaults, loaded = c.sense;
  nlohmann::json d = defaults.to_json(), l = loaded.to_json();
  for (auto& [k, v] : d.items()) changed += l.at(k) != v;
  EXPECT_EQ(changed, 22) << l.dump();
  const std::string echo = testing::temp_file("sense-roundtrip.cfg", c.to_toml());
  EXPECT_EQ(TrainConfig::load(echo).sense.to_json(), l);
  const nlohmann::json options = c.bilm_options(100);
  EXPECT_EQ(SenseOptions::from_json(options["sensealign"]["sense"], "options.json").to_json(), l);
  // A bad value names the setting.
  nlohmann::json bad = l;
  bad["warmup_init"] = "sideways";
  EXPECT_NE(testing::error_of([&] { SenseOptions::from_json(bad, "x/options.json"); }).find("warmup_init"),
            std::string::npos);
}

}  // namespace
}  // namespace sa
