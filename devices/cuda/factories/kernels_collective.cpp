// The collective kernel (ops.def, "Collective") on the CUDA device:
// all_reduce packs its operands into the 1-D output with one device-to-device
// copy each, then, when the device has the run's other GPUs
// (Context::collective, the nccl plugin's), enqueues their sum on the same
// stream, and for reduction "mean" scales by 1 / world size. Every step is
// an enqueue, so it runs inside graph capture. Without a Collective (the
// plain cuda device, a world of one) it only packs.
#include <cstddef>
#include <vector>

#include "cuda/check.h"
#include "cuda/collective.h"
#include "cuda/kernels/collective_launch.h"
#include "kernel.h"

namespace sexpgpu::cuda {

namespace {

ScaleStorage scale_storage(ir::DType d) {
  switch (d) {
    case ir::DType::F64: return ScaleStorage::F64;
    case ir::DType::BF16: return ScaleStorage::BF16;
    case ir::DType::F16: return ScaleStorage::F16;
    default: return ScaleStorage::F32;
  }
}

}  // namespace

KernelResult make_collective_kernel(const KernelRequest& r) {
  if (r.op != ir::Op::AllReduce) return no_kernel(r, "not a collective op");
  const ir::DType dtype = r.output.dtype;
  if (!ir::is_float(dtype)) return no_kernel(r, "all_reduce sums floats only");
  if (!r.attrs.reduction || (*r.attrs.reduction != "mean" && *r.attrs.reduction != "sum"))
    return no_kernel(r, "the `reduction` is not \"mean\" or \"sum\"");
  const size_t element = ir::size_bytes(dtype);
  std::vector<size_t> bytes;
  size_t total = 0;
  for (const ir::TensorType& t : r.inputs) {
    bytes.push_back(size_t(t.shape.numel().value_or(0)) * element);
    total += bytes.back();
  }
  const bool mean = *r.attrs.reduction == "mean";
  Collective* collective = r.context.collective;
  const int blocks = max_blocks(r.context);
  LaunchFn launch = [bytes, total, element, dtype, mean, collective,
                     blocks](const LaunchArgs& a) -> std::string {
    auto* out = static_cast<std::byte*>(a.output);
    for (size_t i = 0, at = 0; i < bytes.size(); at += bytes[i], ++i) {
      if (bytes[i] == 0) continue;
      if (std::string e = cuda_error(
              cudaMemcpyAsync(out + at, a.inputs[i], bytes[i], cudaMemcpyDeviceToDevice, a.stream),
              "cudaMemcpyAsync");
          !e.empty())
        return e;
    }
    if (!collective || collective->world_size() <= 1 || total == 0) return "";
    const size_t count = total / element;
    if (std::string e = collective->all_reduce_sum(a.output, count, dtype, a.stream); !e.empty())
      return e;
    if (!mean) return "";
    return cuda_error(launch_scale(a.output, int64_t(count), scale_storage(dtype),
                                   1.0 / double(collective->world_size()), blocks, a.stream),
                      "the all_reduce mean's scale");
  };
  std::string name = kernel_label(r.op, dtype) + " " + std::to_string(r.inputs.size()) +
                     " operands" + (collective ? "" : " (a world of one: packs)");
  return kernel_of(std::move(launch), std::move(name));
}

}  // namespace sexpgpu::cuda
