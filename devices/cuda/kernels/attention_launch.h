// The attention kernels' launch interface, plain enough for nvcc: what
// kernels_attention.cpp resolves at compile time, and the launchers that
// enqueue the kernels on a stream. attention and attention_grad of f32 and
// f64 run on CUDA cores (attention.cu, flash_grad_cores.cu); of bf16 and f16
// on tensor cores (flash_forward.cu, flash_backward.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace sexpgpu::cuda {

enum class AttentionDType : int { F32, F64, BF16, F16 };
enum class AttentionMask : int { None, Bool, Additive };

// Where the rows of a [B,H,T,D] operand are: row t of head h of batch b
// starts b*batch + h*head + t*row elements from the operand's pointer, its D
// elements contiguous. All zero: dense, [B,H,T,D] row-major. Only the
// tensor-core kernels (bf16, f16) take other strides: attention reads q, k
// and v where a [B,T,3,H,D] product left them, and writes and reads o as
// [B,T,H,D], without permuting copies (attention_views.h).
struct HeadStrides {
  int64_t batch = 0, head = 0, row = 0;
};

// q [B,H,Tq,D], k and v [B,H,Tk,D], out [B,H,Tq,D], dense unless their
// HeadStrides say otherwise (tensor cores only); the mask,
// when present, is read at b*mask_strides[0] + h*mask_strides[1] +
// i*mask_strides[2] + j*mask_strides[3] (broadcast strides over [B,H,Tq,Tk]),
// one byte per element when bool, else of the compute dtype. lse, when not
// null, receives each query row's base-2 log-sum-exp of its scaled logits
// at [bh*Tq + row] (-inf for a row that sees no key): only the bf16/f16
// kernels write it (attention_writes_lse), for attention_grad to read.
struct AttentionParams {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* mask = nullptr;
  void* out = nullptr;
  float* lse = nullptr;
  int64_t batch = 0, heads = 0, tq = 0, tk = 0, d = 0;
  double scale = 1;
  bool causal = false;
  AttentionMask mask_kind = AttentionMask::None;
  int64_t mask_strides[4] = {0, 0, 0, 0};
  AttentionDType dtype = AttentionDType::F32;
  HeadStrides q_strides, k_strides, v_strides, out_strides;
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

// f32 and f64 on CUDA cores (attention.cu).
AttentionTiling attention_tiling(const AttentionParams& p);
// Lets the kernel for p's tiling use its shared memory (above 48 KiB a
// kernel must opt in); once, before the first launch, on the device.
cudaError_t prepare_attention(const AttentionParams& p);
// One block per (batch*head, tile of queries); p's sizes must be non-empty
// (B*H, Tq and D all > 0).
cudaError_t launch_attention(const AttentionParams& p, cudaStream_t stream);

// bf16 and f16 on tensor cores (flash_forward.cu), the same contract.
AttentionTiling flash_attention_tiling(const AttentionParams& p);
cudaError_t prepare_flash_attention(const AttentionParams& p);
cudaError_t launch_flash_attention(const AttentionParams& p, cudaStream_t stream);

// attention_grad: `attention` holds q, k, v, the mask (bool only) and the
// sizes, scale and causality as for the forward (its `out` and `lse` are
// unused); o and g are [B,H,Tq,D] (their HeadStrides as the forward's
// operands'), out [B,H,Tq+2Tk,D] dense (dq, dk, dv along
// axis 2). row_stats is scratch of attention_grad_stats_bytes: per query
// row its log-sum-exp, then per query row rowsum(g * o), in f64 for f64 and
// f32 otherwise. lse, when not null, is the forward's (AttentionParams::lse
// of the same q, k, mask, scale and causality): the kernels that read it
// (attention_grad_reads_lse) then skip computing the log-sum-exp.
struct AttentionGradParams {
  AttentionParams attention;
  const void* o = nullptr;
  const void* g = nullptr;
  HeadStrides o_strides, g_strides;
  void* out = nullptr;
  // When dq_strides.row != 0 (tensor cores only): dq, dk and dv are written
  // at out + part_offsets[i] elements with these strides (a [B,T,3,H,D]
  // gradient of a packed qkv) instead of [B,H,Tq+2Tk,D].
  HeadStrides dq_strides, dk_strides, dv_strides;
  int64_t part_offsets[3] = {0, 0, 0};
  void* row_stats = nullptr;
  const float* lse = nullptr;
};

// p with every HeadStrides left all zero (dense) set to the dense layout's
// (and attention_grad's parts to [B,H,Tq+2Tk,D]): what the tensor-core
// kernels read; their launchers resolve them.
inline HeadStrides dense_strides(const AttentionParams& p, int64_t rows) {
  return {p.heads * rows * p.d, rows * p.d, p.d};
}
inline void resolve(HeadStrides& s, HeadStrides dense) {
  if (s.row == 0) s = dense;
}
inline AttentionParams with_dense_strides(AttentionParams p) {
  resolve(p.q_strides, dense_strides(p, p.tq));
  resolve(p.k_strides, dense_strides(p, p.tk));
  resolve(p.v_strides, dense_strides(p, p.tk));
  resolve(p.out_strides, dense_strides(p, p.tq));
  return p;
}
inline AttentionGradParams with_dense_strides(AttentionGradParams gp) {
  const AttentionParams& p = gp.attention;
  resolve(gp.o_strides, dense_strides(p, p.tq));
  resolve(gp.g_strides, dense_strides(p, p.tq));
  if (gp.dq_strides.row == 0) {
    const HeadStrides parts = dense_strides(p, p.tq + 2 * p.tk);
    gp.dq_strides = gp.dk_strides = gp.dv_strides = parts;
    gp.part_offsets[0] = 0;
    gp.part_offsets[1] = p.tq * p.d;
    gp.part_offsets[2] = (p.tq + p.tk) * p.d;
  }
  gp.attention = with_dense_strides(gp.attention);
  return gp;
}

// Whether launch_flash_attention / launch_flash_attention_grad write and
// read the lse side values: the tensor-core kernels do; those of f32 and
// f64, and attention_grad of halves with a head dimension above
// kFlashGradMaxHeadDim (widened to f32), ignore them.
inline bool attention_writes_lse(const AttentionParams& p) {
  return p.dtype == AttentionDType::BF16 || p.dtype == AttentionDType::F16;
}
inline constexpr int64_t kFlashGradMaxHeadDim = 128;
inline bool attention_grad_reads_lse(const AttentionGradParams& p) {
  return attention_writes_lse(p.attention) && p.attention.d <= kFlashGradMaxHeadDim;
}

inline size_t attention_grad_stats_bytes(const AttentionGradParams& p) {
  const AttentionParams& a = p.attention;
  size_t element = a.dtype == AttentionDType::F64 ? sizeof(double) : sizeof(float);
  return 2 * size_t(a.batch * a.heads * a.tq) * element;
}

// The kernels: the row statistics (one block per batch*head and tile of
// queries; on tensor cores the log-sum-exp only when lse is null, and
// rowsum(g o) computed by the dq kernel, which then runs before dk and dv),
// dk and dv (one block per batch*head and tile of keys, looping over
// queries), dq (one block per batch*head and tile of queries, looping over
// keys); no atomics, so results repeat bit for bit.
struct AttentionGradPlan {
  int64_t largest_grid_y;  // the most tiles of one batch*head any kernel launches
  size_t shared_bytes;     // the most shared memory any of the kernels needs
};

// f32 and f64 on CUDA cores (flash_grad_cores.cu), d <= kAttentionMaxHeadDim;
// B*H and D > 0 (Tq or Tk may be 0: the kernels with no rows are skipped).
AttentionGradPlan attention_grad_plan(const AttentionGradParams& p);
cudaError_t prepare_attention_grad(const AttentionGradParams& p);
cudaError_t launch_attention_grad(const AttentionGradParams& p, cudaStream_t stream);

// bf16 and f16 on tensor cores (flash_backward.cu), d <= kFlashGradMaxHeadDim
// (above it dk and dv no longer fit in registers: the factory widens to f32).
AttentionGradPlan flash_attention_grad_plan(const AttentionGradParams& p);
cudaError_t prepare_flash_attention_grad(const AttentionGradParams& p);
cudaError_t launch_flash_attention_grad(const AttentionGradParams& p, cudaStream_t stream);

// n elements of a bf16/f16 (`half`) array to f32 and back (round to nearest
// even), for attention_grad of a head dimension the tensor-core kernels do
// not take (flash_grad_cores.cu); n > 0.
cudaError_t launch_widen_to_f32(const void* in, float* out, int64_t n, AttentionDType half,
                                cudaStream_t stream);
cudaError_t launch_narrow_from_f32(const float* in, void* out, int64_t n, AttentionDType half,
                                   cudaStream_t stream);

}  // namespace sexpgpu::cuda
