// attention of bf16/f16 operands on tensor cores (attention_launch.h): the
// forward of flash_tensor.h, one block of 4 warps per (batch*head, tile of
// queries), key tiles wholly above the causal diagonal never visited; with
// p.lse, each query row's log-sum-exp for attention_grad.
#include <cuda_runtime.h>

#include <cstdint>

#include "attention_launch.h"
#include "flash_mma.h"
#include "flash_tensor.h"

namespace sexpgpu::cuda {
namespace {

using flash::Bf16;
using flash::F16;

template <class Half, class Tile>
__global__ void __launch_bounds__(flash::kThreads) flash_forward(AttentionParams p) {
  extern __shared__ __align__(16) unsigned char shared[];
  flash::forward_block<Half, Tile>(p, shared);
}

// Shared memory: the queries, then two buffers of keys and values.
template <class Tile>
constexpr size_t forward_shared_bytes() {
  return sizeof(uint16_t) * size_t(Tile::kStride) * (Tile::kRows + 4 * Tile::kKeysPerLoad);
}

// Calls f(Half{}, Tile{}) with the tiling for p's dtype and head dimension:
// flash_tensor.h's ForwardTiling of d rounded up to 32, 64, 128 or 256
// (zeros past d).
template <class Half, class F>
auto with_half_tiling(const AttentionParams& p, F&& f) {
  if (p.d <= 32) return f(Half{}, flash::ForwardTiling<32>{});
  if (p.d <= 64) return f(Half{}, flash::ForwardTiling<64>{});
  if (p.d <= 128) return f(Half{}, flash::ForwardTiling<128>{});
  return f(Half{}, flash::ForwardTiling<256>{});
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
    flash_forward<Half, Tile>
        <<<grid, flash::kThreads, forward_shared_bytes<Tile>(), stream>>>(with_dense_strides(p));
    return cudaGetLastError();
  });
}

}  // namespace sexpgpu::cuda
