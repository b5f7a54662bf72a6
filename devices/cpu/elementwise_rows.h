// The inner loops of the elementwise kernels, shared by the per-op kernels
// (kernels_elementwise.cpp) and the fused ones (kernels_fused.cpp): one
// row of n elements, each operand read with its own element stride. The
// strides 0 (a broadcast value) and 1 get loops of their own, which the
// compiler vectorises.
#pragma once

#include <cstdint>

namespace sexpgpu::cpu {

template <class T, class O, class F>
void binary_row(int64_t n, const T* a, int64_t sa, const T* b, int64_t sb, O* o, F f) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const T bv = *b;
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const T av = *a;
    for (int64_t i = 0; i < n; ++i) o[i] = f(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i * sa], b[i * sb]);
  }
}

// One row of a ternary op whose operands each advance by 1 (true) or stay
// put (false): the common where/clamp shapes (same-shape tensors and
// scalars), as loops the compiler vectorises.
template <bool kX, bool kY, bool kZ, class X, class Y, class Z, class O, class F>
void ternary_unit_row(int64_t n, const X* x, const Y* y, const Z* z, O* o, F f) {
  const X x0 = *x;
  const Y y0 = *y;
  const Z z0 = *z;
  for (int64_t i = 0; i < n; ++i) o[i] = f(kX ? x[i] : x0, kY ? y[i] : y0, kZ ? z[i] : z0);
}

template <class X, class Y, class Z, class O, class F>
void ternary_row(int64_t n, const X* x, int64_t sx, const Y* y, int64_t sy, const Z* z, int64_t sz,
                 O* o, F f) {
  if (n <= 0) return;
  auto unit = [](int64_t s) { return s == 0 || s == 1; };
  if (!unit(sx) || !unit(sy) || !unit(sz)) {
    for (int64_t i = 0; i < n; ++i) o[i] = f(x[i * sx], y[i * sy], z[i * sz]);
    return;
  }
  switch ((sx << 2) | (sy << 1) | sz) {
    case 0: return ternary_unit_row<false, false, false>(n, x, y, z, o, f);
    case 1: return ternary_unit_row<false, false, true>(n, x, y, z, o, f);
    case 2: return ternary_unit_row<false, true, false>(n, x, y, z, o, f);
    case 3: return ternary_unit_row<false, true, true>(n, x, y, z, o, f);
    case 4: return ternary_unit_row<true, false, false>(n, x, y, z, o, f);
    case 5: return ternary_unit_row<true, false, true>(n, x, y, z, o, f);
    case 6: return ternary_unit_row<true, true, false>(n, x, y, z, o, f);
    default: return ternary_unit_row<true, true, true>(n, x, y, z, o, f);
  }
}

}  // namespace sexpgpu::cpu
