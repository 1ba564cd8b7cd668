// bin/char_lm: the engine demo. Trains a byte-level LSTM language model with truncated BPTT
// (state carried across batches, as bilm-tf does) on a text corpus, and reports held-out
// perplexity before and after. Exercises the engine end to end: sparse embedding gradients,
// hoisted input GEMM, the fused LSTM cell, cross entropy, Adagrad and global-norm clipping.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "engine/engine.h"
#include "train/optimizer.h"

using namespace sa;

namespace {

struct Options {
  std::string corpus = "build/corpus/handbook-en.train.txt";
  std::string heldout = "build/corpus/handbook-en.heldout.txt";
  std::string device = "auto";
  int steps = 300, batch = 32, unroll = 32, embed = 32, hidden = 256, log_every = 25;
  double lr = 0.2, clip = 10.0;
  uint64_t seed = 1;
};

std::vector<int32_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  SA_CHECK(f, "char_lm: cannot open corpus '{}'", path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  SA_CHECK(s.size() > 1000, "char_lm: corpus '{}' is too small ({} bytes; at least 1000 expected)", path, s.size());
  return std::vector<int32_t>(reinterpret_cast<const unsigned char*>(s.data()),
                              reinterpret_cast<const unsigned char*>(s.data()) + s.size());
}

struct Model {
  Tensor emb, wx, wh, b, wo, bo;
  Model(const Options& o, Device d) {
    std::mt19937_64 rng(o.seed);
    auto init = [&](Shape s, double scale) {
      std::normal_distribution<double> n(0.0, scale);
      std::vector<float> v(static_cast<size_t>(numel(s)));
      for (float& x : v) x = static_cast<float>(n(rng));
      return Tensor::from(v, s, d).set_requires_grad();
    };
    emb = init({256, o.embed}, 1.0).set_sparse_grad().set_name("embedding");
    wx = init({o.embed, 4 * o.hidden}, 1.0 / std::sqrt(o.embed)).set_name("W_x");
    wh = init({o.hidden, 4 * o.hidden}, 1.0 / std::sqrt(o.hidden)).set_name("W_h");
    b = Tensor::zeros({4 * o.hidden}, DType::F32, d).set_requires_grad().set_name("b");
    wo = init({o.hidden, 256}, 1.0 / std::sqrt(o.hidden)).set_name("W_out");
    bo = Tensor::zeros({256}, DType::F32, d).set_requires_grad().set_name("b_out");
  }
  std::vector<Tensor> params() const { return {emb, wx, wh, b, wo, bo}; }
};

// B parallel streams over the byte sequence, each carrying its LSTM state between batches.
struct Streams {
  const std::vector<int32_t>& data;
  int batch, unroll;
  std::vector<size_t> pos;
  Streams(const std::vector<int32_t>& d, int b, int t) : data(d), batch(b), unroll(t) {
    for (int r = 0; r < b; ++r) pos.push_back(d.size() / static_cast<size_t>(b) * static_cast<size_t>(r));
  }
  // inputs and targets [B, T]; wraps around at the end of the data
  void next(std::vector<int32_t>& in, std::vector<int32_t>& out) {
    in.resize(static_cast<size_t>(batch * unroll));
    out.resize(in.size());
    for (int r = 0; r < batch; ++r) {
      for (int t = 0; t < unroll; ++t) {
        size_t p = (pos[r] + static_cast<size_t>(t)) % (data.size() - 1);
        in[r * unroll + t] = data[p];
        out[r * unroll + t] = data[p + 1];
      }
      pos[r] = (pos[r] + static_cast<size_t>(unroll)) % (data.size() - 1);
    }
  }
};

// Mean cross entropy (nats per byte) of one [B, T] batch; updates the carried state (c, h).
Tensor batch_loss(const Model& m, const Options& o, Device d, const std::vector<int32_t>& in,
                  const std::vector<int32_t>& out, Tensor& c, Tensor& h) {
  const int64_t B = o.batch, T = o.unroll, H = o.hidden;
  Tensor ids = Tensor::from(in, {B, T}, d), labels = Tensor::from(out, {B * T}, d);
  // The input projection of all time steps in one GEMM.
  Tensor xw = ops::reshape(ops::linear(ops::gather_rows(m.emb, ids), m.wx, m.b), {B, T, 4 * H});
  std::vector<Tensor> hs;
  for (int64_t t = 0; t < T; ++t) {
    Tensor gates = ops::add(ops::reshape(ops::slice(xw, 1, t, t + 1), {B, 4 * H}), ops::matmul(h, m.wh));
    std::tie(c, h) = ops::lstm_cell(gates, c, 1.0, 0.0);
    hs.push_back(ops::reshape(h, {B, 1, H}));
  }
  Tensor logits = ops::linear(ops::reshape(ops::concat(hs, 1), {B * T, H}), m.wo, m.bo);
  return ops::mean(ops::cross_entropy(logits, labels));
}

double heldout_perplexity(const Model& m, const Options& o, Device d, const std::vector<int32_t>& data) {
  NoGrad ng;
  Streams s(data, o.batch, o.unroll);
  Tensor c = Tensor::zeros({o.batch, o.hidden}, DType::F32, d), h = c.clone();
  std::vector<int32_t> in, out;
  const int batches = std::max<int>(1, std::min<int>(40, static_cast<int>(data.size() / (o.batch * o.unroll))));
  double total = 0;
  for (int i = 0; i < batches; ++i) {
    s.next(in, out);
    total += batch_loss(m, o, d, in, out, c, h).item();
  }
  return std::exp(total / batches);
}

std::string eta(double seconds) {
  char b[32];
  std::snprintf(b, sizeof b, "%d:%02d", static_cast<int>(seconds) / 60, static_cast<int>(seconds) % 60);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Byte-level LSTM language model: the SenseAlign engine demo"};
  app.add_option("--corpus", o.corpus, "training text");
  app.add_option("--heldout", o.heldout, "held-out text for perplexity");
  app.add_option("--device", o.device, "auto, cpu, cuda or cuda:N");
  app.add_option("--steps", o.steps);
  app.add_option("--batch", o.batch);
  app.add_option("--unroll", o.unroll);
  app.add_option("--hidden", o.hidden);
  app.add_option("--lr", o.lr, "Adagrad learning rate");
  app.add_option("--seed", o.seed);
  app.add_option("--log-every", o.log_every);
  CLI11_PARSE(app, argc, argv);
  try {
    Device d = resolve_device(o.device);
    std::vector<int32_t> train = read_bytes(o.corpus), held = read_bytes(o.heldout);
    std::printf("char_lm: %zu training bytes, %zu held-out bytes, device %s, %d steps of %dx%d\n", train.size(),
                held.size(), d.str().c_str(), o.steps, o.batch, o.unroll);
    Model m(o, d);
    std::printf("held-out perplexity before training: %.2f\n", heldout_perplexity(m, o, d, held));
    Adagrad opt(o.lr, 1.0);
    Streams s(train, o.batch, o.unroll);
    Tensor c = Tensor::zeros({o.batch, o.hidden}, DType::F32, d), h = c.clone();
    std::vector<int32_t> in, out;
    auto t0 = std::chrono::steady_clock::now();
    double avg = 0;
    for (int step = 1; step <= o.steps; ++step) {
      s.next(in, out);
      c = c.detach(), h = h.detach();  // carried state; gradients stop at batch boundaries
      Tensor loss = batch_loss(m, o, d, in, out, c, h);
      double l = loss.item();
      avg = step == 1 ? l : 0.9 * avg + 0.1 * l;
      backward(loss);
      coalesce_sparse_grads(m.params());
      clip_global_norm(m.params(), o.clip);
      opt.step(m.params());
      if (step % o.log_every == 0 || step == o.steps) {
        double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        double tps = static_cast<double>(step) * o.batch * o.unroll / el;
        std::printf("step %d/%d | %.0f tokens/s | ETA %s | loss %.3f | perplexity %.2f\n", step, o.steps, tps,
                    eta(el / step * (o.steps - step)).c_str(), avg, std::exp(avg));
        std::fflush(stdout);
      }
    }
    std::printf("held-out perplexity after training: %.2f\n", heldout_perplexity(m, o, d, held));
  } catch (const Error& e) {
    std::fprintf(stderr, "char_lm: %s\n", e.what());
    return 1;
  }
  return 0;
}
