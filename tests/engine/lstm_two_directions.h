// Two LSTM directions of one shape with binding clips, run forward and backward through
// ops::lstm_sequences: what the stacking and graph tests compare across paths and settings.
#pragma once
#include <random>
#include <vector>

#include "engine/core/device_counters.h"
#include "engine/engine.h"

namespace sa::testing {

struct Bf16Scope {
  explicit Bf16Scope(bool on) { set_bf16_matmuls(on); }
  ~Bf16Scope() { set_bf16_matmuls(false); }
};

struct Outcome {
  std::vector<std::vector<double>> values;  // per direction: y, c, m, then the gradients of all inputs
  int64_t launches = 0, kernels = 0;
};

// Two directions of one shape with binding clips, through lstm_sequences on `path`.
inline Outcome two_directions(ops::LstmPath path, bool bf16, DType dt, Device dev = Device::cpu(),
                              uint64_t seed = 12, int64_t T = 7) {
  const int64_t B = 3, in = 5, D = 6, P = 4;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 0.6);
  auto random = [&](Shape s) {
    std::vector<double> v(static_cast<size_t>(numel(s)));
    for (double& e : v) e = g(rng);
    return Tensor::of(v, s, dt, dev).set_requires_grad();
  };
  Bf16Scope scope(bf16);
  std::vector<ops::LstmSequenceArgs> args;
  std::vector<Tensor> inputs, grads_out;
  for (int d = 0; d < 2; ++d) {
    ops::LstmSequenceArgs a{random({T, B, in}), random({in + P, 4 * D}), random({4 * D}), random({D, P}),
                            random({B, D}),     random({B, P}),          0.8,            0.7,  path};
    for (const Tensor& t : {a.x, a.W, a.bias, a.W_P, a.c0, a.m0}) inputs.push_back(t);
    args.push_back(a);
  }
  // Weights for a loss that reads every output.
  std::vector<Tensor> weights;
  for (Shape s : {Shape{T, B, P}, Shape{B, D}, Shape{B, P}})
    for (int d = 0; d < 2; ++d) weights.push_back(random(s).detach());
  const DeviceCounters before = device_counters();
  const auto out = ops::lstm_sequences(args);
  Tensor loss = Tensor::zeros({}, dt, dev);
  for (int d = 0; d < 2; ++d)
    for (int o = 0; o < 3; ++o) loss = ops::add(loss, ops::sum(ops::mul(out[d][o], weights[o * 2 + d])));
  backward(loss);
  Outcome r;
  r.launches = (device_counters() - before).launches;
  r.kernels = (device_counters() - before).kernels;
  for (int d = 0; d < 2; ++d)
    for (int o = 0; o < 3; ++o) r.values.push_back(out[d][o].values());
  for (const Tensor& t : inputs) r.values.push_back(t.grad().values());
  return r;
}

}  // namespace sa::testing
