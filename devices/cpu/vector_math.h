// f32 exp, erf, gelu and softmax as plain arithmetic the compiler vectorises
// (the loops over arrays are in vector_math.cpp):
// libm's expf/erff are calls per element, which no loop around them can
// vectorise, and they dominated the transformer step. exp is Cephes' expf
// (range reduction by ln 2 in two parts, a degree-6 polynomial; about
// 1 ulp); inputs where it does not hold (|x| > 87, NaN) go to std::exp in a
// second pass, so the exp op keeps libm's results there. gelu uses the
// Numerical Recipes erfc (relative error < 1.2e-7) so that Phi(x) stays
// accurate in the left tail.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace sexpgpu::cpu::vmath {

// exp(x) for |x| <= 87 (2^n stays a normal float); anything else is wrong.
inline float exp_core(float x) {
  // Round x / ln 2 to the nearest integer n by adding and removing 1.5 * 2^23:
  // plain arithmetic, unlike nearbyint, which SSE2 has no instruction for.
  constexpr float kShift = 12582912.0f;
  float n = (x * 1.44269504088896341f + kShift) - kShift;
  float r = x - n * 0.693359375f - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits = (int32_t(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

inline bool in_core_range(float x) {
  return std::fabs(x) <= 87.0f;  // false for NaN
}

// o[i] = exp(x[i]); o may be x.
void exp_f32(const float* x, float* o, int64_t n);

// o[i] = gelu(x[i]) (the erf form); o may be x.
void gelu_f32(const float* x, float* o, int64_t n);

// o[i] = erf(x[i]); o may be x.
void erf_f32(const float* x, float* o, int64_t n);

// exp(x) for x <= 0 as softmax needs it: 0 below -87 (the true value is
// under 2e-38 there), NaN for NaN.
inline float exp_nonpositive(float x) {
  float e = exp_core(x >= -87.0f ? x : -87.0f);
  return x >= -87.0f ? e : x != x ? x : 0.0f;
}

// erfc(z) for z >= 0 (Numerical Recipes' erfcc, Chebyshev-fitted).
inline float erfc_nonnegative(float z) {
  float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return t * exp_nonpositive(p - z * z);
}

// erf(x) as x P(x^2) / Q(x^2) on [-4, 4] (beyond, erf is +-1 in f32): the
// rational fit Eigen and TensorFlow use, relative error < 5e-7 everywhere,
// one division and no exp. NaN stays NaN.
inline float erf(float x) {
  float c = std::min(std::max(x, -4.0f), 4.0f);  // plain min/max instructions; NaN is mended below
  float s = c * c;
  float p = -2.72614225801306e-10f;
  p = p * s + 2.77068142495902e-08f;
  p = p * s - 2.10102402082508e-06f;
  p = p * s - 5.69250639462346e-05f;
  p = p * s - 7.34990630326855e-04f;
  p = p * s - 2.95459980854025e-03f;
  p = p * s - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * s - 2.13374055278905e-04f;
  q = q * s - 1.68282697438203e-03f;
  q = q * s - 7.37332916720468e-03f;
  q = q * s - 1.42647390514189e-02f;
  float r = c * p / q;
  r = std::min(std::max(r, -1.0f), 1.0f);
  return x != x ? x : r;
}

// gelu(x) = x Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2: erfc of |x| and a
// reflection for x > 0, so the small tail is computed, not a difference.
inline float gelu(float x) {
  float half_tail = 0.5f * erfc_nonnegative(std::fabs(x) * 0.70710678118654752f);
  float phi = x > 0.0f ? 1.0f - half_tail : half_tail;
  return x * phi;
}

// Reductions in kLanes independent accumulators: without -ffast-math the
// compiler keeps one sequential chain, which cannot use vector registers.
inline constexpr int64_t kLanes = 8;

// The largest of x[0..n), ignoring NaN (as fmax does); -inf when empty.
inline float max_f32(const float* x, int64_t n) {
  float lane[kLanes];
  std::fill(lane, lane + kLanes, -std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];
  for (; i < n; ++i) lane[0] = x[i] > lane[0] ? x[i] : lane[0];
  return *std::max_element(lane, lane + kLanes);
}

// The sum of x[0..n) in f64.
inline double sum_f64(const float* x, int64_t n) {
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) lane[j] += double(x[i + j]);
  for (; i < n; ++i) lane[0] += double(x[i]);
  double sum = 0;
  for (double v : lane) sum += v;
  return sum;
}

// The sum of (x[i] - center)^2 over x[0..n), in f64.
inline double sum_squares_f64(const float* x, int64_t n, double center) {
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) {
      double d = double(x[i + j]) - center;
      lane[j] += d * d;
    }
  for (; i < n; ++i) {
    double d = double(x[i]) - center;
    lane[0] += d * d;
  }
  double sum = 0;
  for (double v : lane) sum += v;
  return sum;
}

// The sum of exp(x[i] - shift) over x[0..n), in f64, for a shift no less
// than any x[i] (the row's maximum: cross-entropy's log-sum-exp).
double sum_exp_f64(const float* x, int64_t n, float shift);

// softmax of the contiguous row x[0..n) into o (o may be x); the maximum is
// subtracted first, the sum is in f64. An all -inf row gives 0s / 0 = NaN,
// as the f64 kernel does. Returns the sum, and with row_max the maximum:
// for a finite maximum, max + log(sum) is the row's log-sum-exp, bit for bit
// the one sum_exp_f64 gives (the same exps in the same lanes), so a
// cross-entropy that needs the softmax too takes its loss from here.
double softmax_f32(const float* x, float* o, int64_t n, float* row_max = nullptr);

}  // namespace sexpgpu::cpu::vmath
