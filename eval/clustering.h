// Scores of a clustering against gold classes, from a contingency table (cluster -> counts per
// class): purity, V-measure (Rosenberg and Hirschberg 2007), and the one-cluster baseline purity.
#pragma once
#include <map>
#include <vector>

namespace sa {

struct ClusterScores {
  double purity = 0, homogeneity = 0, completeness = 0, v_measure = 0, majority = 0;
};

ClusterScores cluster_scores(const std::map<int, std::vector<int>>& table);

}  // namespace sa
