// The creation kernels' launch interface (creation.cu), plain enough for
// nvcc: a fill of a buffer with one element's bits (full, and pad's
// border); and for the factories, the host conversion of a double to an
// element's bits (kernels_creation.cpp) and the device memory a kernel's
// prepare allocates (a constant's data, a sort's temporary storage).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace sexpgpu::ir {
enum class DType : uint8_t;
}

namespace sexpgpu::cuda {

// Writes `bits` (the low elem_bytes bytes: 1, 2, 4 or 8) to each of the n
// elements of out; n > 0.
cudaError_t launch_fill(void* out, int64_t n, int elem_bytes, uint64_t bits, int max_blocks,
                        cudaStream_t stream);

// Host only (kernels_creation.cpp): `value` stored as `dtype`, as the CPU
// device converts it (cpu/storage.h convert: bf16/f16 rounded once, floats
// to integers truncated and saturated, NaN to 0, bool = value != 0), as the
// element's bits in the low bytes.
uint64_t storage_bits(double value, ir::DType dtype);

// Device memory a kernel owns (Kernel::resources), allocated by its
// prepare (factories must not touch the GPU) and freed with the kernel.
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;

  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
};

}  // namespace sexpgpu::cuda
