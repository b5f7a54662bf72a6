// The CPU kernels' view of core/ir/elementwise.h, the one definition of
// every elementwise op: the op becomes a template argument so that, inlined
// into a kernel's loop, elementwise.h's switch over ops folds away and the
// loop is one op's code. Compute types are f32/f64 and the integer types
// (bool arrives widened to u8, see lower.h); boolean results are 0/1 bytes.
#pragma once

#include <cstdint>
#include <type_traits>

#include "ir/elementwise.h"

namespace sexpgpu::cpu::scalar {

using ir::Op;

template <Op op, class T>
inline T unary(T x) {
  return ir::apply_unary<T>(op, x);
}

template <Op op, class T>
inline uint8_t predicate(T x) {
  return ir::apply_predicate<T>(op, x);
}

template <Op op, class T>
inline T binary(T a, T b) {
  return ir::apply_binary<T>(op, a, b);
}

template <Op op, class T>
inline uint8_t compare(T a, T b) {
  return ir::apply_compare<T>(op, a, b);
}

template <class T>
inline T clamp(T x, T lo, T hi) {
  return ir::apply_clamp<T>(x, lo, hi);
}

// Two's-complement accumulation for reductions and integer gemm (the same
// wrapping elementwise.h's add and mul do).
template <class T>
inline T wrap_add(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return a + b;
  else
    return T(uint64_t(a) + uint64_t(b));
}
template <class T>
inline T wrap_mul(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return a * b;
  else
    return T(uint64_t(a) * uint64_t(b));
}

}  // namespace sexpgpu::cpu::scalar
