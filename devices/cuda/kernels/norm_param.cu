// The kernels of layer_norm_param_grad (kernels_norm_param.cpp): over all
// rows of x and g [rows, dim], the column sums of g xhat and of g, each
// row's mean and rstd = 1/sqrt(biased variance + eps) recomputed from x,
// two passes over the row as layer_norm_grad's kernels (nn.cu) make them.
//
// Rows of up to 32 * kNormParamMaxPerLane* elements take one pass over x
// and g: a warp does a row at a time, lane l holding the chunks of 8
// elements l, l + 32, ... of x and g in registers (16-byte loads; the next
// row's x is loaded while this one is reduced where registers allow), and
// keeps the sums of its elements' columns over the warp's rows in
// registers too; the warps of a block add theirs
// in a fixed tree in shared memory, and the block writes its [2, dim]
// partial to scratch. Longer rows take two: a warp per row writes mean and
// rstd to scratch, then a thread per column sums a split of the rows.
// Either way a last kernel adds the partials in a fixed order: no atomics,
// and results repeat bit for bit. x and g stored in bf16 or f16 are
// widened to f32 exactly, so nothing else differs from f32. Linked to its
// layer_norm_grad, which leaves such partials itself (norm.cu), only the
// last kernel runs.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "norm_param_launch.h"

namespace sexpgpu::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kRowWarps = 8;  // warps in a block of the row kernels
constexpr int kRowThreads = kRowWarps * kWarp;
constexpr int kColumnThreads = 256;       // the two-pass column kernel: a thread per column
constexpr int kFinishSplit = 32;          // the last kernel: threads adding one column's partials
constexpr int kFinishLoads = 8;           // partials a thread of it has in flight
constexpr int64_t kMaxSplits = 1024;      // row splits of the two-pass path
constexpr int64_t kMaxRowBlocks = 65535;  // the statistics kernel strides beyond
constexpr size_t kScratchAlign = 256;
constexpr int kOnePassPrefetchRegisters = 108;

