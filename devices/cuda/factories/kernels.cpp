// Which kernel family serves each op: a switch over ops.def's `family`
// column, so a new family fails to compile here (-Werror=switch) until it
// has a CUDA lowering, and a new op joins its family's factory; and the
// helpers every family shares.
#include "cuda/check.h"
#include "kernel.h"

namespace sexpgpu::cuda {

std::string kernel_label(ir::Op op, ir::DType dtype) {
  return std::string(ir::info(op).ir_name) + "<" + std::string(ir::ir_name(dtype)) + ">";
}

KernelResult no_kernel(const KernelRequest& r, const std::string& why) {
  std::string operands;
  for (const ir::TensorType& t : r.inputs)
    operands += (operands.empty() ? "" : ", ") + t.to_string();
  return KernelResult::failure("the CUDA device has no kernel for '" +
                               std::string(ir::info(r.op).ir_name) + "' of (" + operands + ") -> " +
                               r.output.to_string() + ": " + why);
}

Kernel kernel_of(LaunchFn launch, std::string name) {
  Kernel k;
  k.launch = std::move(launch);
  k.name = std::move(name);
  return k;
}

int max_blocks(const Context& context) {
  return context.sm_count > 0 ? context.sm_count * 8 : 1024;
}

Kernel make_copy_kernel(size_t bytes) {
  LaunchFn launch = [bytes](const LaunchArgs& a) -> std::string {
    if (bytes == 0 || a.inputs[0] == a.output) return {};
    return cuda_error(
        cudaMemcpyAsync(a.output, a.inputs[0], bytes, cudaMemcpyDeviceToDevice, a.stream),
        "cudaMemcpyAsync");
  };
  return kernel_of(std::move(launch), "copy " + std::to_string(bytes) + " bytes");
}

KernelResult make_kernel(const KernelRequest& r) {
  switch (ir::info(r.op).family) {
    case ir::Family::Elementwise:
    case ir::Family::Cast: return make_elementwise_kernel(r);
    case ir::Family::Reduce: return make_reduce_kernel(r);
    case ir::Family::MatMul: return make_matmul_kernel(r);
    case ir::Family::Leaf: return no_kernel(r, "inputs and parameters are the caller's buffers");
    case ir::Family::Creation: return make_creation_kernel(r);
    case ir::Family::Random: return make_random_kernel(r);
    case ir::Family::Shape: return make_shape_kernel(r);
    case ir::Family::Nn: return make_nn_kernel(r);
    case ir::Family::Attention: return make_attention_kernel(r);
    case ir::Family::Conv: return make_conv_kernel(r);
    case ir::Family::Pool: return make_pool_kernel(r);
    case ir::Family::Collective: return make_collective_kernel(r);
  }
  return no_kernel(r, "unknown op");
}

}  // namespace sexpgpu::cuda
