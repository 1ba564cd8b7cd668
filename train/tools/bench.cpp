// bin/bench: performance. `bench ops` times GEMMs against the raw BLAS/cuBLAS call of the same
// shape (the engine's overhead), elementwise bandwidth, and fused cells against the chain of ops
// they replace, on the CPU and every visible GPU. `bench train` times ELMo training steps on a
// config and, when Debian's python3-torch is installed, the PyTorch peer in the same run.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <cstdio>
#include <functional>
#include <map>
#include <cmath>
#include <optional>
#include <set>
#include <thread>
#include <unistd.h>

#include "engine/bench_support.h"
#include "engine/replay_audit.h"
#include "engine/upload_paths.h"
#include "engine/core/philox.h"
#include "engine/cpu/blas_kernel.h"
#include "engine/core/scoped_env.h"
#include "engine/engine.h"
#include "layers/bilstm.h"
#include "layers/lstm.h"
#include "layers/ner_tagger.h"
#include "layers/softmax.h"
#include "train/cpu_profiler.h"
#include "train/families.h"
#include "train/memory_bench.h"
#include "train/periodic_work.h"
#include "train/step_flops.h"

using namespace sa;

namespace {

// Seconds per call of f, after one warm-up call; the device is synchronized around the timing.
double time_it(Device d, int iters, const std::function<void()>& f) {
  f();
  backend_uncounted(d).synchronize();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) f();
  backend_uncounted(d).synchronize();
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

// The sampled softmax at SaELMo sizes (tokens x candidates x projection): the fused candidate
// softmax against the unfused ops (a [N, S] logits matrix, mask, cross entropy), forward and
// backward; and its forward against the GEMM of the same logits shape alone.
void bench_candidate_softmax(Device d, bool quick, int iters, const std::string& dev) {
  const int64_t n = quick ? 640 : 5120, p = quick ? 128 : 512, sc = quick ? 1024 : 8192;
  Tensor x = randn({n, p}, d).set_requires_grad(), W = randn({sc + n, p}, d).set_requires_grad();
  Tensor b = randn({sc + n, 1}, d).set_requires_grad();
  std::vector<int32_t> cand(static_cast<size_t>(sc)), truth(static_cast<size_t>(n));
  for (int64_t i = 0; i < sc; ++i) cand[i] = static_cast<int32_t>(i);
  for (int64_t i = 0; i < n; ++i) truth[i] = static_cast<int32_t>(sc + i);
  auto step = [&](bool fused) {
    Tensor l = fused ? candidate_softmax_loss(x, W, b, truth, cand) : candidate_softmax_loss_unfused(x, W, b, truth, cand);
    backward(ops::sum(l));
  };
  double ff = time_it(d, iters, [&] { step(true); }), fu = time_it(d, iters, [&] { step(false); });
  const std::string shape = std::to_string(n) + "x" + std::to_string(sc) + "x" + std::to_string(p);
  std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "cand. softmax fused vs unfused f+b",
              shape.c_str(), ff * 1e3, fu * 1e3, fu / ff);
  NoGrad ng;
  Tensor Wc = randn({sc, p}, d), bc = randn({sc}, d), wt = randn({n, p}, d), bt = randn({n}, d);
  Tensor ci = Tensor::from(cand, {sc}, d), ti = Tensor::from(truth, {n}, d);
  double fwd = time_it(d, iters, [&] { Tensor l = ops::candidate_softmax(x, wt, bt, Wc, bc, ti, ci); });
  double gemm = time_it(d, iters, [&] { Tensor l = ops::matmul(x, Wc, false, true); });
  std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "cand. softmax fwd vs its GEMM alone",
              shape.c_str(), fwd * 1e3, gemm * 1e3, fwd / gemm);
  // SaELMo's step: each token chooses among K = 6 sense rows (16-dim selection space) inside the op.
  const int64_t K = 6, dim = 16;
  Tensor u = randn({n, dim}, d), v = randn({n * K, dim}, d);
  std::vector<int32_t> rows(static_cast<size_t>(n * K));
  for (int64_t i = 0; i < n * K; ++i) rows[i] = static_cast<int32_t>(sc + i % n);
  Tensor ri = Tensor::from(rows, {n * K}, d), en = Tensor::from(std::vector<uint8_t>(rows.size(), 1), {n * K}, d);
  double sfwd = time_it(d, iters, [&] { auto r = ops::select_candidate_softmax(x, W, b, u, v, ri, en, Wc, bc, ci); });
  std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "select+cand. softmax fwd vs GEMM",
              shape.c_str(), sfwd * 1e3, gemm * 1e3, sfwd / gemm);
}

// One LSTM layer over a batch (bench-small's sizes; the paper's with --quick off on a GPU):
// forward and backward of the sequence op against the same steps as separate ops.
void bench_lstm_sequence(Device d, bool quick, int iters, const std::string& dev) {
  const int64_t T = 20, B = 32, in = 128, D = quick ? 512 : 4096, P = quick ? 128 : 512;
  auto leaf = [&](const Shape& s, double scale) { return ops::scale(randn(s, d), scale).detach().set_requires_grad(); };
  Tensor x = leaf({B, T, in}, 1.0), W = leaf({in + P, 4 * D}, 0.05), b = leaf({4 * D}, 0.1), WP = leaf({D, P}, 0.05);
  auto run = [&](bool fused) {
    LstmState st{Tensor::zeros({B, D}, DType::F32, d), Tensor::zeros({B, P}, DType::F32, d)};
    Tensor y = fused ? ops::lstm_sequence(ops::permute(x, {1, 0, 2}), W, b, WP, st.c, st.m, 3.0, 3.0)[0]
                     : lstm_forward({W, b, WP}, x, st, 3.0, 3.0);  // the same steps as separate ops
    backward(ops::sum(y));
  };
  double tf = time_it(d, iters, [&] { run(true); });
  double tc = time_it(d, iters, [&] { run(false); });
  const std::string shape = std::to_string(T) + "x" + std::to_string(B) + "x" + std::to_string(D) + "/" + std::to_string(P);
  std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "lstm_sequence fwd+bwd vs steps",
              shape.c_str(), tf * 1e3, tc * 1e3, tc / tf);
  // A biLM layer's two directions stacked (one batched GEMM and one cell per step; lstm.cudnn =
  // "stacked") against each direction stepping on its own (side by side on the CPU).
  auto directions = [&](ops::LstmPath path) {
    std::vector<ops::LstmSequenceArgs> args;
    Tensor xt = ops::permute(x, {1, 0, 2});
    for (int dir = 0; dir < 2; ++dir)
      args.push_back({xt, W, b, WP, Tensor::zeros({B, D}, DType::F32, d), Tensor::zeros({B, P}, DType::F32, d), 3.0, 3.0,
                      path});
    const auto out = ops::lstm_sequences(args);
    backward(ops::add(ops::sum(out[0][0]), ops::sum(out[1][0])));
  };
  const double tk = time_it(d, iters, [&] { directions(ops::LstmPath::Stacked); });
  const double ts2 = time_it(d, iters, [&] { directions(d.is_cuda() ? ops::LstmPath::Steps : ops::LstmPath::Auto); });
  std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "2 directions stacked vs separate",
              shape.c_str(), tk * 1e3, ts2 * 1e3, ts2 / tk);
  if (d.is_cuda()) {  // each direction on a stream of its own (SA_LSTM_STREAMS=1) against one stream
    const double tl = [&] {
      ScopedEnv streams("SA_LSTM_STREAMS", "1");
      return time_it(d, iters, [&] { directions(ops::LstmPath::Steps); });
    }();
    std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "2 directions: 2 streams vs 1",
                shape.c_str(), tl * 1e3, ts2 * 1e3, ts2 / tl);
    // Each sequence's forward and backward recorded as one CUDA graph (SA_CUDA_GRAPHS=1), on one
    // stream and on two. A chain's first run is launched and its second makes the graph: both
    // before the timed runs, which update the graphs in place.
    auto recorded = [&](const char* lanes) {
      ScopedEnv graphs("SA_CUDA_GRAPHS", "1"), streams("SA_LSTM_STREAMS", lanes);
      directions(ops::LstmPath::Steps);
      return time_it(d, iters, [&] { directions(ops::LstmPath::Steps); });
    };
    const double tg = recorded(nullptr), tgl = recorded("1");
    std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "2 directions: graphs vs launched",
                shape.c_str(), tg * 1e3, ts2 * 1e3, ts2 / tg);
    std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "graphs, 2 streams vs launched, 1",
                shape.c_str(), tgl * 1e3, ts2 * 1e3, ts2 / tgl);
  }
  if (!ops::lstm_uses_cudnn(d, ops::LstmPath::Cudnn, 0.0, 0.0, D, P)) return;
  // cuDNN's RNN against our step kernels on the same layer (no clips, which cuDNN cannot run).
  Tensor xt = ops::permute(x, {1, 0, 2}).detach().set_requires_grad();
  auto layer = [&](ops::LstmPath path) {
    Tensor c0 = Tensor::zeros({B, D}, DType::F32, d), m0 = Tensor::zeros({B, P}, DType::F32, d);
    backward(ops::sum(ops::lstm_sequences({{xt, W, b, WP, c0, m0, 0.0, 0.0, path}})[0][0]));
  };
  double tn = time_it(d, iters, [&] { layer(ops::LstmPath::Cudnn); });
  double ts = time_it(d, iters, [&] { layer(ops::LstmPath::Steps); });
  std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "lstm cuDNN fwd+bwd vs step kernels",
              shape.c_str(), tn * 1e3, ts * 1e3, ts / tn);
}

