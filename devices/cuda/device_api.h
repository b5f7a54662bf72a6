// The CUDA device as a plugin (device_api.cpp): one sg_device_api over the
// executor, served by two plugins that differ in their flavour:
// libsexpgpu-cuda.so (plugin.cpp), a world of one, and libsexpgpu-nccl.so
// (devices/nccl), whose join connects the ranks of a run of several
// processes with a NCCL communicator. Each plugin links its own copy of this
// code, so the flavour is a per-plugin global set once by its entry point.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "context.h"
#include "ir/types.h"
#include "sexpgpu/plugin.h"

namespace sexpgpu::cuda {

class Collective;

// The other ranks of a run as one device reaches them.
class Peers {
 public:
  virtual ~Peers() = default;
  // For the IR's all_reduce op (Context::collective).
  virtual Collective* collective() = 0;
  // The ABI's all_reduce and broadcast of one buffer over every rank,
  // enqueued on `stream`: "" or why not.
  virtual std::string all_reduce(void* data, size_t count, ir::DType dtype, bool mean,
                                 cudaStream_t stream) = 0;
  virtual std::string broadcast(void* data, size_t bytes, int root, cudaStream_t stream) = 0;
  // Waits for `stream` while watching the ranks: a rank gone or silent past
  // the world's timeout aborts the communicator and says so.
  virtual std::string synchronize(cudaStream_t stream) = 0;
};

struct Flavor {
  const char* name;  // the plugin's: "cuda", "nccl"
  // Joins options' "world" ({"rank","size",...}, {} for a world of one) on
  // the opened GPU, whose work goes on `stream`. Null: the flavour serves a
  // world of one only, and open refuses a larger one.
  ir::Result<std::unique_ptr<Peers>> (*join)(const nlohmann::json& world, const Context& context,
                                             cudaStream_t stream) = nullptr;
  // Adds the flavour's own facts to the probe JSON; may be null.
  void (*describe)(nlohmann::json& probe) = nullptr;
};

// The plugin description for `flavor` (static storage), for the entry point:
//   SEXPGPU_SDK_ENTRY(sexpgpu::cuda::device_plugin(&kFlavor))
const sg_plugin& device_plugin(const Flavor* flavor);

}  // namespace sexpgpu::cuda
