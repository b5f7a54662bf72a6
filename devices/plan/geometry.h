// Index arithmetic shared by the device plans: row-major strides, NumPy
// broadcast strides, dimension collapsing into the iteration spaces of
// elementwise loops over broadcast operands. All of it runs at compile time;
// the CPU's drivers over these spaces are devices/cpu/parallel.h.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "ir/types.h"

namespace sexpgpu::cpu {

using ir::Dims;

inline int64_t numel(const ir::Shape& s) {
  return s.numel().value_or(0);
}

// Row-major element strides of `shape`.
Dims contiguous_strides(const ir::Shape& shape);

// The strides (in elements) with which `from`, broadcast to `to`
// (broadcastable_to), is read: 0 along stretched or missing axes.
Dims broadcast_strides(const ir::Shape& from, const ir::Shape& to);

// An iteration space over an output of `dims`, with up to kMaxOperands
// operands read with their own element strides. Collapsing merges axes that
// every operand walks contiguously and drops axes of size 1, so most
// elementwise loops end up one flat run.
inline constexpr int kMaxOperands = 4;

struct Space {
  Dims dims;                               // collapsed; empty means one element
  std::array<Dims, kMaxOperands> strides;  // per operand, per collapsed axis
  int operands = 0;
  int64_t numel = 1;

  int64_t inner() const { return dims.empty() ? 1 : dims.back(); }
  int64_t rows() const { return inner() == 0 ? 0 : numel / inner(); }
  int64_t inner_stride(int k) const { return dims.empty() ? 0 : strides[size_t(k)].back(); }
  // The element offset of operand k at the start of row r.
  int64_t row_offset(int k, int64_t r) const;
};

// The space of an output `out` read from operands with `strides` each (as
// from broadcast_strides or contiguous_strides, each of out's rank).
Space make_space(const ir::Shape& out, std::span<const Dims> strides);

// take and index_add see x as [pre, n, post] (n along `axis`) and the ids
// as a flat list of `ids` elements.
struct TakeGeometry {
  int64_t pre = 1, n = 1, post = 1, ids = 1;
};
TakeGeometry take_geometry(const ir::Shape& x, int64_t axis, const ir::Shape& ids);

// Normalises `axis` of a rank-`rank` tensor (the verifier has checked it).
inline int64_t norm_axis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

}  // namespace sexpgpu::cpu