// One LSTM layer at a training batch (elmo.cfg's 256 rows on a GPU, bench-small's 32 on the CPU):
// the sequence op's forward and backward against its matrix products alone, the same shapes run
// back to back, so the ratio is what the per-step kernels, launches and copies add.
void bench_lstm_products(Device d, bool quick, int iters, const std::string& dev) {
  const int64_t T = 20, B = d.is_cuda() && !quick ? 256 : 32, in = quick ? 128 : 512, D = quick ? 512 : 4096,
                P = quick ? 128 : 512;
  auto leaf = [&](const Shape& s, double scale) { return ops::scale(randn(s, d), scale).detach().set_requires_grad(); };
  Tensor x = leaf({T, B, in}, 1.0), W = leaf({in + P, 4 * D}, 0.05), b = leaf({4 * D}, 0.1), WP = leaf({D, P}, 0.05);
  const double op = time_it(d, iters, [&] {
    Tensor c0 = Tensor::zeros({B, D}, DType::F32, d), m0 = Tensor::zeros({B, P}, DType::F32, d);
    backward(ops::sum(ops::lstm_sequences({{x, W, b, WP, c0, m0, 3.0, 3.0, ops::LstmPath::Steps}})[0][0]));
  });
  NoGrad ng;
  // Operands of each product's shape (values do not matter); transposes made once, outside the timing.
  Tensor X = randn({T * B, in}, d), Wx = randn({in, 4 * D}, d), Wh = randn({P, 4 * D}, d), WhT = randn({4 * D, P}, d),
         WPT = randn({P, D}, d), m = randn({B, P}, d), h = randn({B, D}, d), g = randn({B, 4 * D}, d),
         XT = randn({in, T * B}, d), MT = randn({P, T * B}, d), HT = randn({D, T * B}, d), G = randn({T * B, 4 * D}, d),
         DM = randn({T * B, P}, d), WxT = randn({4 * D, in}, d);
  const double products = time_it(d, iters, [&] {
    ops::matmul(X, Wx);  // the input gates, hoisted over the steps
    for (int64_t t = 0; t < T; ++t) ops::matmul(m, Wh), ops::matmul(h, WP);   // recurrent gates, projection
    for (int64_t t = 0; t < T; ++t) ops::matmul(m, WPT), ops::matmul(g, WhT);  // their gradients, step by step
    ops::matmul(MT, G), ops::matmul(HT, DM), ops::matmul(XT, G), ops::matmul(G, WxT);  // weights' and input's
  });
  const std::string shape = std::to_string(T) + "x" + std::to_string(B) + "x" + std::to_string(D) + "/" + std::to_string(P);
  std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "lstm_sequence f+b vs its products", shape.c_str(),
              op * 1e3, products * 1e3, products / op);
}

// The NER tagger's BiLSTM (a CoNLL batch of 32 sentences of 1..40 tokens over 768-dim concat
// features, hidden 256): both directions packed as one node against the step-by-step composition
// (packed_lstm per direction, without the backward direction's two reversal gathers).
void bench_bilstm(Device d, bool quick, int iters, const std::string& dev) {
  const int64_t B = 32, T = 40, in = quick ? 256 : 768, H = 256;
  std::mt19937_64 rng(1);
  const BiLstm m = BiLstm::init(in, H, rng, d);
  std::vector<int> lengths;
  for (int64_t b = 0; b < B; ++b) lengths.push_back(static_cast<int>(1 + (b * 37) % T));
  Tensor x = ops::scale(randn({B, T, in}, d), 0.5).detach().set_requires_grad();
  auto run = [&](bool one_node) {
    const Tensor y = one_node ? m.forward(x, lengths) : ops::concat({packed_lstm(m.fwd, x, lengths), packed_lstm(m.bwd, x, lengths)}, 2);
    backward(ops::sum(y));
  };
  double tn = time_it(d, iters, [&] { run(true); });
  double ts = time_it(d, iters, [&] { run(false); });
  const std::string shape = std::to_string(B) + "x<=" + std::to_string(T) + "x" + std::to_string(in) + "/" + std::to_string(H);
  std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "bilstm packed node vs steps fwd+bwd",
              shape.c_str(), tn * 1e3, ts * 1e3, ts / tn);
}

