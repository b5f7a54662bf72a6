// conv2d and its gradients as direct kernels (conv_launch.h). The forward
// and input-gradient kernels give each thread one output element summing
// its window; the weight gradient gives each block one (output channel,
// input channel) pair, up to kTaps of its kernel taps and a slice of the
// images, its threads summing strided output positions and then one
// fixed-order block reduction (and the slices added in order by a second
// kernel): no atomics, so results repeat bit for bit.
#include <cuda_runtime.h>

#include <cstdint>

#include "conv_launch.h"

namespace sexpgpu::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kTaps = kConvGradWeightTaps;
constexpr int64_t kMaxBlocks = 1 << 18;

// Integers accumulate in unsigned arithmetic, which wraps as the CPU's
// integer gemm does (the sum modulo 2^bits does not depend on the order).
template <class T>
struct Accumulator {
  using type = T;
};
template <>
struct Accumulator<int32_t> {
  using type = uint32_t;
};
template <>
struct Accumulator<int64_t> {
  using type = uint64_t;
};
template <>
struct Accumulator<uint8_t> {
  using type = uint32_t;
};
template <>
struct Accumulator<uint16_t> {
  using type = uint32_t;
};

template <class T>
using Acc = typename Accumulator<T>::type;

// The window's taps outside, the channels inside: the bounds checks and the
// index arithmetic are paid once per tap, not once per multiply.
template <class T>
__global__ void __launch_bounds__(kThreads)
    conv_forward(ConvGeometry g, const T* __restrict__ x, const T* __restrict__ w,
                 T* __restrict__ y) {
  const int64_t total = g.N * g.O * g.OH * g.OW, Cg = g.C / g.groups, Og = g.O / g.groups;
  const int64_t x_channel = g.H * g.W, w_channel = g.KH * g.KW;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.OW, oh = (i / g.OW) % g.OH, o = (i / (g.OW * g.OH)) % g.O,
                  n = i / (g.OW * g.OH * g.O);
    const T* x_group = x + (n * g.C + (o / Og) * Cg) * x_channel;
    const T* w_out = w + o * Cg * w_channel;
    Acc<T> acc = 0;
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
      if (ih < 0 || ih >= g.H) continue;
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const int64_t iw = ow * g.sw - g.pw + kw * g.dw;
        if (iw < 0 || iw >= g.W) continue;
        const T* x_at = x_group + ih * g.W + iw;
        const T* w_at = w_out + kh * g.KW + kw;
#pragma unroll 4
        for (int64_t c = 0; c < Cg; ++c)
          acc += Acc<T>(x_at[c * x_channel]) * Acc<T>(w_at[c * w_channel]);
      }
    }
    y[i] = T(acc);
  }
}

// Each input element sums g over the output positions whose windows read
// it: those where (ih + ph - kh*dh) is a multiple of the stride in range.
template <class T>
__global__ void __launch_bounds__(kThreads)
    conv_grad_input(ConvGeometry g, const T* __restrict__ gy, const T* __restrict__ w,
                    T* __restrict__ gx) {
  const int64_t total = g.N * g.C * g.H * g.W, Cg = g.C / g.groups, Og = g.O / g.groups;
  const int64_t plane = g.OH * g.OW;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t iw = i % g.W, ih = (i / g.W) % g.H, c = (i / (g.W * g.H)) % g.C,
                  n = i / (g.W * g.H * g.C);
    const int64_t o_begin = (c / Cg) * Og, channel = c % Cg;
    Acc<T> acc = 0;
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      const int64_t th = ih + g.ph - kh * g.dh;
      if (th < 0 || th % g.sh != 0 || th / g.sh >= g.OH) continue;
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const int64_t tw = iw + g.pw - kw * g.dw;
        if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.OW) continue;
        const T* gy_at = gy + (n * g.O + o_begin) * plane + (th / g.sh) * g.OW + tw / g.sw;
        const T* w_at = w + ((o_begin * Cg + channel) * g.KH + kh) * g.KW + kw;
        for (int64_t o = 0; o < Og; ++o)
          acc += Acc<T>(gy_at[o * plane]) * Acc<T>(w_at[o * Cg * g.KH * g.KW]);
      }
    }
    gx[i] = T(acc);
  }
}

// Sums v over the block in a fixed order: a shuffle tree per warp, then the
// warps' totals in warp order. The result is valid in thread 0.
template <class A>
__device__ A block_sum(A v, A* warp_totals) {
  for (int lane_mask = 16; lane_mask > 0; lane_mask >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, lane_mask);
  if (threadIdx.x % 32 == 0) warp_totals[threadIdx.x / 32] = v;
  __syncthreads();
  A total = 0;
  if (threadIdx.x == 0)
    for (int i = 0; i < kWarps; ++i) total += warp_totals[i];
  __syncthreads();  // warp_totals is reused by the next call
  return total;
}

