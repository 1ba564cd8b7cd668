// Every op on CUDA, forward and backward, against the CPU reference in f32. Skipped without a GPU.
// Tolerance: |cuda - cpu| <= 1e-5 + 1e-4 * |cpu| (f32; sums may be ordered differently).
#include <gtest/gtest.h>

#include "tests/op_runner.h"

namespace sa::testing {
namespace {

void expect_close(const Tensor& cpu, const Tensor& gpu, const std::string& what) {
  ASSERT_EQ(cpu.shape(), gpu.shape()) << what;
  std::vector<double> a = cpu.values(), b = gpu.values();
  int shown = 0;
  for (size_t i = 0; i < a.size() && shown < 5; ++i)
    if (!(std::abs(a[i] - b[i]) <= 1e-5 + 1e-4 * std::abs(a[i]))) {
      ADD_FAILURE() << what << " element " << i << ": cpu " << a[i] << " cuda " << b[i];
      ++shown;
    }
}

class CudaVsCpu : public ::testing::TestWithParam<size_t> {};

TEST_P(CudaVsCpu, ForwardAndBackwardMatch) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA-vs-CPU comparison skipped";
  const OpCase& c = op_cases()[GetParam()];
  for (uint64_t seed : {11u, 12u}) {
    std::mt19937_64 rng(seed * 104729 + GetParam());
    std::vector<CaseInput> inputs = c.make(rng);
    std::vector<Tensor> ws = loss_weights(c, inputs, rng);
    CaseRun cpu = run_case(c, inputs, ws, DType::F32, Device::cpu());
    CaseRun gpu = run_case(c, inputs, ws, DType::F32, Device::cuda(0));
    for (size_t k = 0; k < cpu.outputs.size(); ++k) expect_close(cpu.outputs[k], gpu.outputs[k], c.name + " output");
    for (size_t i = 0; i < cpu.grads.size(); ++i)
      if (cpu.grads[i].defined()) expect_close(cpu.grads[i], gpu.grads[i], c.name + " gradient " + std::to_string(i));
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, CudaVsCpu, ::testing::Range<size_t>(0, op_cases().size()),
                         [](const auto& info) { return op_cases()[info.param].name; });

}  // namespace
}  // namespace sa::testing