// A training step (fwd+bwd) of the NER tagger on a CoNLL-like batch (32 sentences of 1..40 tokens,
// 768-dim features, hidden 256, 17 tags; no dropout): on packed sentences, as it runs, against the
// same layers over the padded batch (re-projection and output layer on every padded row), its
// layout before.
void bench_ner_step(Device d, bool quick, int iters, const std::string& dev) {
  const int64_t B = 32, T = 40, F = quick ? 256 : 768, K = 17;
  NerTaggerOptions o;
  o.word_dropout = 0, o.locked_dropout = 0;
  const NerTagger t = NerTagger::init(F, K, o, 1, d);
  std::vector<int> lengths;
  for (int64_t b = 0; b < B; ++b) lengths.push_back(static_cast<int>(1 + (b * 37) % T));
  const int64_t N = packed_offsets(lengths).back();
  std::vector<int32_t> tags(static_cast<size_t>(B * T)), real;
  for (size_t i = 0; i < tags.size(); ++i) tags[i] = static_cast<int32_t>(i % K);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < lengths[static_cast<size_t>(b)]; ++i) real.push_back(static_cast<int32_t>(b * T + i));
  const Tensor padded = ops::scale(randn({B, T, F}, d), 0.5).detach();
  const Tensor packed = ops::gather_rows(ops::reshape(padded, {B * T, F}), Tensor::from(real, {N}, d)).detach();
  const Tensor tag = Tensor::from(tags, {B, T}, d), len = lengths_tensor(lengths, d);
  Generator gen(1);
  auto zero = [&] {
    for (const Tensor& p : t.params()) p.zero_grad();
  };
  double tp = time_it(d, iters, [&] {
    backward(t.loss(packed, lengths, tag, gen));
    zero();
  });
  double tb = time_it(d, iters, [&] {
    const Tensor h = t.lstm.forward(ops::linear(padded, t.W_re, t.b_re), lengths);
    backward(ops::mean(ops::crf_nll(ops::linear(h, t.W_out, t.b_out), tag, len, t.trans, t.start, t.end)));
    zero();
  });
  const std::string shape = std::to_string(B) + "x<=" + std::to_string(T) + "x" + std::to_string(F);
  std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f   (%.0f vs %.0f tokens/s)\n", dev.c_str(),
              "ner tagger step packed vs padded", shape.c_str(), tp * 1e3, tb * 1e3, tb / tp,
              static_cast<double>(N) / tp, static_cast<double>(N) / tb);
}

// Sense selection for a batch of tokens (K = 6 senses in 16 dims): the kernel on the device
// against the host loop it replaced (projected vectors copied to the host, chosen there).
void bench_select_rows(Device d, bool quick, int iters, const std::string& dev) {
  const int64_t N = quick ? 640 : 5120, K = 6, dim = 16;
  Tensor u = randn({N, dim}, d), v = randn({N * K, dim}, d);
  std::vector<int32_t> rows(static_cast<size_t>(N * K));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int32_t>(i);
  Tensor r = Tensor::from(rows, {N * K}, d), en = Tensor::from(std::vector<uint8_t>(rows.size(), 1), {N * K}, d);
  double tk = time_it(d, iters, [&] { std::vector<double> sel = ops::select_rows(u, v, r, en).values(); });
  double th = time_it(d, iters, [&] {
    const std::vector<double> uu = u.values(), vv = v.values();
    std::vector<int32_t> sel(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) {
      double best = -2;
      for (int64_t j = 0; j < K; ++j) {
        double dot = 0, a = 0, b = 0;
        for (int64_t k = 0; k < dim; ++k)
          dot += uu[n * dim + k] * vv[(n * K + j) * dim + k], a += uu[n * dim + k] * uu[n * dim + k],
              b += vv[(n * K + j) * dim + k] * vv[(n * K + j) * dim + k];
        const double c = dot / (std::sqrt(a) + 1e-6) / (std::sqrt(b) + 1e-6);
        if (c > best) best = c, sel[n] = rows[n * K + j];
      }
    }
  });
  std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "sense selection kernel vs host loop",
              (std::to_string(N) + "x" + std::to_string(K) + "x" + std::to_string(dim)).c_str(), tk * 1e3, th * 1e3,
              th / tk);
}

// Uniform sense negatives: drawn on the device from the head's enabled list (one launch) against the
// host's draw (scan the enabled scores, draw, upload), at saelmo.cfg's table and budget.
void bench_negatives(Device d, bool quick, int iters, const std::string& dev) {
  const int64_t rows = quick ? 60000 : 600000, n = 8192;
  std::vector<float> enabled(static_cast<size_t>(rows));
  for (size_t i = 0; i < enabled.size(); ++i) enabled[i] = i % 6 == 0 ? 0.f : 1.f;
  std::vector<int32_t> ids;
  for (size_t i = 0; i < enabled.size(); ++i)
    if (enabled[i] > 1e-6f) ids.push_back(static_cast<int32_t>(i));
  const Tensor list = Tensor::from(ids, {static_cast<int64_t>(ids.size())}, d);
  uint64_t key = 1;
  const double td = time_it(d, iters, [&] { Tensor t = ops::draw_distinct(list, n, ++key); });
  const double th = time_it(d, iters, [&] {
    std::vector<int32_t> r;
    for (size_t i = 0; i < enabled.size(); ++i)
      if (enabled[i] > 1e-6f) r.push_back(static_cast<int32_t>(i));
    std::vector<int32_t> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      out[static_cast<size_t>(i)] = r[permuted_index(static_cast<uint32_t>(i), static_cast<uint32_t>(r.size()), ++key)];
    Tensor t = Tensor::from(out, {n}, d);
  });
  std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "negatives on device vs host draw",
              (std::to_string(n) + " of " + std::to_string(ids.size())).c_str(), td * 1e3, th * 1e3, th / td);
}

// ELMo's negatives, drawn on the host every step for each direction: 8,192 distinct log-uniform ids
// and the log expected counts of the drawn and the true ids (TF's subtract_log_q), at a Brown-sized
// and an lm1b-sized vocabulary. Host work a GPU step waits for: the line times it on any device.
void bench_log_uniform(bool quick, const std::string& dev) {
  const int n = 8192, labels = 5120;
  for (int64_t V : {int64_t{50000}, int64_t{800000}}) {
    LogUniformSampler s(V);
    s.tabulate();  // as a trainer does
    std::mt19937_64 rng(1);
    int64_t tries = 0;
    double sink = 0;
    const int reps = quick ? 3 : 20;
    std::vector<int32_t> ids(labels + n);
    for (int i = 0; i < labels + n; ++i) ids[i] = static_cast<int32_t>(i * 7 % V);
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) sink += s.sample_unique(n, rng, tries)[0];
    const auto t1 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) sink += s.log_q_shift(ids, n, tries)[0];
    const auto t2 = std::chrono::steady_clock::now();
    const double draw = std::chrono::duration<double>(t1 - t0).count() / reps,
                 logq = std::chrono::duration<double>(t2 - t1).count() / reps;
    volatile double keep = sink;  // the work is used: not optimized away
    (void)keep;
    std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f   (log q of %d ids; %ld draws)\n", dev.c_str(),
                "log-uniform draw vs its log q (host)", (std::to_string(n) + " of " + std::to_string(V)).c_str(),
                draw * 1e3, logq * 1e3, logq / draw, labels + n, static_cast<long>(tries));
  }
}

