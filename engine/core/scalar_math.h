// Per-element math shared by the CPU and CUDA backends, so both compute the same formulas.
#pragma once
#include <math.h>

#include <cmath>
#include <bit>
#include <cstdint>

#include "engine/core/op_kinds.h"
#include "engine/core/bf16.h"
#include "engine/core/philox.h"  // SA_HD

namespace sa::math {

#if !defined(__CUDA_ARCH__)
// Host f32 exp and tanh without calls or branches (Cephes polynomials, about 2 ulp), so loops over
// them vectorize; glibc's scalar tanhf was the largest cost of the CPU LSTM cell.
inline float fast_expf(float x) {
  x = x < -87.3f ? -87.3f : (x > 88.7f ? 88.7f : x);
  // round to nearest by the 1.5 * 2^23 trick (a call to floorf would stop vectorization)
  float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  return p * std::bit_cast<float>(bits);
}

inline float fast_tanhf(float x) {
  float a = x < 0 ? -x : x;
  float big = 1.0f - 2.0f / (fast_expf(2.0f * (a > 9.0f ? 9.0f : a)) + 1.0f);  // tanh(9) rounds to 1 in f32
  big = x < 0 ? -big : big;
  float z = x * x;
  float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z -
                 3.33332819422e-1f) * z * x + x;
  return a < 0.625f ? small : big;
}
#endif

// Float and double overloads: the same functions on the host and the device, except the host's
// vectorizable f32 exp and tanh above.
SA_HD float exp(float x) {
#if defined(__CUDA_ARCH__)
  return ::expf(x);
#else
  return fast_expf(x);
#endif
}
SA_HD double exp(double x) { return ::exp(x); }
SA_HD float log(float x) { return ::logf(x); }
SA_HD double log(double x) { return ::log(x); }
SA_HD float tanh(float x) {
#if defined(__CUDA_ARCH__)
  return ::tanhf(x);
#else
  return fast_tanhf(x);
#endif
}
SA_HD double tanh(double x) { return ::tanh(x); }
SA_HD float sqrt(float x) { return ::sqrtf(x); }
SA_HD float erf(float x) { return ::erff(x); }
SA_HD double erf(double x) { return ::erf(x); }
SA_HD double sqrt(double x) { return ::sqrt(x); }

template <typename T>
SA_HD T sigmoid(T x) {
  return T(1) / (T(1) + exp(-x));
}

// GELU, tanh approximation (as BERT's reference code).
template <typename T>
SA_HD T gelu_inner(T x) {
  return T(0.7978845608028654) * (x + T(0.044715) * x * x * x);
}

template <typename T>
SA_HD T unary(UnaryOp op, T x, T p0, T p1) {
  switch (op) {
    case UnaryOp::Relu: return x > T(0) ? x : T(0);
    case UnaryOp::Sigmoid: return sigmoid(x);
    case UnaryOp::Tanh: return tanh(x);
    case UnaryOp::Gelu: return T(0.5) * x * (T(1) + tanh(gelu_inner(x)));
    case UnaryOp::GeluErf: return T(0.5) * x * (T(1) + erf(x * T(0.7071067811865476)));
    case UnaryOp::Exp: return exp(x);
    case UnaryOp::Log: return log(x);
    case UnaryOp::Neg: return -x;
    case UnaryOp::Sqrt: return sqrt(x);
    case UnaryOp::Square: return x * x;
    case UnaryOp::Clip: return x < p0 ? p0 : (x > p1 ? p1 : x);
    case UnaryOp::Scale: return x * p0;
    case UnaryOp::AddScalar: return x + p0;
    case UnaryOp::RoundBf16: return T(bf16_to_float(float_to_bf16(static_cast<float>(x))));
  }
  return x;
}

// d op(x) / dx, given x and y = op(x).
template <typename T>
SA_HD T unary_grad(UnaryOp op, T x, T y, T p0, T p1) {
  switch (op) {
    case UnaryOp::Relu: return x > T(0) ? T(1) : T(0);
    case UnaryOp::Sigmoid: return y * (T(1) - y);
    case UnaryOp::Tanh: return T(1) - y * y;
    case UnaryOp::Gelu: {
      T u = tanh(gelu_inner(x));
      return T(0.5) * (T(1) + u) +
             T(0.5) * x * (T(1) - u * u) * T(0.7978845608028654) * (T(1) + T(3 * 0.044715) * x * x);
    }
    case UnaryOp::GeluErf:  // Phi(x) + x phi(x)
      return T(0.5) * (T(1) + erf(x * T(0.7071067811865476))) + x * T(0.3989422804014327) * exp(T(-0.5) * x * x);
    case UnaryOp::Exp: return y;
    case UnaryOp::Log: return T(1) / x;
    case UnaryOp::Neg: return T(-1);
    case UnaryOp::Sqrt: return T(0.5) / y;
    case UnaryOp::Square: return T(2) * x;
    case UnaryOp::Clip: return (x < p0 || x > p1) ? T(0) : T(1);  // TF clip_by_value: inclusive bounds pass
    case UnaryOp::Scale: return p0;
    case UnaryOp::AddScalar: return T(1);
    case UnaryOp::RoundBf16: return T(1);  // no op records it: rounding points have no gradient of their own
  }
  return T(0);
}

