// bench ops: each op against what it replaces (GEMMs against the raw BLAS/cuBLAS call of the same
// shape, fused cells against the op chains), elementwise bandwidth; on the CPU and each GPU.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <cmath>
#include <set>

#include "engine/bench_support.h"
#include "engine/core/philox.h"
#include "engine/core/scoped_env.h"
#include "engine/cpu/blas_kernel.h"
#include "engine/engine.h"
#include "layers/bilstm.h"
#include "layers/lstm.h"
#include "layers/ner_tagger.h"
#include "layers/softmax.h"
#include "data/char_ids.h"
#include "train/bench.h"
#include "train/train_loop.h"

namespace sa {
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
    auto no_grad_time = [&](const Tensor& in) {
      NoGrad ng;
      return time_it(d, iters, [&] { Tensor y = ops::conv1d_max(in, w, b); });
    };
    const double f = no_grad_time(x);
    std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "conv1d_max f+b vs fwd", shape.c_str(),
                fb * 1e3, f * 1e3, f / fb);
    // Text-like input, not noise: words' characters padded to 50 with one row, and words that
    // repeat, which the CPU computes once each (engine/cpu/cpu_rows.cpp). Words of 2-12 letters
    // drawn by Zipf's law from 20,000: about half of a batch's tokens are repeats, as in Brown.
    std::mt19937_64 rng(5);
    std::vector<std::string> vocab(20000);
    for (std::string& v : vocab) {
      v.resize(2 + rng() % 11);
      for (char& ch : v) ch = static_cast<char>('a' + rng() % 26);
    }
    std::vector<double> cdf(vocab.size());
    for (size_t i = 0; i < cdf.size(); ++i) cdf[i] = (i ? cdf[i - 1] : 0) + 1.0 / static_cast<double>(i + 1);
    std::uniform_real_distribution<double> u(0, cdf.back());
    std::vector<int32_t> ids(static_cast<size_t>(N * L));
    for (int64_t n = 0; n < N; ++n) {
      const size_t word = static_cast<size_t>(std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin());
      chars::token_ids(vocab[std::min(word, vocab.size() - 1)], &ids[static_cast<size_t>(n * L)]);
    }
    Tensor words = [&] {
      NoGrad ng;
      const Tensor table = randn({chars::kTrainingChars, Cin}, d);
      return ops::gather_rows(table, Tensor::from(ids, {N * L}, d)).view({N, L, Cin}).clone();
    }();
    words.set_requires_grad();
    const double fw = no_grad_time(words);
    const double fbw = time_it(d, iters, [&] {
      words.zero_grad(), w.zero_grad(), b.zero_grad();
      backward(ops::sum(ops::mul(ops::conv1d_max(words, w, b), g)));
    });
    std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "conv1d_max fwd: words vs random x",
                shape.c_str(), fw * 1e3, f * 1e3, f / fw);
    std::printf("%-7s %-34s %-18s %9.3f ms %9.3f ms %7.2f\n", dev.c_str(), "conv1d_max f+b: words vs random x",
                shape.c_str(), fbw * 1e3, fb * 1e3, fb / fbw);
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

}  // namespace

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

}  // namespace sa
