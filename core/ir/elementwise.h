// The scalar meaning of every elementwise op (ops.def's header comment): one
// definition used by constant folding (passes) and by the CPU device's
// kernels, so the two can never disagree. The float unary ops are the rows
// of float_unary.def, which the CUDA codegen compiles too. Header-only templates over the
// compute type T (double, float, int64_t, int32_t, uint16_t, uint8_t, bool):
// T is the op's result dtype's C type, with bf16 and f16 computed in float
// and rounded at the op's output (bf16_round, f16_round).
//
// Integers wrap as two's complement (arithmetic goes through uint64_t, whose
// conversion back is modular in C++20). Where C++ leaves an integer case
// undefined, the IR defines it: x mod 0 is 0, x mod -1 is 0, an integer to a
// negative power is 1/x^|n| truncated (1, -1 or 0), and float to integer
// truncates toward zero, saturates at the integer's range and sends NaN to 0
// (as CUDA's cvt.rzi does). Floats follow IEEE: NaN propagates through
// maximum, minimum, clamp, relu and sign.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "ir/ops.h"

namespace sexpgpu::ir {

// Whether the op maps elements independently (with broadcasting): the ops
// this header defines, which constant folding and fusion work on.
constexpr bool is_elementwise(Op op) {
  switch (info(op).rule) {
    case Rule::UnarySame:
    case Rule::UnaryFloat:
    case Rule::UnaryBool:
    case Rule::BinaryPromote:
    case Rule::BinaryFloat:
    case Rule::Compare:
    case Rule::Where:
    case Rule::Clamp:
    case Rule::Cast: return true;
    case Rule::ReduceSame:
    case Rule::ReduceFloat:
    case Rule::ReduceIndex:
    case Rule::MatMul:
    case Rule::FromAttrs:
    case Rule::Random:
    case Rule::Reshape:
    case Rule::Permute:
    case Rule::Expand:
    case Rule::Concat:
    case Rule::Slice:
    case Rule::Take:
    case Rule::IndexAdd:
    case Rule::Pad:
    case Rule::Flip:
    case Rule::AxisSameFloat:
    case Rule::CrossEntropy:
    case Rule::Norm:
    case Rule::Attention:
    case Rule::AttentionGrad:
    case Rule::CrossEntropyGrad:
    case Rule::LinearCrossEntropy:
    case Rule::LayerNormGrad:
    case Rule::LayerNormParamGrad:
    case Rule::Conv2d:
    case Rule::Conv2dGrad:
    case Rule::Pool2d:
    case Rule::Pool2dGrad:
    case Rule::AllReduce: return false;
  }
  return false;
}

// ---------------------------------------------------------------------------
// bf16 and f16: storage bits and rounding (round to nearest, ties to even;
// NaN stays a quiet NaN of the same sign).

inline uint16_t to_bf16_bits(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float from_bf16_bits(uint16_t b) {
  return std::bit_cast<float>(uint32_t(b) << 16);
}

inline float bf16_round(float f) {
  return from_bf16_bits(to_bf16_bits(f));
}

namespace detail {
// Rounds `mant` right by `shift` bits (1..31), to nearest, ties to even.
inline uint32_t shift_round_even(uint32_t mant, uint32_t shift) {
  uint32_t kept = mant >> shift, rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}
}  // namespace detail

inline uint16_t to_f16_bits(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520: rounds to infinity
  if (a >= 0x38800000u) {                                 // >= 2^-14: a normal f16
    uint32_t exp = (a >> 23) - 127 + 15, mant = a & 0x7fffffu;
    // A carry out of the mantissa correctly bumps the exponent.
    return uint16_t(sign | detail::shift_round_even((exp << 23) | mant, 13));
  }
  if (a <= 0x33000000u) return sign;  // <= 2^-25: ties to the even zero
  // A subnormal f16: the value in units of 2^-24.
  uint32_t exp = a >> 23, mant = (a & 0x7fffffu) | 0x800000u;
  return uint16_t(sign | detail::shift_round_even(mant, 126 - exp));
}

inline float from_f16_bits(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    float v = float(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

inline float f16_round(float f) {
  return from_f16_bits(to_f16_bits(f));
}

// ---------------------------------------------------------------------------
// Conversions (cast, and every dtype boundary)

namespace detail {
template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// double -> float rounding to odd: a second rounding (to bf16 or f16) of the
// result then equals one direct rounding of the double.
inline float round_to_odd_float(double x) {
  float t = float(x);
  if (std::isnan(x) || double(t) == x) return t;
  if (std::fabs(double(t)) > std::fabs(x)) t = std::nextafter(t, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(t) | 1u);
}
}  // namespace detail

// The value of `x` in type To: to bool is x != 0; float to integer truncates,
// saturates and maps NaN to 0; integer to integer wraps.
template <class To, class From>
To convert(From x) {
  if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (detail::is_int_v<To> && std::is_floating_point_v<From>) {
    if (std::isnan(x)) return To(0);
    using L = std::numeric_limits<To>;
    if (x <= From(L::min())) return L::min();
    // max() + 1 is a power of two, exact in every float type.
    if (x >= From(2) * From(L::max() / 2 + 1)) return L::max();
    return To(x);
  } else {
    return static_cast<To>(x);
  }
}

// The C type an op of `dtype` computes in: bf16 and f16 compute in float.
template <class F>
decltype(auto) with_compute_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::F32:
    case DType::BF16:
    case DType::F16: return f(float{});
    case DType::F64: return f(double{});
    case DType::I32: return f(int32_t{});
    case DType::I64: return f(int64_t{});
    case DType::U8: return f(uint8_t{});
    case DType::U16: return f(uint16_t{});
    case DType::Bool: return f(bool{});
  }
  return f(double{});  // unreachable: -Werror=switch keeps the cases complete
}

// `x` as stored in `dtype`, back as a double: what a tensor of that dtype
// holds after x is written to it (bf16/f16 rounded once, directly from x).
inline double round_to_dtype(double x, DType dtype) {
  switch (dtype) {
    case DType::F64: return x;
    case DType::F32: return double(float(x));
    case DType::BF16: return from_bf16_bits(to_bf16_bits(detail::round_to_odd_float(x)));
    case DType::F16: return from_f16_bits(to_f16_bits(detail::round_to_odd_float(x)));
    case DType::I32: return double(convert<int32_t>(x));
    case DType::I64: return double(convert<int64_t>(x));
    case DType::U8: return double(convert<uint8_t>(x));
    case DType::U16: return double(convert<uint16_t>(x));
    case DType::Bool: return x != 0 ? 1.0 : 0.0;
  }
  return x;
}

// ---------------------------------------------------------------------------
// Unary ops (rules UnarySame, UnaryFloat; UnaryBool is apply_predicate)

namespace detail {
template <class T>
T wrap(uint64_t bits) {
  return T(bits);  // C++20: modular
}

}  // namespace detail

// The primitives float_unary.def is written with, on the host: <cmath>.
namespace scalar_fn {
#define SG_HOST_PRIMITIVE(fn) \
  template <class T>          \
  inline T sg_##fn(T x) {     \
    return std::fn(x);        \
  }
SG_HOST_PRIMITIVE(exp)
SG_HOST_PRIMITIVE(log)
SG_HOST_PRIMITIVE(log1p)
SG_HOST_PRIMITIVE(expm1)
SG_HOST_PRIMITIVE(sqrt)
SG_HOST_PRIMITIVE(sin)
SG_HOST_PRIMITIVE(cos)
SG_HOST_PRIMITIVE(tanh)
SG_HOST_PRIMITIVE(erf)
SG_HOST_PRIMITIVE(fabs)
#undef SG_HOST_PRIMITIVE
template <class T>
inline T sg_fmax(T a, T b) {
  return std::fmax(a, b);
}

// One function per row of float_unary.def (the primitives are above).
#define SG_FLOAT_PRIMITIVE(id, fn)
#define SG_FLOAT_UNARY(id, fn, ...) \
  template <class T>                \
  inline T sg_##fn(T x) {           \
    return __VA_ARGS__;             \
  }
#include "ir/float_unary.def"
#undef SG_FLOAT_PRIMITIVE
#undef SG_FLOAT_UNARY
}  // namespace scalar_fn