// The char CNN's backward at elmo.cfg's widest filters (width 7, 1024 filters over 50 characters of
// 16 dims): CUDA's weight gradient tiled in shared memory against a thread per output
// (SA_CONV_GW_UNTILED=1), and its forward under bf16 against tf32. The CPU has one form: its line
// times the backward against the forward.
void bench_char_cnn(Device d, bool quick, int iters, const std::string& dev) {
  const int64_t N = quick ? 640 : d.is_cuda() ? 5120 : 1280, L = 50, Cin = 16, W = 7, Cout = 1024;
  Tensor x = randn({N, L, Cin}, d).set_requires_grad(), w = randn({W, Cin, Cout}, d).set_requires_grad();
  Tensor b = randn({Cout}, d).set_requires_grad(), g = randn({N, Cout}, d);
  auto fwd_bwd = [&] {
    x.zero_grad(), w.zero_grad(), b.zero_grad();
    backward(ops::sum(ops::mul(ops::conv1d_max(x, w, b), g)));
  };
  const std::string shape = std::to_string(N) + "x" + std::to_string(L) + "x16 w7x1024";
  if (d.is_cuda()) {
    const double tiled = time_it(d, iters, fwd_bwd);
    const double untiled = [&] {
      ScopedEnv untiled_gw("SA_CONV_GW_UNTILED", "1");
      return time_it(d, iters, fwd_bwd);
    }();
    std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "conv1d_max f+b: tiled gw vs per-output",
                shape.c_str(), tiled * 1e3, untiled * 1e3, untiled / tiled);
    // The forward's product under precision = "bf16" (a bf16 GEMM) against tf32's (an f32 GEMM on
    // TF32 tensor cores); before the bf16 GEMM, bf16 ran it as a plain f32 GEMM.
    NoGrad ng;
    auto forward = [&] { Tensor y = ops::conv1d_max(x, w, b); };
    auto timed = [&](const char* precision) {
      PrecisionScope scope(d, precision, true);
      return time_it(d, iters, forward);
    };
    const double bf16 = timed("bf16"), tf32 = timed("tf32");
    std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "conv1d_max fwd: bf16 vs tf32",
                shape.c_str(), bf16 * 1e3, tf32 * 1e3, tf32 / bf16);
  } else {
    const double fb = time_it(d, iters, fwd_bwd);
    NoGrad ng;
    const double f = time_it(d, iters, [&] { Tensor y = ops::conv1d_max(x, w, b); });
    std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "conv1d_max f+b vs fwd", shape.c_str(),
                fb * 1e3, f * 1e3, f / fb);
  }
}

// The NER tagger's CRF (fwd+bwd: forward algorithm, forward-backward) against a per-token softmax
// over the same emissions, the cost it adds over a plain classifier. 17 tags: BIOES of 4 types + O.
void bench_crf(Device d, bool quick, int iters, const std::string& dev) {
  const int64_t B = 32, T = quick ? 30 : 60, K = 17;
  Tensor em = randn({B, T, K}, d).set_requires_grad(), tr = randn({K, K}, d).set_requires_grad();
  Tensor st = randn({K}, d).set_requires_grad(), en = randn({K}, d).set_requires_grad();
  std::vector<int32_t> tags(static_cast<size_t>(B * T)), len(static_cast<size_t>(B), static_cast<int32_t>(T));
  for (size_t i = 0; i < tags.size(); ++i) tags[i] = static_cast<int32_t>(i % K);
  Tensor y = Tensor::from(tags, {B, T}, d), l = Tensor::from(len, {B}, d), flat_y = Tensor::from(tags, {B * T}, d);
  double tc = time_it(d, iters, [&] { backward(ops::sum(ops::crf_nll(em, y, l, tr, st, en))); });
  double ts = time_it(d, iters, [&] { backward(ops::sum(ops::cross_entropy(ops::reshape(em, {B * T, K}), flat_y))); });
  std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "crf_nll fwd+bwd vs token softmax",
              (std::to_string(B) + "x" + std::to_string(T) + "x" + std::to_string(K)).c_str(), tc * 1e3, ts * 1e3,
              ts / tc);
}

// BERT-tiny's self-attention (8 heads of 64, sequences of 128) as one op against the unfused path it
// replaces (batched GEMMs, the masked softmax with its [T, T] probabilities in memory, a GEMM),
// forward and backward, with a quarter of the keys padded.
void bench_attention(Device d, bool quick, int iters, const std::string& dev) {
  const int64_t B = quick ? 4 : 32, H = 8, T = 128, dh = 64;
  Tensor q = randn({B, H, T, dh}, d).set_requires_grad(), k = randn({B, H, T, dh}, d).set_requires_grad(),
         v = randn({B, H, T, dh}, d).set_requires_grad();
  std::vector<uint8_t> keys(static_cast<size_t>(B * T), 1), pad(static_cast<size_t>(B * T), 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = T - T / 4; t < T; ++t) keys[b * T + t] = 0, pad[b * T + t] = 1;
  Tensor mask = Tensor::from(keys, {B, T}, d), padding = Tensor::from(pad, {B, 1, 1, T}, d);
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  double tf = time_it(d, iters, [&] { backward(ops::sum(ops::attention(q, k, v, mask, scale))); });
  double tu = time_it(d, iters, [&] {
    auto flat = [&](const Tensor& t) { return ops::reshape(t, {B * H, T, dh}); };
    Tensor s = ops::reshape(ops::scale(ops::bmm(flat(q), flat(k), false, true), scale), {B, H, T, T});
    Tensor p = ops::softmax(ops::masked_fill(s, padding, -1e30));
    backward(ops::sum(ops::bmm(ops::reshape(p, {B * H, T, T}), flat(v))));
  });
  const double tokens = static_cast<double>(B * T);
  std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f   (%.0f vs %.0f tokens/s)\n", dev.c_str(),
              "attention fwd+bwd fused vs unfused",
              (std::to_string(B) + "x" + std::to_string(H) + "x" + std::to_string(T) + "x" + std::to_string(dh)).c_str(),
              tf * 1e3, tu * 1e3, tu / tf, tokens / tf, tokens / tu);
}

// On CUDA under precision = "bf16" and "tf32": the fused attention on tensor cores against the
// batched-GEMM path, at BERT's head size over 512 positions (forward and backward, a quarter of
// the keys padded).
void bench_attention_tc(Device d, bool quick, int iters, const std::string& dev) {
  if (!d.is_cuda()) return;
  const int64_t B = quick ? 4 : 32, H = 8, T = 512, dh = 64;
  Tensor q = randn({B, H, T, dh}, d).set_requires_grad(), k = randn({B, H, T, dh}, d).set_requires_grad(),
         v = randn({B, H, T, dh}, d).set_requires_grad();
  std::vector<uint8_t> keys(static_cast<size_t>(B * T), 1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = T - T / 4; t < T; ++t) keys[b * T + t] = 0;
  Tensor mask = Tensor::from(keys, {B, T}, d);
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  ScopedEnv path_env("SA_ATTENTION", nullptr);
  auto timed = [&](const char* path) {
    path_env.set(path);
    return time_it(d, iters, [&] { backward(ops::sum(ops::attention(q, k, v, mask, scale))); });
  };
  const std::string shape = std::to_string(B) + "x" + std::to_string(H) + "x" + std::to_string(T) + "x" + std::to_string(dh);
  for (const std::string precision : {"bf16", "tf32"}) {
    PrecisionScope scope(d, precision, true);
    const double tc = timed("fused"), tg = timed("gemm");
    std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(),
                ("attention " + precision + " f+b: tc fused vs GEMMs").c_str(), shape.c_str(), tc * 1e3, tg * 1e3,
                tg / tc);
  }
}

