// Integer matrix products (cuBLASLt multiplies floats only): the plain
// launch interface of matmul.cu.
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

}  // namespace sexpgpu::cuda
