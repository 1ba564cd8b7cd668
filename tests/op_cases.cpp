#include "tests/op_cases.h"

#include <numeric>

namespace sa::testing {
namespace {

using Rng = std::mt19937_64;
using ops::Op;

int64_t dim(Rng& r, int lo = 1, int hi = 7) { return std::uniform_int_distribution<int64_t>(lo, hi)(r); }

Tensor uniform(Rng& r, const Shape& s, double lo = -1, double hi = 1) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(numel(s)));
  for (double& x : v) x = u(r);
  return Tensor::from(v, s);
}

Tensor indices(Rng& r, const Shape& s, int lo, int hi) {
  std::uniform_int_distribution<int> u(lo, hi - 1);
  std::vector<int32_t> v(static_cast<size_t>(numel(s)));
  for (int32_t& x : v) x = u(r);
  return Tensor::from(v, s);
}

Tensor mask(Rng& r, const Shape& s) {
  std::bernoulli_distribution b(0.4);
  std::vector<uint8_t> v(static_cast<size_t>(numel(s)));
  for (uint8_t& x : v) x = b(r);
  return Tensor::from(v, s);
}

CaseInput in(Tensor t) { return {std::move(t), true, false}; }
CaseInput fixed(Tensor t) { return {std::move(t), false, false}; }

using In = std::vector<Tensor>;
using Out = std::vector<Tensor>;

