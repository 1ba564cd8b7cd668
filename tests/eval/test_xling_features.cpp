// The features the cross-lingual tasks read: the layer choice, the feature cache, and characters
// regrouped into words for encoders trained on segmented text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>

#include "eval/xling_features.h"
#include "layers/load_encoder.h"
#include "tests/test_util.h"

namespace sa {
namespace {

const std::string kFixture = "../shared/data/fixtures/bilm-tf";

TEST(XlingFeatures, LayerChoices) {
  // e [3 layers, 2 tokens, 2 dims], value = 100 * layer + 10 * token + dim
  std::vector<double> v;
  for (int l = 0; l < 3; ++l)
    for (int t = 0; t < 2; ++t)
      for (int d = 0; d < 2; ++d) v.push_back(100 * l + 10 * t + d);
  const Tensor e = Tensor::of(v, {3, 2, 2}, DType::F64);
  EXPECT_EQ(select_layers(e, parse_layer_spec("concat", 3)).values(),
            (std::vector<double>{0, 1, 100, 101, 200, 201, 10, 11, 110, 111, 210, 211}));
  EXPECT_EQ(select_layers(e, parse_layer_spec("average", 3)).values(), (std::vector<double>{100, 101, 110, 111}));
  EXPECT_EQ(select_layers(e, parse_layer_spec("top", 3)).values(), (std::vector<double>{200, 201, 210, 211}));
  EXPECT_EQ(select_layers(e, parse_layer_spec("1", 3)).values(), (std::vector<double>{100, 101, 110, 111}));
  EXPECT_EQ(feature_dim(parse_layer_spec("concat", 3), 3, 2), 6);
  for (const char* bad : {"3", "-1", "first", "", "1x"})
    EXPECT_THROW(parse_layer_spec(bad, 3), Error) << bad;
}

TEST(XlingFeatures, CacheComputesOnceThenReads) {
  const std::string dir = ::testing::TempDir() + "/xling_cache";
  std::filesystem::remove_all(dir);
  int computed = 0;
  auto compute = [&] {
    ++computed;
    return Tensor::of({1, 2, 3, 4, 5, 6}, {2, 3});
  };
  const Tensor a = cached_tensor(dir, 42, "test", Device::cpu(), compute);
  const Tensor b = cached_tensor(dir, 42, "test", Device::cpu(), compute);
  const Tensor c = cached_tensor(dir, 43, "test", Device::cpu(), compute);
  EXPECT_EQ(computed, 2);  // key 42 once, key 43 once
  EXPECT_EQ(a.values(), b.values());
  EXPECT_EQ(b.shape(), (Shape{2, 3}));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 2);
  cached_tensor("", 42, "test", Device::cpu(), compute);  // no directory: no cache
  EXPECT_EQ(computed, 3);
  cached_tensor(dir, 42, "test", Device::cpu(), compute, 2);  // the rows expected: read
  EXPECT_EQ(computed, 3);
  cached_tensor(dir, 42, "test", Device::cpu(), compute, 5);  // other rows than cached: computed again
  EXPECT_EQ(computed, 4);
}

// PAN-X zh/ja give one character a token; an encoder trained on segmented text reads them
// regrouped into words, and each character gets its word's vector.
TEST(XlingFeatures, RegroupedCharactersCarryTheirWordsVectors) {
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  std::unique_ptr<ContextualEncoder> enc =
      load_encoder({"", kFixture + "/options.json", kFixture + "/lm_weights.hdf5"}, Device::cpu());
  const std::string muse = testing::temp_file("regroup-x.muse", "tokyo 東京\nuniversity 大學\n");
  CjkLexicon lex;
  lex.add_muse_targets(muse, 0, 0);
  lex.finish(8);
  const LayerSpec spec = parse_layer_spec("concat", enc->n_layers());
  const Sentences chars = {{"東", "京", "的", "大", "學"}, {"Paris", "東", "京"}};
  EXPECT_TRUE(enc->reads_segmented_words());
  EXPECT_DOUBLE_EQ(cjk_character_share(chars), 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(cjk_character_share({{"Paris", "東京"}}), 0.0);
  const Tensor f = regrouped_token_features(*enc, chars, lex, spec, "test");
  const Tensor words = token_features(*enc, {{"東京", "的", "大學"}, {"Paris", "東京"}}, spec, "test");
  ASSERT_EQ(f.dim(0), 8);
  // token -> row of the word features
  const std::vector<int64_t> row = {0, 0, 1, 2, 2, 3, 4, 4};
  const int64_t D = f.dim(1);
  const std::vector<double> fv = f.values(), wv = words.values();
  for (int64_t t = 0; t < 8; ++t)
    for (int64_t d = 0; d < D; ++d) ASSERT_EQ(fv[t * D + d], wv[row[t] * D + d]) << "token " << t << " dim " << d;
  // Embedded one by one, a character's vector is not its word's.
  const std::vector<double> alone = token_features(*enc, chars, spec, "test").values();
  double diff = 0;
  for (int64_t d = 0; d < D; ++d) diff += std::abs(alone[d] - fv[d]);
  EXPECT_GT(diff, 1e-3);
}

}  // namespace
}  // namespace sa
