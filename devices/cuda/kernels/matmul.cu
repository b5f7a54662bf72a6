// Integer matrix products, one thread per output element (matmul_launch.h).
// Nothing trains in integers; these exist so every dtype matmul accepts runs.
// Also the operand fill for timing cuBLASLt's algorithms.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "matmul_launch.h"

namespace sexpgpu::cuda {
namespace {

template <class T>
__global__ void int_matmul(IntMatmulParams p) {
  const T* a = static_cast<const T*>(p.a);
  const T* b = static_cast<const T*>(p.b);
  T* c = static_cast<T*>(p.c);
  int64_t total = p.batch * p.M * p.N;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t j = e % p.N, i = (e / p.N) % p.M, bi = e / (p.M * p.N);
    const T* A = a + p.a_offsets[bi];
    const T* B = b + p.b_offsets[bi];
    unsigned long long acc = 0;  // wraps like the CPU's integer gemm
    for (int64_t k = 0; k < p.K; ++k) {
      T x = p.trans_a ? A[k * p.M + i] : A[i * p.K + k];
      T y = p.trans_b ? B[j * p.K + k] : B[k * p.N + j];
      acc += (unsigned long long)x * (unsigned long long)y;
    }
    c[e] = T(acc);
  }
}

// A uniform value in [-1, 1) from the element index (a 64-bit mix).
__device__ float uniform_of(int64_t i) {
  unsigned long long x = (unsigned long long)i * 0x9E3779B97F4A7C15ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return float(x >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

template <class T>
__global__ void fill_uniform(T* data, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    data[i] = T(uniform_of(i));
}

}  // namespace

cudaError_t launch_int_matmul(const IntMatmulParams& p, cudaStream_t stream) {
  int64_t total = p.batch * p.M * p.N;
  if (total == 0) return cudaSuccess;
  int64_t blocks = (total + 255) / 256;
  dim3 grid(unsigned(blocks < 65536 ? blocks : 65536));
  switch (p.dtype_bytes) {
    case 1: int_matmul<unsigned char><<<grid, 256, 0, stream>>>(p); break;
    case 2: int_matmul<unsigned short><<<grid, 256, 0, stream>>>(p); break;
    case 4: int_matmul<int><<<grid, 256, 0, stream>>>(p); break;
    case 8: int_matmul<long long><<<grid, 256, 0, stream>>>(p); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_fill_uniform(void* data, int64_t count, FillDType dtype, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  int64_t blocks = (count + 255) / 256;
  dim3 grid(unsigned(blocks < 4096 ? blocks : 4096));
  switch (dtype) {
    case FillDType::F32:
      fill_uniform<<<grid, 256, 0, stream>>>(static_cast<float*>(data), count);
      break;
    case FillDType::F64:
      fill_uniform<<<grid, 256, 0, stream>>>(static_cast<double*>(data), count);
      break;
    case FillDType::BF16:
      fill_uniform<<<grid, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(data), count);
      break;
    case FillDType::F16:
      fill_uniform<<<grid, 256, 0, stream>>>(static_cast<__half*>(data), count);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace sexpgpu::cuda
