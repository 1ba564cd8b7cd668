#include "eval/wsd_scorer.h"

#include <algorithm>
#include <set>

namespace sa {

WsdScore score_wsd(const WsdKeys& gold, const WsdKeys& system) {
  double ok = 0, notok = 0;
  WsdScore s;
  for (const auto& [id, answers] : system) {
    auto g = gold.find(id);
    if (g == gold.end()) continue;
    const std::set<std::string> distinct(answers.begin(), answers.end());
    if (distinct.empty()) continue;
    double good = 0;
    for (const std::string& a : distinct) good += std::find(g->second.begin(), g->second.end(), a) != g->second.end();
    ok += good / static_cast<double>(distinct.size());
    notok += (static_cast<double>(distinct.size()) - good) / static_cast<double>(distinct.size());
    s.answered += 1;
  }
  s.gold = gold.size();
  s.p = ok + notok > 0 ? ok / (ok + notok) : 0.0;
  s.r = gold.empty() ? 0.0 : ok / static_cast<double>(gold.size());
  s.f1 = s.p + s.r > 0 ? 2 * s.p * s.r / (s.p + s.r) : 0.0;
  return s;
}

}  // namespace sa
