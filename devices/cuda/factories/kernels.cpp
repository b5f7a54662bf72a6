// Which kernel family serves each op: one case per row of ops.def, so a new
// op fails to compile here (-Werror=switch) until it has a CUDA lowering;
// and the helpers every family shares.
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
  switch (r.op) {
    case ir::Op::Neg:
    case ir::Op::Abs:
    case ir::Op::Square:
    case ir::Op::Sign:
    case ir::Op::Relu:
    case ir::Op::Floor:
    case ir::Op::Ceil:
    case ir::Op::Round:
    case ir::Op::Exp:
    case ir::Op::Log:
    case ir::Op::Log1p:
    case ir::Op::Expm1:
    case ir::Op::Sqrt:
    case ir::Op::Rsqrt:
    case ir::Op::Sin:
    case ir::Op::Cos:
    case ir::Op::Tanh:
    case ir::Op::Sigmoid:
    case ir::Op::Gelu:
    case ir::Op::Silu:
    case ir::Op::Softplus:
    case ir::Op::Reciprocal:
    case ir::Op::Erf:
    case ir::Op::LogicalNot:
    case ir::Op::IsFinite:
    case ir::Op::Add:
    case ir::Op::Sub:
    case ir::Op::Mul:
    case ir::Op::Div:
    case ir::Op::Pow:
    case ir::Op::Maximum:
    case ir::Op::Minimum:
    case ir::Op::Atan2:
    case ir::Op::Mod:
    case ir::Op::Lt:
    case ir::Op::Le:
    case ir::Op::Gt:
    case ir::Op::Ge:
    case ir::Op::Eq:
    case ir::Op::Ne:
    case ir::Op::LogicalAnd:
    case ir::Op::LogicalOr:
    case ir::Op::Where:
    case ir::Op::Clamp:
    case ir::Op::Cast: return make_elementwise_kernel(r);
    case ir::Op::Sum:
    case ir::Op::Prod:
    case ir::Op::Max:
    case ir::Op::Min:
    case ir::Op::Mean:
    case ir::Op::Var:
    case ir::Op::Std:
    case ir::Op::LogSumExp:
    case ir::Op::Norm:
    case ir::Op::ArgMax:
    case ir::Op::ArgMin: return make_reduce_kernel(r);
    case ir::Op::MatMul: return make_matmul_kernel(r);
    case ir::Op::Input:
    case ir::Op::Param: return no_kernel(r, "inputs and parameters are the caller's buffers");
    case ir::Op::Full:
    case ir::Op::Constant:
    case ir::Op::Arange: return make_creation_kernel(r);
    case ir::Op::RandomNormal:
    case ir::Op::RandomUniform:
    case ir::Op::RandomBernoulli: return make_random_kernel(r);
    case ir::Op::Reshape:
    case ir::Op::Permute:
    case ir::Op::Expand:
    case ir::Op::Concat:
    case ir::Op::Slice:
    case ir::Op::Take:
    case ir::Op::IndexAdd:
    case ir::Op::Pad:
    case ir::Op::Flip:
    case ir::Op::StopGradient: return make_shape_kernel(r);
    case ir::Op::Softmax:
    case ir::Op::LogSoftmax:
    case ir::Op::CrossEntropy:
    case ir::Op::CrossEntropyGrad:
    case ir::Op::LayerNorm:
    case ir::Op::LayerNormGrad:
    case ir::Op::RmsNorm: return make_nn_kernel(r);
    case ir::Op::LayerNormParamGrad: return make_norm_param_kernel(r);
    case ir::Op::Attention:
    case ir::Op::AttentionGrad: return make_attention_kernel(r);
    case ir::Op::Conv2d:
    case ir::Op::Conv2dGradInput:
    case ir::Op::Conv2dGradWeight: return make_conv_kernel(r);
    case ir::Op::MaxPool2d:
    case ir::Op::AvgPool2d:
    case ir::Op::MaxPool2dGrad:
    case ir::Op::AvgPool2dGrad: return make_pool_kernel(r);
  }
  return no_kernel(r, "unknown op");
}

}  // namespace sexpgpu::cuda
