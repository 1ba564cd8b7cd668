#include "eval/sense_neighbours.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace sa {

std::vector<uint8_t> neighbour_candidates(const SenseHead& h, int min_selections, int min_count) {
  const SenseTable& t = h.table;
  std::vector<uint8_t> ok(static_cast<size_t>(t.rows()), 0);
  for (int w = 0; w < t.vocab(); ++w) {
    const std::vector<int> count = h.usage.sense_counts(w, t.n_context());
    const bool frequent = std::accumulate(count.begin(), count.end(), 0) >= min_count;
    for (int s = 0; s < t.n_context(); ++s) {
      const int32_t r = t.row(w, s);
      ok[static_cast<size_t>(r)] = frequent && t.is_enabled(r) && count[static_cast<size_t>(s)] >= min_selections;
    }
  }
  return ok;
}

std::vector<std::vector<int32_t>> collapse_identical(const std::vector<int32_t>& rows, const Tensor& unit, int C) {
  NoGrad ng;
  const int64_t P = unit.dim(1);
  std::vector<std::vector<int32_t>> groups;
  std::vector<std::vector<double>> heads;  // each group's first unit vector
  for (int32_t r : rows) {
    const std::vector<double> v = ops::slice(unit, 0, r, r + 1).values();
    bool joined = false;
    for (size_t g = 0; g < groups.size() && !joined; ++g) {
      if (groups[g][0] / C != r / C) continue;
      double dot = 0;
      for (int64_t k = 0; k < P; ++k) dot += v[k] * heads[g][k];
      if (dot > kSameRowCosine) groups[g].push_back(r), joined = true;
    }
    if (!joined) groups.push_back({r}), heads.push_back(v);
  }
  return groups;
}

std::vector<std::vector<int32_t>> nearest_sense_groups(const SenseTable& t, const Tensor& unit, int32_t row, int top,
                                                       const std::vector<uint8_t>& candidates,
                                                       const std::vector<uint8_t>* langs, int lang) {
  NoGrad ng;
  const int C = t.n_context();
  const std::vector<double> sims =
      ops::matmul(unit, ops::reshape(ops::slice(unit, 0, row, row + 1), {1, -1}), false, true).values();
  std::vector<std::pair<double, int32_t>> ranked;
  for (int32_t o = 0; o < t.rows(); ++o)
    if (candidates[static_cast<size_t>(o)] && o / C != row / C && (!langs || (*langs)[o / C] == lang))
      ranked.emplace_back(sims[static_cast<size_t>(o)], o);
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {  // ties: the lower row first
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  // Enough rows for `top` groups: a group holds at most C rows.
  std::vector<int32_t> rows;
  for (size_t i = 0; i < ranked.size() && rows.size() < static_cast<size_t>(top) * C; ++i) rows.push_back(ranked[i].second);
  std::vector<std::vector<int32_t>> groups = collapse_identical(rows, unit, C);
  if (groups.size() > static_cast<size_t>(top)) groups.resize(static_cast<size_t>(top));
  return groups;
}

std::string sense_group_name(const Vocab& vocab, const std::vector<int32_t>& group, int C) {
  std::string s = vocab.word(group[0] / C) + "#";
  for (size_t i = 0; i < group.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(group[i] % C);
  }
  return s;
}

}  // namespace sa
