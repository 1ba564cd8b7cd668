// Finite-difference gradient checks in f64 on the CPU for every op, on random shapes.
#include <gtest/gtest.h>

#include <set>

#include "tests/op_runner.h"

namespace sa::testing {
namespace {

class GradCheck : public ::testing::TestWithParam<size_t> {};

TEST_P(GradCheck, MatchesCentralDifferences) {
  const OpCase& c = op_cases()[GetParam()];
  for (uint64_t seed : {1u, 2u, 3u}) {
    std::mt19937_64 rng(seed * 7919 + GetParam());
    std::vector<CaseInput> inputs = c.make(rng);
    std::vector<Tensor> ws = loss_weights(c, inputs, rng);
    CaseRun run = run_case(c, inputs, ws, DType::F64, Device::cpu());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].differentiable) continue;
      std::vector<double> analytic = run.grads[i].values();
      Tensor x = inputs[i].value.clone();
      double* p = x.data<double>();
      auto loss_at = [&]() {
        NoGrad ng;
        std::vector<CaseInput> perturbed = inputs;
        perturbed[i].value = x;
        return weighted_loss(c.run(place(perturbed, DType::F64, Device::cpu(), false)), ws).item();
      };
      // Every element of small inputs; an even sample of large ones.
      const int64_t n = x.numel(), step = std::max<int64_t>(1, n / 48);
      const double eps = 1e-6;
      for (int64_t e = 0; e < n; e += step) {
        double keep = p[e];
        p[e] = keep + eps;
        double up = loss_at();
        p[e] = keep - eps;
        double down = loss_at();
        p[e] = keep;
        double numeric = (up - down) / (2 * eps);
        EXPECT_NEAR(analytic[e], numeric, 1e-6 + 1e-5 * std::abs(numeric))
            << c.name << " seed " << seed << " input " << i << " " << describe(x) << " element " << e;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, GradCheck, ::testing::Range<size_t>(0, op_cases().size()),
                         [](const auto& info) { return op_cases()[info.param].name; });

// The op list is the engine's table (engine/ops/op_table.h), which the tape's names come from.
TEST(GradCheckCoverage, EveryOpHasACase) {
  std::set<ops::Op> covered;
  for (const OpCase& c : op_cases()) covered.insert(c.op);
  for (size_t i = 0; i < ops::kOpNames.size(); ++i)
    EXPECT_TRUE(covered.count(static_cast<ops::Op>(i))) << "no gradient check for op " << ops::kOpNames[i];
}

}  // namespace
}  // namespace sa::testing
