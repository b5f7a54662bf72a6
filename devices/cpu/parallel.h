// How the CPU kernels split big loops across the worker threads
// (thread_pool.h): a parallel range, and the row-wise driver of elementwise
// loops over an iteration space of the shared plan (plan/geometry.h).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "plan/geometry.h"
#include "thread_pool.h"

namespace sexpgpu::cpu {

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

}  // namespace sexpgpu::cpu