template <typename T>
SA_HD T binary(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return a / b;
  }
  return a;
}

// LSTM cell, TF1 LSTMCell semantics (gate order i, j, f, o; forget bias added at run time).
template <typename T>
struct LstmGates {
  T i, j, f, o, c_raw;
};

template <typename T>
SA_HD LstmGates<T> lstm_gates(T gi, T gj, T gf, T go, T c_prev, T forget_bias) {
  LstmGates<T> g;
  g.i = sigmoid(gi);
  g.j = tanh(gj);
  g.f = sigmoid(gf + forget_bias);
  g.o = sigmoid(go);
  g.c_raw = g.f * c_prev + g.i * g.j;
  return g;
}

template <typename T>
SA_HD T clip_cell(T c, T cell_clip) {
  return cell_clip > T(0) ? (c < -cell_clip ? -cell_clip : (c > cell_clip ? cell_clip : c)) : c;
}

// Gradients of one LSTM cell element: d gates (i, j, f, o), d c_prev. dc_in is the gradient
// arriving at c, dh the one at h; a clipped cell passes no gradient (TF clip_by_value).
template <typename T>
struct LstmGrads {
  T di, dj, df, do_, dc_prev;
};

template <typename T>
SA_HD LstmGrads<T> lstm_cell_grads(T gi, T gj, T gf, T go, T c_prev, T c, T forget_bias, T cell_clip, T dc_in, T dh) {
  LstmGates<T> a = lstm_gates<T>(gi, gj, gf, go, c_prev, forget_bias);
  T tc = tanh(c);
  T dc = dc_in + dh * a.o * (T(1) - tc * tc);
  if (cell_clip > T(0) && (a.c_raw < -cell_clip || a.c_raw > cell_clip)) dc = T(0);
  return {dc * a.j * a.i * (T(1) - a.i), dc * a.i * (T(1) - a.j * a.j), dc * c_prev * a.f * (T(1) - a.f),
          dh * tc * a.o * (T(1) - a.o), dc * a.f};
}

// bilm-tf highway: y = sig(carry) * relu(transform) + (1 - sig(carry)) * x.
template <typename T>
SA_HD T highway(T carry, T transform, T x) {
  T g = sigmoid(carry), t = transform > T(0) ? transform : T(0);
  return g * t + (T(1) - g) * x;
}

template <typename T>
struct HighwayGrads {
  T dcarry, dtransform, dx;
};

template <typename T>
SA_HD HighwayGrads<T> highway_grads(T carry, T transform, T x, T dy) {
  T s = sigmoid(carry), t = transform > T(0) ? transform : T(0);
  return {dy * (t - x) * s * (T(1) - s), transform > T(0) ? dy * s : T(0), dy * (T(1) - s)};
}

// One Adagrad element: updates acc and returns the new weight.
template <typename T>
SA_HD T adagrad(T w, T& acc, T g, T lr) {
  acc += g * g;
  return w - lr * g / sqrt(acc);
}

// One Adam step's constants in T, from AdamHyper (engine/backend.h): rest = 1 - beta and the
// inverse bias corrections are formed in double first, as the op-by-op form this replaced did.
template <typename T>
struct AdamConsts {
  T lr, b1, rest1, b2, rest2, eps, inv_c1, inv_c2;
  template <typename H>
  static AdamConsts of(const H& h) {
    return {T(h.lr), T(h.beta1), T(1 - h.beta1), T(h.beta2), T(1 - h.beta2), T(h.eps), T(1 / h.c1), T(1 / h.c2)};
  }
};

// One Adam element with decoupled weight decay wd: updates m and v and returns the new weight.
template <typename T>
SA_HD T adam_step(T w, T& m, T& v, T g, const AdamConsts<T>& k, T wd) {
  m = m * k.b1 + g * k.rest1;
  v = v * k.b2 + (g * g) * k.rest2;
  T update = (m * k.inv_c1) / (sqrt(v * k.inv_c2) + k.eps);
  if (wd != T(0)) update = update + w * wd;
  return w - update * k.lr;
}

// The selection's cosine of a context u with a candidate w (d dims), summed in double.
template <typename T, typename U>
SA_HD double selection_cosine(const T* u, const U* w, int64_t d) {
  double dot = 0, un = 0, wn = 0;
  for (int64_t k = 0; k < d; ++k)
    dot += double(u[k]) * double(w[k]), un += double(u[k]) * double(u[k]), wn += double(w[k]) * double(w[k]);
  return dot / (sqrt(wn) + 1e-6) / (sqrt(un) + 1e-6);
}

// Sense selection for one token: the enabled candidate j < K whose vector v_j has the highest
// selection_cosine with u; ties keep the lowest j; with none enabled, 0.
template <typename T>
SA_HD int64_t select_by_cosine(const T* u, const T* v, const uint8_t* enabled, int64_t K, int64_t d) {
  int64_t best = -1;
  double best_sim = 0;
  for (int64_t j = 0; j < K; ++j) {
    if (!enabled[j]) continue;
    const double sim = selection_cosine(u, v + j * d, d);
    if (best < 0 || sim > best_sim) best = j, best_sim = sim;
  }
  return best < 0 ? 0 : best;
}

}  // namespace sa::math
