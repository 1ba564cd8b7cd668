#include "eval/clustering.h"

#include <algorithm>
#include <cmath>

namespace sa {

ClusterScores cluster_scores(const std::map<int, std::vector<int>>& table) {
  size_t n_classes = 0;
  for (auto& [k, c] : table) n_classes = std::max(n_classes, c.size());
  std::vector<double> cls(n_classes, 0.0), ks;
  double n = 0, pur = 0;
  for (auto& [k, c] : table) {
    double nk = 0;
    for (size_t j = 0; j < c.size(); ++j) cls[j] += c[j], nk += c[j];
    ks.push_back(nk);
    n += nk;
    pur += c.empty() ? 0 : *std::max_element(c.begin(), c.end());
  }
  ClusterScores s;
  if (n == 0) return s;
  auto entropy = [&](const std::vector<double>& counts) {
    double h = 0;
    for (double x : counts)
      if (x > 0) h -= x / n * std::log(x / n);
    return h;
  };
  double h_class_given_k = 0, h_k_given_class = 0;
  for (auto& [k, c] : table) {
    double nk = 0;
    for (int x : c) nk += x;
    for (size_t j = 0; j < c.size(); ++j)
      if (c[j] > 0) {
        h_class_given_k -= c[j] / n * std::log(c[j] / nk);
        h_k_given_class -= c[j] / n * std::log(c[j] / cls[j]);
      }
  }
  const double hc = entropy(cls), hk = entropy(ks);
  s.purity = pur / n;
  s.homogeneity = hc > 0 ? 1 - h_class_given_k / hc : 1;
  s.completeness = hk > 0 ? 1 - h_k_given_class / hk : 1;
  s.v_measure = s.homogeneity + s.completeness > 0 ? 2 * s.homogeneity * s.completeness / (s.homogeneity + s.completeness) : 0;
  s.majority = *std::max_element(cls.begin(), cls.end()) / n;
  return s;
}

}  // namespace sa
