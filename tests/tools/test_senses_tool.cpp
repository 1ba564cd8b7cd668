// bin/senses on a tiny trained SaELMo run: list, plot (SVG), contexts, html and memory.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "eval/label_layout.h"

namespace {

namespace fs = std::filesystem;

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  return out;
}

// A fresh directory under the test temp dir.
std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Copies the first n lines of `from` to `to`, returning how often each token occurs in them.
std::map<std::string, int> copy_head(const std::string& from, const std::string& to, int n) {
  std::ifstream in(from);
  std::ofstream out(to);
  std::map<std::string, int> count;
  std::string line;
  for (int i = 0; i < n && std::getline(in, line); ++i) {
    out << line << "\n";
    std::istringstream ws(line);
    for (std::string w; ws >> w;) count[w]++;
  }
  return count;
}

// Trains a tiny SaELMo run in dir/run from the config lines `head` (corpora and sense keys);
// returns whether training succeeded.
bool train_tiny(const std::string& dir, const std::string& head) {
  std::ofstream(dir + "/tiny.cfg") << head << "run_dir = \"" << dir << "/run\"\n"
                                   << "batch_size = 8\nunroll_steps = 10\nn_negative_samples_batch = 64\n"
                                   << "seed = 3\ndevice = \"cpu\"\ncluster_proj_dim = 8\npca_every = 5\n"
                                   << "contextual_warmup = 10\nprune_first = 1000\n"
                                   << "[char_cnn]\nembedding.dim = 8\nfilters = [[1, 16], [2, 16]]\nn_highway = 1\n"
                                   << "[lstm]\ndim = 32\nprojection_dim = 16\nn_layers = 2\n";
  return std::system(("./bin/train " + dir + "/tiny.cfg > /dev/null 2>&1").c_str()) == 0;
}

