// Collective kernels (collective_launch.h): the in-place scale of an
// all_reduce bucket by 1 / world size. A grid-stride loop; memory-bound.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "collective_launch.h"

namespace sexpgpu::cuda {
namespace {

constexpr int kThreads = 256;

__device__ inline float widen(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ inline float widen(__half x) {
  return __half2float(x);
}
__device__ inline void narrow(float v, __nv_bfloat16* out) {
  *out = __float2bfloat16_rn(v);
}
__device__ inline void narrow(float v, __half* out) {
  *out = __float2half_rn(v);
}

template <class T, class K>
__global__ void scale_kernel(T* __restrict__ data, int64_t n, K k) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) data[i] *= k;
}

template <class H>
__global__ void scale_half_kernel(H* __restrict__ data, int64_t n, float k) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    narrow(widen(data[i]) * k, &data[i]);
}

}  // namespace

cudaError_t launch_scale(void* data, int64_t n, ScaleStorage storage, double k, int max_blocks,
                         cudaStream_t stream) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  int grid = int(blocks < max_blocks ? blocks : max_blocks);
  switch (storage) {
    case ScaleStorage::F32:
      scale_kernel<<<grid, kThreads, 0, stream>>>(static_cast<float*>(data), n, float(k));
      break;
    case ScaleStorage::F64:
      scale_kernel<<<grid, kThreads, 0, stream>>>(static_cast<double*>(data), n, k);
      break;
    case ScaleStorage::BF16:
      scale_half_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(data), n,
                                                       float(k));
      break;
    case ScaleStorage::F16:
      scale_half_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__half*>(data), n, float(k));
      break;
  }
  return cudaGetLastError();
}

}  // namespace sexpgpu::cuda
