// bin/bench: performance of the engine. `bench ops` times GEMMs against the raw BLAS/cuBLAS call
// of the same shape (the engine's overhead), elementwise bandwidth, and fused cells against the
// chain of ops they replace, on the CPU and, when present, every GPU kind asked for.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <functional>

#include "engine/bench_support.h"
#include "engine/engine.h"

using namespace sa;

namespace {

// Seconds per call of f, after one warm-up call; the device is synchronized around the timing.
double time_it(Device d, int iters, const std::function<void()>& f) {
  f();
  backend(d).synchronize();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) f();
  backend(d).synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
}

Tensor randn(Shape s, Device d) {
  std::vector<float> v(static_cast<size_t>(numel(s)));
  uint64_t x = 88172645463325252ull;
  for (float& f : v) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    f = static_cast<float>((x >> 11) * (1.0 / 9007199254740992.0)) - 0.5f;
  }
  return Tensor::from(v, s, d);
}

void bench_ops(Device d, bool quick) {
  NoGrad ng;
  const int iters = quick ? 3 : 10;
  std::string dev = d.str();
  std::printf("\n== %s%s\n", dev.c_str(), d.is_cuda() ? (" (" + cuda::describe_device(d.index) + ")").c_str() : "");
  std::printf("%-7s %-34s %-18s %12s %12s %7s\n", "device", "op", "shape", "engine", "baseline", "ratio");
  // GEMM shapes from the models: char-CNN/highway (tokens x 2048 x 2048), LSTM gates
  // (batch x 1024 x 16384), projection (batch x 4096 x 512), sampled softmax (tokens x 512 x 8192).
  std::vector<std::array<int64_t, 3>> shapes = {{512, 512, 512}, {1024, 1024, 1024}, {640, 2048, 2048},
                                                 {256, 16384, 1024}, {256, 512, 4096}, {1024, 8192, 512}};
  if (d.is_cuda()) shapes.push_back({4096, 4096, 4096});
  if (quick) shapes.resize(2);
  for (auto [m, n, k] : shapes) {
    Tensor a = randn({m, k}, d), b = randn({k, n}, d);
    double flops = 2.0 * m * n * k;
    double te = time_it(d, iters, [&] { Tensor c = ops::matmul(a, b); });
    double tr = raw_gemm_seconds(d, m, n, k, iters);
    char shape[64];
    std::snprintf(shape, sizeof shape, "%ldx%ldx%ld", (long)m, (long)n, (long)k);
    std::printf("%-7s %-34s %-18s %7.1f GF/s %7.1f GF/s %7.3f\n", dev.c_str(), "matmul f32 vs raw BLAS", shape,
                flops / te / 1e9, flops / tr / 1e9, tr / te);
  }
  const int64_t n = quick ? (1 << 20) : (1 << 24);
  Tensor x = randn({n / 1024, 1024}, d), y = randn({n / 1024, 1024}, d), row = randn({1024}, d);
  auto bw = [&](const char* name, double bytes, const std::function<void()>& f) {
    double t = time_it(d, iters, f);
    std::printf("%-7s %-34s %-18s %7.1f GB/s %12s %7s\n", dev.c_str(), name, (std::to_string(n >> 20) + "M f32").c_str(),
                bytes / t / 1e9, "", "");
  };
  bw("add", 12.0 * n, [&] { Tensor z = ops::add(x, y); });
  bw("add (broadcast row)", 8.0 * n, [&] { Tensor z = ops::add(x, row); });
  bw("relu", 8.0 * n, [&] { Tensor z = ops::relu(x); });
  bw("gelu", 8.0 * n, [&] { Tensor z = ops::gelu(x); });
  bw("softmax (rows of 1024)", 8.0 * n, [&] { Tensor z = ops::softmax(x); });
  bw("sum (all)", 4.0 * n, [&] { Tensor z = ops::sum(x); });

  // Fused cells against the chains of ops they replace (same math).
  const int64_t batch = quick ? 64 : 256, hid = quick ? 512 : 4096;
  Tensor gates = randn({batch, 4 * hid}, d), cprev = randn({batch, hid}, d);
  auto chain_lstm = [&] {
    std::vector<Tensor> g = ops::split(gates, {hid, hid, hid, hid}, 1);
    Tensor c = ops::add(ops::mul(ops::sigmoid(ops::add_scalar(g[2], 1.0)), cprev),
                        ops::mul(ops::sigmoid(g[0]), ops::tanh(g[1])));
    c = ops::clip(c, -3, 3);
    Tensor h = ops::mul(ops::sigmoid(g[3]), ops::tanh(c));
  };
  double tf = time_it(d, iters, [&] { auto ch = ops::lstm_cell(gates, cprev, 1.0, 3.0); });
  double tc = time_it(d, iters, chain_lstm);
  std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "lstm_cell fused vs op chain",
              (std::to_string(batch) + "x" + std::to_string(hid)).c_str(), tf * 1e3, tc * 1e3, tc / tf);
  Tensor ca = randn({batch * 4, hid}, d), tr = randn({batch * 4, hid}, d), hx = randn({batch * 4, hid}, d);
  double hf = time_it(d, iters, [&] { Tensor z = ops::highway(ca, tr, hx); });
  double hc = time_it(d, iters, [&] {
    Tensor g = ops::sigmoid(ca);
    Tensor z = ops::add(ops::mul(g, ops::relu(tr)), ops::mul(ops::add_scalar(ops::neg(g), 1.0), hx));
  });
  std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "highway fused vs op chain",
              (std::to_string(batch * 4) + "x" + std::to_string(hid)).c_str(), hf * 1e3, hc * 1e3, hc / hf);
  AllocatorStats s = backend(d).allocator().stats();
  std::printf("%-7s peak memory in use %.1f MiB, reserved %.1f MiB, %zu system allocations\n", dev.c_str(),
              s.peak_in_use / 1048576.0, s.reserved / 1048576.0, s.raw_allocs);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"SenseAlign benchmarks"};
  app.require_subcommand(1);
  CLI::App* ops_cmd = app.add_subcommand("ops", "GEMM GFLOP/s vs raw BLAS/cuBLAS, elementwise GB/s, fused cells");
  std::string device = "all";
  bool quick = false;
  ops_cmd->add_option("--device", device, "cpu, cuda, cuda:N or all (cpu and every visible GPU)");
  ops_cmd->add_flag("--quick", quick, "small sizes and few iterations (a smoke run)");
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<Device> devs;
    if (device == "all") {
      devs.push_back(Device::cpu());
      for (int i = 0; i < cuda_device_count(); ++i) devs.push_back(Device::cuda(i));
      if (cuda_device_count() == 0)
        std::printf("no GPU visible (%s): CPU only\n", cuda_built() ? "built with CUDA" : "built with CUDA=0");
    } else {
      devs.push_back(resolve_device(device));
    }
    for (Device d : devs) bench_ops(d, quick);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
