// The kinds of elementwise and reduction kernels: named by the backend interface and evaluated
// by the per-element math, so they live below both.
#pragma once

namespace sa {

enum class UnaryOp { Relu, Sigmoid, Tanh, Gelu, GeluErf, Exp, Log, Neg, Sqrt, Square, Clip, Scale, AddScalar,
                     RoundBf16 /* to the nearest bf16, kept in the input dtype */ };
enum class BinaryOp { Add, Sub, Mul, Div };
enum class ReduceOp { Sum, Max };

}  // namespace sa