// Memory-bound ops in GB/s (bytes each must move): same-shape and broadcast additions, pointwise
// ops, softmax rows, sums. On CUDA the common broadcasts (a bias row, a leading-axis broadcast)
// run as rows, one division per element, and strided copies with contiguous rows (BERT's head
// permutes) move 16 bytes a thread; SA_GENERAL_KERNELS=1 times both through their general kernels
// (divisions per dimension for every element: an H100 ran a bias add at 867 GB/s against 2,051
// for the same-shape add).
void bench_elementwise(Device d, bool quick, int iters, const std::string& dev) {
  NoGrad ng;
  const int64_t n = quick ? (1 << 20) : (1 << 24);
  Tensor x = randn({n / 1024, 1024}, d), y = randn({n / 1024, 1024}, d), row = randn({1024}, d);
  Tensor lead = randn({n / 1024 / 64, 1024}, d);  // [64, n/64/1024, 1024] + [n/64/1024, 1024]
  const Tensor x3 = x.view({64, n / 1024 / 64, 1024});
  const std::string shape = std::to_string(n >> 20) + "M f32";
  auto bw = [&](const char* name, double bytes, const std::function<void()>& f) {
    double t = time_it(d, iters, f);
    std::printf("%-7s %-34s %-18s %7.1f GB/s %12s %7s\n", dev.c_str(), name, shape.c_str(), bytes / t / 1e9, "", "");
  };
  bw("add", 12.0 * n, [&] { Tensor z = ops::add(x, y); });
  bw("add (broadcast row)", 8.0 * n, [&] { Tensor z = ops::add(x, row); });
  bw("add (leading-axis broadcast)", 8.0 * n, [&] { Tensor z = ops::add(x3, lead); });
  // BERT's head split: [B, T, heads, 64] -> [B, heads, T, 64]
  const Tensor heads = x.view({n / (128 * 8 * 64), 128, 8, 64});
  Tensor bias_grad = Tensor::empty({1024}, DType::F32, d);
  const BroadcastPlan rows_plan = make_broadcast_plan(x.shape(), x.shape(), {1024});
  bw("bias gradient (sum over rows)", 4.0 * n, [&] { backend(d).sum_to(x, bias_grad, rows_plan, false); });
  if (d.is_cuda()) {
    auto pair = [&](const char* name, const std::function<void()>& f) {
      const double rows = time_it(d, iters, f);
      ScopedEnv general("SA_GENERAL_KERNELS", "1");
      const double gen = time_it(d, iters, f);
      std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), name, shape.c_str(), rows * 1e3, gen * 1e3,
                  gen / rows);
    };
    pair("add row: as rows vs general kernel", [&] { Tensor z = ops::add(x, row); });
    pair("add lead: as rows vs general kernel", [&] { Tensor z = ops::add(x3, lead); });
    pair("permute heads: 16B rows vs general", [&] { Tensor z = ops::permute(heads, {0, 2, 1, 3}); });
  }
  bw("permute (BERT heads)", 8.0 * n, [&] { Tensor z = ops::permute(heads, {0, 2, 1, 3}); });
  bw("relu", 8.0 * n, [&] { Tensor z = ops::relu(x); });
  Generator gen(1);  // the mask (a Philox draw per four values) written, then the product
  bw("dropout (mask, product)", 16.0 * n, [&] { Tensor z = ops::dropout(x, 0.1, gen); });
  bw("gelu", 8.0 * n, [&] { Tensor z = ops::gelu(x); });
  bw("gelu (erf)", 8.0 * n, [&] { Tensor z = ops::gelu_erf(x); });
  bw("softmax (rows of 1024)", 8.0 * n, [&] { Tensor z = ops::softmax(x); });
  bw("sum (all)", 4.0 * n, [&] { Tensor z = ops::sum(x); });
}

// GEMMs against raw BLAS/cuBLAS and at bf16/tf32, the clip and optimizer primitives, the fused
// cells.
void bench_core(Device d, bool quick, int iters, const std::string& dev) {
  NoGrad ng;  // recording only where a benchmark needs gradients
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
  {  // precision = "bf16" (operands rounded each call, as training rounds them) and "tf32" against f32
    const int64_t m = d.is_cuda() ? 4096 : (quick ? 256 : 1024), nn = m, k = m;
    Tensor a = randn({m, k}, d), b = randn({k, nn}, d);
    const double flops = 2.0 * m * nn * k, tf = time_it(d, iters, [&] { Tensor c = ops::matmul(a, b); });
    set_bf16_matmuls(true);
    const double tb = time_it(d, iters, [&] { Tensor c = ops::matmul(a, b); });
    set_bf16_matmuls(false);
    char shape[64];
    std::snprintf(shape, sizeof shape, "%ldx%ldx%ld", (long)m, (long)nn, (long)k);
    std::printf("%-7s %-34s %-18s %7.1f GF/s %7.1f GF/s %7.3f\n", dev.c_str(), "matmul bf16 (with casts) vs f32", shape,
                flops / tb / 1e9, flops / tf / 1e9, tf / tb);
    if (d.is_cuda()) {
      backend_uncounted(d).set_tf32(true);
      const double tt = time_it(d, iters, [&] { Tensor c = ops::matmul(a, b); });
      backend_uncounted(d).set_tf32(false);
      std::printf("%-7s %-34s %-18s %7.1f GF/s %7.1f GF/s %7.3f\n", dev.c_str(), "matmul tf32 vs f32", shape,
                  flops / tt / 1e9, flops / tf / 1e9, tf / tt);
      // The LSTM's per-step products (gates, the gates' gradient through W_h, projection and its
      // gradient) in TF32: their rate, and cuBLAS's plain call against the strided-batched one the
      // engine takes for every product (an H200 timed them alike, so the engine keeps one call).
      struct LstmGemm {
        int64_t m, n, k;
        bool trans_b;
      };
      for (const LstmGemm& s : {LstmGemm{256, 16384, 512, false}, LstmGemm{256, 512, 16384, true},
                                LstmGemm{256, 512, 4096, false}, LstmGemm{256, 4096, 512, true}}) {
        const auto t = cuda::raw_tf32_gemm_plain_vs_batched(d.index, s.m, s.n, s.k, s.trans_b, 50);
        const double f = 2.0 * s.m * s.n * s.k;
        std::snprintf(shape, sizeof shape, "%ldx%ldx%ld%s", (long)s.m, (long)s.n, (long)s.k, s.trans_b ? " B^T" : "");
        std::printf("%-7s %-34s %-18s %7.1f GF/s %7.1f GF/s %7.3f\n", dev.c_str(), "tf32 GEMM plain vs batched(1)",
                    shape, f / t.plain / 1e9, f / t.batched / 1e9, t.batched / t.plain);
      }
    }
  }
  {  // the gradient norm's primitive against the square-then-sum it replaced (clip_global_norm)
    const int64_t n = quick ? (1 << 20) : (1 << 24);
    Tensor x = randn({n / 1024, 1024}, d);
    Tensor out = Tensor::empty({1}, DType::F64, d);
    const double tf = time_it(d, iters, [&] { backend(d).sum_squares(x, out); });
    const double tc = time_it(d, iters, [&] { Tensor z = ops::sum(ops::square(x)).to(DType::F64); });
    std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "sum_squares vs square+sum",
                (std::to_string(n >> 20) + "M f32").c_str(), tf * 1e3, tc * 1e3, tc / tf);
  }

  {  // clip + Adagrad over elmo.cfg's dense parameter list: the multi-tensor primitives (a few
     // launches) against the per-tensor primitives they replaced (several launches per tensor)
    std::vector<Shape> shapes;
    const int64_t s = quick ? 8 : 1;  // quick: every tensor 8x smaller per dimension where it can be
    for (int dir = 0; dir < 2; ++dir)
      for (int l = 0; l < 2; ++l)
        shapes.insert(shapes.end(), {{1024 / s, 16384 / s}, {16384 / s}, {4096 / s, 512 / s}});
    for (int64_t w : {32, 32, 64, 128, 256, 512, 1024}) shapes.push_back({w / std::min<int64_t>(s, 8), 16, 7});
    for (int h = 0; h < 2; ++h) shapes.insert(shapes.end(), {{2048 / s, 4096 / s}, {4096 / s}});
    shapes.push_back({2048 / s, 512 / s});
    std::vector<Tensor> w, acc, g;
    int64_t elems = 0;
    for (const Shape& sh : shapes) {
      w.push_back(randn(sh, d)), g.push_back(randn(sh, d)), acc.push_back(Tensor::full(sh, 1.0, DType::F32, d));
      elems += numel(sh);
    }
    Tensor norm = Tensor::empty({1}, DType::F64, d), factor = Tensor::full({1}, 0.999, DType::F64, d);
    Backend& be = backend_uncounted(d);
    const double tm = time_it(d, iters, [&] {
      be.multi_sum_squares(g, norm);
      be.multi_scale(g, factor);
      be.multi_adagrad(w, acc, g, 1e-9);
    });
    const double tp = time_it(d, iters, [&] {
      Tensor total = Tensor::zeros({1}, DType::F64, d);
      for (size_t i = 0; i < w.size(); ++i) {
        be.sum_squares(g[i], norm);
        total = ops::add(total, norm);
        Tensor f = factor.to(DType::F32);
        be.binary(BinaryOp::Mul, g[i], f, g[i], make_broadcast_plan(g[i].shape(), g[i].shape(), {1}));
        be.adagrad(w[i], acc[i], g[i], 1e-9);
      }
    });
    std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "clip+adagrad multi vs per tensor",
                (std::to_string(shapes.size()) + " tensors, " + std::to_string(elems >> 20) + "M").c_str(), tm * 1e3,
                tp * 1e3, tp / tm);
  }

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
}

