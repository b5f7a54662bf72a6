// What the fused neural kernels (softmax.cu, cross_entropy.cu, norm.cu)
// share: storage conversions, chunked row loads and stores, and the
// fixed-order reductions of a row across its group of threads.
//
// A row (the softmax axis, a sample's logits, the normalised axis) belongs
// to a group of threads: blockDim.x threads per row, blockDim.y rows per
// block (row blockIdx.x * blockDim.y + threadIdx.y). Rows are read in
// chunks of kChunk adjacent elements, one or more 16-byte loads each; which
// thread owns which chunk, and so the order of every sum, depends only on
// the row length and the group size, never on the storage dtype or the
// alignment, so a bf16 kernel reproduces its f32 kernel bit for bit.
//
// NaN and infinity behave as in devices/cpu/kernels_nn.cpp: the row maximum
// skips NaN, a NaN anywhere makes the row's sum (and so every output of it)
// NaN, a +inf maximum makes them NaN too (exp(inf - inf)), and a row with
// no finite maximum but -inf subtracts 0.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "nn_launch.h"

namespace sexpgpu::cuda::nn {

constexpr int kWarp = 32;
constexpr int kChunk = 8;  // elements per chunk: 16 bytes of bf16 or f16

// ---------------------------------------------------------------------------
// Storage and compute types

template <class A, class B>
struct Same {
  static constexpr bool value = false;
};
template <class A>
struct Same<A, A> {
  static constexpr bool value = true;
};

template <class T>
struct ComputeOf {
  using type = float;
};
template <>
struct ComputeOf<double> {
  using type = double;
};
template <class T>
using Compute = typename ComputeOf<T>::type;

// The storage mixes a kernel is built for: one compute dtype, and not both
// half dtypes.
template <class... T>
constexpr bool supported_mix() {
  constexpr bool f64 = (Same<T, double>::value || ...);
  constexpr bool all_f64 = (Same<T, double>::value && ...);
  constexpr bool bf16 = (Same<T, __nv_bfloat16>::value || ...);
  constexpr bool f16 = (Same<T, __half>::value || ...);
  return (!f64 || all_f64) && !(bf16 && f16);
}

// Calls f with a value of the C++ type stored as `s`.
template <class F>
cudaError_t with_storage(Storage s, F&& f) {
  switch (s) {
    case Storage::F32: return f(float());
    case Storage::F64: return f(double());
    case Storage::BF16: return f(__nv_bfloat16());
    case Storage::F16: return f(__half());
  }
  return cudaErrorInvalidValue;
}

__device__ inline float to_compute(float v) {
  return v;
}
__device__ inline double to_compute(double v) {
  return v;
}
__device__ inline float to_compute(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ inline float to_compute(__half v) {
  return __half2float(v);
}

template <class T>
struct Store;
template <>
struct Store<float> {
  __device__ static float from(float v) { return v; }
};
template <>
struct Store<double> {
  __device__ static double from(double v) { return v; }
};
template <>
struct Store<__nv_bfloat16> {
  __device__ static __nv_bfloat16 from(float v) { return __float2bfloat16_rn(v); }
};
template <>
struct Store<__half> {
  __device__ static __half from(float v) { return __float2half_rn(v); }
};

// ---------------------------------------------------------------------------
// Scalars

__device__ inline float infinity(float) {
  return __int_as_float(0x7f800000);
}
__device__ inline double infinity(double) {
  return __longlong_as_double(0x7ff0000000000000LL);
}
__device__ inline float quiet_nan(float) {
  return __int_as_float(0x7fffffff);
}
__device__ inline double quiet_nan(double) {
  return __longlong_as_double(0x7fffffffffffffffLL);
}
__device__ inline float exp_of(float x) {
  return expf(x);
}
__device__ inline double exp_of(double x) {
  return exp(x);
}
__device__ inline float log_of(float x) {
  return logf(x);
}
__device__ inline double log_of(double x) {
  return log(x);
}
__device__ inline float sqrt_of(float x) {
  return sqrtf(x);
}
__device__ inline double sqrt_of(double x) {
  return sqrt(x);
}

__device__ inline float shfl_down(float v, int d) {
  return __shfl_down_sync(0xffffffffu, v, d);
}
__device__ inline double shfl_down(double v, int d) {
  return __shfl_down_sync(0xffffffffu, v, d);
}
__device__ inline int64_t shfl_down(int64_t v, int d) {
  return int64_t(__shfl_down_sync(0xffffffffu, (long long)v, d));
}
__device__ inline float shfl_first(float v) {
  return __shfl_sync(0xffffffffu, v, 0);
}
__device__ inline double shfl_first(double v) {
  return __shfl_sync(0xffffffffu, v, 0);
}
__device__ inline int64_t shfl_first(int64_t v) {
  return int64_t(__shfl_sync(0xffffffffu, (long long)v, 0));
}

// targets[i] of cross_entropy, whatever its integer dtype.
__device__ inline int64_t target_at(const void* targets, TargetType type, int64_t i) {
  switch (type) {
    case TargetType::I32: return static_cast<const int32_t*>(targets)[i];
    case TargetType::I64: return static_cast<const int64_t*>(targets)[i];
    case TargetType::U8: return static_cast<const uint8_t*>(targets)[i];
    case TargetType::U16: return static_cast<const uint16_t*>(targets)[i];
  }
  return -1;
}

// ---------------------------------------------------------------------------
// States combined across a row: a plain sum, and softmax's online
// (maximum, sum of exp(x - maximum)).

template <class T>
struct Sum {
  using Acc = T;
  __device__ static T identity() { return T(0); }
  __device__ static T combine(T a, T b) { return a + b; }
};

template <class T>
struct MaxSum {
  T m, s;
};
template <class T>
__device__ MaxSum<T> shfl_down(MaxSum<T> v, int d) {
  return {shfl_down(v.m, d), shfl_down(v.s, d)};
}
template <class T>
__device__ MaxSum<T> shfl_first(MaxSum<T> v) {
  return {shfl_first(v.m), shfl_first(v.s)};
}

// The CPU's two passes (maximum m skipping NaN, then s = sum of
// exp(x - m)) done online, a batch of elements at a time: the batch raises
// m, the old s is rescaled once, and the batch's exps are independent.
// m never holds NaN; a NaN element makes s NaN for good; a -inf element
// adds 0 (also while m is still -inf, where exp(-inf - -inf) would be NaN),
// so -inf also pads batches past the end of a row.
template <class T>
struct OnlineSoftmax {
  using Acc = MaxSum<T>;
  __device__ static Acc identity() { return {-infinity(T(0)), T(0)}; }
  template <int N>
  __device__ static Acc absorb(Acc a, const T* v) {
    T m = a.m;
#pragma unroll
    for (int j = 0; j < N; ++j) m = v[j] > m ? v[j] : m;
    T s = a.m == m ? a.s : a.s * exp_of(a.m - m);
#pragma unroll
    for (int j = 0; j < N; ++j) s += v[j] == -infinity(T(0)) ? T(0) : exp_of(v[j] - m);
    return {m, s};
  }
  __device__ static Acc combine(Acc a, Acc b) {
    T m = a.m > b.m ? a.m : b.m;
    if (m == -infinity(T(0))) return {m, a.s + b.s};  // 0, or NaN
    return {m, a.s * exp_of(a.m - m) + b.s * exp_of(b.m - m)};
  }
  // The CPU's reading of the final state: m = +inf gives a NaN sum
  // (exp(inf - inf)), m = -inf (no finite element) is replaced by 0.
  __device__ static Acc settle(Acc a) {
    if (a.m == infinity(T(0))) return {a.m, quiet_nan(T(0))};
    if (a.m == -infinity(T(0))) return {T(0), a.s};
    return a;
  }
};

// Every thread of a row's group gets the combination of the group's
// states: a warp's shuffles, then across the group's blockDim.x / 32 warps
// through shared memory. Every thread of the block must call it.
template <class Op>
__device__ typename Op::Acc row_reduce(typename Op::Acc a) {
  using Acc = typename Op::Acc;
  for (int d = kWarp / 2; d > 0; d /= 2) a = Op::combine(a, shfl_down(a, d));
  if (blockDim.x == kWarp) return shfl_first(a);
  __shared__ Acc warps[kNnWideBlock / kWarp];
  __shared__ Acc result[kNnWideBlock / kWarp];
  const int lane = threadIdx.x % kWarp, group_warps = blockDim.x / kWarp;
  const int first_warp = threadIdx.y * group_warps;  // the group's warps are adjacent
  if (lane == 0) warps[first_warp + threadIdx.x / kWarp] = a;
  __syncthreads();
  if (threadIdx.x < kWarp) {
    a = lane < group_warps ? warps[first_warp + lane] : Op::identity();
    for (int d = kWarp / 2; d > 0; d /= 2) a = Op::combine(a, shfl_down(a, d));
    if (lane == 0) result[threadIdx.y] = a;
  }
  __syncthreads();
  return result[threadIdx.y];
}

// This thread's row and whether it exists: the last block may have spare
// row groups, which take row 0 but read and write nothing.
struct RowSlot {
  int64_t row;
  bool live;
};
__device__ inline RowSlot row_slot(int64_t rows) {
  int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  return {row < rows ? row : 0, row < rows};
}

// ---------------------------------------------------------------------------
// Chunks

__device__ inline bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// The first element of this thread's i-th chunk when the group's threads
// take chunks in turn (thread t: chunks t, t + blockDim.x, ...).
__device__ inline int64_t chunk_start(int64_t i) {
  return (threadIdx.x + i * blockDim.x) * kChunk;
}

// row[k, k + kChunk) as compute values, `pad` past n. `aligned`: row is
// 16-byte aligned, so a whole chunk (k a multiple of kChunk) is read in
// 16-byte loads.
template <class T>
__device__ void load_chunk(const T* row, int64_t k, int64_t n, bool aligned, Compute<T> pad,
                           Compute<T>* v) {
  if (aligned && k + kChunk <= n) {
    constexpr int kVectors = int(sizeof(T)) * kChunk / 16;
    const uint4* src = reinterpret_cast<const uint4*>(row + k);
    uint4 raw[kVectors];
#pragma unroll
    for (int q = 0; q < kVectors; ++q) raw[q] = src[q];
    T e[kChunk];
    memcpy(e, raw, sizeof(e));
#pragma unroll
    for (int j = 0; j < kChunk; ++j) v[j] = to_compute(e[j]);
  } else {
#pragma unroll
    for (int j = 0; j < kChunk; ++j) v[j] = k + j < n ? to_compute(row[k + j]) : pad;
  }
}

// Stores v (compute values) as row[k, k + kChunk), within n.
template <class T>
__device__ void store_chunk(T* row, int64_t k, int64_t n, bool aligned, const Compute<T>* v) {
  T e[kChunk];
#pragma unroll
  for (int j = 0; j < kChunk; ++j) e[j] = Store<T>::from(v[j]);
  if (aligned && k + kChunk <= n) {
    constexpr int kVectors = int(sizeof(T)) * kChunk / 16;
    uint4 raw[kVectors];
    memcpy(raw, e, sizeof(e));
    uint4* dst = reinterpret_cast<uint4*>(row + k);
#pragma unroll
    for (int q = 0; q < kVectors; ++q) dst[q] = raw[q];
  } else {
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      if (k + j < n) row[k + j] = e[j];
  }
}

// A register row: this thread's kNnRowChunks chunks of row (n elements),
// chunk i at v[i * kChunk], `pad` past n.
template <class T>
__device__ void load_row(const T* row, int64_t n, Compute<T> pad,
                         Compute<T> (&v)[kNnRowChunks * kChunk]) {
  const bool aligned = aligned16(row);
#pragma unroll
  for (int i = 0; i < kNnRowChunks; ++i)
    load_chunk(row, chunk_start(i), n, aligned, pad, v + i * kChunk);
}

// The launch shape of a row kernel: groups of 32 to `most` threads (a
// power of two), enough for `per_thread` elements each, one per row; as
// many rows to a block as make kNnBlock threads while groups are smaller.
struct RowShape {
  dim3 grid, block;
};
inline RowShape row_shape(int64_t rows, int64_t count, int64_t per_thread, int most) {
  int threads = kWarp;
  while (threads < most && threads * per_thread < count) threads *= 2;
  int per_block = threads < kNnBlock ? kNnBlock / threads : 1;
  return {dim3(unsigned((rows + per_block - 1) / per_block)), dim3(threads, per_block)};
}

// A register row's launch shape: kNnRowChunks chunks per thread.
inline RowShape register_row_shape(int64_t rows, int64_t count) {
  return row_shape(rows, count, kNnRowChunks * kChunk, kNnBlock);
}

}  // namespace sexpgpu::cuda::nn
