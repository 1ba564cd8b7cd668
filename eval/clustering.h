// Scores of a clustering against gold classes, from a contingency table (cluster -> counts per
// class): purity, V-measure (Rosenberg and Hirschberg 2007), and the one-cluster baseline purity.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

namespace sa {

struct ClusterScores {
  double purity = 0, homogeneity = 0, completeness = 0, v_measure = 0, majority = 0;
};

ClusterScores cluster_scores(const std::map<int, std::vector<int>>& table);

// Diagnostics of how much of a hidden two-way distinction a set of vectors [n, dim] (row-major)
// carries, after subtracting their mean and normalizing each row (what sense selection could
// separate at best). `labels` are 0/1.
struct SeparationCeiling {
  double two_means_purity = 0;  // spherical 2-means, best of several seeded restarts (no labels)
  double probe_accuracy = 0;    // nearest class mean, fitted on even rows, tested on odd rows
};
SeparationCeiling separation_ceiling(const std::vector<float>& vectors, int64_t dim, const std::vector<int>& labels,
                                     uint64_t seed = 1);

}  // namespace sa
