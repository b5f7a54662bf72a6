// Which kernel family serves each op: a switch over ops.def's `family`
// column, so a new family fails to compile here (-Werror=switch) until it
// has a CPU kernel factory, and a new op joins its family's factory.
#include "kernel.h"

namespace sexpgpu::cpu {

KernelResult make_kernel(const KernelRequest& r) {
  switch (ir::info(r.op).family) {
    case ir::Family::Elementwise: return make_elementwise_kernel(r);
    case ir::Family::Cast: return make_cast_kernel(r);
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

}  // namespace sexpgpu::cpu
