// One sentence of a linear-chain CRF, shared by the CPU and CUDA backends so both compute the same
// numbers: the log-partition by the forward algorithm, the gold path's score, the gradients by
// forward-backward, and the Viterbi path. Scores: start[y_0] + sum_t em[t, y_t] + sum_t
// trans[y_{t-1}, y_t] + end[y_{L-1}]. Everything accumulates in double; em is [L, K] row-major.
#pragma once
#include <math.h>

#include <cmath>
#include <cstdint>

#include "engine/core/philox.h"  // SA_HD

namespace sa::math {

// log sum_i exp(f(i)) over i < n, by the max: one exp per term (log_add would take two calls).
template <typename F>
SA_HD double log_sum_exp(int n, F f) {
  double m = -INFINITY;
  for (int i = 0; i < n; ++i) {
    const double v = f(i);
    m = v > m ? v : m;
  }
  if (m == -INFINITY) return m;
  double s = 0;
  for (int i = 0; i < n; ++i) s += exp(f(i) - m);
  return m + log(s);
}

// log Z, leaving alpha[t*K + k] = log of the summed scores of paths ending in k at t.
template <typename T>
SA_HD double crf_log_partition(const T* em, int L, int K, const T* trans, const T* start, const T* end, double* alpha) {
  for (int k = 0; k < K; ++k) alpha[k] = double(start[k]) + double(em[k]);
  for (int t = 1; t < L; ++t)
    for (int j = 0; j < K; ++j)
      alpha[t * K + j] = log_sum_exp(K, [&](int i) { return alpha[(t - 1) * K + i] + double(trans[i * K + j]); }) +
                         double(em[t * K + j]);
  return log_sum_exp(K, [&](int k) { return alpha[(L - 1) * K + k] + double(end[k]); });
}

template <typename T>
SA_HD double crf_path_score(const T* em, const int32_t* tags, int L, int K, const T* trans, const T* start,
                            const T* end) {
  double s = double(start[tags[0]]) + double(end[tags[L - 1]]);
  for (int t = 0; t < L; ++t) s += double(em[t * K + tags[t]]);
  for (int t = 1; t < L; ++t) s += double(trans[tags[t - 1] * K + tags[t]]);
  return s;
}

// Gradients of g * (log Z - gold score): gem [L, K] is written; `add(pointer, value)` accumulates
// into the shared gtrans [K, K], gstart [K], gend [K] (atomically on CUDA). alpha from
// crf_log_partition; beta [L*K] is scratch.
template <typename T, typename Add>
SA_HD void crf_gradients(const T* em, const int32_t* tags, int L, int K, const T* trans, const T* end,
                         const double* alpha, double log_z, double g, double* beta, T* gem, T* gtrans, T* gstart,
                         T* gend, Add add) {
  for (int k = 0; k < K; ++k) beta[(L - 1) * K + k] = double(end[k]);
  for (int t = L - 2; t >= 0; --t)
    for (int i = 0; i < K; ++i)
      beta[t * K + i] = log_sum_exp(
          K, [&](int j) { return double(trans[i * K + j]) + double(em[(t + 1) * K + j]) + beta[(t + 1) * K + j]; });
  for (int t = 0; t < L; ++t)
    for (int k = 0; k < K; ++k) {
      const double p = exp(alpha[t * K + k] + beta[t * K + k] - log_z);  // P(y_t = k)
      gem[t * K + k] = T(g * (p - (tags[t] == k ? 1.0 : 0.0)));
      if (t == 0) add(&gstart[k], g * (p - (tags[0] == k ? 1.0 : 0.0)));
      if (t == L - 1) add(&gend[k], g * (p - (tags[L - 1] == k ? 1.0 : 0.0)));
    }
  for (int t = 1; t < L; ++t)
    for (int i = 0; i < K; ++i)
      for (int j = 0; j < K; ++j) {
        // P(y_{t-1} = i, y_t = j)
        const double p = exp(alpha[(t - 1) * K + i] + double(trans[i * K + j]) + double(em[t * K + j]) +
                             beta[t * K + j] - log_z);
        const double gold = tags[t - 1] == i && tags[t] == j ? 1.0 : 0.0;
        if (p != 0.0 || gold != 0.0) add(&gtrans[i * K + j], g * (p - gold));
      }
}

// The best path into path[0..L); delta [2*K] and back [L*K] are scratch. Ties go to the lower tag.
template <typename T>
SA_HD void crf_best_path(const T* em, int L, int K, const T* trans, const T* start, const T* end, double* delta,
                         int32_t* back, int32_t* path) {
  double* cur = delta;
  double* next = delta + K;
  for (int k = 0; k < K; ++k) cur[k] = double(start[k]) + double(em[k]);
  for (int t = 1; t < L; ++t) {
    for (int j = 0; j < K; ++j) {
      int best = 0;
      double b = cur[0] + double(trans[j]);
      for (int i = 1; i < K; ++i) {
        const double s = cur[i] + double(trans[i * K + j]);
        if (s > b) b = s, best = i;
      }
      next[j] = b + double(em[t * K + j]);
      back[t * K + j] = best;
    }
    double* swap = cur;
    cur = next;
    next = swap;
  }
  int best = 0;
  double b = cur[0] + double(end[0]);
  for (int k = 1; k < K; ++k)
    if (cur[k] + double(end[k]) > b) b = cur[k] + double(end[k]), best = k;
  path[L - 1] = best;
  for (int t = L - 1; t > 0; --t) path[t - 1] = back[t * K + path[t]];
}

}  // namespace sa::math
