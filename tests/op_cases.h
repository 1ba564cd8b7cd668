// The table of op cases shared by the gradient checks (f64, CPU) and the CUDA-vs-CPU tests:
// each case draws random inputs (odd sizes included) from a seed and applies one op.
#pragma once
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/ops/op_table.h"

namespace sa::testing {

struct CaseInput {
  Tensor value;       // f64 on the CPU as drawn; the runner converts dtype and device
  bool differentiable = true;
  bool sparse = false;  // a table whose gradient is row-sparse
};

struct OpCase {
  ops::Op op;  // the op exercised (every op of the table needs a case: test_gradcheck.cpp checks)
  std::string name;
  std::function<std::vector<CaseInput>(std::mt19937_64&)> make;
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> run;
};

const std::vector<OpCase>& op_cases();

}  // namespace sa::testing
