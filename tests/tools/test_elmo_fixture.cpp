// Exactness against TensorFlow: bilm-tf's own test model and the embeddings TF computed for it.
// bin/embed --stateful --batch-size 3 gets batches of three sentences, row k from stream k of
// lm_embeddings_sentences.json (as bilm-tf's test_model.py feeds them); the top layer of every
// stream-0 sentence must equal lm_embeddings_0.hdf5 (forward and backward halves) within 1e-5.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/hdf5_file.h"
#include "eval/alignment.h"

namespace sa {
namespace {

const std::string kFixture = "../shared/data/fixtures/bilm-tf";

TEST(ElmoFixture, StatefulEmbedMatchesTensorFlow) {
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  std::ifstream jf(kFixture + "/lm_embeddings_sentences.json");
  nlohmann::json streams = nlohmann::json::parse(jf);
  ASSERT_EQ(streams.size(), 3u);
  std::string dir = ::testing::TempDir() + "/elmo_fixture";
  std::filesystem::create_directories(dir);
  {
    std::ofstream in(dir + "/input.txt");
    for (size_t i = 0; i < streams[0].size(); ++i)
      for (int k = 0; k < 3; ++k) in << streams[k][i].get<std::string>() << "\n";
  }
  std::string cmd = "./bin/embed --stateful --batch-size 3 --device cpu --options " + kFixture +
                    "/options.json --weights " + kFixture + "/lm_weights.hdf5 --vocab " + kFixture +
                    "/vocab_test.txt --input " + dir + "/input.txt --output " + dir + "/out.hdf5 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  H5File got = H5File::open(dir + "/out.hdf5"), want = H5File::open(kFixture + "/lm_embeddings_0.hdf5");
  for (size_t i = 0; i < streams[0].size(); ++i) {
    Tensor e = got.read(std::to_string(3 * i));     // [3, n, 32]
    Tensor w = want.read(std::to_string(i));        // [2, n, 16]: forward, backward
    const int64_t n = w.dim(1), P = w.dim(2);
    ASSERT_EQ(e.shape(), (Shape{3, n, 2 * P})) << "sentence " << i;
    std::vector<double> ev = e.values(), wv = w.values();
    double worst = 0;
    for (int64_t t = 0; t < n; ++t)
      for (int64_t c = 0; c < 2 * P; ++c) {
        double a = ev[(2 * n + t) * 2 * P + c];                       // layer 2 (top)
        double b = wv[((c < P ? 0 : 1) * n + t) * P + (c % P)];        // forward | backward
        worst = std::max(worst, std::abs(a - b));
      }
    EXPECT_LT(worst, 1e-5) << "stream 0 sentence " << i << " (input line " << 3 * i << ")";
  }
}

// --align applies a per-layer map: with W_l = (l + 1) * I, layer l comes out scaled by l + 1.
TEST(ElmoFixture, AlignAppliesOneMapPerLayer) {
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  std::string dir = ::testing::TempDir() + "/elmo_align";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/in.txt") << "The first sentence .\nAnother one\n";
  for (int l = 0; l < 3; ++l) {
    Matrix W(32, 32);
    for (int i = 0; i < 32; ++i) W(i, i) = l + 1;
    write_map(W, dir + "/W.layer" + std::to_string(l) + ".txt");
  }
  const std::string base = "./bin/embed --device cpu --options " + kFixture + "/options.json --weights " + kFixture +
                           "/lm_weights.hdf5 --input " + dir + "/in.txt --output " + dir;
  ASSERT_EQ(std::system((base + "/plain.hdf5 2>/dev/null").c_str()), 0);
  ASSERT_EQ(std::system((base + "/aligned.hdf5 --align " + dir + "/W.layer{layer}.txt 2>/dev/null").c_str()), 0);
  H5File plain = H5File::open(dir + "/plain.hdf5"), aligned = H5File::open(dir + "/aligned.hdf5");
  std::vector<double> p = plain.read("1").values(), a = aligned.read("1").values();
  ASSERT_EQ(p.size(), a.size());
  const size_t per_layer = p.size() / 3;
  for (size_t i = 0; i < p.size(); ++i) ASSERT_NEAR(a[i], (1 + i / per_layer) * p[i], 1e-5) << i;
  // A map of the wrong size is refused with its file named.
  write_map(Matrix(8, 8), dir + "/small.txt");
  EXPECT_NE(std::system((base + "/x.hdf5 --align " + dir + "/small.txt 2>/dev/null").c_str()), 0);
}

}  // namespace
}  // namespace sa
