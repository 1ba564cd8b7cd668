// Purity and V-measure of the pseudo-word evaluation.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "eval/clustering.h"

namespace sa {
namespace {

TEST(ClusterScores, PerfectSplitOneClusterAndMixed) {
  ClusterScores perfect = cluster_scores({{1, {30, 0}}, {4, {0, 10}}});
  EXPECT_DOUBLE_EQ(perfect.purity, 1.0);
  EXPECT_NEAR(perfect.v_measure, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(perfect.majority, 0.75);
  ClusterScores one = cluster_scores({{2, {30, 10}}});
  EXPECT_DOUBLE_EQ(one.purity, 0.75);  // one cluster: purity is the majority share
  EXPECT_NEAR(one.homogeneity, 0.0, 1e-12);
  EXPECT_NEAR(one.v_measure, 0.0, 1e-12);
  // Two clusters, mixed: h = 1 - H(C|K)/H(C), computed by hand.
  ClusterScores m = cluster_scores({{0, {8, 2}}, {1, {2, 8}}});
  double hc = std::log(2.0), hck = -(0.8 * std::log(0.8) + 0.2 * std::log(0.2));
  EXPECT_NEAR(m.homogeneity, 1 - hck / hc, 1e-12);
  EXPECT_NEAR(m.completeness, 1 - hck / hc, 1e-12);  // symmetric table
  EXPECT_DOUBLE_EQ(m.purity, 0.8);
}

// The separation ceiling: a shared offset (what every context of a word has in common) is removed,
// so two directions around it split perfectly; labels unrelated to the vectors stay near chance.
TEST(SeparationCeiling, SeparatedClustersAndRandomLabels) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0.0, 0.1);
  const int n = 200, dim = 8;
  std::vector<float> v;
  std::vector<int> labels, random_labels;
  for (int i = 0; i < n; ++i) {
    const int y = i % 3 == 0;  // unbalanced: 1/3 vs 2/3
    for (int k = 0; k < dim; ++k) v.push_back(static_cast<float>(10.0 + (k == 0 ? (y ? 1 : -1) : 0) + noise(rng)));
    labels.push_back(y);
    random_labels.push_back(static_cast<int>(rng() % 2));
  }
  SeparationCeiling good = separation_ceiling(v, dim, labels);
  EXPECT_GT(good.two_means_purity, 0.99);
  EXPECT_GT(good.probe_accuracy, 0.99);
  SeparationCeiling chance = separation_ceiling(v, dim, random_labels);
  EXPECT_LT(chance.probe_accuracy, 0.62);
  EXPECT_LT(chance.two_means_purity, 0.62);
}

}  // namespace
}  // namespace sa
