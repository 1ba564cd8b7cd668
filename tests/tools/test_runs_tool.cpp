// bin/runs list: one line per run with its family, steps, tokens, last held-out perplexity and
// state (finished, stopped, running, damaged).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <pugixml.hpp>
#include <sstream>

#include <fmt/format.h>

#include "data/run_files.h"
#include "data/wsd_corpus.h"
#include "tests/test_util.h"
#include "train/families.h"
#include "train/run_lock.h"

namespace sa {
namespace {

namespace fs = std::filesystem;

std::string tiny_run(const std::string& name, const std::string& extra, int64_t max_new_steps) {
  const std::string dir = ::testing::TempDir() + "/runs-tool-" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream corpus(dir + "/corpus.txt");
    for (int i = 0; i < 40; ++i) corpus << (i % 2 ? "the cat sat on the mat .\n" : "a dog ran to the bank .\n");
  }
  std::ofstream(dir + "/tiny.cfg") << "train_prefix = \"" << dir << "/corpus.txt\"\nheldout_prefix = \"" << dir
                                   << "/corpus.txt\"\nrun_dir = \"" << dir << "/run\"\nbatch_size = 4\nunroll_steps = 5\n"
                                   << "n_negative_samples_batch = 8\nn_steps = 6\ncheckpoint_every = 2\nheldout_batches = 1\n"
                                   << "device = \"cpu\"\n" << extra
                                   << "[char_cnn]\nembedding.dim = 4\nfilters = [[1, 8], [2, 8]]\nn_highway = 1\n"
                                   << "[lstm]\ndim = 16\nprojection_dim = 8\nn_layers = 2\n";
  TrainOptions o;
  o.quiet = true;
  o.max_new_steps = max_new_steps;
  train_model(TrainConfig::load(dir + "/tiny.cfg"), o);
  return dir + "/run";
}

std::string line_of(const std::string& out, const std::string& run) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(run, 0) == 0) return line;
  return "";
}

TEST(RunsTool, ListsFamilyStepsTokensHeldOutAndState) {
  const std::string done = tiny_run("done", "", 0);
  const std::string part = tiny_run("part", "n_context = 3\ncontextual_warmup = 2\ncluster_proj_dim = 4\n", 3);
  const std::string held = tiny_run("held", "", 2);
  const std::string bad = tiny_run("bad", "", 4);
  std::ofstream(bad + "/checkpoints/ckpt-00000005.safetensors.damaged") << "x";
  RunLock lock(held);  // as a running bin/train holds it
  const testing::ToolRun r = testing::run_tool("./bin/runs list " + done + " " + part + " " + held + " " + bad);
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string d = line_of(r.out, done), p = line_of(r.out, part), h = line_of(r.out, held), b = line_of(r.out, bad);
  EXPECT_TRUE(testing::contains(d, " ELMo ") && testing::contains(d, "6/6") && testing::contains(d, "finished")) << r.out;
  EXPECT_TRUE(testing::contains(d, " 120 ")) << d;  // 6 steps of 4 x 5 tokens
  EXPECT_TRUE(testing::contains(p, "SaELMo") && testing::contains(p, "2/6") && testing::contains(p, "stopped")) << r.out;
  EXPECT_TRUE(testing::contains(h, "running")) << r.out;
  EXPECT_TRUE(testing::contains(b, "4/6") && testing::contains(b, "damaged")) << r.out;
  // The finished run scored held-out text at its last step; the others never did.
  EXPECT_FALSE(testing::contains(d.substr(d.find(" 120 ")), " - ")) << d;
  EXPECT_TRUE(testing::contains(p, " - ")) << p;
  // Not a run directory: the error names it.
  const testing::ToolRun e = testing::run_tool("./bin/runs list " + ::testing::TempDir());
  EXPECT_NE(e.rc, 0);
  EXPECT_TRUE(testing::contains(e.out, "not a run directory (no config.cfg)")) << e.out;
}

// bin/runs plot: one SVG with three panels (loss, held-out perplexity, tokens/s), each holding one
// series per run, over tokens seen.
TEST(RunsTool, PlotsOneSeriesPerRunAndPanel) {
  const std::string a = tiny_run("plot-a", "log_every = 1\n", 0), b = tiny_run("plot-b", "log_every = 2\n", 0);
  const std::string svg = ::testing::TempDir() + "/runs-curves.svg";
  fs::remove(svg);
  const testing::ToolRun r = testing::run_tool("./bin/runs plot " + a + " " + b + " -o " + svg);
  ASSERT_EQ(r.rc, 0) << r.out;
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_file(svg.c_str())) << "the SVG does not parse";
  std::map<std::pair<std::string, std::string>, int> series;  // (run, panel) -> polylines
  std::map<std::string, size_t> loss_points;
  for (const pugi::xpath_node& n : doc.select_nodes("//polyline")) {
    const std::string run = n.node().attribute("data-run").value(), panel = n.node().attribute("data-panel").value();
    ++series[{run, panel}];
    if (panel == "0") {
      std::istringstream pts(n.node().attribute("points").value());
      loss_points[run] = std::distance(std::istream_iterator<std::string>(pts), std::istream_iterator<std::string>());
    }
  }
  EXPECT_EQ(series.size(), 6u);  // 2 runs x 3 panels
  for (const std::string& run : {a, b})
    for (const char* panel : {"0", "1", "2"}) EXPECT_EQ((series[{run, panel}]), 1) << run << " panel " << panel;
  EXPECT_EQ(loss_points[a], 6u) << "one point per logged step";
  // Axis titles and the legend's names.
  std::ifstream in(svg);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  EXPECT_TRUE(testing::contains(text, "tokens seen")) << text.substr(0, 400);
  EXPECT_TRUE(testing::contains(text, "held-out perplexity"));
  EXPECT_TRUE(testing::contains(text, ">" + a + "<"));
  // A directory that is not a run: the error names it and nothing is written.
  fs::remove(svg);
  const testing::ToolRun e = testing::run_tool("./bin/runs plot " + ::testing::TempDir() + " -o " + svg);
  EXPECT_NE(e.rc, 0);
  EXPECT_TRUE(testing::contains(e.out, "not a run directory")) << e.out;
  EXPECT_FALSE(fs::exists(svg));
}

