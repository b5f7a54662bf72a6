// libsexpgpu-nccl.so: the cuda device (devices/cuda/device_api.h) with the
// peers of a run of several processes through NCCL (nccl_peers.h): one
// process per GPU, started with the rank variables (docs/run.md). Its probe
// is the cuda device's plus NCCL's version and the links between the GPUs
// it sees (which pairs can reach each other's memory directly: NVLink or
// PCIe peer access; the others go through the host).
#include <cuda_runtime_api.h>

#include "cuda/device_api.h"
#include "nccl_peers.h"
#include "sexpgpu/sdk/tables.h"

namespace {

void describe(nlohmann::json& probe) {
  probe["nccl"] = sexpgpu::nccl::version();
  nlohmann::json links = nlohmann::json::array();
  const int count = probe.value("count", 0);
  for (int a = 0; a < count; ++a)
    for (int b = a + 1; b < count; ++b) {
      int peer = 0;
      if (cudaDeviceCanAccessPeer(&peer, a, b) != cudaSuccess) cudaGetLastError();
      links.push_back({{"gpus", {a, b}}, {"peer_access", peer != 0}});
    }
  probe["links"] = links;
}

constexpr sexpgpu::cuda::Flavor kNccl{
    .name = "nccl", .join = sexpgpu::nccl::join, .describe = describe};

}  // namespace

SEXPGPU_SDK_ENTRY(sexpgpu::cuda::device_plugin(&kNccl))
