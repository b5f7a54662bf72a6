// The attention kernel's launch interface (attention.cu), plain enough for
// nvcc: what kernels_attention.cpp resolves at compile time, and the
// launcher that enqueues the flash-attention kernel on a stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace sexpgpu::cuda {

enum class AttentionDType : int { F32, F64 };
enum class AttentionMask : int { None, Bool, Additive };

// q [B,H,Tq,D], k and v [B,H,Tk,D], out [B,H,Tq,D], all dense; the mask,
// when present, is read at b*mask_strides[0] + h*mask_strides[1] +
// i*mask_strides[2] + j*mask_strides[3] (broadcast strides over [B,H,Tq,Tk]),
// one byte per element when bool, else of the compute dtype.
struct AttentionParams {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* mask = nullptr;
  void* out = nullptr;
  int64_t batch = 0, heads = 0, tq = 0, tk = 0, d = 0;
  double scale = 1;
  bool causal = false;
  AttentionMask mask_kind = AttentionMask::None;
  int64_t mask_strides[4] = {0, 0, 0, 0};
  AttentionDType dtype = AttentionDType::F32;
};

// The largest head dimension the kernels take.
inline constexpr int64_t kAttentionMaxHeadDim = 256;

// The tiling the launcher will use for p's dtype and head dimension
// (d <= kAttentionMaxHeadDim), so the factory can check it fits the device.
struct AttentionTiling {
  int64_t queries_per_block;
  int64_t keys_per_tile;
  int64_t head_dim;  // d rounded up to the kernel's compiled size
  size_t shared_bytes;
};
AttentionTiling attention_tiling(const AttentionParams& p);

// Lets the kernel for p's tiling use its shared memory (above 48 KiB a
// kernel must opt in); once, before the first launch, on the device.
cudaError_t prepare_attention(const AttentionParams& p);

// One block per (batch*head, tile of queries); p's sizes must be non-empty
// (B*H, Tq and D all > 0).
cudaError_t launch_attention(const AttentionParams& p, cudaStream_t stream);

}  // namespace sexpgpu::cuda
