// softmax and log_softmax over one axis, behind kernels_nn.cpp. Rows of up
// to kNnRegisterRowLimit elements along the last axis are held in
// registers (read once, any storage mix of nn_rows.cuh); longer rows get a
// block each, keeping the row in shared memory when it fits; a middle axis
// gets a thread per column. The last two store f32 or f64 only.
#include <cuda_runtime.h>

#include <cstdint>

#include "nn_launch.h"
#include "nn_rows.cuh"

namespace sexpgpu::cuda {
namespace {

using namespace nn;

constexpr int kWideBatch = 16;  // loads in flight per thread of a block row

// What the output pass needs of a settled state: exp(x - m) * (1/s), or
// x - (m + log s).
template <class T>
struct SoftmaxOut {
  T m, inv, lse;
  bool log;
  __device__ SoftmaxOut(MaxSum<T> a, bool log_softmax)
      : m(a.m), inv(T(1) / a.s), lse(a.m + log_of(a.s)), log(log_softmax) {}
  __device__ T operator()(T x) const { return log ? x - lse : exp_of(x - m) * inv; }
};

template <class In, class Out>
__global__ void __launch_bounds__(kNnBlock)
    softmax_register_rows(const In* __restrict__ x, Out* __restrict__ out, int64_t rows,
                          int64_t count, bool log) {
  using C = Compute<In>;
  constexpr int kHeld = kNnRowChunks * kChunk;
  RowSlot r = row_slot(rows);
  const int64_t n = r.live ? count : 0;
  C v[kHeld];
  load_row(x + r.row * count, n, -infinity(C(0)), v);
  MaxSum<C> a = OnlineSoftmax<C>::template absorb<kHeld>(OnlineSoftmax<C>::identity(), v);
  const SoftmaxOut<C> f(OnlineSoftmax<C>::settle(row_reduce<OnlineSoftmax<C>>(a)), log);
  Out* o = out + r.row * count;
  const bool aligned = aligned16(o);
#pragma unroll
  for (int i = 0; i < kNnRowChunks; ++i) {
    C y[kChunk];
#pragma unroll
    for (int j = 0; j < kChunk; ++j) y[j] = f(v[i * kChunk + j]);
    if (chunk_start(i) < n) store_chunk(o, chunk_start(i), n, aligned, y);
  }
}

// The online softmax state of x[k], k = first, first + step, ... below n,
// kWideBatch loads at a time. kCache: also copies each element to cache[k].
template <class T, bool kCache>
__device__ MaxSum<T> softmax_state(const T* x, int64_t n, int64_t first, int64_t step, T* cache) {
  MaxSum<T> a = OnlineSoftmax<T>::identity();
  for (int64_t k0 = first; k0 < n; k0 += kWideBatch * step) {
    T v[kWideBatch];
#pragma unroll
    for (int j = 0; j < kWideBatch; ++j) {
      int64_t k = k0 + j * step;
      v[j] = k < n ? x[k] : -infinity(T(0));
      if (kCache && k < n) cache[k] = v[j];
    }
    a = OnlineSoftmax<T>::template absorb<kWideBatch>(a, v);
  }
  return a;
}

// A block of kNnWideBlock threads per row. kCached: the first pass also
// copies the row into dynamic shared memory (cache_bytes), where the
// second reads it; each thread reads back only what it wrote.
template <class T, bool kCached>
__global__ void __launch_bounds__(kNnWideBlock)
    softmax_block_rows(const T* __restrict__ x, T* __restrict__ out, int64_t count, bool log) {
  extern __shared__ double cache_storage[];  // double: aligned for either T
  T* cache = reinterpret_cast<T*>(cache_storage);
  const T* xr = x + int64_t(blockIdx.x) * count;
  MaxSum<T> a = softmax_state<T, kCached>(xr, count, threadIdx.x, blockDim.x, cache);
  const SoftmaxOut<T> f(OnlineSoftmax<T>::settle(row_reduce<OnlineSoftmax<T>>(a)), log);
  const T* src = kCached ? cache : xr;
  T* o = out + int64_t(blockIdx.x) * count;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) o[k] = f(src[k]);
}

// Softmax over a middle axis: a thread per (outer, inner) pair, so that
// neighbouring threads read neighbouring elements at every step.
template <class T>
__global__ void __launch_bounds__(kNnBlock)
    softmax_columns(const T* __restrict__ x, T* __restrict__ out, int64_t outer, int64_t count,
                    int64_t inner, bool log) {
  const int64_t columns = outer * inner;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < columns;
       c += int64_t(gridDim.x) * blockDim.x) {
    const T* xc = x + (c / inner) * count * inner + c % inner;
    T* oc = out + (xc - x);
    MaxSum<T> a = OnlineSoftmax<T>::identity();
    for (int64_t k = 0; k < count; ++k) {
      T v[1] = {xc[k * inner]};
      a = OnlineSoftmax<T>::template absorb<1>(a, v);
    }
    const SoftmaxOut<T> f(OnlineSoftmax<T>::settle(a), log);
    for (int64_t k = 0; k < count; ++k) oc[k * inner] = f(xc[k * inner]);
  }
}

