// The device-side prelude of every generated elementwise kernel
// (elementwise.cpp writes the kernels, NVRTC compiles prelude + kernels as
// one unit). It is core/ir/elementwise.h again, in CUDA: the scalar meaning
// of each op, so a generated kernel computes exactly what the CPU device
// and constant folding compute. The float unary ops are not repeated here:
// core/ir/float_unary.def, which both sides compile, follows this file in
// the embedded prelude (devices/cuda/CMakeLists.txt). Keep the rest in step
// with elementwise.h; the conformance suite compares them op by op at every
// dtype.
//
// Values live in registers as: float (f32, and bf16/f16 widened), double,
// int (i32), long long (i64), unsigned char (u8), unsigned short (u16), bool.
// Integer arithmetic wraps through unsigned long long, as elementwise.h's.

typedef unsigned long long sg_u64;

// ---- bf16 and f16 storage: round to nearest even, NaN stays quiet NaN ----

__device__ __forceinline__ float sg_from_bf16(unsigned short b) {
  return __uint_as_float((unsigned int)b << 16);
}
__device__ __forceinline__ unsigned short sg_to_bf16(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
__device__ __forceinline__ unsigned int sg_shift_round_even(unsigned int mant, unsigned int shift) {
  unsigned int kept = mant >> shift, rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}
__device__ __forceinline__ unsigned short sg_to_f16(float f) {
  unsigned int u = __float_as_uint(f);
  unsigned short sign = (unsigned short)((u >> 16) & 0x8000u);
  unsigned int a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (unsigned short)(sign | 0x7e00u);
  if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);
  if (a >= 0x38800000u) {
    unsigned int exp = (a >> 23) - 127 + 15, mant = a & 0x7fffffu;
    return (unsigned short)(sign | sg_shift_round_even((exp << 23) | mant, 13));
  }
  if (a <= 0x33000000u) return sign;
  unsigned int exp = a >> 23, mant = (a & 0x7fffffu) | 0x800000u;
  return (unsigned short)(sign | sg_shift_round_even(mant, 126 - exp));
}
__device__ __forceinline__ float sg_from_f16(unsigned short h) {
  unsigned int sign = (unsigned int)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    float v = float(mant) * 5.9604644775390625e-08f;  // 2^-24
    return sign ? -v : v;
  }
  if (exp == 31) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
  return __uint_as_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}
// double -> float rounded to odd, so that a second rounding (to bf16/f16)
// equals one direct rounding of the double.
__device__ __forceinline__ float sg_round_to_odd_float(double x) {
  float t = (float)x;
  if (isnan(x) || (double)t == x) return t;
  if (fabs((double)t) > fabs(x)) t = nextafterf(t, 0.0f);
  return __uint_as_float(__float_as_uint(t) | 1u);
}
// The value a bf16/f16 tensor holds after x is written to it, as a float.
__device__ __forceinline__ float sg_round_bf16(float x) {
  return sg_from_bf16(sg_to_bf16(x));
}
__device__ __forceinline__ float sg_round_bf16(double x) {
  return sg_round_bf16(sg_round_to_odd_float(x));
}
template <class T>
__device__ __forceinline__ float sg_round_bf16(T x) {
  return sg_round_bf16(sg_round_to_odd_float((double)x));
}
__device__ __forceinline__ float sg_round_f16(float x) {
  return sg_from_f16(sg_to_f16(x));
}
__device__ __forceinline__ float sg_round_f16(double x) {
  return sg_round_f16(sg_round_to_odd_float(x));
}
template <class T>
__device__ __forceinline__ float sg_round_f16(T x) {
  return sg_round_f16(sg_round_to_odd_float((double)x));
}

// ---- conversions: to bool is x != 0; float to integer truncates,
// saturates and sends NaN to 0; integer to integer wraps ----

template <class To>
struct sg_limits;
template <>
struct sg_limits<int> {
  static constexpr double lo = -2147483648.0, hi = 2147483648.0;  // hi: max + 1
  static constexpr int min = (-2147483647 - 1), max = 2147483647;
};
template <>
struct sg_limits<long long> {
  static constexpr double lo = -9223372036854775808.0, hi = 9223372036854775808.0;
  static constexpr long long min = (-9223372036854775807ll - 1), max = 9223372036854775807ll;
};
template <>
struct sg_limits<unsigned char> {
  static constexpr double lo = 0.0, hi = 256.0;
  static constexpr unsigned char min = 0, max = 255;
};
template <>
struct sg_limits<unsigned short> {
  static constexpr double lo = 0.0, hi = 65536.0;
  static constexpr unsigned short min = 0, max = 65535;
};