// A stored value in its compute dtype (half storage: exactly, as f32).
__device__ float widen(float v) {
  return v;
}
__device__ double widen(double v) {
  return v;
}
__device__ float widen(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ float widen(__half v) {
  return __half2float(v);
}

__device__ float sqrt_of(float x) {
  return sqrtf(x);
}
__device__ double sqrt_of(double x) {
  return sqrt(x);
}

// The warp's sum in every lane. A butterfly: both lanes of a pair add the
// same two values (a + b == b + a), so every lane holds the same bits.
template <class T>
__device__ T warp_sum(T v) {
#pragma unroll
  for (int d = kWarp / 2; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
  return v;
}

template <class T>
struct RowStatistics {
  T mean, rstd;
};

// rstd from the lane's sum of squared deviations, in every lane.
template <class T>
__device__ T rstd_of(T squares, int64_t dim, T eps) {
  return T(1) / sqrt_of(warp_sum(squares) / T(dim) + eps);
}

// ---------------------------------------------------------------------------
// A lane's share of a row in the one-pass kernel: kPerLane / kChunk chunks
// of kChunk adjacent elements, chunk lane + 32 i, read in 16-byte loads
// where the row is aligned and held as stored, in 32-bit words (two half
// values a word), widened exactly where used. Which lane holds which
// element depends only on the row length, never on the storage dtype.

constexpr int kChunk = 8;

template <class T, int kPerLane>
struct LaneRow {
  static constexpr int kWords = kPerLane * int(sizeof(T)) / 4;
  uint32_t w[kWords];
};

__device__ float widened(float, const uint32_t* w, int e) {
  return __uint_as_float(w[e]);
}
__device__ double widened(double, const uint32_t* w, int e) {
  return __hiloint2double(int(w[2 * e + 1]), int(w[2 * e]));
}
// Exactly __bfloat162float: the 16 bits become the high half of an f32.
__device__ float widened(__nv_bfloat16, const uint32_t* w, int e) {
  return __uint_as_float(e % 2 ? w[e / 2] & 0xffff0000u : w[e / 2] << 16);
}
__device__ float widened(__half, const uint32_t* w, int e) {
  return __half2float(__ushort_as_half((unsigned short)(e % 2 ? w[e / 2] >> 16 : w[e / 2])));
}

// The row's column of this lane's held element e.
__device__ int64_t held_column(int e) {
  return (int64_t(threadIdx.x % kWarp) + int64_t(e / kChunk) * kWarp) * kChunk + e % kChunk;
}

// This lane's share of row[0, dim), 0 past it.
template <class T, int kPerLane>
__device__ void load_lane_row(const T* row, int64_t dim, LaneRow<T, kPerLane>& h) {
  constexpr int kVectors = int(sizeof(T)) * kChunk / 16;  // per chunk
  const bool aligned = reinterpret_cast<uintptr_t>(row) % 16 == 0;
#pragma unroll
  for (int c = 0; c < kPerLane / kChunk; ++c) {
    const int64_t k = held_column(c * kChunk);
    uint4 raw[kVectors] = {};
    if (aligned && k + kChunk <= dim) {
      const uint4* src = reinterpret_cast<const uint4*>(row + k);
#pragma unroll
      for (int q = 0; q < kVectors; ++q) raw[q] = src[q];
    } else {
      T e[kChunk];
      memcpy(e, raw, sizeof(e));  // zeros
#pragma unroll
      for (int j = 0; j < kChunk; ++j)
        if (k + j < dim) e[j] = row[k + j];
      memcpy(raw, e, sizeof(e));
    }
    memcpy(h.w + c * kVectors * 4, raw, sizeof(raw));
  }
}

// Whether the one-pass kernel loads the next row's x while it reduces the
// current one: where the two x rows, the g row and the two sums fit the
// registers of two resident blocks without spilling.
template <class T, int kPerLane, class X, class G>
constexpr bool one_pass_prefetches() {
  return 2 * LaneRow<X, kPerLane>::kWords + LaneRow<G, kPerLane>::kWords +
             2 * LaneRow<T, kPerLane>::kWords <=
         kOnePassPrefetchRegisters;
}

// Blocks of the one-pass kernel resident on a multiprocessor: two while a
// lane's registers (x, g and the two sums: 4 * per_lane values) fit in the
// 128 registers that allows.
constexpr int one_pass_blocks_per_sm(int per_lane, bool f64) {
  return per_lane * (f64 ? 2 : 1) <= 24 ? 2 : 1;
}

// ---------------------------------------------------------------------------
// One pass

// The warps of a block hand their sums of both kinds down a fixed tree,
// warps [h, 2h) to warps [0, h) for h = kRowWarps / 2, ..., 1, so warp 0
// ends with the block's: both kinds a level, so a level's two barriers
// serve both. `shared` holds kRowWarps / 2 warps' sums of both kinds.
template <class T, int kPerLane>
__device__ void block_sum(T (&weight)[kPerLane], T (&bias)[kPerLane], T* shared) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
#pragma unroll
  for (int h = kRowWarps / 2; h > 0; h /= 2) {
    if (warp >= h && warp < 2 * h) {
      T* to = shared + (warp - h) * 2 * kPerLane * kWarp + lane;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        to[i * kWarp] = weight[i];
        to[(kPerLane + i) * kWarp] = bias[i];
      }
    }
    __syncthreads();
    if (warp < h) {
      const T* from = shared + warp * 2 * kPerLane * kWarp + lane;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        weight[i] += from[i * kWarp];
        bias[i] += from[(kPerLane + i) * kWarp];
      }
    }
    __syncthreads();
  }
}