// wsd_eval --log appends each setting's scores with the run's checkpoint step and tokens;
// runs plot draws them as a fourth panel (the paper's setting solid, the lemma's dashed).
TEST(RunsTool, WsdEvalLogsACheckpointsScoresAndPlotDrawsThem) {
  if (!fs::exists("/usr/share/wordnet/index.sense")) GTEST_SKIP() << "WordNet's index.sense is not installed";
  const std::string run = tiny_run("wsd-log", "log_every = 1\n", 0);
  const std::string dir = fs::path(run).parent_path().string();
  WsdCorpus train, test;
  train.sentences.push_back({"t0", {{"a", "a", "DET", ""}, {"dog", "dog", "NOUN", ""}, {"ran", "run", "VERB", "t0.1"},
                                    {"to", "to", "ADP", ""}, {"the", "the", "DET", ""}, {"bank", "bank", "NOUN", "t0.2"}}});
  train.sentences.push_back({"t1", {{"the", "the", "DET", ""}, {"bank", "bank", "NOUN", "t1.1"}}});
  test.sentences.push_back({"e0", {{"the", "the", "DET", ""}, {"cat", "cat", "NOUN", "e0.1"}, {"ran", "run", "VERB", "e0.2"},
                                   {"to", "to", "ADP", ""}, {"the", "the", "DET", ""}, {"bank", "bank", "NOUN", "e0.3"}}});
  write_wsd_xml(train, dir + "/tr.data.xml");
  write_wsd_keys({{"t0.1", {"run%2:38:00::"}}, {"t0.2", {"bank%1:17:01::"}}, {"t1.1", {"bank%1:14:00::"}}},
                 dir + "/tr.gold.key.txt");
  write_wsd_xml(test, dir + "/te.data.xml");
  write_wsd_keys({{"e0.1", {"cat%1:05:00::"}}, {"e0.2", {"run%2:38:00::"}}, {"e0.3", {"bank%1:17:01::"}}},
                 dir + "/te.gold.key.txt");
  const std::string log = run + "/wsd.jsonl", common = " --train " + dir + "/tr.data.xml --test " + dir +
                                                      "/te.data.xml --out " + dir + "/keys --all-settings";
  fs::remove(log);
  const testing::ToolRun r = testing::run_tool("./bin/wsd_eval --model " + run + common + " --layer 0,top --log " + log);
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::vector<nlohmann::json> lines = run_files::read_metrics(log);
  ASSERT_EQ(lines.size(), 16u) << "2 layers x 4 settings x (the set and ALL)";
  std::map<std::string, int> per_layer;
  for (const nlohmann::json& j : lines) {
    EXPECT_EQ(j["step"].get<int64_t>(), 6) << j.dump();
    EXPECT_EQ(j["tokens"].get<int64_t>(), 6 * 4 * 5) << j.dump();
    EXPECT_GE(j["f1"].get<double>(), 0.0);
    EXPECT_LE(j["f1"].get<double>(), 1.0);
    ++per_layer[j["layer"].get<std::string>()];
  }
  // The top layer is logged by its number (the tiny model has layers 0-2).
  EXPECT_EQ(per_layer, (std::map<std::string, int>{{"0", 8}, {"2", 8}}));
  // The top layer's scores equal those of a pass over that layer alone.
  const testing::ToolRun alone = testing::run_tool("./bin/wsd_eval --model " + run + common + " --layer top");
  ASSERT_EQ(alone.rc, 0) << alone.out;
  int compared = 0;
  for (const nlohmann::json& j : lines) {
    if (j["layer"] != "2" || j["test"] != "ALL" || j["setting"] != "nearest-all-wn1") continue;
    ++compared;
    EXPECT_TRUE(testing::contains(alone.out, fmt::format("{:6.1f}%", 100 * j["f1"].get<double>()))) << alone.out;
  }
  EXPECT_EQ(compared, 1);
  // The plot's fourth panel: a solid and a dashed line for the run.
  const std::string svg = dir + "/wsd-curves.svg";
  const testing::ToolRun p = testing::run_tool("./bin/runs plot " + run + " -o " + svg);
  ASSERT_EQ(p.rc, 0) << p.out;
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_file(svg.c_str()));
  int wsd_lines = 0, dashed = 0;
  for (const pugi::xpath_node& n : doc.select_nodes("//polyline[@data-panel='3']")) {
    ++wsd_lines;
    dashed += !std::string(n.node().attribute("stroke-dasharray").value()).empty();
  }
  EXPECT_EQ(wsd_lines, 2);
  EXPECT_EQ(dashed, 1);
  // --log needs a run's checkpoint to name the point it records.
  const testing::ToolRun e = testing::run_tool("./bin/wsd_eval --options " + run + "/options.json --weights " + run +
                                               "/weights.hdf5" + common + " --log " + log);
  EXPECT_NE(e.rc, 0);
  EXPECT_TRUE(testing::contains(e.out, "give --model RUN_DIR")) << e.out;
  EXPECT_EQ(run_files::read_metrics(log).size(), 16u) << "a refused evaluation appends nothing";
}

}  // namespace
}  // namespace sa