TEST(SensesTool, ListPlotAndMemory) {
  const std::string corpus = "../shared/data/corpus/brown.txt";
  if (!fs::exists(corpus)) GTEST_SKIP() << "no ../shared/data here";
  const std::string dir = fresh_dir("senses-tool");
  copy_head(corpus, dir + "/corpus.txt", 300);
  ASSERT_TRUE(train_tiny(dir, "train_prefix = \"" + dir + "/corpus.txt\"\nn_steps = 30\nn_context = 4\nwarmup_init = \"data\"\n"));

  std::string list = run("./bin/senses list --model " + dir + "/run --word the --top 3");
  // Forward and backward, senses 1..3 (sense 0 is the warm-up sense, disabled after it).
  EXPECT_NE(list.find("forward direction, 'the'"), std::string::npos) << list;
  EXPECT_NE(list.find("backward direction, 'the'"), std::string::npos) << list;
  EXPECT_EQ(list.find("sense 0 "), std::string::npos) << list;
  EXPECT_NE(list.find("sense 3 "), std::string::npos) << list;

  const std::string svg = dir + "/the.svg";
  std::string msg = run("./bin/senses plot --model " + dir + "/run --word the --top 2 --output " + svg);
  ASSERT_TRUE(fs::exists(svg)) << msg;
  std::stringstream ss;
  ss << std::ifstream(svg).rdbuf();
  const std::string s = ss.str();
  EXPECT_EQ(s.rfind("<svg", 0), 0u);
  EXPECT_NE(s.find("</svg>"), std::string::npos);
  // The word's three senses in bold, and 3 senses x 2 neighbours (fewer when shared).
  const auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("font-weight=\"bold\">the#"), 3u);
  EXPECT_GE(count("<circle"), 5u);
  EXPECT_LE(count("<circle"), 9u);
  // Points and labels inside the canvas, no two labels overlapping.
  std::smatch size;
  ASSERT_TRUE(std::regex_search(s, size, std::regex("width=\"([0-9.]+)\" height=\"([0-9.]+)\"")));
  const double W = std::stod(size[1]), H = std::stod(size[2]);
  std::regex cx("cx=\"([-0-9.e]+)\" cy=\"([-0-9.e]+)\"");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), cx); it != std::sregex_iterator(); ++it) {
    const double x = std::stod((*it)[1]), y = std::stod((*it)[2]);
    EXPECT_TRUE(x >= 0 && x <= W && y >= 0 && y <= H) << x << "," << y;
  }
  std::vector<sa::Box> labels;
  std::regex text("<text x=\"([-0-9.e]+)\" y=\"([-0-9.e]+)\" font-size=\"([0-9.]+)\" fill[^>]*>([^<]*)</text>");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), text); it != std::sregex_iterator(); ++it)
    labels.push_back(sa::text_box((*it)[4], std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3])));
  EXPECT_GE(labels.size(), 5u);
  for (size_t i = 0; i < labels.size(); ++i) {
    EXPECT_TRUE(labels[i].inside({0, 0, W, H}));
    for (size_t j = i + 1; j < labels.size(); ++j) EXPECT_FALSE(labels[i].overlaps(labels[j])) << i << " " << j;
  }
  EXPECT_NE(run("./bin/senses plot --model " + dir + "/run --word notaword --output x.svg").find("not in the vocabulary"),
            std::string::npos);

  // contexts: per enabled sense, up to --per-sense sentences with the word marked, clearest first.
  const std::string ctx = run("./bin/senses contexts --model " + dir + "/run --word the --per-sense 2");
  EXPECT_NE(ctx.find("'the' (forward): 3 enabled senses"), std::string::npos) << ctx;
  std::vector<double> margins;
  int shown = 0, senses_shown = 0;
  std::istringstream lines(ctx);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("sense ", 0) == 0) ++senses_shown, margins.clear();
    std::smatch m;
    if (!std::regex_match(line, m, std::regex("  ([0-9.]+)  .*\\[the\\].*"))) continue;
    ++shown;
    margins.push_back(std::stod(m[1]));
    if (margins.size() > 1) {
      EXPECT_GE(margins[margins.size() - 2], margins.back()) << "clearest first: " << ctx;
    }
  }
  EXPECT_EQ(senses_shown, 3) << ctx;
  EXPECT_GE(shown, 2) << ctx;
  EXPECT_LE(shown, 6) << ctx;
  // html: an index and a page per word with its senses, marked contexts and picture.
  const std::string site = dir + "/site";
  const std::string h = run("./bin/senses html --model " + dir + "/run --output " + site + " --words the,of --per-sense 2");
  ASSERT_TRUE(fs::exists(site + "/index.html")) << h;
  std::stringstream index_file;
  index_file << std::ifstream(site + "/index.html").rdbuf();
  const std::string index = index_file.str();
  std::smatch link;
  ASSERT_TRUE(std::regex_search(index, link, std::regex("<a href=\"(w[0-9]+\\.html)\">the</a>"))) << index;
  std::stringstream page;
  page << std::ifstream(site + "/" + link[1].str()).rdbuf();
  EXPECT_NE(page.str().find("<mark>the</mark>"), std::string::npos);
  EXPECT_NE(page.str().find("<img src=\"w"), std::string::npos);
  EXPECT_NE(page.str().find("<td>#3</td>"), std::string::npos);
  EXPECT_TRUE(fs::exists(site + "/" + link[1].str().substr(0, link[1].str().size() - 5) + ".svg"));

  // Memory grows linearly with n_context: n_context 6 is six times n_context 1.
  std::string mem = run("./bin/senses memory --vocab 793471 --dim 512 --n-context 6");
  std::smatch m1, m6;
  ASSERT_TRUE(std::regex_search(mem, m1, std::regex("\\n +1 +([0-9.]+)")));
  ASSERT_TRUE(std::regex_search(mem, m6, std::regex("\\n +6 +([0-9.]+)")));
  EXPECT_NEAR(std::stod(m6[1]), 6 * std::stod(m1[1]), 0.2);
  // 793,471 x 512 x 4 bytes x (W + its accumulator + centers) + b and its accumulator, per sense.
  EXPECT_NEAR(std::stod(m1[1]), 793471.0 * (3 * 512 + 2) * 4 / 1048576.0, 0.1);
  // Per device: replicated, every rank holds the whole tables; sharded over 4 ranks, the largest
  // shard holds a quarter of the words (rounded up), and each step's working tables are printed.
  const auto six = [&](const std::string& args) {
    const std::string out = run("./bin/senses memory --vocab 793471 --dim 512 --n-context 6 " + args);
    std::smatch m;
    EXPECT_TRUE(std::regex_search(out, m, std::regex("\\n +6 +([0-9.]+)"))) << out;
    return std::make_pair(m.size() > 1 ? std::stod(m[1]) : 0.0, out);
  };
  const auto [replicated, r_out] = six("--ranks 4");
  const auto [sharded, s_out] = six("--ranks 4 --sense-tables sharded");
  EXPECT_DOUBLE_EQ(replicated, std::stod(m6[1]));
  EXPECT_NEAR(sharded, 198368.0 * 6 * (3 * 512 + 2) * 4 / 1048576.0, 0.1);
  EXPECT_NE(s_out.find("sharded over 4 ranks: bytes per rank"), std::string::npos) << s_out;
  EXPECT_NE(s_out.find("each step's working tables"), std::string::npos) << s_out;
  EXPECT_EQ(r_out.find("working tables"), std::string::npos) << r_out;
}

