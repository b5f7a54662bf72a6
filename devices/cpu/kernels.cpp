// Which kernel family serves each op: one case per row of ops.def, so a new
// op fails to compile here (-Werror=switch) until it has a CPU kernel.
#include "kernel.h"

namespace sexpgpu::cpu {

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
    case ir::Op::Clamp: return make_elementwise_kernel(r);
    case ir::Op::Cast: return make_cast_kernel(r);
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
    case ir::Op::LayerNormParamGrad:
    case ir::Op::RmsNorm: return make_nn_kernel(r);
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

}  // namespace sexpgpu::cpu
