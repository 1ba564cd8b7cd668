// P, R and F1 with the semantics of the framework's Scorer.java: system ids missing from the gold
// are ignored; an instance with k distinct answers scores (answers in the gold set) / k;
// P = ok / (ok + notok), R = ok / |gold|, F1 = 2PR / (P + R).
#pragma once
#include "data/wsd_corpus.h"

namespace sa {

struct WsdScore {
  double p = 0, r = 0, f1 = 0;
  double answered = 0;  // gold instances with at least one system answer
  size_t gold = 0;
};

WsdScore score_wsd(const WsdKeys& gold, const WsdKeys& system);

}  // namespace sa
