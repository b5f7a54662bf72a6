// conv2d and its two gradients (conv.cu): the plain launch interface that
// kernels_conv.cpp fills at compile time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace sexpgpu::cuda {

enum class ConvOp : int { Forward, GradInput, GradWeight };
// The compute dtypes after lowering; integers wrap, as the CPU's gemm does.
enum class ConvDType : int { F32, F64, I32, I64, U8, U16 };

// x [N,C,H,W], w [O,C/groups,KH,KW], y [N,O,OH,OW], as PyTorch's conv2d.
struct ConvGeometry {
  int64_t N, C, H, W, O, KH, KW, OH, OW;
  int64_t sh, sw, ph, pw, dh, dw, groups;
};

// Operands as the op takes them: Forward (x, w) -> y; GradInput (gy, w) ->
// gx; GradWeight (x, gy) -> gw. The output must be non-empty.
struct ConvParams {
  ConvOp op = ConvOp::Forward;
  ConvDType dtype = ConvDType::F32;
  ConvGeometry g{};
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
  // GradWeight: the images are cut into `slices` runs summed by separate
  // blocks, so that a small weight still fills the GPU; with more than one,
  // the runs' sums wait in `scratch` (conv_grad_weight_scratch_bytes) and
  // are added in run order, so the result does not depend on scheduling.
  int64_t slices = 1;
  void* scratch = nullptr;
};

// The weight gradient runs a block per (output channel, input channel of its
// group), run of this many kernel taps (a whole 3x3 or 4x4 kernel) and
// slice of the images. It computes spatial coordinates in 32 bits: H*W,
// OH*OW and every padded or dilated extent must stay below 2^31.
inline constexpr int kConvGradWeightTaps = 16;
inline constexpr int64_t kConvMaxSlices = 1024;

// Bytes of one partial sum: integers sum in 32 or 64-bit unsigned words.
inline size_t conv_accumulator_bytes(ConvDType d) {
  return d == ConvDType::F64 || d == ConvDType::I64 ? 8 : 4;
}
inline size_t conv_grad_weight_scratch_bytes(const ConvParams& p) {
  if (p.op != ConvOp::GradWeight || p.slices <= 1) return 0;
  const ConvGeometry& g = p.g;
  return size_t(p.slices * g.O * (g.C / g.groups) * g.KH * g.KW) * conv_accumulator_bytes(p.dtype);
}

cudaError_t launch_conv(const ConvParams& p, cudaStream_t stream);

}  // namespace sexpgpu::cuda
