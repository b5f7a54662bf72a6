// layer_norm, rms_norm and layer_norm_grad (with respect to x) over the
// last axis, behind kernels_nn.cpp.
//
// Rows of up to kNnRegisterRowLimit elements are held in registers, in any
// storage mix of nn_rows.cuh: GPT-2's 768 get a warp per row, 24 elements a
// lane in 16-byte loads, so a row is read once and every reduction is
// shuffles alone. Longer rows get a block each and are read again in each
// pass, in f32 or f64 storage only. Sums are fixed-order trees, so results
// repeat bit for bit.
#include <cuda_runtime.h>

#include <cstdint>

#include "nn_launch.h"
#include "nn_rows.cuh"

namespace sexpgpu::cuda {
namespace {

using namespace nn;

constexpr int kHeld = kNnRowChunks * kChunk;  // a register row's elements per thread
constexpr int kBatch = 8;                     // loads in flight per thread of a block row

// ---------------------------------------------------------------------------
// layer_norm / rms_norm: y = (x - mean) / sqrt(var + eps) * weight + bias
// with the biased variance (two passes); rms_norm takes mean 0, no bias.

template <class T, bool kLayer>
__device__ T normalised(T x, T mean, T inv, T weight, T bias) {
  T y = (x - mean) * inv * weight;
  return kLayer ? y + bias : y;
}

template <class X, class Out, bool kLayer>
__global__ void __launch_bounds__(kNnBlock)
    norm_register_rows(const X* __restrict__ x, const Compute<X>* __restrict__ weight,
                       const Compute<X>* __restrict__ bias, Out* __restrict__ out, int64_t rows,
                       int64_t dim, Compute<X> eps) {
  using C = Compute<X>;
  RowSlot r = row_slot(rows);
  const int64_t n = r.live ? dim : 0;
  C v[kHeld];
  load_row(x + r.row * dim, n, C(0), v);
  C mean = 0;
  if (kLayer) {
    C sum = 0;
#pragma unroll
    for (int i = 0; i < kHeld; ++i) sum += v[i];  // 0 past the row
    mean = row_reduce<Sum<C>>(sum) / C(dim);
  }
  C squares = 0;
#pragma unroll
  for (int i = 0; i < kHeld; ++i)
    if (chunk_start(i / kChunk) + i % kChunk < n) squares += (v[i] - mean) * (v[i] - mean);
  const C inv = C(1) / sqrt_of(row_reduce<Sum<C>>(squares) / C(dim) + eps);
  Out* o = out + r.row * dim;
  const bool out_aligned = aligned16(o), params_aligned = aligned16(weight) && aligned16(bias);
#pragma unroll
  for (int i = 0; i < kNnRowChunks; ++i) {
    const int64_t k = chunk_start(i);
    if (k >= n) break;
    C w[kChunk], b[kChunk], y[kChunk];
    load_chunk(weight, k, n, params_aligned, C(0), w);
    if (kLayer) load_chunk(bias, k, n, params_aligned, C(0), b);
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      y[j] = normalised<C, kLayer>(v[i * kChunk + j], mean, inv, w[j], kLayer ? b[j] : C(0));
    store_chunk(o, k, n, out_aligned, y);
  }
}

// Calls f(x[k]) for k = first, first + step, ... below n, in that order,
// loading kBatch elements before using them.
template <class T, class F>
__device__ void for_each_batched(const T* x, int64_t n, int64_t first, int64_t step, F&& f) {
  for (int64_t k0 = first; k0 < n; k0 += kBatch * step) {
    T v[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      int64_t k = k0 + j * step;
      v[j] = k < n ? x[k] : T(0);
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j)
      if (k0 + j * step < n) f(v[j]);
  }
}

template <class T, bool kLayer>
__global__ void __launch_bounds__(kNnBlock)
    norm_block_rows(const T* __restrict__ x, const T* __restrict__ weight,
                    const T* __restrict__ bias, T* __restrict__ out, int64_t dim, T eps) {
  const T* xr = x + int64_t(blockIdx.x) * dim;
  T mean = 0;
  if (kLayer) {
    T sum = 0;
    for_each_batched(xr, dim, threadIdx.x, blockDim.x, [&](T v) { sum += v; });
    mean = row_reduce<Sum<T>>(sum) / T(dim);
  }
  T squares = 0;
  for_each_batched(xr, dim, threadIdx.x, blockDim.x,
                   [&](T v) { squares += (v - mean) * (v - mean); });
  const T inv = T(1) / sqrt_of(row_reduce<Sum<T>>(squares) / T(dim) + eps);
  T* o = out + int64_t(blockIdx.x) * dim;
  for (int64_t k = threadIdx.x; k < dim; k += blockDim.x)
    o[k] = normalised<T, kLayer>(xr[k], mean, inv, weight[k], kLayer ? bias[k] : T(0));
}

// ---------------------------------------------------------------------------
// layer_norm_grad: dx = rstd (gh - mean(gh) - xhat mean(gh xhat)) with
// gh = g w, the statistics recomputed from x as norm_*_rows does.

template <class T>
__device__ T layer_norm_dx(T x, T gh, T mean, T rstd, T mean_gh, T mean_ghx) {
  return rstd * (gh - mean_gh - (x - mean) * rstd * mean_ghx);
}

template <class X, class G, class Out>
__global__ void __launch_bounds__(kNnBlock)
    layer_norm_grad_register_rows(const X* __restrict__ x, const Compute<X>* __restrict__ weight,
                                  const G* __restrict__ g, Out* __restrict__ out, int64_t rows,
                                  int64_t dim, Compute<X> eps) {
  using C = Compute<X>;
  RowSlot r = row_slot(rows);
  const int64_t n = r.live ? dim : 0;
  C v[kHeld], gh[kHeld];
  load_row(x + r.row * dim, n, C(0), v);
  load_row(g + r.row * dim, n, C(0), gh);
  const bool weight_aligned = aligned16(weight);
  C sum = 0;
#pragma unroll
  for (int i = 0; i < kNnRowChunks; ++i) {
    C w[kChunk];
    load_chunk(weight, chunk_start(i), n, weight_aligned, C(0), w);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      gh[i * kChunk + j] *= w[j];  // 0 past the row
      sum += v[i * kChunk + j];
    }
  }
  const C mean = row_reduce<Sum<C>>(sum) / C(dim);
  C squares = 0;
#pragma unroll
  for (int i = 0; i < kHeld; ++i)
    if (chunk_start(i / kChunk) + i % kChunk < n) squares += (v[i] - mean) * (v[i] - mean);
  const C rstd = C(1) / sqrt_of(row_reduce<Sum<C>>(squares) / C(dim) + eps);
  C sum_gh = 0, sum_ghx = 0;
#pragma unroll
  for (int i = 0; i < kHeld; ++i)
    if (chunk_start(i / kChunk) + i % kChunk < n) {
      sum_gh += gh[i];
      sum_ghx += gh[i] * (v[i] - mean) * rstd;
    }
  const C mean_gh = row_reduce<Sum<C>>(sum_gh) / C(dim);
  const C mean_ghx = row_reduce<Sum<C>>(sum_ghx) / C(dim);
  Out* o = out + r.row * dim;
  const bool out_aligned = aligned16(o);
#pragma unroll
  for (int i = 0; i < kNnRowChunks; ++i) {
    const int64_t k = chunk_start(i);
    if (k >= n) break;
    C y[kChunk];
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const int e = i * kChunk + j;
      y[j] = layer_norm_dx(v[e], gh[e], mean, rstd, mean_gh, mean_ghx);
    }
    store_chunk(o, k, n, out_aligned, y);
  }
}