// `only` names the groups to run (empty: all): core, elementwise, lstm, bilstm, ner, candidate_softmax,
// select_rows, negatives, char_cnn, crf, attention.
void bench_ops(Device d, bool quick, const std::set<std::string>& only) {
  const int iters = quick ? 3 : 10;
  std::string dev = d.str();
  std::printf("\n== %s%s\n", dev.c_str(),
              (" (" + (d.is_cuda() ? cuda::describe_device(d.index) : "BLAS: " + blas_kernel_line()) + ")").c_str());
  std::printf("%-7s %-34s %-18s %12s %12s %7s\n", "device", "op", "shape", "engine", "baseline", "ratio");
  auto want = [&](const char* group) { return only.empty() || only.count(group) > 0; };
  if (want("core")) bench_core(d, quick, iters, dev);
  if (want("elementwise")) bench_elementwise(d, quick, iters, dev);
  if (want("lstm")) {
    bench_lstm_sequence(d, quick, iters, dev);
    bench_lstm_products(d, quick, iters, dev);
  }
  if (want("bilstm")) bench_bilstm(d, quick, iters, dev);
  if (want("ner")) bench_ner_step(d, quick, iters, dev);
  if (want("candidate_softmax")) bench_candidate_softmax(d, quick, iters, dev);
  if (want("select_rows")) bench_select_rows(d, quick, iters, dev);
  if (want("negatives")) bench_negatives(d, quick, iters, dev), bench_log_uniform(quick, dev);
  if (want("char_cnn")) bench_char_cnn(d, quick, iters, dev);
  if (want("crf")) bench_crf(d, quick, iters, dev);
  if (want("attention")) {
    bench_attention(d, quick, iters, dev);
    bench_attention_tc(d, quick, iters, dev);
  }
  AllocatorStats s = backend_uncounted(d).allocator().stats();
  std::printf("%-7s peak memory in use %.1f MiB, reserved %.1f MiB, %zu system allocations\n", dev.c_str(),
              s.peak_in_use / 1048576.0, s.reserved / 1048576.0, s.raw_allocs);
}

double peak_rss_mib(int who) {
  rusage u{};
  getrusage(who, &u);
  return u.ru_maxrss / 1024.0;
}

// The model's FLOPs per token and the fraction of this machine's GEMM throughput that training
// reaches: each product of a step (train/step_flops.h) timed through the raw BLAS at its shape,
// its backward as StepGemm::backward times its forward, against the step's measured time.
void report_gemm_fraction(const TrainConfig& c, const TrainResult& r, int steps, Device d) {
  const std::vector<StepGemm> gemms =
      elmo_step_gemms(c, static_cast<double>(r.encoded_tokens) / steps, r.softmax_rows / steps);
  const double tokens = static_cast<double>(c.batch_size) * c.unroll_steps;
  double flops = 0, ideal = 0;
  std::map<std::array<int64_t, 3>, double> seconds;  // per shape, timed once over about 0.3 s of calls
  // On a GPU, the math the run's products get: TF32 tensor cores under tf32 and bf16 (their f32
  // products; bf16's own are faster still), plain f32 otherwise.
  const bool tf32 = d.is_cuda() && (c.precision == "tf32" || c.precision == "bf16");
  auto raw = [&](int64_t m, int64_t n, int64_t k) {
    auto [it, fresh] = seconds.try_emplace({m, n, k}, 0.0);
    if (fresh) {
      const double once = raw_gemm_seconds(d, m, n, k, 1, tf32);
      it->second =
          raw_gemm_seconds(d, m, n, k, static_cast<int>(std::clamp(0.3 / std::max(once, 1e-9), 3.0, 2000.0)), tf32);
    }
    return it->second;
  };
  std::printf("model products per step (forward; the backward twice each, the char CNN's only its winning windows), at the raw %s's speed:\n",
              d.is_cuda() ? (tf32 ? "cuBLAS (TF32 math)" : "cuBLAS (f32 math)")
                          : ("BLAS (core " + blas_kernel().core + ")").c_str());
  for (const StepGemm& g : gemms) {
    const double t = raw(g.m, g.n, g.k);
    flops += g.flops();
    ideal += (1 + g.backward) * t * g.calls;  // the backward timed as products of the forward's shape
    char shape[64];
    std::snprintf(shape, sizeof shape, "%ldx%ldx%ld", (long)g.m, (long)g.n, (long)g.k);
    std::printf("  %-22s %-18s x%-5g %8.1f GF/s\n", g.what.c_str(), shape, g.calls, 2.0 * g.m * g.n * g.k / t / 1e9);
  }
  const double step_s = tokens / r.steady_tokens_per_s;
  std::printf("model: %.2f MFLOP per token in products (forward + backward), %.1f GFLOP/s achieved | a step at the "
              "raw BLAS's speed for these shapes: %.1f ms, measured: %.1f ms | %.0f%% of GEMM throughput\n",
              flops / tokens / 1e6, flops / step_s / 1e9, ideal * 1e3, step_s * 1e3, 100 * ideal / step_s);
}