// Block b's partial sums over rows b * kRowWarps + w + k * gridDim.x *
// kRowWarps (warp w, k = 0, 1, ...): sum g xhat to partials[b][0][:], sum
// g to partials[b][1][:].
template <class T, int kPerLane, class X, class G>
__global__ void __launch_bounds__(kRowThreads, one_pass_blocks_per_sm(kPerLane, sizeof(T) == 8))
    one_pass_partials(const X* __restrict__ x, const G* __restrict__ g, int64_t rows, int64_t dim,
                      T eps, T* __restrict__ partials) {
  __shared__ T shared[kRowWarps / 2 * 2 * kPerLane * kWarp];
  const int warp = threadIdx.x / kWarp;
  T weight_sum[kPerLane], bias_sum[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) weight_sum[i] = bias_sum[i] = T(0);
  constexpr bool kPrefetch = one_pass_prefetches<T, kPerLane, X, G>();
  const int64_t warps = int64_t(gridDim.x) * kRowWarps;
  int64_t row = int64_t(blockIdx.x) * kRowWarps + warp;
  LaneRow<X, kPerLane> next_x;
  if (kPrefetch && row < rows) load_lane_row(x + row * dim, dim, next_x);
  for (; row < rows; row += warps) {
    LaneRow<X, kPerLane> xs;
    if (kPrefetch) {
      xs = next_x;
      if (row + warps < rows) load_lane_row(x + (row + warps) * dim, dim, next_x);
    } else {
      load_lane_row(x + row * dim, dim, xs);
    }
    LaneRow<G, kPerLane> gs;
    load_lane_row(g + row * dim, dim, gs);
    T xv[kPerLane];
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) xv[e] = widened(X(), xs.w, e);
    T sum = 0;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) sum += xv[e];  // 0 past the row
    const T mean = warp_sum(sum) / T(dim);
    T squares = 0;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e)
      if (held_column(e) < dim) squares += (xv[e] - mean) * (xv[e] - mean);
    const T rstd = rstd_of(squares, dim, eps);
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) {
      const T gv = widened(G(), gs.w, e);
      weight_sum[e] += gv * ((xv[e] - mean) * rstd);
      bias_sum[e] += gv;
    }
  }
  block_sum(weight_sum, bias_sum, shared);
  if (warp != 0) return;
  T* p = partials + int64_t(blockIdx.x) * 2 * dim;
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) {
    const int64_t k = held_column(e);
    if (k < dim) {
      p[k] = weight_sum[e];
      p[dim + k] = bias_sum[e];
    }
  }
}

// ---------------------------------------------------------------------------
// Two passes

// stats[row] = (mean, rstd), a warp per row.
template <class T, class X>
__global__ void __launch_bounds__(kRowThreads)
    row_statistics(const X* __restrict__ x, int64_t rows, int64_t dim, T eps,
                   RowStatistics<T>* __restrict__ stats) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t(gridDim.x) * kRowWarps;
  for (int64_t row = int64_t(blockIdx.x) * kRowWarps + threadIdx.x / kWarp; row < rows;
       row += warps) {
    const X* xr = x + row * dim;
    T sum = 0;
    for (int64_t k = lane; k < dim; k += kWarp) sum += widen(xr[k]);
    const T mean = warp_sum(sum) / T(dim);
    T squares = 0;
    for (int64_t k = lane; k < dim; k += kWarp) {
      const T d = widen(xr[k]) - mean;
      squares += d * d;
    }
    const T rstd = rstd_of(squares, dim, eps);
    if (lane == 0) stats[row] = {mean, rstd};
  }
}

// Split blockIdx.y's rows [y * rows_per_split, ...) summed per column, a
// thread per column, into partials[y][0][:] (g xhat) and partials[y][1][:]
// (g).
template <class T, class X, class G>
__global__ void __launch_bounds__(kColumnThreads)
    column_partials(const X* __restrict__ x, const G* __restrict__ g,
                    const RowStatistics<T>* __restrict__ stats, int64_t rows, int64_t dim,
                    int64_t rows_per_split, T* __restrict__ partials) {
  const int64_t k = int64_t(blockIdx.x) * kColumnThreads + threadIdx.x;
  if (k >= dim) return;
  const int64_t begin = int64_t(blockIdx.y) * rows_per_split;
  const int64_t end = begin + rows_per_split < rows ? begin + rows_per_split : rows;
  T weight_sum = 0, bias_sum = 0;
  for (int64_t row = begin; row < end; ++row) {
    const RowStatistics<T> s = stats[row];
    const T gv = widen(g[row * dim + k]);
    weight_sum += gv * ((widen(x[row * dim + k]) - s.mean) * s.rstd);
    bias_sum += gv;
  }
  T* p = partials + int64_t(blockIdx.y) * 2 * dim;
  p[k] = weight_sum;
  p[dim + k] = bias_sum;
}

// ---------------------------------------------------------------------------
// The last kernel