template <class T>
cudaError_t softmax_wide(const SoftmaxParams& p, const void* x, void* out, cudaStream_t stream) {
  const T* in = static_cast<const T*>(x);
  T* o = static_cast<T*>(out);
  if (p.inner != 1) {
    int64_t blocks = (p.outer * p.inner + kNnBlock - 1) / kNnBlock;
    unsigned grid = unsigned(blocks < 65536 ? blocks : 65536);  // grid-stride beyond
    softmax_columns<T><<<grid, kNnBlock, 0, stream>>>(in, o, p.outer, p.count, p.inner, p.log);
  } else if (p.cache_bytes > 0) {
    softmax_block_rows<T, true>
        <<<unsigned(p.outer), kNnWideBlock, p.cache_bytes, stream>>>(in, o, p.count, p.log);
  } else {
    softmax_block_rows<T, false>
        <<<unsigned(p.outer), kNnWideBlock, 0, stream>>>(in, o, p.count, p.log);
  }
  return cudaGetLastError();
}

bool register_rows(const SoftmaxParams& p) {
  return p.inner == 1 && p.count <= kNnRegisterRowLimit;
}

}  // namespace

cudaError_t prepare_softmax(const SoftmaxParams& p) {
  if (p.cache_bytes == 0) return cudaSuccess;
  const int bytes = int(p.cache_bytes);
  if (p.in == Storage::F64)
    return cudaFuncSetAttribute(softmax_block_rows<double, true>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  return cudaFuncSetAttribute(softmax_block_rows<float, true>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

cudaError_t launch_softmax(const SoftmaxParams& p, const void* x, void* out, cudaStream_t stream) {
  if (!register_rows(p)) {
    if (p.in != p.out) return cudaErrorInvalidValue;
    if (p.in == Storage::F64) return softmax_wide<double>(p, x, out, stream);
    if (p.in == Storage::F32) return softmax_wide<float>(p, x, out, stream);
    return cudaErrorInvalidValue;
  }
  return with_storage(p.in, [&](auto in_type) {
    return with_storage(p.out, [&](auto out_type) {
      using In = decltype(in_type);
      using Out = decltype(out_type);
      if constexpr (!supported_mix<In, Out>()) {
        return cudaErrorInvalidValue;
      } else {
        RowShape l = register_row_shape(p.outer, p.count);
        softmax_register_rows<In, Out><<<l.grid, l.block, 0, stream>>>(
            static_cast<const In*>(x), static_cast<Out*>(out), p.outer, p.count, p.log);
        return cudaGetLastError();
      }
    });
  });
}

}  // namespace sexpgpu::cuda