// A block per row longer than a register row: x, g and the weight are read
// again in each pass.
template <class T>
__global__ void __launch_bounds__(kNnBlock)
    layer_norm_grad_block_rows(const T* __restrict__ x, const T* __restrict__ weight,
                               const T* __restrict__ g, T* __restrict__ out, int64_t dim, T eps) {
  const T* xr = x + int64_t(blockIdx.x) * dim;
  const T* gr = g + int64_t(blockIdx.x) * dim;
  T sum = 0;
  for (int64_t k = threadIdx.x; k < dim; k += blockDim.x) sum += xr[k];
  const T mean = row_reduce<Sum<T>>(sum) / T(dim);
  T squares = 0;
  for (int64_t k = threadIdx.x; k < dim; k += blockDim.x)
    squares += (xr[k] - mean) * (xr[k] - mean);
  const T rstd = T(1) / sqrt_of(row_reduce<Sum<T>>(squares) / T(dim) + eps);
  T sum_gh = 0, sum_ghx = 0;
  for (int64_t k = threadIdx.x; k < dim; k += blockDim.x) {
    const T gh = gr[k] * weight[k];
    sum_gh += gh;
    sum_ghx += gh * (xr[k] - mean) * rstd;
  }
  const T mean_gh = row_reduce<Sum<T>>(sum_gh) / T(dim);
  const T mean_ghx = row_reduce<Sum<T>>(sum_ghx) / T(dim);
  T* o = out + int64_t(blockIdx.x) * dim;
  for (int64_t k = threadIdx.x; k < dim; k += blockDim.x)
    o[k] = layer_norm_dx(xr[k], gr[k] * weight[k], mean, rstd, mean_gh, mean_ghx);
}

