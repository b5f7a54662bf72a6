// attention of bf16/f16 operands on tensor cores (attention_launch.h): the
// forward of flash_tensor.h, one block of 4 warps per (batch*head, tile of
// queries), key tiles wholly above the causal diagonal never visited.
#include <cuda_runtime.h>

#include <cstdint>

#include "attention_launch.h"
#include "flash_mma.h"
#include "flash_tensor.h"

namespace sexpgpu::cuda {
namespace {

using flash::Bf16;
using flash::F16;
using flash::QueryTiling;

template <class Half, class Tile>
__global__ void __launch_bounds__(flash::kThreads) flash_forward(AttentionParams p) {
  extern __shared__ __align__(16) unsigned char shared[];
  flash::forward_block<Half, Tile>(p, shared);
}

// Shared memory: the queries, then two buffers of keys and values.
template <class Tile>
constexpr size_t forward_shared_bytes() {
  return sizeof(uint16_t) * size_t(Tile::kStride) * (Tile::kRows + 4 * Tile::kKeys);
}

// Calls f(Half{}, Tile{}) with the tiling for p's dtype and head dimension:
// head columns rounded up to 32, 64, 128 or 256 (zeros past d); 32 queries
// per warp and tiles of 64 keys up to d = 64, then 32 keys, and 16 queries
// per warp at d = 256, so that the f32 accumulators stay in registers
// (under 250 of them, no spills; ptxas -v).
template <class Half, class F>
auto with_half_tiling(const AttentionParams& p, F&& f) {
  if (p.d <= 32) return f(Half{}, QueryTiling<32, 2, 64>{});
  if (p.d <= 64) return f(Half{}, QueryTiling<64, 2, 64>{});
  if (p.d <= 128) return f(Half{}, QueryTiling<128, 2, 32>{});
  return f(Half{}, QueryTiling<256, 1, 32>{});
}
template <class F>
auto with_tiling(const AttentionParams& p, F&& f) {
  if (p.dtype == AttentionDType::F16) return with_half_tiling<F16>(p, f);
  return with_half_tiling<Bf16>(p, f);
}

}  // namespace

AttentionTiling flash_attention_tiling(const AttentionParams& p) {
  return with_tiling(p, [](auto, auto tile) {
    using Tile = decltype(tile);
    return AttentionTiling{Tile::kRows, Tile::kKeys, Tile::kD, forward_shared_bytes<Tile>()};
  });
}

cudaError_t prepare_flash_attention(const AttentionParams& p) {
  return with_tiling(p, [](auto half, auto tile) {
    using Half = decltype(half);
    using Tile = decltype(tile);
    return cudaFuncSetAttribute(flash_forward<Half, Tile>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                int(forward_shared_bytes<Tile>()));
  });
}

cudaError_t launch_flash_attention(const AttentionParams& p, cudaStream_t stream) {
  return with_tiling(p, [&](auto half, auto tile) {
    using Half = decltype(half);
    using Tile = decltype(tile);
    dim3 grid(unsigned(p.batch * p.heads), unsigned((p.tq + Tile::kRows - 1) / Tile::kRows));
    flash_forward<Half, Tile><<<grid, flash::kThreads, forward_shared_bytes<Tile>(), stream>>>(p);
    return cudaGetLastError();
  });
}

}  // namespace sexpgpu::cuda
