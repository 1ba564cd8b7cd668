// The table of op cases shared by the gradient checks (f64, CPU) and the CUDA-vs-CPU tests:
// each case draws random inputs (odd sizes included) from a seed and applies one op.
#pragma once
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace sa::testing {

struct CaseInput {
  Tensor value;       // f64 on the CPU as drawn; the runner converts dtype and device
  bool differentiable = true;
  bool sparse = false;  // a table whose gradient is row-sparse
};

struct OpCase {
  std::string op;  // the op exercised (coverage is checked against the op list)
  std::string name;
  std::function<std::vector<CaseInput>(std::mt19937_64&)> make;
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> run;
};

const std::vector<OpCase>& op_cases();
// Every differentiable op in engine/ops/ops.h; each must have at least one case.
const std::vector<std::string>& all_ops();

}  // namespace sa::testing