// ---------------------------------------------------------------------------
// Launching

bool register_rows(int64_t dim) {
  return dim <= kNnRegisterRowLimit;
}

template <class T, bool kLayer>
cudaError_t norm_wide(const NormParams& p, const void* x, const void* w, const void* b, void* out,
                      cudaStream_t stream) {
  norm_block_rows<T, kLayer><<<unsigned(p.rows), kNnBlock, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(b),
      static_cast<T*>(out), p.dim, T(p.eps));
  return cudaGetLastError();
}

template <bool kLayer>
cudaError_t norm_rows(const NormParams& p, const void* x, const void* w, const void* b, void* out,
                      cudaStream_t stream) {
  if (!register_rows(p.dim)) {
    if (p.x != p.out) return cudaErrorInvalidValue;
    if (p.x == Storage::F64) return norm_wide<double, kLayer>(p, x, w, b, out, stream);
    if (p.x == Storage::F32) return norm_wide<float, kLayer>(p, x, w, b, out, stream);
    return cudaErrorInvalidValue;
  }
  return with_storage(p.x, [&](auto x_type) {
    return with_storage(p.out, [&](auto out_type) {
      using X = decltype(x_type);
      using Out = decltype(out_type);
      using C = Compute<X>;
      if constexpr (!supported_mix<X, Out>()) {
        return cudaErrorInvalidValue;
      } else {
        RowShape l = register_row_shape(p.rows, p.dim);
        norm_register_rows<X, Out, kLayer><<<l.grid, l.block, 0, stream>>>(
            static_cast<const X*>(x), static_cast<const C*>(w), static_cast<const C*>(b),
            static_cast<Out*>(out), p.rows, p.dim, C(p.eps));
        return cudaGetLastError();
      }
    });
  });
}

template <class T>
cudaError_t layer_norm_grad_wide(const LayerNormGradParams& p, const void* x, const void* w,
                                 const void* g, void* out, cudaStream_t stream) {
  layer_norm_grad_block_rows<T><<<unsigned(p.rows), kNnBlock, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(g),
      static_cast<T*>(out), p.dim, T(p.eps));
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_norm(const NormParams& p, const void* x, const void* weight, const void* bias,
                        void* out, cudaStream_t stream) {
  return p.layer ? norm_rows<true>(p, x, weight, bias, out, stream)
                 : norm_rows<false>(p, x, weight, bias, out, stream);
}

cudaError_t launch_layer_norm_grad(const LayerNormGradParams& p, const void* x, const void* weight,
                                   const void* g, void* out, cudaStream_t stream) {
  if (!register_rows(p.dim)) {
    if (p.x != p.out || p.g != p.out) return cudaErrorInvalidValue;
    if (p.x == Storage::F64) return layer_norm_grad_wide<double>(p, x, weight, g, out, stream);
    if (p.x == Storage::F32) return layer_norm_grad_wide<float>(p, x, weight, g, out, stream);
    return cudaErrorInvalidValue;
  }
  return with_storage(p.x, [&](auto x_type) {
    return with_storage(p.g, [&](auto g_type) {
      return with_storage(p.out, [&](auto out_type) {
        using X = decltype(x_type);
        using G = decltype(g_type);
        using Out = decltype(out_type);
        using C = Compute<X>;
        if constexpr (!supported_mix<X, G, Out>()) {
          return cudaErrorInvalidValue;
        } else {
          RowShape l = register_row_shape(p.rows, p.dim);
          layer_norm_grad_register_rows<X, G, Out><<<l.grid, l.block, 0, stream>>>(
              static_cast<const X*>(x), static_cast<const C*>(weight), static_cast<const G*>(g),
              static_cast<Out*>(out), p.rows, p.dim, C(p.eps));
          return cudaGetLastError();
        }
      });
    });
  });
}

}  // namespace sexpgpu::cuda
