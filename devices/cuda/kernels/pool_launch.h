// max_pool2d, avg_pool2d and their gradients (pool.cu): the plain launch
// interface that kernels_pool.cpp fills at compile time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sexpgpu::cuda {

enum class PoolOp : int { Max, Avg, MaxGrad, AvgGrad };

// planes = N*C images of [H, W] pooled to [OH, OW] by KHxKW windows every
// (sh, sw), the input padded by (ph, pw).
struct PoolGeometry {
  int64_t planes, H, W, OH, OW, KH, KW, sh, sw, ph, pw;
};

// Operands as the op takes them: Max/Avg (x) -> y; MaxGrad (x, gy) -> gx;
// AvgGrad (gy) -> gx. f32 or f64 throughout; the output must be non-empty.
struct PoolParams {
  PoolOp op = PoolOp::Max;
  bool f64 = false;
  PoolGeometry g{};
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
};

cudaError_t launch_pool(const PoolParams& p, cudaStream_t stream);

}  // namespace sexpgpu::cuda
