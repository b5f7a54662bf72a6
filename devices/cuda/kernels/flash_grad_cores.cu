// attention_grad of f32/f64 on CUDA cores (attention_launch.h): the three
// kernels of flash_grad_cores.h in order on one stream: the row statistics,
// then dk and dv (a block per tile of keys), then dq (a block per tile of
// queries). Each output element is written by exactly one thread: no
// atomics, results repeat bit for bit. Also the bf16/f16 <-> f32 copies
// through which half operands with a head dimension the tensor-core kernels
// do not take use these kernels.
#include <cuda_runtime.h>

#include <cstdint>

#include "attention_launch.h"
#include "flash_cores.h"
#include "flash_grad_cores.h"
#include "flash_mma.h"

namespace sexpgpu::cuda {
namespace {

using cores::kThreads;
using cores::Tiling;

template <class Tile>
__global__ void __launch_bounds__(kThreads) grad_row_stats(AttentionGradParams p) {
  extern __shared__ __align__(16) unsigned char shared[];
  cores::row_stats_rows<Tile>(p, shared);
}

template <class Tile>
__global__ void __launch_bounds__(kThreads) grad_dkdv(AttentionGradParams p) {
  extern __shared__ __align__(16) unsigned char shared[];
  cores::dkdv_rows<Tile>(p, shared);
}

template <class Tile>
__global__ void __launch_bounds__(kThreads) grad_dq(AttentionGradParams p) {
  extern __shared__ __align__(16) unsigned char shared[];
  cores::dq_rows<Tile>(p, shared);
}

constexpr size_t larger(size_t a, size_t b) {
  return a > b ? a : b;
}

// The tilings of the three kernels and their shared memory (the layouts of
// flash_grad_cores.h). Keys' rows are keys and its columns queries.
template <class Stats_, class Keys_, class Queries_>
struct GradTilings {
  using Stats = Stats_;
  using Keys = Keys_;
  using Queries = Queries_;
  template <class Tile>
  static constexpr size_t kRowBytes = sizeof(typename Tile::Element) * size_t(Tile::kRowStride);
  template <class Tile>
  static constexpr size_t kScoreBytes = sizeof(typename Tile::Element) *
                                        size_t(Tile::kRows) * Tile::kScoreStride;
  static constexpr size_t kStatsBytes = kRowBytes<Stats> * (Stats::kRows + Stats::kKeys);
  static constexpr size_t kDkdvBytes = kRowBytes<Keys> * (2 * Keys::kRows + 2 * Keys::kKeys) +
                                       2 * kScoreBytes<Keys> +
                                       2 * sizeof(typename Keys::Element) * Keys::kKeys;
  static constexpr size_t kDqBytes =
      kRowBytes<Queries> * (2 * Queries::kRows + 2 * Queries::kKeys) + kScoreBytes<Queries>;
  static constexpr size_t kMaxBytes = larger(kStatsBytes, larger(kDkdvBytes, kDqBytes));
};

template <class T, int kD, int kStatsRM, int kStatsRN, int kKeysRM, int kKeysRN, int kQueriesRM,
          int kQueriesRN>
using Tilings = GradTilings<Tiling<T, kD, kStatsRM, kStatsRN>, Tiling<T, kD, kKeysRM, kKeysRN>,
                            Tiling<T, kD, kQueriesRM, kQueriesRN>>;

// Calls f(Tilings{}) for p's dtype and head dimension: head columns rounded
// up to 32, 64, 128 or 256, fewer rows per thread where the accumulators
// (two of them for dk and dv) would not fit in registers.
template <class F>
auto with_tilings(const AttentionGradParams& p, F&& f) {
  const int64_t d = p.attention.d;
  if (p.attention.dtype == AttentionDType::F32) {
    if (d <= 32) return f(Tilings<float, 32, 4, 8, 4, 8, 4, 8>{});
    if (d <= 64) return f(Tilings<float, 64, 4, 8, 4, 4, 4, 4>{});
    if (d <= 128) return f(Tilings<float, 128, 4, 8, 2, 4, 4, 4>{});
    return f(Tilings<float, 256, 2, 8, 1, 4, 2, 4>{});
  }
  if (d <= 32) return f(Tilings<double, 32, 2, 4, 2, 4, 2, 4>{});
  if (d <= 64) return f(Tilings<double, 64, 2, 4, 2, 4, 2, 4>{});
  if (d <= 128) return f(Tilings<double, 128, 2, 4, 1, 4, 2, 4>{});
  return f(Tilings<double, 256, 1, 4, 1, 2, 1, 4>{});
}

int64_t tiles(int64_t n, int64_t per_tile) {
  return (n + per_tile - 1) / per_tile;
}

template <class Half>
__global__ void widen_to_f32(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = flash::to_float<Half>(in[i]);
}

template <class Half>
__global__ void narrow_from_f32(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = flash::to_bits<Half>(in[i]);
}

// A grid-stride grid of 256 threads per block: enough blocks to fill the
// GPU several times over, never 0.
dim3 elementwise_grid(int64_t n) {
  const int64_t blocks = (n + 255) / 256;
  return dim3(unsigned(blocks < 4096 ? blocks : 4096));
}

template <class Kernel>
cudaError_t allow_shared(Kernel kernel, size_t bytes) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
}

}  // namespace

