// max_pool2d, avg_pool2d and their gradients (pool_launch.h), one thread per
// output element, as devices/cpu/kernels_pool.cpp computes them: max pads
// with -inf (padding never wins) and a NaN beats every number; avg sums in
// f64 and divides by KH*KW (count_include_pad). The gradients gather: each
// input element visits the windows that contain it, in the CPU's window
// order and with its roundings, so no atomics are needed and the results
// equal the CPU's bit for bit.
#include <cuda_runtime.h>

#include <cstdint>

#include "pool_launch.h"

namespace sexpgpu::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 18;

__device__ __forceinline__ float negative_infinity(float) {
  return __int_as_float(int(0xff800000u));
}
__device__ __forceinline__ double negative_infinity(double) {
  return __longlong_as_double(static_cast<long long>(0xfff0000000000000ull));
}

// The index in its plane of window (oh, ow)'s first maximum; -1 when the
// window is all padding.
template <class T>
__device__ __forceinline__ int64_t first_max(const PoolGeometry& g, const T* plane, int64_t oh,
                                             int64_t ow) {
  int64_t best = -1;
  T best_value = T(0);
  for (int64_t kh = 0; kh < g.KH; ++kh) {
    const int64_t ih = oh * g.sh - g.ph + kh;
    if (ih < 0 || ih >= g.H) continue;
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const int64_t iw = ow * g.sw - g.pw + kw;
      if (iw < 0 || iw >= g.W) continue;
      const T value = plane[ih * g.W + iw];
      if (best < 0 || value > best_value || (isnan(value) && !isnan(best_value))) {
        best = ih * g.W + iw;
        best_value = value;
      }
    }
  }
  return best;
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    max_pool(PoolGeometry g, const T* __restrict__ x, T* __restrict__ y) {
  const int64_t total = g.planes * g.OH * g.OW;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.OW, oh = (i / g.OW) % g.OH, plane = i / (g.OW * g.OH);
    const T* x_plane = x + plane * g.H * g.W;
    const int64_t best = first_max(g, x_plane, oh, ow);
    y[i] = best < 0 ? negative_infinity(T()) : x_plane[best];
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    avg_pool(PoolGeometry g, const T* __restrict__ x, T* __restrict__ y) {
  const int64_t total = g.planes * g.OH * g.OW;
  const double area = double(g.KH * g.KW);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.OW, oh = (i / g.OW) % g.OH, plane = i / (g.OW * g.OH);
    const T* x_plane = x + plane * g.H * g.W;
    double sum = 0;
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      const int64_t ih = oh * g.sh - g.ph + kh;
      if (ih < 0 || ih >= g.H) continue;
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const int64_t iw = ow * g.sw - g.pw + kw;
        if (iw >= 0 && iw < g.W) sum += double(x_plane[ih * g.W + iw]);
      }
    }
    y[i] = T(sum / area);
  }
}

// The windows along one axis that contain input position `at`: [first, last].
struct WindowRange {
  int64_t first, last;
};
__device__ __forceinline__ WindowRange windows_containing(int64_t at, int64_t pad, int64_t kernel,
                                                          int64_t stride, int64_t windows) {
  const int64_t low = at + pad - kernel + 1;  // the lowest window start that still reaches `at`
  const int64_t first = low <= 0 ? 0 : (low + stride - 1) / stride;
  const int64_t last = (at + pad) / stride;
  return WindowRange{first, last < windows - 1 ? last : windows - 1};
}

// gx[i] = the sum of gy over the windows whose first maximum is i, added in
// window order with the CPU's rounding (T after every addition).
template <class T>
__global__ void __launch_bounds__(kThreads)
    max_pool_grad(PoolGeometry g, const T* __restrict__ x, const T* __restrict__ gy,
                  T* __restrict__ gx) {
  const int64_t total = g.planes * g.H * g.W;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t iw = i % g.W, ih = (i / g.W) % g.H, plane = i / (g.W * g.H);
    const T* x_plane = x + plane * g.H * g.W;
    const T* gy_plane = gy + plane * g.OH * g.OW;
    const WindowRange rows = windows_containing(ih, g.ph, g.KH, g.sh, g.OH);
    const WindowRange cols = windows_containing(iw, g.pw, g.KW, g.sw, g.OW);
    T sum = T(0);
    for (int64_t oh = rows.first; oh <= rows.last; ++oh)
      for (int64_t ow = cols.first; ow <= cols.last; ++ow)
        if (first_max(g, x_plane, oh, ow) == ih * g.W + iw) sum = T(sum + gy_plane[oh * g.OW + ow]);
    gx[i] = sum;
  }
}

// gx[i] = the sum of gy / (KH*KW) over the windows containing i, each share
// taken in f64 and the sum rounded to T after every addition, as the CPU.
template <class T>
__global__ void __launch_bounds__(kThreads)
    avg_pool_grad(PoolGeometry g, const T* __restrict__ gy, T* __restrict__ gx) {
  const int64_t total = g.planes * g.H * g.W;
  const double area = double(g.KH * g.KW);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t iw = i % g.W, ih = (i / g.W) % g.H, plane = i / (g.W * g.H);
    const T* gy_plane = gy + plane * g.OH * g.OW;
    const WindowRange rows = windows_containing(ih, g.ph, g.KH, g.sh, g.OH);
    const WindowRange cols = windows_containing(iw, g.pw, g.KW, g.sw, g.OW);
    T sum = T(0);
    for (int64_t oh = rows.first; oh <= rows.last; ++oh)
      for (int64_t ow = cols.first; ow <= cols.last; ++ow)
        sum = T(double(sum) + double(gy_plane[oh * g.OW + ow]) / area);
    gx[i] = sum;
  }
}

unsigned blocks_for(int64_t elements) {
  int64_t blocks = (elements + kThreads - 1) / kThreads;
  return unsigned(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

template <class T>
cudaError_t launch_typed(const PoolParams& p, cudaStream_t stream) {
  const PoolGeometry& g = p.g;
  const T* a = static_cast<const T*>(p.a);
  const T* b = static_cast<const T*>(p.b);
  T* out = static_cast<T*>(p.out);
  const unsigned pooled = blocks_for(g.planes * g.OH * g.OW);
  const unsigned inputs = blocks_for(g.planes * g.H * g.W);
  switch (p.op) {
    case PoolOp::Max: max_pool<T><<<pooled, kThreads, 0, stream>>>(g, a, out); break;
    case PoolOp::Avg: avg_pool<T><<<pooled, kThreads, 0, stream>>>(g, a, out); break;
    case PoolOp::MaxGrad: max_pool_grad<T><<<inputs, kThreads, 0, stream>>>(g, a, b, out); break;
    case PoolOp::AvgGrad: avg_pool_grad<T><<<inputs, kThreads, 0, stream>>>(g, a, out); break;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_pool(const PoolParams& p, cudaStream_t stream) {
  return p.f64 ? launch_typed<double>(p, stream) : launch_typed<float>(p, stream);
}

}  // namespace sexpgpu::cuda
