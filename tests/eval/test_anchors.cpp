// Anchors (mean contextual vector per word and layer) and the bin/align tool end to end on
// synthetic spaces.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "eval/anchors.h"
#include "layers/elmo_encoder.h"
#include "tests/test_util.h"

namespace sa {
namespace {

std::string tmp(const std::string& n) { return ::testing::TempDir() + "/" + n; }

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p)) out += buf;
  if (p) pclose(p);
  return out;
}

TEST(Anchors, MeanOfEachWordsContextualVectors) {
  ElmoEncoder m(ElmoModel::init(testing::tiny_elmo_options(), 4));
  std::ofstream(tmp("anch.txt")) << "the bank\nbank of the river bank\n";
  auto layers = average_anchors(m, tmp("anch.txt"), {1, 1, 0, false});
  ASSERT_EQ(layers.size(), 3u);
  const WordVectors& top = layers[2];
  EXPECT_EQ(top.words, (std::vector<std::string>{"bank", "the", "of", "river"}));  // by count, then spelling
  const ElmoEncoder& e = m;
  std::vector<double> a = e.embed({{"the", "bank"}})[0].values(), b = e.embed({{"bank", "of", "the", "river", "bank"}})[0].values();
  const int64_t D = 8;  // 2 x projection
  for (int l = 0; l < 3; ++l)
    for (int64_t k = 0; k < D; ++k) {
      // bank: position 1 of sentence a (2 tokens), positions 0 and 4 of sentence b (5 tokens)
      const double want = (a[(l * 2 + 1) * D + k] + b[(l * 5 + 0) * D + k] + b[(l * 5 + 4) * D + k]) / 3;
      EXPECT_NEAR(layers[l].vectors(0, k), want, 1e-5) << "layer " << l;
      EXPECT_NEAR(layers[l].vectors(3, k), b[(l * 5 + 3) * D + k], 1e-5);  // river, once
    }
  write_word_vectors(top, tmp("top.vec"));
  WordVectors back = read_word_vectors(tmp("top.vec"));
  EXPECT_EQ(back.words, top.words);
  EXPECT_EQ(back.find("river"), 3);
  EXPECT_NEAR(back.vectors(2, 5), top.vectors(2, 5), 1e-6);
  std::ofstream(tmp("bad.vec")) << "2 3\nw 1 2 3\nv 1 x 3\n";
  EXPECT_NE(testing::error_of([] { read_word_vectors(tmp("bad.vec")); }).find("bad.vec:3"), std::string::npos);
}

// bin/align on a target space that is a rotation of the source: fitting on ranks outside 40:50
// retrieves every held-out word, with least squares and with Procrustes.
TEST(Anchors, AlignToolFitsAndEvaluatesOnADevSplit) {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> n(0, 1);
  const int words = 60, d = 6;
  std::ofstream s(tmp("src.vec")), t(tmp("tgt.vec")), dict(tmp("pairs.txt"));
  s << words << " " << d << "\n", t << words << " " << d << "\n";
  const double c = std::cos(0.7), si = std::sin(0.7);
  for (int w = 0; w < words; ++w) {
    std::vector<double> v(d);
    for (double& e : v) e = n(rng);
    s << "w" << w, t << "z" << w;
    for (int k = 0; k < d; ++k) s << " " << v[k];
    // rotate the first two coordinates, swap the last two
    std::vector<double> r = {c * v[0] - si * v[1], si * v[0] + c * v[1], v[2], v[3], v[5], v[4]};
    for (int k = 0; k < d; ++k) t << " " << r[k];
    s << "\n", t << "\n", dict << "w" << w << " z" << w << "\n";
  }
  s.close(), t.close(), dict.close();
  const std::string common = " --src " + tmp("src.vec") + " --tgt " + tmp("tgt.vec") + " --dict " + tmp("pairs.txt") +
                             " --dev-ranks 40:50";
  for (const char* method : {"lsq", "procrustes"}) {
    std::string fit = run("./bin/align fit" + common + " --method " + method + " -o " + tmp("W.txt"));
    EXPECT_NE(fit.find("50 dictionary pairs in both anchor files (10 held out as dev)"), std::string::npos) << fit;
    std::string ev = run("./bin/align eval" + common + " --map " + tmp("W.txt"));
    EXPECT_NE(ev.find("BLI NN   P@1 100.0%"), std::string::npos) << ev;
    EXPECT_NE(ev.find("BLI CSLS P@1 100.0%"), std::string::npos) << ev;
    EXPECT_NE(ev.find("(10 queries, dev ranks 40:50)"), std::string::npos) << ev;
  }
  // Without the map the spaces disagree: retrieval is not perfect.
  std::string raw = run("./bin/align eval" + common);
  EXPECT_EQ(raw.find("BLI NN   P@1 100.0%"), std::string::npos) << raw;
}

}  // namespace
}  // namespace sa
