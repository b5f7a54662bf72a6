// libsexpgpu-nccl.so: the cuda device (devices/cuda/device_api.h) with the
// peers of a run of several processes through NCCL (nccl_peers.h): one
// process per GPU, started with the rank variables (docs/run.md). Its probe
// is the cuda device's plus NCCL's version.
#include "cuda/device_api.h"
#include "nccl_peers.h"
#include "sexpgpu/sdk/tables.h"

namespace {

void describe(nlohmann::json& probe) {
  probe["nccl"] = sexpgpu::nccl::version();
}

constexpr sexpgpu::cuda::Flavor kNccl{
    .name = "nccl", .join = sexpgpu::nccl::join, .describe = describe};

}  // namespace

SEXPGPU_SDK_ENTRY(sexpgpu::cuda::device_plugin(&kNccl))
