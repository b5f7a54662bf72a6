// The collective kernel (ops.def, "Collective") on the CUDA device:
// all_reduce packs its operands into the 1-D output with one device-to-device
// copy each, then, when the device has the run's other GPUs
// (Context::collective, the nccl plugin's), enqueues their sum or mean on
// the collective's own stream (Kernel::forks: the program joins it before
// the bucket is read). Every step is an enqueue, so it runs inside graph
// capture. Without a Collective (the plain cuda device, a world of one) it
// only packs.
#include <cstddef>
#include <vector>

#include "cuda/check.h"
#include "cuda/collective.h"
#include "kernel.h"
#include "plan/bucket_layout.h"

namespace sexpgpu::cuda {

KernelResult make_collective_kernel(const KernelRequest& r) {
  sexpgpu::plan::BucketLayout layout;
  if (std::string why =
          sexpgpu::plan::bucket_layout(r.op, r.output.dtype, r.attrs, r.inputs, layout);
      !why.empty())
    return no_kernel(r, why);
  const ir::DType dtype = r.output.dtype;
  Collective* collective = r.context.collective;
  LaunchFn launch = [layout, dtype, collective](const LaunchArgs& a) -> std::string {
    auto* out = static_cast<std::byte*>(a.output);
    for (size_t i = 0, at = 0; i < layout.bytes.size(); at += layout.bytes[i], ++i) {
      if (layout.bytes[i] == 0) continue;
      if (std::string e = cuda_error(cudaMemcpyAsync(out + at, a.inputs[i], layout.bytes[i],
                                                     cudaMemcpyDeviceToDevice, a.stream),
                                     "cudaMemcpyAsync");
          !e.empty())
        return e;
    }
    // A world of one on the nccl device still reduces (a communicator of
    // one rank), so the path is the same at every size.
    if (!collective || layout.total == 0) return "";
    return collective->reduce_bucket(a.output, layout.count(), dtype, layout.mean, a.stream);
  };
  std::string name = kernel_label(r.op, dtype) + " " + std::to_string(r.inputs.size()) +
                     " operands" + (collective ? "" : " (a world of one: packs)");
  Kernel k = kernel_of(std::move(launch), std::move(name));
  k.forks = collective != nullptr;  // the reduction runs on the collective's stream
  return k;
}

}  // namespace sexpgpu::cuda