// A joint (bilingual) run: list gives each sense's nearest senses per language, and every word
// listed for the second language occurs in its corpus; plot marks that language's points.
TEST(SensesTool, JointRunShowsNearestSensesInEachLanguage) {
  const std::string en = "../shared/data/corpus/brown.txt", de = "../shared/data/corpus/wiki-de.txt";
  if (!fs::exists(en) || !fs::exists(de)) GTEST_SKIP() << "no ../shared/data here";
  const std::string dir = fresh_dir("senses-joint");
  copy_head(en, dir + "/en.txt", 300);
  std::set<std::string> de_words;
  for (auto& [w, n] : copy_head(de, dir + "/de.txt", 300)) de_words.insert(w);
  ASSERT_TRUE(train_tiny(dir, "train_prefix = \"" + dir + "/en.txt\"\ntrain_prefix_l2 = \"" + dir +
                                 "/de.txt\"\nn_steps = 20\nn_context = 3\n"));
  std::string list = run("./bin/senses list --model " + dir + "/run --word der --top 4 --langs en,de");
  EXPECT_NE(list.find("nearest en:"), std::string::npos) << list;
  std::istringstream lines(list);
  int de_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("nearest de:");
    if (at == std::string::npos) continue;
    ++de_lines;
    std::istringstream ws(line.substr(at + 11));
    int n = 0;
    for (std::string w; ws >> w; ++n) {
      const std::string word = w.substr(0, w.rfind('#'));
      EXPECT_TRUE(de_words.count(word)) << word << " is listed as German but is not in the German corpus\n" << list;
    }
    EXPECT_EQ(n, 4) << line;
  }
  EXPECT_EQ(de_lines, 4) << list;  // 2 senses (1 and 2 after the warm-up) x 2 directions
  const std::string svg = dir + "/der.svg";
  std::string msg = run("./bin/senses plot --model " + dir + "/run --word der --top 2 --langs en,de --output " + svg);
  std::stringstream ss;
  ss << std::ifstream(svg).rdbuf();
  EXPECT_NE(ss.str().find("<rect x="), std::string::npos) << msg;
  EXPECT_NE(ss.str().find("squares and italics: de"), std::string::npos) << msg;
}

// The pseudo-word evaluation on tiny word-centred runs ("word" and "word_offset"): every
// occurrence of a pair word in the evaluated text is counted once per pair, purities lie between
// the one-sense baseline and 1, and the word-centred rule is also scored with inference-mode
// word means.
TEST(SensesTool, PseudoEvalCountsEveryOccurrenceAndScoresBothMeans) {
  const std::string corpus = "../shared/data/corpus/brown.txt";
  if (!fs::exists(corpus)) GTEST_SKIP() << "no ../shared/data here";
  const std::string dir = fresh_dir("senses-pseudo");
  std::map<std::string, int> count = copy_head(corpus, dir + "/corpus.txt", 300);
  std::ofstream(dir + "/pairs.txt") << "of and\nto in\n";
  std::string msg = run("./bin/senses pseudo-corpus --pairs " + dir + "/pairs.txt --corpus " + dir +
                        "/corpus.txt --output " + dir + "/merged.txt");
  ASSERT_TRUE(fs::exists(dir + "/merged.txt")) << msg;
  for (const std::string mean : {"word", "word_offset"}) {
    fs::remove_all(dir + "/run");
    ASSERT_TRUE(train_tiny(dir, "train_prefix = \"" + dir + "/merged.txt\"\nn_steps = 30\nn_context = 4\n" +
                                   "warmup_init = \"data\"\nselection_mean = \"" + mean + "\"\nselect_after_dropout = false\n"));
    const std::string out = run("./bin/senses pseudo-eval --model " + dir + "/run --pairs " + dir + "/pairs.txt --corpus " +
                                dir + "/corpus.txt");
    for (auto [a, b] : {std::pair{"of", "and"}, std::pair{"to", "in"}}) {
      std::smatch m;
      const std::string name = std::string(a) + "_" + b;
      ASSERT_TRUE(std::regex_search(out, m, std::regex(name + R"( +(\d+) +(\d+) \| ([0-9.]+) / [0-9.]+ \(maj ([0-9.]+)\) \| ([0-9.]+) / [0-9.]+ \| ([0-9.]+) / ([0-9.]+))")))
          << out;
      EXPECT_EQ(std::stoi(m[1]), count[a]) << out;
      EXPECT_EQ(std::stoi(m[2]), count[b]) << out;
      const double maj = std::stod(m[4]);
      EXPECT_NEAR(maj, std::max(count[a], count[b]) / double(count[a] + count[b]), 1e-3);
      for (int k : {3, 5, 6, 7}) {
        EXPECT_GE(std::stod(m[k]), maj - 1e-3) << out;  // purity is never below the majority share
        EXPECT_LE(std::stod(m[k]), 1.0) << out;
      }
    }
    EXPECT_NE(out.find("mean forward (inference-mode word means): purity"), std::string::npos) << out;
    EXPECT_NE(out.find("stored word mean lies"), std::string::npos) << out;
  }
}

}  // namespace
