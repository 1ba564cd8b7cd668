// Helpers shared by the test suites.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/scoped_env.h"
#include "engine/engine.h"
#include "layers/elmo_options.h"
#include "tests/tiny_elmo.h"

namespace sa::testing {

// Writes `text` (bytes as given) to `name` under the test temp dir; returns the path.
inline std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A command's exit status and its stdout and stderr together.
struct ToolRun {
  std::string out;
  int rc = -1;
};
inline ToolRun run_tool(const std::string& cmd) {
  ToolRun r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) r.out += buf;
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

using sa::ScopedEnv;  // engine/core/scoped_env.h

// The CPU, and the first GPU when there is one (a skip line names `what` otherwise).
inline std::vector<Device> cpu_and_gpu(const char* what) {
  if (cuda_device_count() > 0) return {Device::cpu(), Device::cuda(0)};
  std::printf("[ SKIP     ] %s on CUDA: no GPU\n", what);
  return {Device::cpu()};
}

// Every output (a loss, then gradients) of two paths agrees element by element within tol.
inline void expect_outputs_near(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b,
                                double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].size(), b[k].size()) << "output " << k;
    for (size_t i = 0; i < a[k].size(); ++i) ASSERT_NEAR(a[k][i], b[k][i], tol) << "output " << k << " element " << i;
  }
}

// Scaled dot-product attention through the unfused ops (bmm, masked softmax, dropout, bmm), the
// reference ops::attention is checked against: q, k, v [B, H, T, d], keys u8 [B, T] (1 = a real
// key), the same Philox elements of `gen` for the dropout.
inline Tensor unfused_attention(const Tensor& q, const Tensor& k, const Tensor& v, const std::vector<uint8_t>& keys,
                                double scale, double p, Generator& gen) {
  const int64_t B = q.dim(0), H = q.dim(1), T = q.dim(2), d = q.dim(3);
  std::vector<uint8_t> pad;
  for (uint8_t x : keys) pad.push_back(1 - x);
  auto flat = [&](const Tensor& t) { return ops::reshape(t, {B * H, T, d}); };
  const Tensor s = ops::reshape(ops::scale(ops::bmm(flat(q), flat(k), false, true), scale), {B, H, T, T});
  const Tensor probs = ops::softmax(
      ops::masked_fill(s, Tensor::from(pad, {B, 1, 1, T}, q.device()), -std::numeric_limits<double>::infinity()));
  const Tensor dropped = ops::reshape(ops::dropout(probs, p, gen), {B * H, T, T});
  return ops::reshape(ops::bmm(dropped, flat(v)), {B, H, T, d});
}

// The message of the sa::Error that f throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace sa::testing