template <class To, class From>
struct sg_convert_impl {
  // Integer from integer (wraps) and float from anything.
  __device__ static To go(From x) { return (To)x; }
};
template <class From>
struct sg_convert_impl<bool, From> {
  __device__ static bool go(From x) { return x != From(0); }
};
template <class To>
struct sg_float_to_int {
  template <class F>
  __device__ static To go(F x) {
    if (isnan(x)) return To(0);
    if (x <= F(sg_limits<To>::lo)) return sg_limits<To>::min;
    if (x >= F(sg_limits<To>::hi)) return sg_limits<To>::max;
    return (To)x;
  }
};
template <>
struct sg_convert_impl<int, float> : sg_float_to_int<int> {};
template <>
struct sg_convert_impl<int, double> : sg_float_to_int<int> {};
template <>
struct sg_convert_impl<long long, float> : sg_float_to_int<long long> {};
template <>
struct sg_convert_impl<long long, double> : sg_float_to_int<long long> {};
template <>
struct sg_convert_impl<unsigned char, float> : sg_float_to_int<unsigned char> {};
template <>
struct sg_convert_impl<unsigned char, double> : sg_float_to_int<unsigned char> {};
template <>
struct sg_convert_impl<unsigned short, float> : sg_float_to_int<unsigned short> {};
template <>
struct sg_convert_impl<unsigned short, double> : sg_float_to_int<unsigned short> {};
// A bool value converts as its 0/1.
template <class To>
struct sg_convert_impl<To, bool> {
  __device__ static To go(bool x) { return x ? To(1) : To(0); }
};
template <>
struct sg_convert_impl<bool, bool> {
  __device__ static bool go(bool x) { return x; }
};

template <class To, class From>
__device__ __forceinline__ To sg_convert(From x) {
  return sg_convert_impl<To, From>::go(x);
}

// ---- integer helpers ----

template <class T>
__device__ __forceinline__ T sg_wrap(sg_u64 bits) {
  return (T)bits;
}
template <class T>
__device__ __forceinline__ T sg_int_pow(T base, T power) {
  if (power < T(0)) {
    if (base == T(1)) return T(1);
    if (base == T(-1)) return ((sg_u64)power & 1u) ? T(-1) : T(1);
    return T(0);
  }
  sg_u64 result = 1, b = (sg_u64)base, e = (sg_u64)power;
  for (; e; e >>= 1, b *= b)
    if (e & 1u) result *= b;
  return sg_wrap<T>(result);
}
template <class T>
__device__ __forceinline__ T sg_int_mod(T a, T b) {
  if (b == T(0)) return T(0);
  if (T(-1) < T(0)) {  // signed
    if (b == T(-1)) return T(0);
    T r = T(a % b);
    return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? T(r + b) : r;
  }
  return T(a % b);
}

// ---- unary ----

#define SG_FLOAT_FN(name, ffn, dfn)                  \
  __device__ __forceinline__ float name(float x) {   \
    return ffn(x);                                   \
  }                                                  \
  __device__ __forceinline__ double name(double x) { \
    return dfn(x);                                   \
  }
SG_FLOAT_FN(sg_exp, expf, exp)
SG_FLOAT_FN(sg_log, logf, log)
SG_FLOAT_FN(sg_log1p, log1pf, log1p)
SG_FLOAT_FN(sg_expm1, expm1f, expm1)
SG_FLOAT_FN(sg_sqrt, sqrtf, sqrt)
SG_FLOAT_FN(sg_sin, sinf, sin)
SG_FLOAT_FN(sg_cos, cosf, cos)
SG_FLOAT_FN(sg_tanh, tanhf, tanh)
SG_FLOAT_FN(sg_erf, erff, erf)
SG_FLOAT_FN(sg_floor, floorf, floor)
SG_FLOAT_FN(sg_ceil, ceilf, ceil)
SG_FLOAT_FN(sg_rint, rintf, rint)  // ties to even
SG_FLOAT_FN(sg_fabs, fabsf, fabs)
#undef SG_FLOAT_FN
__device__ __forceinline__ float sg_fmax(float a, float b) {
  return fmaxf(a, b);
}
__device__ __forceinline__ double sg_fmax(double a, double b) {
  return fmax(a, b);
}

// The other float unary ops (rsqrt, sigmoid, gelu, ...) are the rows of
// core/ir/float_unary.def, which follows this file (see its end).