// Block (b, slice): weight (o, channel) = b / chunks, taps [chunk*kTaps,
// +kTaps), images [slice*N/slices, (slice+1)*N/slices). One slice writes
// gw; several write their sums to `partial` ([slices][weights]).
// Spatial coordinates are 32-bit here (the factory checks that they fit):
// the taps' work is a few instructions, and 64-bit arithmetic would double it.
template <class T>
__global__ void __launch_bounds__(kThreads)
    conv_grad_weight(ConvGeometry g, const T* __restrict__ x, const T* __restrict__ gy,
                     T* __restrict__ gw, int64_t slices, Acc<T>* __restrict__ partial) {
  __shared__ Acc<T> warp_totals[kWarps];
  const int64_t Cg = g.C / g.groups, Og = g.O / g.groups, taps_total = g.KH * g.KW;
  const int64_t chunks = (taps_total + kTaps - 1) / kTaps;
  const int64_t pair = blockIdx.x / chunks, first_tap = (blockIdx.x % chunks) * kTaps;
  const int64_t o = pair / Cg, channel = pair % Cg, c = (o / Og) * Cg + channel;
  const int taps = int(taps_total - first_tap < kTaps ? taps_total - first_tap : kTaps);
  const int H = int(g.H), W = int(g.W), OH = int(g.OH), OW = int(g.OW);
  const int64_t n_begin = g.N * blockIdx.y / slices, n_end = g.N * (blockIdx.y + 1) / slices;

  int tap_h[kTaps], tap_w[kTaps];  // the taps' offsets from a window's corner
  Acc<T> acc[kTaps];
#pragma unroll
  for (int t = 0; t < kTaps; ++t) {
    tap_h[t] = int(((first_tap + t) / g.KW) * g.dh - g.ph);
    tap_w[t] = int(((first_tap + t) % g.KW) * g.dw - g.pw);
    acc[t] = 0;
  }

  // Thread positions advance by kThreads in (n, oh, ow) order, stepped
  // with carries rather than divided out each time.
  if (OH > 0 && OW > 0) {
    int ow = int(threadIdx.x) % OW, oh = (int(threadIdx.x) / OW) % OH;
    int64_t n = n_begin + threadIdx.x / (OW * OH);
    const int step_w = kThreads % OW, step_h = (kThreads / OW) % OH;
    const int64_t step_n = kThreads / (OW * OH);
    while (n < n_end) {
      const Acc<T> grad = Acc<T>(gy[((n * g.O + o) * OH + oh) * OW + ow]);
      const T* x_plane = x + (n * g.C + c) * H * W;
      const int ih0 = oh * int(g.sh), iw0 = ow * int(g.sw);
#pragma unroll
      for (int t = 0; t < kTaps; ++t) {
        const int ih = ih0 + tap_h[t], iw = iw0 + tap_w[t];
        if (t < taps && unsigned(ih) < unsigned(H) && unsigned(iw) < unsigned(W))
          acc[t] += grad * Acc<T>(x_plane[ih * W + iw]);
      }
      ow += step_w;
      if (ow >= OW) {
        ow -= OW;
        ++oh;
      }
      oh += step_h;
      if (oh >= OH) {
        oh -= OH;
        ++n;
      }
      n += step_n;
    }
  }
  const int64_t first_weight = pair * taps_total + first_tap;
  const int64_t weights = g.O * Cg * taps_total;
#pragma unroll
  for (int t = 0; t < kTaps; ++t) {
    if (t >= taps) break;  // uniform across the block
    Acc<T> total = block_sum(acc[t], warp_totals);
    if (threadIdx.x != 0) continue;
    if (slices == 1)
      gw[first_weight + t] = T(total);
    else
      partial[blockIdx.y * weights + first_weight + t] = total;
  }
}

// gw[i] = the slices' partial sums of weight i, added in slice order.
template <class T>
__global__ void __launch_bounds__(kThreads)
    sum_slices(const Acc<T>* __restrict__ partial, int64_t slices, int64_t weights,
               T* __restrict__ gw) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < weights;
       i += int64_t(gridDim.x) * blockDim.x) {
    Acc<T> total = 0;
    for (int64_t s = 0; s < slices; ++s) total += partial[s * weights + i];
    gw[i] = T(total);
  }
}

unsigned blocks_for(int64_t elements) {
  int64_t blocks = (elements + kThreads - 1) / kThreads;
  return unsigned(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

template <class T>
cudaError_t launch_typed(const ConvParams& p, cudaStream_t stream) {
  const ConvGeometry& g = p.g;
  const T* a = static_cast<const T*>(p.a);
  const T* b = static_cast<const T*>(p.b);
  T* out = static_cast<T*>(p.out);
  switch (p.op) {
    case ConvOp::Forward:
      conv_forward<T><<<blocks_for(g.N * g.O * g.OH * g.OW), kThreads, 0, stream>>>(g, a, b, out);
      break;
    case ConvOp::GradInput:
      conv_grad_input<T><<<blocks_for(g.N * g.C * g.H * g.W), kThreads, 0, stream>>>(g, a, b, out);
      break;
    case ConvOp::GradWeight: {
      const int64_t chunks = (g.KH * g.KW + kTaps - 1) / kTaps;
      const int64_t weights = g.O * (g.C / g.groups) * g.KH * g.KW;
      const dim3 grid(unsigned(g.O * (g.C / g.groups) * chunks), unsigned(p.slices));
      Acc<T>* partial = static_cast<Acc<T>*>(p.scratch);
      conv_grad_weight<T><<<grid, kThreads, 0, stream>>>(g, a, b, out, p.slices, partial);
      if (p.slices > 1)
        sum_slices<T>
            <<<blocks_for(weights), kThreads, 0, stream>>>(partial, p.slices, weights, out);
      break;
    }
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_conv(const ConvParams& p, cudaStream_t stream) {
  switch (p.dtype) {
    case ConvDType::F32: return launch_typed<float>(p, stream);
    case ConvDType::F64: return launch_typed<double>(p, stream);
    case ConvDType::I32: return launch_typed<int32_t>(p, stream);
    case ConvDType::I64: return launch_typed<int64_t>(p, stream);
    case ConvDType::U8: return launch_typed<uint8_t>(p, stream);
    case ConvDType::U16: return launch_typed<uint16_t>(p, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace sexpgpu::cuda