// out[j] = the sum over p < parts of partials[p][j], j < width: thread
// (x, y) of a block adds parts y, y + kFinishSplit, ... in order, its
// loads issued kFinishLoads at a time (the partials are a few rounds of L2
// latency, not bandwidth), then thread (x, 0) adds the kFinishSplit sums in
// order. No parts: zeros.
template <class T>
__global__ void __launch_bounds__(kWarp* kFinishSplit)
    finish_sums(const T* __restrict__ partials, int64_t parts, int64_t width, T* __restrict__ out) {
  __shared__ T sums[kFinishSplit][kWarp];
  const int64_t j = int64_t(blockIdx.x) * kWarp + threadIdx.x;
  T s = 0;
  if (j < width) {
    int64_t p = threadIdx.y;
    for (; p + (kFinishLoads - 1) * kFinishSplit < parts; p += kFinishLoads * kFinishSplit) {
      T v[kFinishLoads];
#pragma unroll
      for (int i = 0; i < kFinishLoads; ++i) v[i] = partials[(p + i * kFinishSplit) * width + j];
#pragma unroll
      for (int i = 0; i < kFinishLoads; ++i) s += v[i];
    }
    for (; p < parts; p += kFinishSplit) s += partials[p * width + j];
  }
  sums[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y != 0 || j >= width) return;
  T total = sums[0][threadIdx.x];
#pragma unroll
  for (int y = 1; y < kFinishSplit; ++y) total += sums[y][threadIdx.x];
  out[j] = total;
}

// ---------------------------------------------------------------------------
// Launching

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

