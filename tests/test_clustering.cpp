// Purity and V-measure of the pseudo-word evaluation.
#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace sa
