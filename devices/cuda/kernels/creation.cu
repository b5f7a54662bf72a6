// Creation kernels (creation_launch.h): the fill behind full and pad. A
// memory-bound store of one repeated element, 16 bytes per thread when the
// buffer's size and address allow it.
#include <cuda_runtime.h>

#include <cstdint>

#include "creation_launch.h"

namespace sexpgpu::cuda {
namespace {

constexpr int kThreads = 256;

template <class W>
__global__ void fill_kernel(W* __restrict__ out, int64_t n, W value) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = value;
}

template <class W>
cudaError_t launch(void* out, int64_t n, W value, int max_blocks, cudaStream_t stream) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  int grid = int(blocks < max_blocks ? blocks : max_blocks);
  fill_kernel<W><<<grid, kThreads, 0, stream>>>(static_cast<W*>(out), n, value);
  return cudaGetLastError();
}

// `bits` of elem_bytes bytes repeated across a 32-bit word.
uint32_t repeat32(uint64_t bits, int elem_bytes) {
  switch (elem_bytes) {
    case 1: return uint32_t(bits & 0xff) * 0x01010101u;
    case 2: return uint32_t(bits & 0xffff) * 0x00010001u;
    default: return uint32_t(bits);
  }
}

}  // namespace

cudaError_t launch_fill(void* out, int64_t n, int elem_bytes, uint64_t bits, int max_blocks,
                        cudaStream_t stream) {
  int64_t bytes = n * elem_bytes;
  if (bytes % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0) {
    uint4 word;
    if (elem_bytes == 8) {
      word.x = word.z = uint32_t(bits);
      word.y = word.w = uint32_t(bits >> 32);
    } else {
      word.x = word.y = word.z = word.w = repeat32(bits, elem_bytes);
    }
    return launch(out, bytes / 16, word, max_blocks, stream);
  }
  switch (elem_bytes) {
    case 1: return launch(out, n, uint8_t(bits), max_blocks, stream);
    case 2: return launch(out, n, uint16_t(bits), max_blocks, stream);
    case 4: return launch(out, n, uint32_t(bits), max_blocks, stream);
    default: return launch(out, n, uint64_t(bits), max_blocks, stream);
  }
}

}  // namespace sexpgpu::cuda