// Whether `op` has a row in float_unary.def.
constexpr bool is_float_unary(Op op) {
  switch (op) {
#define SG_FLOAT_PRIMITIVE(id, fn) case Op::id:
#define SG_FLOAT_UNARY(id, fn, ...) case Op::id:
#include "ir/float_unary.def"
#undef SG_FLOAT_PRIMITIVE
#undef SG_FLOAT_UNARY
    return true;
    default: return false;
  }
}

namespace detail {
// The float unary ops of float_unary.def, and floor/ceil/round of a float.
template <class T>
T float_unary(Op op, T x) {
  switch (op) {
    // clang-format off
#define SG_FLOAT_PRIMITIVE(id, fn) case Op::id: return scalar_fn::sg_##fn(x);
#define SG_FLOAT_UNARY(id, fn, ...) case Op::id: return scalar_fn::sg_##fn(x);
#include "ir/float_unary.def"
#undef SG_FLOAT_PRIMITIVE
#undef SG_FLOAT_UNARY
      // clang-format on
    case Op::Floor: return std::floor(x);
    case Op::Ceil: return std::ceil(x);
    case Op::Round: return std::nearbyint(x);  // the default mode: ties to even
    default: throw std::logic_error("apply_unary: not an elementwise unary op");
  }
}
}  // namespace detail