// tanh on the multifunction unit, for kernels whose result is rounded to
// bf16 (codegen::expression): relative error under 2^-10.9.
__device__ __forceinline__ float sg_tanh_approx(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float sg_gelu_tanh_approx(float x) {
  const float k = 0.7978845608028654f;
  return 0.5f * x * (1.0f + sg_tanh_approx(k * (x + 0.044715f * x * x * x)));
}
template <class T>
__device__ __forceinline__ T sg_fsign(T x) {
  return isnan(x) ? x : T((x > T(0)) - (x < T(0)));
}
template <class T>
__device__ __forceinline__ T sg_frelu(T x) {
  return (x > T(0) || isnan(x)) ? x : T(0);
}
template <class T>
__device__ __forceinline__ T sg_ineg(T x) {
  return sg_wrap<T>(sg_u64(0) - (sg_u64)x);
}
template <class T>
__device__ __forceinline__ T sg_iabs(T x) {
  return x < T(0) ? sg_wrap<T>(sg_u64(0) - (sg_u64)x) : x;
}
template <class T>
__device__ __forceinline__ T sg_isquare(T x) {
  return sg_wrap<T>((sg_u64)x * (sg_u64)x);
}
template <class T>
__device__ __forceinline__ T sg_isign(T x) {
  return T((x > T(0)) - (x < T(0)));
}
template <class T>
__device__ __forceinline__ T sg_irelu(T x) {
  return x > T(0) ? x : T(0);
}

// ---- binary ----

template <class T>
__device__ __forceinline__ T sg_fmaximum(T a, T b) {
  return (isnan(a) || a > b) ? a : b;
}
template <class T>
__device__ __forceinline__ T sg_fminimum(T a, T b) {
  return (isnan(a) || a < b) ? a : b;
}
template <class T>
__device__ __forceinline__ T sg_imaximum(T a, T b) {
  return a > b ? a : b;
}
template <class T>
__device__ __forceinline__ T sg_iminimum(T a, T b) {
  return a < b ? a : b;
}
__device__ __forceinline__ float sg_pow(float a, float b) {
  return powf(a, b);
}
__device__ __forceinline__ double sg_pow(double a, double b) {
  return pow(a, b);
}
__device__ __forceinline__ float sg_atan2(float a, float b) {
  return atan2f(a, b);
}
__device__ __forceinline__ double sg_atan2(double a, double b) {
  return atan2(a, b);
}
__device__ __forceinline__ float sg_fmod_raw(float a, float b) {
  return fmodf(a, b);
}
__device__ __forceinline__ double sg_fmod_raw(double a, double b) {
  return fmod(a, b);
}
template <class T>
__device__ __forceinline__ T sg_fmod(T a, T b) {
  T r = sg_fmod_raw(a, b);
  return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? r + b : r;
}
template <class T>
__device__ __forceinline__ T sg_iadd(T a, T b) {
  return sg_wrap<T>((sg_u64)a + (sg_u64)b);
}
template <class T>
__device__ __forceinline__ T sg_isub(T a, T b) {
  return sg_wrap<T>((sg_u64)a - (sg_u64)b);
}
template <class T>
__device__ __forceinline__ T sg_imul(T a, T b) {
  return sg_wrap<T>((sg_u64)a * (sg_u64)b);
}

// ---- three operands ----

template <class T>
__device__ __forceinline__ T sg_clamp(T x, T lo, T hi) {
  T y = x < lo ? lo : x;
  return hi < y ? hi : y;
}

// ---- vectors of consecutive elements, moved in words of up to 16 bytes
// (the caller guarantees the alignment) ----

struct __align__(8) sg_word8 {
  unsigned int x, y;
};
struct __align__(16) sg_word16 {
  unsigned int x, y, z, w;
};
template <int BYTES>
struct sg_word_of;
template <>
struct sg_word_of<2> {
  typedef unsigned short type;
};
template <>
struct sg_word_of<4> {
  typedef unsigned int type;
};
template <>
struct sg_word_of<8> {
  typedef sg_word8 type;
};
template <>
struct sg_word_of<16> {
  typedef sg_word16 type;
};
template <class T, int V>
struct sg_vec {
  static constexpr int bytes = int(sizeof(T)) * V, word = bytes < 16 ? bytes : 16;
  typedef typename sg_word_of<word>::type W;
  union {
    W w[bytes / word];
    T t[V];
  };
};
template <class T, int V>
__device__ __forceinline__ void sg_load_vec(const T* p, T (&t)[V]) {
  typedef sg_vec<T, V> Vec;
  Vec v;
  const typename Vec::W* w = reinterpret_cast<const typename Vec::W*>(p);
#pragma unroll
  for (int k = 0; k < Vec::bytes / Vec::word; ++k) v.w[k] = w[k];
#pragma unroll
  for (int j = 0; j < V; ++j) t[j] = v.t[j];
}
template <class T, int V>
__device__ __forceinline__ void sg_store_vec(T* p, const T (&t)[V]) {
  typedef sg_vec<T, V> Vec;
  Vec v;
#pragma unroll
  for (int j = 0; j < V; ++j) v.t[j] = t[j];
  typename Vec::W* w = reinterpret_cast<typename Vec::W*>(p);
#pragma unroll
  for (int k = 0; k < Vec::bytes / Vec::word; ++k) w[k] = v.w[k];
}

// ---- the float unary ops: core/ir/float_unary.def comes next in the
// embedded prelude, and its rows become device functions sg_<fn>(x) ----

#define SG_FLOAT_PRIMITIVE(id, fn)
#define SG_FLOAT_UNARY(id, fn, ...)           \
  template <class T>                          \
  __device__ __forceinline__ T sg_##fn(T x) { \
    return __VA_ARGS__;                       \
  }
