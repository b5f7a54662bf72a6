// attention_grad of bf16/f16 operands on tensor cores (attention_launch.h):
// the kernels of flash_tensor_grad.h in order on one stream: the log-sum-exp
// of each query row (unless the forward's is given), then dq (a block per
// tile of queries, which also leaves rowsum(g o) in the scratch), then dk
// and dv (a block per tile of keys).
// Each output element is written by exactly one thread, so there are no
// atomics and results repeat bit for bit; tiles wholly hidden by causality
// are never visited.
#include <cuda_runtime.h>

#include <cstdint>

#include "attention_launch.h"
#include "flash_mma.h"
#include "flash_tensor.h"
#include "flash_tensor_grad.h"

namespace sexpgpu::cuda {
namespace {

using flash::Bf16;
using flash::F16;
using flash::ForwardTiling;

template <class Half, class Tile>
__global__ void __launch_bounds__(flash::kThreads) flash_row_stats(AttentionGradParams p) {
  extern __shared__ __align__(16) unsigned char shared[];
  flash::row_stats_block<Half, Tile>(p, shared);
}

template <class Half, class Tile>
__global__ void __launch_bounds__(flash::kThreads) flash_dkdv(AttentionGradParams p) {
  extern __shared__ __align__(16) unsigned char shared[];
  flash::dkdv_block<Half, Tile>(p, shared);
}

template <class Half, class Tile>
__global__ void __launch_bounds__(flash::kThreads) flash_dq(AttentionGradParams p) {
  extern __shared__ __align__(16) unsigned char shared[];
  flash::dq_block<Half, Tile>(p, shared);
}

constexpr size_t larger(size_t a, size_t b) {
  return a > b ? a : b;
}

// The tilings of the three kernels for one compiled head dimension, and
// their shared memory (see each body in flash_tensor.h for the layout).
template <class Half_, class Stats_, class Keys_, class Queries_>
struct GradTilings {
  using Half = Half_;
  using Stats = Stats_;      // row statistics: queries per block
  using Keys = Keys_;        // dk, dv: keys per block
  using Queries = Queries_;  // dq: queries per block
  static constexpr size_t kStatsBytes =
      sizeof(uint16_t) * size_t(Stats::kStride) * (Stats::kRows + 2 * Stats::kKeysPerLoad);
  static constexpr size_t kDkdvBytes =
      sizeof(uint16_t) * (2 * size_t(Keys::kKeys) * Keys::kStride + 2 * size_t(Keys::kQueryBuffer));
  static constexpr size_t kDqBytes = sizeof(uint16_t) * size_t(Queries::kStride) *
                                     (2 * Queries::kRows + 4 * Queries::kKeysPerLoad);
  static constexpr size_t kMaxBytes = larger(kStatsBytes, larger(kDkdvBytes, kDqBytes));
};

// The row statistics on the forward's tiling (the same log-sum-exp bit for
// bit), dk/dv and dq on flash_tensor_grad.h's.
template <class Half, int kD>
using Tilings = GradTilings<Half, ForwardTiling<kD>, typename flash::GradTilingFor<kD>::Keys,
                            typename flash::GradTilingFor<kD>::Queries>;

// Calls f(Tilings{}) for p's dtype and head dimension (d <=
// kFlashGradMaxHeadDim), head columns rounded up to 32, 64 or 128.
template <class Half, class F>
auto with_half_tilings(const AttentionGradParams& p, F&& f) {
  if (p.attention.d <= 32) return f(Tilings<Half, 32>{});
  if (p.attention.d <= 64) return f(Tilings<Half, 64>{});
  return f(Tilings<Half, 128>{});
}
template <class F>
auto with_tilings(const AttentionGradParams& p, F&& f) {
  if (p.attention.dtype == AttentionDType::F16) return with_half_tilings<F16>(p, f);
  return with_half_tilings<Bf16>(p, f);
}

int64_t tiles(int64_t n, int64_t per_tile) {
  return (n + per_tile - 1) / per_tile;
}

template <class Kernel>
cudaError_t allow_shared(Kernel kernel, size_t bytes) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
}

}  // namespace

AttentionGradPlan flash_attention_grad_plan(const AttentionGradParams& p) {
  return with_tilings(p, [&](auto tilings) {
    using T = decltype(tilings);
    const AttentionParams& a = p.attention;
    int64_t largest = tiles(a.tk, T::Keys::kKeys);
    if (tiles(a.tq, T::Stats::kRows) > largest) largest = tiles(a.tq, T::Stats::kRows);
    if (tiles(a.tq, T::Queries::kRows) > largest) largest = tiles(a.tq, T::Queries::kRows);
    return AttentionGradPlan{largest, T::kMaxBytes};
  });
}

cudaError_t prepare_flash_attention_grad(const AttentionGradParams& p) {
  return with_tilings(p, [](auto tilings) {
    using T = decltype(tilings);
    using Half = typename T::Half;
    cudaError_t status = allow_shared(flash_row_stats<Half, typename T::Stats>, T::kStatsBytes);
    if (status == cudaSuccess)
      status = allow_shared(flash_dkdv<Half, typename T::Keys>, T::kDkdvBytes);
    if (status == cudaSuccess)
      status = allow_shared(flash_dq<Half, typename T::Queries>, T::kDqBytes);
    return status;
  });
}

cudaError_t launch_flash_attention_grad(const AttentionGradParams& params, cudaStream_t stream) {
  const AttentionGradParams p = with_dense_strides(params);
  return with_tilings(p, [&](auto tilings) {
    using T = decltype(tilings);
    using Half = typename T::Half;
    const AttentionParams& a = p.attention;
    const unsigned heads = unsigned(a.batch * a.heads);
    if (a.tq > 0 && p.lse == nullptr) {
      dim3 grid(heads, unsigned(tiles(a.tq, T::Stats::kRows)));
      flash_row_stats<Half, typename T::Stats>
          <<<grid, flash::kThreads, T::kStatsBytes, stream>>>(p);
      if (cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
    }
    if (a.tq > 0) {
      dim3 grid(heads, unsigned(tiles(a.tq, T::Queries::kRows)));
      flash_dq<Half, typename T::Queries><<<grid, flash::kThreads, T::kDqBytes, stream>>>(p);
      if (cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
    }
    if (a.tk > 0) {
      dim3 grid(heads, unsigned(tiles(a.tk, T::Keys::kKeys)));
      flash_dkdv<Half, typename T::Keys><<<grid, flash::kThreads, T::kDkdvBytes, stream>>>(p);
    }
    return cudaGetLastError();
  });
}

}  // namespace sexpgpu::cuda
