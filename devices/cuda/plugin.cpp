// libsexpgpu-cuda.so: the CUDA device of one process (device_api.h). A run
// of several processes takes the nccl device, the same device with peers.
#include "device_api.h"
#include "sexpgpu/sdk/tables.h"

namespace {
constexpr sexpgpu::cuda::Flavor kCuda{.name = "cuda"};
}  // namespace

SEXPGPU_SDK_ENTRY(sexpgpu::cuda::device_plugin(&kCuda))
