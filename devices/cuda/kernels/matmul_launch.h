// The plain launch interface of matmul.cu: integer matrix products
// (cuBLASLt multiplies floats only), and the operand fill that the cuBLASLt
// algorithm timing (kernels_matmul.cpp) multiplies.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace sexpgpu::cuda {

// C[b] = op(A[b]) op(B[b]) row-major, wrapping like every integer op; batch
// element b reads A at a_offsets[b] and B at b_offsets[b] (device arrays of
// `batch` int64s), C at b*M*N. A transposed operand is stored [K, M] / [N, K].
struct IntMatmulParams {
  int dtype_bytes;  // 4: i32, 8: i64, 1: u8, 2: u16 (u8/u16 unsigned)
  int64_t M, N, K, batch;
  bool trans_a, trans_b;
  const int64_t* a_offsets;
  const int64_t* b_offsets;
  const void* a;
  const void* b;
  void* c;
};

cudaError_t launch_int_matmul(const IntMatmulParams& p, cudaStream_t stream);

// Float storage for launch_fill_uniform.
enum class FillDType : int { F32, F64, BF16, F16 };

// Fills `count` elements with reproducible pseudo-random values in [-1, 1):
// timing on varied bits draws the power a real operand does (zeros or
// garbage would time optimistically or hit NaN paths).
cudaError_t launch_fill_uniform(void* data, int64_t count, FillDType dtype, cudaStream_t stream);

}  // namespace sexpgpu::cuda
