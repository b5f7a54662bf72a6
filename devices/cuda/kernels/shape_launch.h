// The shape kernels' launch interface (shape.cu), plain enough for nvcc:
// what kernels_shape.cpp resolves at compile time, and the launchers that
// enqueue the strided copy (permute, expand, slice, flip, concat, pad),
// take (gather of rows) and index_add (its deterministic gradient).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace sexpgpu::cuda {

inline constexpr int kMaxCopyRank = 8;

// out[out_base + sum_a i_a*out_strides[a]] = in[in_base + sum_a i_a*in_strides[a]]
// for every index i of `dims`, in units of `word_bytes`-byte words (several
// elements when the inner axis is contiguous on both sides). Axis rank-1 is
// the inner one; numel > 0.
struct StridedCopyParams {
  const void* in = nullptr;
  void* out = nullptr;
  int rank = 0;  // 1..kMaxCopyRank
  int64_t dims[kMaxCopyRank] = {};
  int64_t in_strides[kMaxCopyRank] = {};  // may be 0 (expand) or negative (flip)
  int64_t out_strides[kMaxCopyRank] = {};
  int64_t in_base = 0, out_base = 0;
  int64_t numel = 0;
  int word_bytes = 1;  // 1, 2, 4, 8 or 16
  // Every index and offset is below 2^31, so the kernel divides in 32 bits.
  bool index32 = false;
  // >= 0: the input is contiguous along this (outer) axis and the output
  // along the inner one: a transpose through shared-memory tiles, so both
  // sides are read and written in full rows.
  int transpose_axis = -1;
  int max_blocks = 1024;
};

cudaError_t launch_strided_copy(const StridedCopyParams& p, cudaStream_t stream);

// The integer dtypes of ids (the Take rule accepts every integer dtype).
enum class IdKind : int { I32, I64, U8, U16 };

// take along an axis, x seen as [pre, n, post] and ids as [count]: out
// [pre, count, post]. post counted in `word_bytes`-byte words. An id
// outside [0, n) is clamped into it (ops.def lets a device clamp; the CPU
// raises an error). pre*count*post > 0 and n > 0.
struct TakeParams {
  const void* x = nullptr;
  const void* ids = nullptr;
  void* out = nullptr;
  int64_t pre = 1, n = 1, post = 1, count = 0;
  IdKind id_kind = IdKind::I64;
  int word_bytes = 1;
  bool index32 = false;
  int max_blocks = 1024;
};

cudaError_t launch_take(const TakeParams& p, cudaStream_t stream);

// The value dtypes index_add computes in after lowering.
enum class AddKind : int { F32, F64, I32, I64, U8, U16 };

// index_add: out [pre, n, post] = zeros, then row j of g [pre, count, post]
// added at row ids[j] (clamped into [0, n)). Deterministic, with no atomics:
// the (id, position) pairs are radix-sorted (stable), cut into chunks of 32
// sorted entries, and each id's rows are summed in increasing position
// within a chunk; an id spanning chunks adds its per-chunk partial sums in
// chunk order. So floats match the CPU (which adds in position order) bit
// for bit unless an id's rows straddle a chunk boundary. pre*n*post > 0;
// count < 2^31, n < 2^31.
struct IndexAddParams {
  const void* g = nullptr;
  const void* ids = nullptr;
  void* out = nullptr;
  void* scratch = nullptr;    // index_add_scratch_bytes, 256-aligned
  void* sort_temp = nullptr;  // CUB's temporary storage: index_add_sort_bytes
  size_t sort_temp_bytes = 0;
  int64_t pre = 1, n = 1, post = 1, count = 0;
  IdKind id_kind = IdKind::I64;
  AddKind add_kind = AddKind::F32;
  int max_blocks = 1024;
};

// The sort buffers and partial sums, from the sizes alone (host only, no
// GPU needed); 0 when count is 0.
size_t index_add_scratch_bytes(const IndexAddParams& p);

// CUB's temporary storage for the sort, by its null-pointer query, which
// asks the current device its architecture (so: Kernel::prepare).
cudaError_t index_add_sort_bytes(const IndexAddParams& p, size_t* bytes);

cudaError_t launch_index_add(const IndexAddParams& p, cudaStream_t stream);

}  // namespace sexpgpu::cuda