// Whether a GPU step waits for the host or the host for the GPU: the host's own work per step is
// the wall time less the time it sat blocked on the device. CUDA graphs and fewer launches save
// host work; they speed up only a step the host bounds. A launch blocks inside the driver once the
// GPU's queue is full, and that time counts as the host's own: a GPU-bound step of many launches
// looks host-bound. Under SA_CUDA_GRAPHS=1 few launches queue, so the waits show where they are.
std::string host_time_line(double step_s, double wait_s, bool time_phases) {
  const double work = step_s - wait_s;
  std::string line = fmt::format("  host per step: {:.1f} ms of its own work, {:.1f} ms waiting for the GPU, of a {:.1f} ms step",
                                 work * 1e3, wait_s * 1e3, step_s * 1e3);
  if (time_phases) return line + " (--phases makes it wait at every phase: no verdict)";
  if (work < 0.7 * step_s) return line + ": the GPU bounds the step";
  return line + ": the host bounds the step, or its launches wait for a full GPU queue (the same step time under "
                "SA_CUDA_GRAPHS=1, with the waits shown, means the GPU bounds it)";
}

struct TrainBenchArgs {
  std::string config = "configs/bench-small.cfg", corpus, peer = "../shared/bench/elmo_torch.py", device = "auto";
  int steps = 40;
  std::vector<std::string> overrides;
  bool time_phases = false;
  std::string profile;
  bool no_arithmetic = false;  // the CPU's host path alone (set_cpu_arithmetic)
  bool replay_audit = false;   // what replaying a captured step would have to change (engine/replay_audit.h)
};

