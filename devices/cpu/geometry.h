// Index arithmetic shared by the CPU kernels: row-major strides, NumPy
// broadcast strides, dimension collapsing, a row-wise driver for
// elementwise loops over broadcast operands, and the helper that splits big
// loops across the worker threads (thread_pool.h). All of it runs at compile time except the
// drivers' loops.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "ir/types.h"
#include "thread_pool.h"

namespace sexpgpu::cpu {

using ir::Dims;

// Below this many elements (times the work per element) a loop stays on one
// thread: waking the team costs more than it saves.
inline constexpr int64_t kParallelMinWork = 1 << 17;

// Runs body(begin, end) over [0, n) split into up to `threads` static chunks
// (no more than the pool has threads: it runs no more tasks than that), in
// parallel when n * work_per_item is big enough.
template <class F>
void parallel_range(int64_t n, int64_t work_per_item, int threads, F&& body) {
  int64_t t = std::min(threads, ThreadPool::instance().size());
  if (n * work_per_item < kParallelMinWork || t <= 1 || n <= 1) t = 1;
  if (t > n) t = n;
  if (t <= 1) {
    if (n > 0) body(int64_t(0), n);
    return;
  }
  ThreadPool::instance().run(int(t), [&](int i) { body(n * i / t, n * (i + 1) / t); });
}

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

// Calls row(r_count, offsets) for every row of `space`, where offsets[k] is
// operand k's element offset at that row's start and r_count the row
// length; rows are split across threads when the space is big.
template <class Row>
void for_each_row(const Space& space, int threads, int64_t work_per_element, Row&& row) {
  int64_t inner = space.inner();
  parallel_range(space.rows(), inner * work_per_element, threads, [&](int64_t begin, int64_t end) {
    std::array<int64_t, kMaxOperands> off{};
    for (int k = 0; k < space.operands; ++k) off[size_t(k)] = space.row_offset(k, begin);
    // Odometer over the outer axes (all but the last).
    size_t outer = space.dims.empty() ? 0 : space.dims.size() - 1;
    Dims idx(outer, 0);
    int64_t rem = begin;
    for (size_t a = outer; a-- > 0;) {
      idx[a] = rem % space.dims[a];
      rem /= space.dims[a];
    }
    for (int64_t r = begin; r < end; ++r) {
      row(inner, off);
      for (size_t a = outer; a-- > 0;) {
        ++idx[a];
        for (int k = 0; k < space.operands; ++k) off[size_t(k)] += space.strides[size_t(k)][a];
        if (idx[a] < space.dims[a]) break;
        for (int k = 0; k < space.operands; ++k)
          off[size_t(k)] -= space.strides[size_t(k)][a] * space.dims[a];
        idx[a] = 0;
      }
    }
  });
}

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