AttentionGradPlan attention_grad_plan(const AttentionGradParams& p) {
  return with_tilings(p, [&](auto tilings) {
    using T = decltype(tilings);
    const AttentionParams& a = p.attention;
    int64_t largest = tiles(a.tk, T::Keys::kRows);
    if (tiles(a.tq, T::Stats::kRows) > largest) largest = tiles(a.tq, T::Stats::kRows);
    if (tiles(a.tq, T::Queries::kRows) > largest) largest = tiles(a.tq, T::Queries::kRows);
    return AttentionGradPlan{largest, T::kMaxBytes};
  });
}

cudaError_t prepare_attention_grad(const AttentionGradParams& p) {
  return with_tilings(p, [](auto tilings) {
    using T = decltype(tilings);
    cudaError_t status = allow_shared(grad_row_stats<typename T::Stats>, T::kStatsBytes);
    if (status == cudaSuccess) status = allow_shared(grad_dkdv<typename T::Keys>, T::kDkdvBytes);
    if (status == cudaSuccess) status = allow_shared(grad_dq<typename T::Queries>, T::kDqBytes);
    return status;
  });
}

cudaError_t launch_attention_grad(const AttentionGradParams& p, cudaStream_t stream) {
  return with_tilings(p, [&](auto tilings) {
    using T = decltype(tilings);
    const AttentionParams& a = p.attention;
    const unsigned heads = unsigned(a.batch * a.heads);
    if (a.tq > 0) {
      dim3 grid(heads, unsigned(tiles(a.tq, T::Stats::kRows)));
      grad_row_stats<typename T::Stats><<<grid, kThreads, T::kStatsBytes, stream>>>(p);
      if (cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
    }
    if (a.tk > 0) {
      dim3 grid(heads, unsigned(tiles(a.tk, T::Keys::kRows)));
      grad_dkdv<typename T::Keys><<<grid, kThreads, T::kDkdvBytes, stream>>>(p);
      if (cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
    }
    if (a.tq > 0) {
      dim3 grid(heads, unsigned(tiles(a.tq, T::Queries::kRows)));
      grad_dq<typename T::Queries><<<grid, kThreads, T::kDqBytes, stream>>>(p);
    }
    return cudaGetLastError();
  });
}

cudaError_t launch_widen_to_f32(const void* in, float* out, int64_t n, AttentionDType half,
                                cudaStream_t stream) {
  const uint16_t* bits = static_cast<const uint16_t*>(in);
  if (half == AttentionDType::F16)
    widen_to_f32<flash::F16><<<elementwise_grid(n), 256, 0, stream>>>(bits, out, n);
  else
    widen_to_f32<flash::Bf16><<<elementwise_grid(n), 256, 0, stream>>>(bits, out, n);
  return cudaGetLastError();
}

cudaError_t launch_narrow_from_f32(const float* in, void* out, int64_t n, AttentionDType half,
                                   cudaStream_t stream) {
  uint16_t* bits = static_cast<uint16_t*>(out);
  if (half == AttentionDType::F16)
    narrow_from_f32<flash::F16><<<elementwise_grid(n), 256, 0, stream>>>(in, bits, n);
  else
    narrow_from_f32<flash::Bf16><<<elementwise_grid(n), 256, 0, stream>>>(in, bits, n);
  return cudaGetLastError();
}

}  // namespace sexpgpu::cuda