size_t align_up(size_t bytes) {
  return (bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
}

size_t element_bytes(const NormParamGradParams& p) {
  return p.f64 ? sizeof(double) : sizeof(float);
}

// The two-pass path keeps the row statistics ahead of the partials.
size_t statistics_bytes(const NormParamGradParams& p) {
  return p.per_lane != 0 ? 0 : align_up(size_t(p.rows) * 2 * element_bytes(p));
}

template <class T, int kPerLane, class X, class G>
void launch_one_pass(const NormParamGradParams& p, const X* x, const G* g, T* partials,
                     cudaStream_t stream) {
  one_pass_partials<T, kPerLane>
      <<<unsigned(p.parts), kRowThreads, 0, stream>>>(x, g, p.rows, p.dim, T(p.eps), partials);
}

// The one-pass kernel for this many elements a lane; f64 stops at
// kNormParamMaxPerLaneF64, the plan never asks for more.
template <class T, class X, class G>
cudaError_t one_pass(const NormParamGradParams& p, const X* x, const G* g, T* partials,
                     cudaStream_t stream) {
  constexpr bool kF32 = sizeof(T) == sizeof(float);
  switch (p.per_lane) {
    case 8: launch_one_pass<T, 8>(p, x, g, partials, stream); break;
    case 16: launch_one_pass<T, 16>(p, x, g, partials, stream); break;
    case 24:
      if constexpr (kF32) {
        launch_one_pass<T, 24>(p, x, g, partials, stream);
        break;
      } else {
        return cudaErrorInvalidValue;
      }
    case 32:
      if constexpr (kF32) {
        launch_one_pass<T, 32>(p, x, g, partials, stream);
        break;
      } else {
        return cudaErrorInvalidValue;
      }
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

template <class T, class X, class G>
cudaError_t two_pass(const NormParamGradParams& p, const X* x, const G* g, void* scratch,
                     T* partials, cudaStream_t stream) {
  auto* stats = static_cast<RowStatistics<T>*>(scratch);
  const int64_t row_blocks = ceil_div(p.rows, kRowWarps);
  row_statistics<T><<<unsigned(row_blocks < kMaxRowBlocks ? row_blocks : kMaxRowBlocks),
                      kRowThreads, 0, stream>>>(x, p.rows, p.dim, T(p.eps), stats);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  dim3 grid(unsigned(ceil_div(p.dim, kColumnThreads)), unsigned(p.parts));
  column_partials<T>
      <<<grid, kColumnThreads, 0, stream>>>(x, g, stats, p.rows, p.dim, p.rows_per_part, partials);
  return cudaGetLastError();
}

// out [2, dim] = the sum of the p.parts partials [2, dim] in order.
template <class T>
cudaError_t finish(const NormParamGradParams& p, const T* partials, void* out,
                   cudaStream_t stream) {
  const int64_t width = 2 * p.dim;
  finish_sums<T><<<unsigned(ceil_div(width, kWarp)), dim3(kWarp, kFinishSplit), 0, stream>>>(
      partials, p.parts, width, static_cast<T*>(out));
  return cudaGetLastError();
}

// T the compute dtype, X and G how x and g are stored.
template <class T, class X, class G>
cudaError_t launch_typed(const NormParamGradParams& p, const void* x, const void* g, void* out,
                         void* scratch, cudaStream_t stream) {
  const X* xs = static_cast<const X*>(x);
  const G* gs = static_cast<const G*>(g);
  T* partials = reinterpret_cast<T*>(static_cast<char*>(scratch) + statistics_bytes(p));
  if (p.parts > 0) {
    cudaError_t e = p.per_lane != 0 ? one_pass<T>(p, xs, gs, partials, stream)
                                    : two_pass<T>(p, xs, gs, scratch, partials, stream);
    if (e != cudaSuccess) return e;
  }
  return finish<T>(p, partials, out, stream);
}

// Calls f with a value of the C++ type an f32 kernel's operand is stored
// as; F64 is for f64 kernels only.
template <class F>
cudaError_t with_f32_storage(NormParamStorage s, F&& f) {
  switch (s) {
    case NormParamStorage::F32: return f(float());
    case NormParamStorage::BF16: return f(__nv_bfloat16());
    case NormParamStorage::F16: return f(__half());
    case NormParamStorage::F64: break;
  }
  return cudaErrorInvalidValue;
}

template <class A, class B>
struct SameType {
  static constexpr bool value = false;
};
template <class A>
struct SameType<A, A> {
  static constexpr bool value = true;
};

// bf16 with f16: no kernel is built for it.
template <class A, class B>
constexpr bool kMixedHalves = sizeof(A) == 2 && sizeof(B) == 2 && !SameType<A, B>::value;

}  // namespace

NormParamGradParams plan_norm_param_grad(bool f64, int64_t rows, int64_t dim, double eps,
                                         int sm_count) {
  NormParamGradParams p;
  p.f64 = f64;
  p.rows = rows;
  p.dim = dim;
  p.eps = eps;
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  const int64_t lanes = ceil_div(dim, kWarp);
  const int most = f64 ? kNormParamMaxPerLaneF64 : kNormParamMaxPerLaneF32;
  if (lanes <= most) {
    p.per_lane = int(ceil_div(lanes, 8) * 8);
    if (p.per_lane == 0) p.per_lane = 8;
    const int64_t resident = one_pass_blocks_per_sm(p.per_lane, f64) * sms;
    const int64_t needed = ceil_div(rows, kRowWarps);
    p.parts = needed < resident ? needed : resident;
    return p;
  }
  // Two passes: about four blocks a multiprocessor over the column blocks
  // and the row splits.
  const int64_t column_blocks = ceil_div(dim, kColumnThreads);
  int64_t splits = ceil_div(4 * sms, column_blocks);
  if (splits > kMaxSplits) splits = kMaxSplits;
  if (splits > rows) splits = rows;
  if (splits > 0) {
    p.rows_per_part = ceil_div(rows, splits);
    p.parts = ceil_div(rows, p.rows_per_part);
  }
  return p;
}

size_t norm_param_grad_scratch_bytes(const NormParamGradParams& p) {
  return statistics_bytes(p) + size_t(p.parts) * 2 * size_t(p.dim) * element_bytes(p);
}

cudaError_t launch_norm_param_grad(const NormParamGradParams& p, const void* x, const void* g,
                                   void* out, void* scratch, cudaStream_t stream) {
  if (p.f64) {
    if (p.x != NormParamStorage::F64 || p.g != NormParamStorage::F64) return cudaErrorInvalidValue;
    return launch_typed<double, double, double>(p, x, g, out, scratch, stream);
  }
  return with_f32_storage(p.x, [&](auto x_type) {
    return with_f32_storage(p.g, [&](auto g_type) {
      using X = decltype(x_type);
      using G = decltype(g_type);
      if constexpr (kMixedHalves<X, G>)
        return cudaErrorInvalidValue;
      else
        return launch_typed<float, X, G>(p, x, g, out, scratch, stream);
    });
  });
}

cudaError_t launch_norm_param_grad_finish(const NormParamGradParams& p, const void* partials,
                                          void* out, cudaStream_t stream) {
  if (p.dim == 0) return cudaSuccess;
  return p.f64 ? finish<double>(p, static_cast<const double*>(partials), out, stream)
               : finish<float>(p, static_cast<const float*>(partials), out, stream);
}

}  // namespace sexpgpu::cuda
