// How the CPU device stores each dtype in memory, the conversions between
// them, and the dispatch from a runtime DType to a C++ storage type.
//
// bf16 and f16 are 16-bit patterns (BF16, F16 below); the device reads them
// as f32 and rounds results back with round-to-nearest-even, so every op on
// them means "compute in f32, round at the output" (tensors.md, "Dtypes").
// bool is one byte holding 0 or 1 (BoolByte).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "ir/elementwise.h"
#include "ir/types.h"

namespace sexpgpu::cpu {

struct BF16 {
  uint16_t bits;
};
struct F16 {
  uint16_t bits;
};
struct BoolByte {
  uint8_t value;
};

// bf16 / f16 <-> f32: elementwise.h's round-to-nearest-even, on the storage
// structs.
inline float bf16_to_float(BF16 h) {
  return ir::from_bf16_bits(h.bits);
}
inline BF16 float_to_bf16(float f) {
  return BF16{ir::to_bf16_bits(f)};
}
inline float f16_to_float(F16 h) {
  return ir::from_f16_bits(h.bits);
}
inline F16 float_to_f16(float f) {
  return F16{ir::to_f16_bits(f)};
}

// ---------------------------------------------------------------------------
// Conversions between storage types (cast, creation, HostTensor)

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, BF16> || std::is_same_v<T, F16>;

// The value of a stored element as the arithmetic type it computes in.
template <class S>
inline auto widen(S s) {
  if constexpr (std::is_same_v<S, BF16>)
    return bf16_to_float(s);
  else if constexpr (std::is_same_v<S, F16>)
    return f16_to_float(s);
  else if constexpr (std::is_same_v<S, BoolByte>)
    return uint8_t(s.value != 0);
  else
    return s;
}

// Converts value v (any arithmetic or storage type) to storage type D.
template <class D, class V>
inline D convert(V v) {
  auto x = widen(v);
  using X = decltype(x);
  if constexpr (std::is_same_v<D, BoolByte>) {
    return BoolByte{uint8_t(x != X(0))};
  } else if constexpr (is_half_v<D>) {
    float f;
    // From wider types through f32 rounded to odd: one correct rounding.
    if constexpr (std::is_same_v<X, float>)
      f = x;
    else
      f = ir::detail::round_to_odd_float(double(x));
    if constexpr (std::is_same_v<D, BF16>)
      return float_to_bf16(f);
    else
      return float_to_f16(f);
  } else {
    return ir::convert<D>(x);  // float to int truncates and saturates, int to int wraps
  }
}

// ---------------------------------------------------------------------------
// Dispatch: calls f(T{}) with the storage type of `dtype`.

template <class F>
decltype(auto) dispatch_storage(ir::DType dtype, F&& f) {
  switch (dtype) {
    case ir::DType::F32: return f(float{});
    case ir::DType::BF16: return f(BF16{});
    case ir::DType::F16: return f(F16{});
    case ir::DType::F64: return f(double{});
    case ir::DType::I32: return f(int32_t{});
    case ir::DType::I64: return f(int64_t{});
    case ir::DType::U8: return f(uint8_t{});
    case ir::DType::U16: return f(uint16_t{});
    case ir::DType::Bool: return f(BoolByte{});
  }
  return f(float{});  // unreachable: -Werror=switch covers every dtype
}

// The dtypes kernels compute in after lowering (lower.h): bf16/f16 widen to
// f32 and bool to u8, so compute kernels see only these.
template <class F>
decltype(auto) dispatch_compute(ir::DType dtype, F&& f) {
  switch (dtype) {
    case ir::DType::F64: return f(double{});
    case ir::DType::I32: return f(int32_t{});
    case ir::DType::I64: return f(int64_t{});
    case ir::DType::U8: return f(uint8_t{});
    case ir::DType::U16: return f(uint16_t{});
    default: return f(float{});
  }
}

}  // namespace sexpgpu::cpu
