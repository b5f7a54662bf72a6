// The array loops of vector_math.h. On x86-64 each is compiled three times,
// for the baseline (SSE2), for AVX2 with FMA and for AVX-512, and the loader
// picks the widest the machine runs (GCC's target_clones): the kernels are
// built for the baseline, and these loops are where wider vectors pay. Their
// sums run in a fixed number of lanes, so AVX2 and AVX-512 give the same bits.
#include "vector_math.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SG_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SG_VECTOR_CLONES
#endif

namespace sexpgpu::cpu::vmath {

SG_VECTOR_CLONES
void exp_f32(const float* x, float* o, int64_t n) {
  int32_t rest = 0;  // an int, not a bool: GCC vectorises this reduction
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    rest |= int32_t(!in_core_range(v));
    o[i] = exp_core(v >= -87.0f ? (v <= 87.0f ? v : 87.0f) : -87.0f);  // NaN: -87
  }
  if (!rest) return;
  for (int64_t i = 0; i < n; ++i)
    if (!in_core_range(x[i])) o[i] = std::exp(x[i]);
}

SG_VECTOR_CLONES
void gelu_f32(const float* x, float* o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = gelu(x[i]);
}

SG_VECTOR_CLONES
void erf_f32(const float* x, float* o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = erf(x[i]);
}

SG_VECTOR_CLONES
double softmax_f32(const float* x, float* o, int64_t n, float* row_max) {
  float m = max_f32(x, n);
  if (row_max) *row_max = m;
  if (std::isinf(m) && m < 0) m = 0;
  for (int64_t k = 0; k < n; ++k) o[k] = exp_nonpositive(x[k] - m);
  const double sum = sum_f64(o, n);
  float inv = float(1.0 / sum);
  for (int64_t k = 0; k < n; ++k) o[k] *= inv;
  return sum;
}

SG_VECTOR_CLONES
double sum_exp_f64(const float* x, int64_t n, float shift) {
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) lane[j] += double(exp_nonpositive(x[i + j] - shift));
  for (; i < n; ++i) lane[0] += double(exp_nonpositive(x[i] - shift));
  double sum = 0;
  for (double v : lane) sum += v;
  return sum;
}

}  // namespace sexpgpu::cpu::vmath