// The unary op's value in T. Integer T: the UnarySame ops exactly (wrapping);
// the float-only ops are computed in double (their result dtype is a float,
// so kernels call them with a float T). bool T: 0/1 arithmetic, then != 0.
template <class T>
T apply_unary(Op op, T x) {
  if constexpr (std::is_same_v<T, bool>) {
    return apply_unary<int64_t>(op, x) != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case Op::Neg: return -x;
      case Op::Abs: return std::fabs(x);
      case Op::Square: return x * x;
      case Op::Sign: return std::isnan(x) ? x : T((x > T(0)) - (x < T(0)));
      case Op::Relu: return x > T(0) || std::isnan(x) ? x : T(0);
      case Op::StopGradient: return x;
      default: return detail::float_unary(op, x);
    }
  } else {
    const uint64_t u = uint64_t(x);
    switch (op) {
      case Op::Neg: return detail::wrap<T>(uint64_t(0) - u);
      case Op::Abs: return x < T(0) ? detail::wrap<T>(uint64_t(0) - u) : x;
      case Op::Square: return detail::wrap<T>(u * u);
      case Op::Sign: return T((x > T(0)) - (x < T(0)));
      case Op::Relu: return x > T(0) ? x : T(0);
      case Op::Floor:
      case Op::Ceil:
      case Op::Round:
      case Op::StopGradient: return x;
      default: return convert<T>(detail::float_unary(op, double(x)));
    }
  }
}

// The UnaryBool ops: logical_not (x == 0) and isfinite.
template <class T>
bool apply_predicate(Op op, T x) {
  switch (op) {
    case Op::LogicalNot: return x == T(0);
    case Op::IsFinite:
      if constexpr (std::is_floating_point_v<T>) return std::isfinite(x);
      return true;
    default: throw std::logic_error("apply_predicate: not an elementwise predicate");
  }
}

// ---------------------------------------------------------------------------
// Binary ops (rules BinaryPromote, BinaryFloat; Compare is apply_compare)

namespace detail {
template <class T>
T int_pow(T base, T power) {
  if (power < T(0)) {  // 1 / base^|power|, truncated
    if (base == T(1)) return T(1);
    if (base == T(-1)) return (uint64_t(power) & 1u) ? T(-1) : T(1);
    return T(0);
  }
  uint64_t result = 1, b = uint64_t(base), e = uint64_t(power);
  for (; e; e >>= 1, b *= b)
    if (e & 1u) result *= b;
  return wrap<T>(result);
}

template <class T>
T int_mod(T a, T b) {
  if (b == T(0)) return T(0);
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);  // also the INT_MIN % -1 overflow
    T r = T(a % b);
    return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? T(r + b) : r;
  }
  return T(a % b);
}

template <class T>
T float_mod(T a, T b) {
  T r = std::fmod(a, b);
  return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? r + b : r;
}
}  // namespace detail

template <class T>
T apply_binary(Op op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return apply_binary<int64_t>(op, a, b) != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case Op::Add: return a + b;
      case Op::Sub: return a - b;
      case Op::Mul: return a * b;
      case Op::Div: return a / b;
      case Op::Pow: return std::pow(a, b);
      case Op::Maximum: return std::isnan(a) || a > b ? a : b;
      case Op::Minimum: return std::isnan(a) || a < b ? a : b;
      case Op::Atan2: return std::atan2(a, b);
      case Op::Mod: return detail::float_mod(a, b);
      default: throw std::logic_error("apply_binary: not an elementwise binary op");
    }
  } else {
    const uint64_t ua = uint64_t(a), ub = uint64_t(b);
    switch (op) {
      case Op::Add: return detail::wrap<T>(ua + ub);
      case Op::Sub: return detail::wrap<T>(ua - ub);
      case Op::Mul: return detail::wrap<T>(ua * ub);
      case Op::Pow: return detail::int_pow(a, b);
      case Op::Maximum: return a > b ? a : b;
      case Op::Minimum: return a < b ? a : b;
      case Op::Mod: return detail::int_mod(a, b);
      case Op::Div:
      case Op::Atan2: return convert<T>(apply_binary<double>(op, double(a), double(b)));
      default: throw std::logic_error("apply_binary: not an elementwise binary op");
    }
  }
}

// The Compare rule: comparisons and logical and/or.
template <class T>
bool apply_compare(Op op, T a, T b) {
  switch (op) {
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    case Op::Ge: return a >= b;
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    case Op::LogicalAnd: return a != T(0) && b != T(0);
    case Op::LogicalOr: return a != T(0) || b != T(0);
    default: throw std::logic_error("apply_compare: not a comparison");
  }
}

// ---------------------------------------------------------------------------
// Three operands

template <class T>
T apply_where(bool cond, T a, T b) {
  return cond ? a : b;
}

// min(max(x, lo), hi): lo > hi gives hi (as PyTorch); a NaN x stays NaN.
template <class T>
T apply_clamp(T x, T lo, T hi) {
  T y = x < lo ? lo : x;
  return hi < y ? hi : y;
}

}  // namespace sexpgpu::ir