int bench_train(const TrainBenchArgs& args) {
  std::string dir = (std::filesystem::temp_directory_path() / ("sensealign-bench-" + std::to_string(::getpid()))).string();
  // Every word in the vocabulary, as the PyTorch peer builds it: the same V on both sides.
  std::vector<std::string> sets = {"run_dir=" + dir, "n_steps=" + std::to_string(args.steps + 5), "heldout_prefix=",
                                   "checkpoint_every=1000000", "device=" + args.device, "vocab_min_count=1"};
  if (!args.corpus.empty()) sets.push_back("train_prefix=" + args.corpus);
  sets.insert(sets.end(), args.overrides.begin(), args.overrides.end());
  TrainConfig c = TrainConfig::load(TrainConfig::find(args.config), sets);
  const ModelFamilyInfo& family = model_family(c.model_type);
  std::printf("bench train: %s on %s, %d timed steps after 5 warm-up steps of %s\n", args.config.c_str(), c.train_prefix.c_str(),
              args.steps, family.batch_shape(c).c_str());
  SA_CHECK(!(args.no_arithmetic || args.replay_audit) || !resolve_device(c.device).is_cuda(),
           "{} measures the CPU backend's host path: run it with --device cpu",
           args.no_arithmetic ? "--no-arithmetic" : "--replay-audit");
  if (args.no_arithmetic)
    std::printf("no arithmetic: every backend primitive returns at once (the rate is the host path's alone)\n");
  else if (!resolve_device(c.device).is_cuda())
    std::printf("BLAS: %s\n", blas_kernel_line().c_str());
  if (args.replay_audit) replay_audit::start();
  TrainOptions to;
  to.quiet = true;
  to.time_phases = args.time_phases;
  // --profile: samples the timed steps after the 5 warm-up steps, as the rate, but the last: the
  // run's final checkpoint is written inside it, and would fill half the profile.
  // --no-arithmetic: from the second warm-up step on, after a first step has set everything up.
  CpuProfiler profiler;
  int64_t seen = 0;
  to.after_step = [&](int64_t) {
    ++seen;
    if (seen == 1 && args.no_arithmetic) set_cpu_arithmetic(false);
    if (args.profile.empty()) return;
    if (seen == 5) profiler.start(args.profile);
    if (seen == 4 + args.steps) profiler.stop();
  };
  TrainResult r = train_model(c, to);
  set_cpu_arithmetic(true);
  const ReplayAudit audit = replay_audit::totals();
  replay_audit::stop();
  profiler.stop();
  if (!args.profile.empty())
    std::printf("CPU profile of the timed steps but the last: %s (google-pprof --text bin/bench %s)\n", args.profile.c_str(), args.profile.c_str());
  std::filesystem::remove_all(dir);
  AllocatorStats hs = host_allocator().stats();
  std::printf("sensealign: %.0f tokens/s | peak RSS %.0f MiB | peak tensor memory %.0f MiB (host)",
              r.steady_tokens_per_s, peak_rss_mib(RUSAGE_SELF), hs.peak_in_use / 1048576.0);
  const Device d = resolve_device(c.device);
  if (d.is_cuda()) {
    AllocatorStats ds = backend_uncounted(d).allocator().stats();
    std::printf(" | peak device memory %.0f MiB in use, %.0f MiB reserved at the end (%s)",
                ds.peak_in_use / 1048576.0, ds.reserved / 1048576.0, d.str().c_str());
  }
  std::printf("\n");
  if (r.steady_steps > 0) {
    const DeviceCounters& k = r.steady_counters;
    const double n = static_cast<double>(r.steady_steps);
    std::printf("per step (%ld steps): %.1f host reads, %.1f uploads, %.1f backend launches%s%s\n", (long)r.steady_steps,
                k.host_reads / n, k.uploads / n, k.launches / n,
                d.is_cuda() ? fmt::format(", {:.1f} CUDA kernels of ours", k.kernels / n).c_str() : "",
                k.lanes > 0 ? fmt::format(", {:.1f} side streams forked", k.lanes / n).c_str() : "");
    if (k.graphs > 0)  // on the CPU: what a GPU would record with the same setting (SA_CUDA_GRAPHS)
      std::printf("  %.1f of those launches in %.1f CUDA graphs%s: %.1f launches a step %s\n", k.in_graphs / n,
                  k.graphs / n, k.graph_breaks > 0 ? fmt::format(" ({:.1f} read or upload)", k.graph_breaks / n).c_str() : "",
                  k.gpu_launches() / n, d.is_cuda() ? "started on the GPU" : "a GPU would start");
    if (!r.host_reads_why.empty()) std::printf("  host reads left per step: %s\n", r.host_reads_why.c_str());
    if (!r.replay.empty()) std::printf("  step replay (SA_STEP_REPLAY): %s\n", r.replay.c_str());
    if (d.is_cuda()) std::printf("%s\n", host_time_line(r.steady_seconds / n, k.wait_ns * 1e-9 / n, args.time_phases).c_str());
    if (args.no_arithmetic)
      std::printf("  host per step without arithmetic: %.2f ms, %.1f us a backend launch\n", r.steady_seconds / n * 1e3,
                  k.launches > 0 ? r.steady_seconds / static_cast<double>(k.launches) * 1e6 : 0.0);
    if (const std::string p = periodic_work_line(c, 6, 5 + args.steps); !p.empty()) std::printf("%s\n", p.c_str());
    if (args.replay_audit) std::printf("  %s\n", replay_audit::summary(audit).c_str());
  }
  if (d.is_cuda()) {  // whether the switches of the upload path took effect (SA_SYNC_UPLOADS, SA_COPY_STREAM)
    const cuda::UploadPaths u = cuda::upload_paths(d.index);
    std::printf("  uploads over the run: %ld through pinned slots, %ld of them on the copy stream\n", (long)u.staged,
                (long)u.on_copy_stream);
  }
  if (family.gemm_report && r.steady_tokens_per_s > 0 && !args.no_arithmetic) report_gemm_fraction(c, r, args.steps, d);
  if (args.time_phases) {
    double all = 0;
    for (const auto& [name, sec] : r.phase_seconds) all += sec;
    std::printf("step phases over %d steps (each waits for the device; %.1f ms per step in all):\n", args.steps,
                all / args.steps * 1e3);
    for (const auto& [name, sec] : r.phase_seconds)
      std::printf("  %-28s %9.3f ms  %5.1f%%\n", name.c_str(), sec / args.steps * 1e3, 100 * sec / all);
    auto by_op = [&](OpSeconds ops, const char* title) {
      std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
      std::printf("%s\n", title);
      for (size_t i = 0; i < ops.size() && i < 15; ++i)
        std::printf("  %-28s %9.3f ms\n", ops[i].first.c_str(), ops[i].second / args.steps * 1e3);
    };
    by_op(r.forward_op_seconds,
          "forward and loss by op (each op waits for the device; host work between ops counts to the op after it):");
    by_op(r.backward_op_seconds, "backward by op (each node waits for the device):");
  }
  if (args.peer.empty() || !family.pytorch_peer || args.no_arithmetic) return 0;
  // The PyTorch peer, same corpus, same machine, same run.
  std::string probe = "/usr/bin/python3 -c 'import torch' >/dev/null 2>&1";
  if (!std::filesystem::exists(args.peer) || std::system(probe.c_str()) != 0) {
    std::printf("peer: skipped (needs %s and Debian's python3-torch)\n", args.peer.c_str());
    return 0;
  }
  std::string cmd = "/usr/bin/python3 " + args.peer + " " + c.train_prefix + " --steps " + std::to_string(args.steps) +
                    " --threads " + std::to_string(std::thread::hardware_concurrency()) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  SA_CHECK(p, "cannot run the args.peer: {}", cmd);
  char line[512];
  double peer_tps = 0;
  while (fgets(line, sizeof line, p))
    if (std::sscanf(line, "tokens_per_s %lf", &peer_tps) == 1) break;
  while (fgets(line, sizeof line, p)) {
  }
  int rc = pclose(p);
  SA_CHECK(rc == 0 && peer_tps > 0, "the args.peer failed ({}): {}", rc, cmd);
  std::printf("pytorch args.peer: %.0f tokens/s | peak RSS %.0f MiB\n", peer_tps, peak_rss_mib(RUSAGE_CHILDREN));
  std::printf("ratio sensealign / pytorch: %.2fx\n", r.steady_tokens_per_s / peer_tps);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Line by line even into a file: the GPU jobs run each bench under `timeout`, whose kill
  // otherwise drops every buffered line ("printed nothing" could not tell a slow run from a hang).
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  CLI::App app{"SenseAlign benchmarks"};
  app.require_subcommand(1);
  CLI::App* ops_cmd = app.add_subcommand("ops", "GEMM GFLOP/s vs raw BLAS/cuBLAS, elementwise GB/s, fused cells");
  std::string device = "all";
  bool quick = false;
  ops_cmd->add_option("--device", device, "cpu, cuda, cuda:N or all (cpu and every visible GPU)");
  ops_cmd->add_flag("--quick", quick, "small sizes and few iterations (a smoke run)");
  std::vector<std::string> only_groups;
  ops_cmd->add_option("--only", only_groups, "run only these groups: core, elementwise, lstm, bilstm, ner, candidate_softmax, "
                                             "select_rows, negatives, char_cnn, crf, attention")
      ->delimiter(',')
      ->check(CLI::IsMember({"core", "elementwise", "lstm", "bilstm", "ner", "candidate_softmax", "select_rows", "negatives",
                             "char_cnn", "crf", "attention"}));
  CLI::App* train_cmd = app.add_subcommand("train", "training tokens/s and peak memory (ELMo: and the PyTorch peer; BERT configs too)");
  TrainBenchArgs tb;
  train_cmd->add_option("--config", tb.config, "training config");
  train_cmd->add_option("--corpus", tb.corpus, "training corpus (default: the config's train_prefix)");
  train_cmd->add_option("--steps", tb.steps, "timed steps (after 5 warm-up steps)")
      ->check(CLI::Validator(positive_integer, "POSITIVE"));
  train_cmd->add_option("--device", tb.device, "auto, cpu, cuda or cuda:N");
  train_cmd->add_option("--peer", tb.peer, "the PyTorch peer script; empty to skip");
  train_cmd->add_flag("--phases", tb.time_phases, "also time each phase of a step (waits for the device between them)");
  train_cmd->add_option("--profile", tb.profile,
                        "write gperftools' CPU profile of the timed steps to FILE (needs libprofiler.so.0)");
  train_cmd->add_flag("--no-arithmetic", tb.no_arithmetic,
                      "on the CPU, skip every primitive's arithmetic: the step's host path alone, per step and "
                      "(with --phases) per op");
  train_cmd->add_flag("--replay-audit", tb.replay_audit,
                      "on the CPU, compare each timed step's primitives with the step before's: what replaying a "
                      "captured step would have to change (shapes, scalar arguments, buffers)");
  train_cmd->add_option("--set", tb.overrides, "key=value config overrides, as bin/train (e.g. lstm.cudnn=on)");
  CLI::App* memory_cmd = app.add_subcommand("memory", "resident memory over a long training run and a long embedding run");
  MemoryBenchOptions mem;
  memory_cmd->add_option("--config", mem.config, "training config");
  memory_cmd->add_option("--corpus", mem.corpus, "training corpus, also embedded (default: the config's train_prefix)");
  memory_cmd->add_option("--steps", mem.steps, "training steps")->check(CLI::Validator(positive_integer, "POSITIVE"));
  memory_cmd->add_option("--embed-tokens", mem.embed_tokens, "tokens to embed with the trained model")
      ->check(CLI::Validator(positive_integer, "POSITIVE"));
  memory_cmd->add_option("--sample-every", mem.sample_every, "training steps between samples")
      ->check(CLI::Validator(positive_integer, "POSITIVE"));
  memory_cmd->add_option("--set", mem.overrides, "key=value config overrides, as bin/train");
  CLI11_PARSE(app, argc, argv);
  try {
    if (train_cmd->parsed()) return bench_train(tb);
    if (memory_cmd->parsed()) return bench_memory(mem);
    std::vector<Device> devs;
    if (device == "all") {
      devs.push_back(Device::cpu());
      for (int i = 0; i < cuda_device_count(); ++i) devs.push_back(Device::cuda(i));
      if (cuda_device_count() == 0)
        std::printf("no GPU visible (%s): CPU only\n", cuda_built() ? "built with CUDA" : "built with CUDA=0");
    } else {
      devs.push_back(resolve_device(device));
    }
    const std::set<std::string> only(only_groups.begin(), only_groups.end());
    for (Device d : devs) bench_ops(d, quick, only);
  } catch (const std::exception& e) {
    return tool_failure("bench", e);
  }
  return 0;
}
