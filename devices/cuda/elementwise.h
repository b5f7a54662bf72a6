// Elementwise kernels generated from the IR: one node, or one fusion group
// of ir::fuse_elementwise, becomes one CUDA kernel whose body is the
// group's scalar expressions (elementwise_prelude.cuh gives each op's
// meaning), compiled by NVRTC (nvrtc_cache.h). Every dtype, cast and broadcast is
// handled, so any group of elementwise nodes fuses.
#pragma once

#include <string>
#include <vector>

#include "kernel.h"

namespace sexpgpu::cuda {

struct GroupNode {
  ir::Op op;
  ir::Attrs attrs;
  ir::DType dtype;            // the result's
  std::vector<int> operands;  // k >= 0: node k of the group; k < 0: external -1 - k
};

// Nodes in program order, every one of the output's shape; the last one's
// value is the output. Externals are broadcastable to the output.
struct ElementwiseGroup {
  std::vector<GroupNode> nodes;
  std::vector<ir::TensorType> externals;
  ir::TensorType output;
};

KernelResult make_group_kernel(const ElementwiseGroup& group, Context& context);

// The CUDA source of the group's kernel named `name` (for tests: NVRTC
// compiles it without a GPU).
std::string group_source(const ElementwiseGroup& group, const std::string& name);

}  // namespace sexpgpu::cuda