std::vector<OpCase> build() {
  std::vector<OpCase> c;
  auto add = [&](Op op, std::string name, auto make, auto run) {
    c.push_back({op, std::move(name), make, run});
  };

  // linear algebra: every transpose combination, 2-D and batched
  for (int t = 0; t < 4; ++t) {
    bool ta = t & 1, tb = t & 2;
    std::string nm = std::string(ta ? "T" : "N") + (tb ? "T" : "N");
    add(Op::matmul, "matmul_" + nm,
        [=](Rng& r) {
          int64_t m = dim(r), n = dim(r), k = dim(r);
          return std::vector<CaseInput>{in(uniform(r, ta ? Shape{k, m} : Shape{m, k})),
                                        in(uniform(r, tb ? Shape{n, k} : Shape{k, n}))};
        },
        [=](const In& x) { return Out{ops::matmul(x[0], x[1], ta, tb)}; });
    add(Op::bmm, "bmm_" + nm,
        [=](Rng& r) {
          int64_t b = dim(r, 1, 3), m = dim(r), n = dim(r), k = dim(r);
          return std::vector<CaseInput>{in(uniform(r, ta ? Shape{b, k, m} : Shape{b, m, k})),
                                        in(uniform(r, tb ? Shape{b, n, k} : Shape{b, k, n}))};
        },
        [=](const In& x) { return Out{ops::bmm(x[0], x[1], ta, tb)}; });
  }
  add(Op::matmul, "matmul_reuse_x_xT",  // both operands accumulate into one gradient
      [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r)}))}; },
      [](const In& x) { return Out{ops::matmul(ops::matmul(x[0], x[0], false, true), x[0])}; });
  add(Op::linear, "linear_3d",
      [](Rng& r) {
        int64_t a = dim(r), b = dim(r), i = dim(r), o = dim(r);
        return std::vector<CaseInput>{in(uniform(r, {a, b, i})), in(uniform(r, {i, o})), in(uniform(r, {o}))};
      },
      [](const In& x) { return Out{ops::linear(x[0], x[1], x[2])}; });

  // broadcasting arithmetic
  struct Bin {
    Op op;
    Tensor (*fn)(const Tensor&, const Tensor&);
  };
  for (Bin b : {Bin{Op::add, ops::add}, Bin{Op::sub, ops::sub}, Bin{Op::mul, ops::mul}, Bin{Op::div, ops::div}}) {
    const bool div = b.op == Op::div;
    const std::string nm = ops::op_name(b.op);
    add(b.op, nm + "_same",
        [=](Rng& r) {
          Shape s{dim(r), dim(r)};
          return std::vector<CaseInput>{in(uniform(r, s)), in(div ? uniform(r, s, 0.5, 2) : uniform(r, s))};
        },
        [=](const In& x) { return Out{b.fn(x[0], x[1])}; });
    add(b.op, nm + "_broadcast",
        [=](Rng& r) {
          int64_t p = dim(r), q = dim(r), s = dim(r);
          return std::vector<CaseInput>{in(uniform(r, {p, 1, s})),
                                        in(div ? uniform(r, {q, 1}, 0.5, 2) : uniform(r, {q, 1}))};
        },
        [=](const In& x) { return Out{b.fn(x[0], x[1])}; });
    // The broadcasts CUDA runs as rows (broadcast_as_rows): leading axes ([P, Q, S] + [Q, S]) and
    // a column ([P, Q] op [P, 1]).
    add(b.op, nm + "_rows",
        [=](Rng& r) {
          int64_t p = dim(r), q = dim(r), s = dim(r);
          return std::vector<CaseInput>{in(uniform(r, {p, q, s})),
                                        in(div ? uniform(r, {q, s}, 0.5, 2) : uniform(r, {q, s}))};
        },
        [=](const In& x) { return Out{b.fn(x[0], x[1])}; });
    add(b.op, nm + "_columns",
        [=](Rng& r) {
          int64_t p = dim(r), q = dim(r);
          return std::vector<CaseInput>{in(uniform(r, {p, q})), in(div ? uniform(r, {p, 1}, 0.5, 2) : uniform(r, {p, 1}))};
        },
        [=](const In& x) { return Out{b.fn(x[0], x[1])}; });
    add(b.op, nm + "_reuse",  // the same tensor on both sides
        [=](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r)}, 0.5, 2))}; },
        [=](const In& x) { return Out{b.fn(x[0], x[0])}; });
  }

  // pointwise
  struct Un {
    Op op;
    std::function<Tensor(const Tensor&)> fn;
    double lo, hi;
  };
  std::vector<Un> unary = {
      {Op::relu, ops::relu, -1, 1},
      {Op::sigmoid, ops::sigmoid, -3, 3},
      {Op::tanh, ops::tanh, -3, 3},
      {Op::gelu, ops::gelu, -3, 3},
      {Op::gelu_erf, ops::gelu_erf, -3, 3},
      {Op::exp, ops::exp, -2, 2},
      {Op::log, ops::log, 0.2, 3},
      {Op::neg, ops::neg, -1, 1},
      {Op::sqrt, ops::sqrt, 0.2, 3},
      {Op::square, ops::square, -2, 2},
      {Op::clip, [](const Tensor& t) { return ops::clip(t, -0.5, 0.7); }, -1, 1},
      {Op::scale, [](const Tensor& t) { return ops::scale(t, -1.7); }, -1, 1},
      {Op::add_scalar, [](const Tensor& t) { return ops::add_scalar(t, 0.3); }, -1, 1},
  };
  for (const Un& u : unary)
    add(u.op, ops::op_name(u.op),
        [=](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r), dim(r)}, u.lo, u.hi))}; },
        [=](const In& x) { return Out{u.fn(x[0])}; });

  add(Op::masked_fill, "masked_fill_broadcast",
      [](Rng& r) {
        int64_t a = dim(r), b = dim(r);
        return std::vector<CaseInput>{in(uniform(r, {a, b})), fixed(mask(r, {1, b}))};
      },
      [](const In& x) { return Out{ops::masked_fill(x[0], x[1], -3.0)}; });
  add(Op::dropout, "dropout",
      [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r, 2, 9), dim(r, 2, 9)}))}; },
      [](const In& x) {
        Generator g(1234);  // fixed stream: each evaluation draws the same mask
        g.take(5);
        return Out{ops::dropout(x[0], 0.3, g)};
      });

  // softmax family and losses
  add(Op::softmax, "softmax", [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r), dim(r)}, -2, 2))}; },
      [](const In& x) { return Out{ops::softmax(x[0])}; });
  add(Op::log_softmax, "log_softmax",
      [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r)}, -2, 2))}; },
      [](const In& x) { return Out{ops::log_softmax(x[0])}; });
  add(Op::logsumexp, "logsumexp", [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r), dim(r)}, -2, 2))}; },
      [](const In& x) { return Out{ops::logsumexp(x[0])}; });
  add(Op::cross_entropy, "cross_entropy_with_ignored",
      [](Rng& r) {
        int64_t n = dim(r, 2, 9), k = dim(r, 1, 9);
        Tensor lab = indices(r, {n}, 0, static_cast<int>(k));
        std::vector<double> lv = lab.values();
        lv[0] = -1;  // an ignored row
        std::vector<int32_t> li(lv.begin(), lv.end());
        return std::vector<CaseInput>{in(uniform(r, {n, k}, -2, 2)), fixed(Tensor::from(li, {n}))};
      },
      [](const In& x) { return Out{ops::cross_entropy(x[0], x[1])}; });
  add(Op::soft_cross_entropy, "soft_cross_entropy",
      [](Rng& r) {
        int64_t n = dim(r), k = dim(r);
        Tensor t = uniform(r, {n, k}, 0, 1);
        std::vector<double> tv = t.values();
        tv[0] = 0;  // a zero target weight
        return std::vector<CaseInput>{in(uniform(r, {n, k}, -2, 2)), fixed(Tensor::from(tv, {n, k}))};
      },
      [](const In& x) { return Out{ops::soft_cross_entropy(x[0], x[1])}; });

  // rows and convolution
  add(Op::gather_rows, "gather_rows_dense",
      [](Rng& r) {
        int64_t v = dim(r, 2, 9);
        return std::vector<CaseInput>{in(uniform(r, {v, dim(r)})), fixed(indices(r, {dim(r), dim(r)}, 0, static_cast<int>(v)))};
      },
      [](const In& x) { return Out{ops::gather_rows(x[0], x[1])}; });
  add(Op::gather_rows, "gather_rows_sparse",
      [](Rng& r) {
        int64_t v = dim(r, 2, 9);
        CaseInput t = in(uniform(r, {v, dim(r)}));
        t.sparse = true;
        return std::vector<CaseInput>{t, fixed(indices(r, {dim(r, 3, 12)}, 0, static_cast<int>(v)))};
      },
      [](const In& x) { return Out{ops::gather_rows(x[0], x[1])}; });
  add(Op::scatter_add_rows, "scatter_add_rows",
      [](Rng& r) {
        int64_t v = dim(r, 2, 9), d = dim(r), n = dim(r, 3, 12);
        return std::vector<CaseInput>{in(uniform(r, {v, d})), fixed(indices(r, {n}, 0, static_cast<int>(v))),
                                      in(uniform(r, {n, d}))};
      },
      [](const In& x) { return Out{ops::scatter_add_rows(x[0], x[1], x[2])}; });
  add(Op::conv1d_max, "conv1d_max",
      [](Rng& r) {
        int64_t n = dim(r, 1, 5), l = dim(r, 3, 11), cin = dim(r, 1, 5), w = dim(r, 1, 3), cout = dim(r, 1, 6);
        return std::vector<CaseInput>{in(uniform(r, {n, l, cin})), in(uniform(r, {w, cin, cout})),
                                      in(uniform(r, {cout}))};
      },
      [](const In& x) { return Out{ops::conv1d_max(x[0], x[1], x[2])}; });

  // shapes
  add(Op::reshape, "reshape",
      [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), 6, dim(r)}))}; },
      [](const In& x) { return Out{ops::reshape(x[0], {-1, 3})}; });
  add(Op::permute, "permute",
      [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r), dim(r), dim(r)}))}; },
      [](const In& x) { return Out{ops::permute(x[0], {2, 0, 3, 1})}; });
  add(Op::transpose, "transpose",
      [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r), dim(r)}))}; },
      [](const In& x) { return Out{ops::transpose(x[0], 0, -1)}; });
  add(Op::slice, "slice_middle_axis",
      [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r, 4, 9), dim(r)}))}; },
      [](const In& x) { return Out{ops::slice(x[0], 1, 1, x[0].dim(1) - 1)}; });
  add(Op::concat, "concat_axis1",
      [](Rng& r) {
        int64_t a = dim(r), c = dim(r);
        return std::vector<CaseInput>{in(uniform(r, {a, dim(r), c})), in(uniform(r, {a, dim(r), c})),
                                      in(uniform(r, {a, dim(r), c}))};
      },
      [](const In& x) { return Out{ops::concat({x[0], x[1], x[2]}, 1)}; });
  add(Op::split, "split_last",
      [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), 7}))}; },
      [](const In& x) { return ops::split(x[0], {2, 4, 1}, -1); });

  add(Op::unbind, "unbind_some_used",
      [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r, 2, 6), dim(r), dim(r)}))}; },
      [](const In& x) {
        std::vector<Tensor> parts = ops::unbind(x[0]);
        parts.erase(parts.begin());  // an unused slice gets a zero gradient
        return parts;
      });

  // reductions
  add(Op::sum, "sum_all", [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r)}))}; },
      [](const In& x) { return Out{ops::sum(x[0])}; });
  add(Op::sum, "sum_axis", [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r), dim(r)}))}; },
      [](const In& x) { return Out{ops::sum(x[0], 1)}; });
  add(Op::mean, "mean_all", [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r)}))}; },
      [](const In& x) { return Out{ops::mean(x[0])}; });
  add(Op::mean, "mean_axis_keepdim",
      [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r), dim(r)}))}; },
      [](const In& x) { return Out{ops::mean(x[0], -1, true)}; });
  add(Op::max, "max_axis0", [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r), dim(r)}))}; },
      [](const In& x) { return Out{ops::max(x[0], 0)}; });

  // normalization and fused cells
  add(Op::layer_norm, "layer_norm",
      [](Rng& r) {
        int64_t d = dim(r, 2, 9);
        return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r), d})), in(uniform(r, {d}, 0.5, 1.5)),
                                      in(uniform(r, {d}))};
      },
      [](const In& x) { return Out{ops::layer_norm(x[0], x[1], x[2], 1e-5)}; });
  for (double clip : {0.0, 0.6}) {
    add(Op::lstm_cell, clip > 0 ? "lstm_cell_clipped" : "lstm_cell",
        [](Rng& r) {
          int64_t n = dim(r), h = dim(r);
          return std::vector<CaseInput>{in(uniform(r, {n, 4 * h}, -2, 2)), in(uniform(r, {n, h}, -1, 1))};
        },
        [=](const In& x) {
          auto [cc, hh] = ops::lstm_cell(x[0], x[1], 1.0, clip);
          return Out{cc, hh};
        });
  }
  // The whole sequence, with both clips low enough to bind: every output and the final state.
  for (double clip : {0.0, 0.5}) {
    add(Op::lstm_sequence, clip > 0 ? "lstm_sequence_clipped" : "lstm_sequence",
        [](Rng& r) {
          const int64_t t = dim(r, 1, 4), b = dim(r, 1, 4), k = dim(r, 1, 4), d = dim(r, 1, 4), p = dim(r, 1, 4);
          return std::vector<CaseInput>{in(uniform(r, {t, b, k})), in(uniform(r, {k + p, 4 * d})),
                                        in(uniform(r, {4 * d})),    in(uniform(r, {d, p}, -1.5, 1.5)),
                                        in(uniform(r, {b, d})),     in(uniform(r, {b, p}))};
        },
        [=](const In& x) {
          std::vector<Tensor> o = ops::lstm_sequence(x[0], x[1], x[2], x[3], x[4], x[5], clip, clip);
          return Out{o[0], o[1], o[2]};
        });
  }
  // Each CUDA implementation on its own (the CPU steps for both): cuDNN's RNN without clips (it
  // runs none) and the step kernels with the cell clip binding; no proj_clip; the projection is
  // smaller than the cell, as cuDNN needs.
  for (ops::LstmPath path : {ops::LstmPath::Cudnn, ops::LstmPath::Steps}) {
    const bool cudnn = path == ops::LstmPath::Cudnn;
    const double cell_clip = cudnn ? 0.0 : 0.5;
    add(cudnn ? Op::lstm_sequence_cudnn : Op::lstm_sequence, cudnn ? "lstm_sequence_cudnn" : "lstm_sequence_steps",
        [](Rng& r) {
          const int64_t t = dim(r, 1, 5), b = dim(r, 1, 4), k = dim(r, 1, 4), d = dim(r, 2, 5), p = dim(r, 1, static_cast<int>(d - 1));
          return std::vector<CaseInput>{in(uniform(r, {t, b, k})), in(uniform(r, {k + p, 4 * d})),
                                        in(uniform(r, {4 * d})),    in(uniform(r, {d, p}, -1.5, 1.5)),
                                        in(uniform(r, {b, d})),     in(uniform(r, {b, p}))};
        },
        [=](const In& x) {
          auto o = ops::lstm_sequences({{x[0], x[1], x[2], x[3], x[4], x[5], cell_clip, 0.0, path}});
          return Out{o[0][0], o[0][1], o[0][2]};
        });
  }
  // Packed sequences of different lengths (the downstream BiLSTMs), with and without a projection;
  // the step sizes come as a fixed input. Every output row and each row's own final state.
  for (bool projected : {true, false}) {
    add(Op::lstm_sequence, projected ? "lstm_sequence_packed" : "lstm_sequence_packed_unprojected",
        [=](Rng& r) {
          const int64_t t = dim(r, 1, 5), b = dim(r, 1, 4), k = dim(r, 1, 4), d = dim(r, 1, 4);
          const int64_t p = projected ? dim(r, 1, 4) : d;
          std::vector<double> steps{static_cast<double>(b)};
          for (int64_t i = 1; i < t; ++i) steps.push_back(static_cast<double>(dim(r, 1, static_cast<int>(steps.back()))));
          const int64_t n = static_cast<int64_t>(std::accumulate(steps.begin(), steps.end(), 0.0));
          return std::vector<CaseInput>{in(uniform(r, {n, k})),   in(uniform(r, {k + p, 4 * d})),
                                        in(uniform(r, {4 * d})),
                                        projected ? in(uniform(r, {d, p}, -1.5, 1.5)) : fixed(uniform(r, {d, p})),
                                        in(uniform(r, {b, d})),    in(uniform(r, {b, p})),
                                        fixed(Tensor::of(steps, {t}))};
        },
        [=](const In& x) {
          std::vector<int64_t> steps;
          for (double v : x[6].values()) steps.push_back(static_cast<int64_t>(v));
          ops::LstmSequenceArgs a{x[0], x[1], x[2], projected ? x[3] : Tensor(), x[4], x[5], 0.4, projected ? 0.5 : 0.0};
          a.path = ops::LstmPath::Steps, a.steps = steps;
          auto o = ops::lstm_sequences({a});
          return Out{o[0][0], o[0][1], o[0][2]};
        });
  }
  // Two independent sequences of different sizes as one node (run side by side on the CPU).
  add(Op::lstm_sequences, "lstm_sequences_two",
      [](Rng& r) {
        std::vector<CaseInput> v;
        for (int i = 0; i < 2; ++i) {
          const int64_t t = dim(r, 1, 4), b = dim(r, 1, 4), k = dim(r, 1, 4), d = dim(r, 1, 4), p = dim(r, 1, 4);
          for (Tensor x : {uniform(r, {t, b, k}), uniform(r, {k + p, 4 * d}), uniform(r, {4 * d}),
                           uniform(r, {d, p}, -1.5, 1.5), uniform(r, {b, d}), uniform(r, {b, p})})
            v.push_back(in(x));
        }
        return v;
      },
      [](const In& x) {
        auto o = ops::lstm_sequences({{x[0], x[1], x[2], x[3], x[4], x[5], 0.5, 0.5}, {x[6], x[7], x[8], x[9], x[10], x[11], 0.0, 0.7}});
        return Out{o[0][0], o[0][1], o[0][2], o[1][0], o[1][1], o[1][2]};
      });
  // Three sequences of one shape stacked (one batched GEMM and one cell kernel per step for all),
  // both clips binding: every output and final state of each.
  add(Op::lstm_sequence, "lstm_sequences_stacked",
      [](Rng& r) {
        const int64_t t = dim(r, 1, 4), b = dim(r, 1, 3), k = dim(r, 1, 4), d = dim(r, 1, 4), p = dim(r, 1, 4);
        std::vector<CaseInput> v;
        for (int i = 0; i < 3; ++i)
          for (Tensor x : {uniform(r, {t, b, k}), uniform(r, {k + p, 4 * d}), uniform(r, {4 * d}),
                           uniform(r, {d, p}, -1.5, 1.5), uniform(r, {b, d}), uniform(r, {b, p})})
            v.push_back(in(x));
        return v;
      },
      [](const In& x) {
        std::vector<ops::LstmSequenceArgs> args;
        for (int i = 0; i < 3; ++i)
          args.push_back({x[6 * i], x[6 * i + 1], x[6 * i + 2], x[6 * i + 3], x[6 * i + 4], x[6 * i + 5], 0.5, 0.5,
                          ops::LstmPath::Stacked});
        auto o = ops::lstm_sequences(args);
        Out out;
        for (const auto& seq : o) out.insert(out.end(), seq.begin(), seq.end());
        return out;
      });
  add(Op::highway, "highway",
      [](Rng& r) {
        Shape s{dim(r), dim(r)};
        return std::vector<CaseInput>{in(uniform(r, s, -2, 2)), in(uniform(r, s)), in(uniform(r, s))};
      },
      [](const In& x) { return Out{ops::highway(x[0], x[1], x[2])}; });
  // Accidental hits (candidate ids drawn from the true ids' range) and a row whose every candidate
  // is a hit. Several CPU chunks: SenseSoftmax.FusedEqualsUnfused and Translation.FusedEqualsUnfused.
  add(Op::candidate_softmax, "candidate_softmax_with_hits",
      [](Rng& r) {
        const int64_t n = 70 + dim(r, 0, 9), p = dim(r), s = dim(r, 1, 9);
        std::vector<double> tid = indices(r, {n}, 0, 6).values(), cid = indices(r, {s}, 0, 6).values();
        for (auto& v : cid) v = v == 5 ? 4 : v;
        tid[0] = 5;
        std::vector<int32_t> ti(tid.begin(), tid.end()), ci(cid.begin(), cid.end());
        if (s == 1) ti[1] = ci[0];  // the only candidate is row 1's own: its softmax has one term
        return std::vector<CaseInput>{in(uniform(r, {n, p})), in(uniform(r, {n, p})), in(uniform(r, {n, 1})),
                                      in(uniform(r, {s, p})), in(uniform(r, {s})), fixed(Tensor::from(ti, {n})),
                                      fixed(Tensor::from(ci, {s}))};
      },
      [](const In& x) { return Out{ops::candidate_softmax(x[0], x[1], x[2], x[3], x[4], x[5], x[6])}; });
  // Several own rows with soft targets (the translation loss): absent own rows (-1), an own row
  // repeated (a self-translation), candidates that hit a second own row.
  // Selection inside the softmax: K = 4 candidate rows per token in a table of 12 (some disabled,
  // one token with none enabled), the fixed projected contexts and centers choosing among them;
  // candidates that hit selected rows. x, W, b, Wc and bc get gradients.
  add(Op::select_candidate_softmax, "select_candidate_softmax",
      [](Rng& r) {
        const int64_t n = 70 + dim(r, 0, 9), p = dim(r), s = dim(r, 1, 9), k = 4, d = 3, R = 12;
        std::vector<double> rid = indices(r, {n * k}, 0, static_cast<int>(R)).values(),
                            cid = indices(r, {s}, 0, static_cast<int>(R)).values();
        std::vector<uint8_t> en(static_cast<size_t>(n * k));
        for (size_t i = 0; i < en.size(); ++i) en[i] = (i % 7 != 3) ? 1 : 0;
        for (int64_t j = 0; j < k; ++j) en[static_cast<size_t>(5 * k + j)] = 0;  // token 5: none enabled
        std::vector<int32_t> ri(rid.begin(), rid.end()), ci(cid.begin(), cid.end());
        return std::vector<CaseInput>{in(uniform(r, {n, p})),    in(uniform(r, {R, p})),      in(uniform(r, {R, 1})),
                                      fixed(uniform(r, {n, d})), fixed(uniform(r, {n * k, d})), fixed(Tensor::from(ri, {n * k})),
                                      fixed(Tensor::from(en, {n * k})), in(uniform(r, {s, p})), in(uniform(r, {s})),
                                      fixed(Tensor::from(ci, {s}))};
      },
      [](const In& x) {
        return Out{ops::select_candidate_softmax(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8], x[9]).first};
      });
  add(Op::candidate_softmax, "candidate_softmax_soft_targets",
      [](Rng& r) {
        const int64_t n = 70 + dim(r, 0, 9), p = dim(r), s = dim(r, 1, 9), h = 3;
        std::vector<double> oid = indices(r, {n, h}, 0, 8).values(), cid = indices(r, {s}, 0, 8).values();
        std::vector<double> w(static_cast<size_t>(n * h), 0.0);
        for (int64_t i = 0; i < n; ++i) {
          if (i % 3 == 1) oid[i * h + 2] = -1;
          if (i % 3 == 2) oid[i * h + 1] = oid[i * h + 2] = -1;
          if (i % 5 == 0) oid[i * h + 1] = oid[i * h];
          const bool two = oid[i * h + 1] >= 0;
          w[i * h] = two ? 0.5 : 1.0;
          if (two) w[i * h + 1] = 0.5;
        }
        std::vector<int32_t> oi(oid.begin(), oid.end()), ci(cid.begin(), cid.end());
        return std::vector<CaseInput>{in(uniform(r, {n, p})),    in(uniform(r, {n, h, p})), in(uniform(r, {n, h})),
                                      in(uniform(r, {s, p})),    in(uniform(r, {s})),       fixed(Tensor::from(oi, {n, h})),
                                      fixed(Tensor::from(ci, {s})), fixed(Tensor::of(w, {n, h}, DType::F64))};
      },
      [](const In& x) { return Out{ops::candidate_softmax(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7])}; });
  // Last, so the cases above keep their seeds. A round trip through the other float type: inputs
  // within 1e-4 keep f32 rounding (ulp 2^-37 there) far below what the f64 finite differences
  // resolve, so the check still sees the cast's gradient.
  add(Op::cast, "cast_round_trip",
      [](Rng& r) { return std::vector<CaseInput>{in(uniform(r, {dim(r), dim(r)}, -1e-4, 1e-4))}; },
      [](const In& x) {
        const DType other = x[0].dtype() == DType::F64 ? DType::F32 : DType::F64;
        return Out{ops::cast(ops::cast(x[0], other), x[0].dtype())};
      });
  // Sentences of different lengths (one of length 1, one full), the padding holding scores that
  // must not matter; appended last so the earlier cases keep their seeds.
  add(Op::crf_nll, "crf_nll",
      [](Rng& r) {
        const int64_t b = 3, t = 5, k = dim(r, 2, 5);
        std::vector<int32_t> len = {static_cast<int32_t>(t), 1, 3};
        std::vector<double> tv = indices(r, {b, t}, 0, static_cast<int>(k)).values();
        std::vector<int32_t> tags(tv.begin(), tv.end());
        return std::vector<CaseInput>{in(uniform(r, {b, t, k}, -2, 2)), fixed(Tensor::from(tags, {b, t})),
                                      fixed(Tensor::from(len, {b})),    in(uniform(r, {k, k}, -1, 1)),
                                      in(uniform(r, {k}, -1, 1)),       in(uniform(r, {k}, -1, 1))};
      },
      [](const In& x) { return Out{ops::crf_nll(x[0], x[1], x[2], x[3], x[4], x[5])}; });
  // Attention with padded keys (key 0 always present), without and with dropout, one case longer
  // than a CUDA block of queries (64) over several key tiles, with a head dimension that does not
  // fill its kernel's capacity, and one at BERT's head size and shortest pretraining length.
  struct AttentionCase {
    const char* name;
    int64_t B, H, T, d;
    double p;
  };
  for (const AttentionCase a : {AttentionCase{"attention_masked", 2, 2, 0, 0, 0.0},
                                AttentionCase{"attention_dropout", 2, 2, 0, 0, 0.3},
                                AttentionCase{"attention_long", 1, 2, 70, 20, 0.1},
                                AttentionCase{"attention_head64", 1, 2, 128, 64, 0.1}}) {
    add(Op::attention, a.name,
        [=](Rng& r) {
          const int64_t T = a.T ? a.T : dim(r, 2, 9), d = a.d ? a.d : dim(r, 2, 9);
          Tensor keys = mask(r, {a.B, T});
          for (int64_t b = 0; b < a.B; ++b) keys.data<uint8_t>()[b * T] = 1;
          const Shape s{a.B, a.H, T, d};
          return std::vector<CaseInput>{in(uniform(r, s, -1.5, 1.5)), in(uniform(r, s, -1.5, 1.5)),
                                        in(uniform(r, s)), fixed(keys)};
        },
        [=](const In& x) {
          Generator g(4321);  // fixed stream: each evaluation draws the same dropout
          return Out{ops::attention(x[0], x[1], x[2], x[3], 0.7, a.p, &g)};
        });
  }
  // LayerNorm over enough rows (BERT's batch x positions) that CUDA splits dgamma and dbeta over
  // row ranges and adds the partial sums in a second pass.
  add(Op::layer_norm, "layer_norm_tall",
      [](Rng& r) {
        const int64_t d = dim(r, 2, 9);
        return std::vector<CaseInput>{in(uniform(r, {700, d})), in(uniform(r, {d}, 0.5, 1.5)), in(uniform(r, {d}))};
      },
      [](const In& x) { return Out{ops::layer_norm(x[0], x[1], x[2], 1e-5)}; });
  // LayerNorm wider than the CPU's 64-column blocks for dgamma and dbeta, the last one partial.
  add(Op::layer_norm, "layer_norm_wide",
      [](Rng& r) {
        return std::vector<CaseInput>{in(uniform(r, {6, 100})), in(uniform(r, {100}, 0.5, 1.5)), in(uniform(r, {100}))};
      },
      [](const In& x) { return Out{ops::layer_norm(x[0], x[1], x[2], 1e-5)}; });
  return c;
}

}  // namespace

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> c = build();
  return c;
}

}  // namespace sa::testing
