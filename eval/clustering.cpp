#include "eval/clustering.h"

#include <algorithm>
#include <cmath>
#include <random>

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

namespace {

// Mean-centred, unit-length rows.
std::vector<double> centred_unit_rows(const std::vector<float>& v, int64_t dim) {
  const int64_t n = static_cast<int64_t>(v.size()) / dim;
  std::vector<double> mean(static_cast<size_t>(dim), 0.0), out(v.begin(), v.end());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < dim; ++k) mean[k] += v[i * dim + k] / static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) {
    double norm = 0;
    for (int64_t k = 0; k < dim; ++k) out[i * dim + k] -= mean[k], norm += out[i * dim + k] * out[i * dim + k];
    norm = std::sqrt(norm) + 1e-12;
    for (int64_t k = 0; k < dim; ++k) out[i * dim + k] /= norm;
  }
  return out;
}

double dot(const double* a, const double* b, int64_t dim) {
  double s = 0;
  for (int64_t k = 0; k < dim; ++k) s += a[k] * b[k];
  return s;
}

}  // namespace

SeparationCeiling separation_ceiling(const std::vector<float>& vectors, int64_t dim, const std::vector<int>& labels,
                                     uint64_t seed) {
  const int64_t n = static_cast<int64_t>(labels.size());
  SeparationCeiling out;
  if (n < 4 || static_cast<int64_t>(vectors.size()) != n * dim) return out;
  const std::vector<double> x = centred_unit_rows(vectors, dim);
  // Spherical 2-means: restarts from pairs of data points; the best objective wins.
  std::mt19937_64 rng(seed);
  double best_obj = -INFINITY;
  std::vector<int> best_assign;
  for (int restart = 0; restart < 10; ++restart) {
    std::vector<double> c[2];
    for (auto& ci : c) {
      const int64_t i = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
      ci.assign(x.begin() + i * dim, x.begin() + (i + 1) * dim);
    }
    std::vector<int> assign(static_cast<size_t>(n), 0);
    double obj = 0;
    for (int it = 0; it < 30; ++it) {
      obj = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double s0 = dot(&x[i * dim], c[0].data(), dim), s1 = dot(&x[i * dim], c[1].data(), dim);
        assign[i] = s1 > s0 ? 1 : 0;
        obj += std::max(s0, s1);
      }
      for (int k = 0; k < 2; ++k) {
        std::vector<double> sum(static_cast<size_t>(dim), 0.0);
        for (int64_t i = 0; i < n; ++i)
          if (assign[i] == k)
            for (int64_t j = 0; j < dim; ++j) sum[j] += x[i * dim + j];
        const double norm = std::sqrt(dot(sum.data(), sum.data(), dim));
        if (norm > 0)
          for (int64_t j = 0; j < dim; ++j) c[k][j] = sum[j] / norm;
      }
    }
    if (obj > best_obj) best_obj = obj, best_assign = assign;
  }
  std::map<int, std::vector<int>> table;
  for (int64_t i = 0; i < n; ++i) {
    auto& cell = table[best_assign[i]];
    cell.resize(2);
    cell[labels[i]]++;
  }
  out.two_means_purity = cluster_scores(table).purity;
  // Nearest class mean (cosine), fitted on even rows, tested on odd rows.
  std::vector<double> mean[2] = {std::vector<double>(static_cast<size_t>(dim), 0.0),
                                 std::vector<double>(static_cast<size_t>(dim), 0.0)};
  for (int64_t i = 0; i < n; i += 2)
    for (int64_t j = 0; j < dim; ++j) mean[labels[i]][j] += x[i * dim + j];
  int right = 0, tested = 0;
  for (int64_t i = 1; i < n; i += 2, ++tested) {
    const double s0 = dot(&x[i * dim], mean[0].data(), dim) / (std::sqrt(dot(mean[0].data(), mean[0].data(), dim)) + 1e-12);
    const double s1 = dot(&x[i * dim], mean[1].data(), dim) / (std::sqrt(dot(mean[1].data(), mean[1].data(), dim)) + 1e-12);
    right += (s1 > s0 ? 1 : 0) == labels[i];
  }
  out.probe_accuracy = tested ? static_cast<double>(right) / tested : 0;
  return out;
}

}  // namespace sa
