// Elementwise kernels generated from the IR: one node, or one fusion group
// (fusion.h), becomes one CUDA kernel whose body is the group's scalar
// expressions (elementwise_prelude.cuh gives each op's meaning), compiled by
// NVRTC (nvrtc_cache.h). Every dtype, cast and broadcast is handled, so any
// group of elementwise nodes fuses. A group may also hold views (is_view:
// permute, slice, pad, reshape, expand, flip), whose output element is one
// operand element or pad's constant: they fuse as index arithmetic
// (elementwise_views.h), so a chain like slice, permute, cast is one kernel.
#pragma once

#include <string>
#include <vector>

#include "cuda/factories/kernel.h"
#include "plan/lower.h"

namespace sexpgpu::cuda {

using GroupNode = cpu::GroupedNode;  // devices/plan/lower.h: the shared plan's group node

// Whether `op` is a view: each output element is one operand element (or
// pad's value), so it fuses as an index transformation.
bool is_view(ir::Op op);

// Nodes in program order; the last one's value is the output. Without
// views every node has the output's shape and the externals are
// broadcastable to it; with views, `shapes` holds each node's shape and an
// elementwise node's operands are broadcastable to its own shape.
struct ElementwiseGroup {
  std::vector<GroupNode> nodes;
  std::vector<ir::TensorType> externals;
  ir::TensorType output;
  std::vector<ir::Shape> shapes;  // per node; empty: all the output's shape
  // Nodes (not the last) whose values the kernel also writes, each to its
  // own buffer (LaunchArgs::stores, in this order) in its own dtype: a
  // value read later from memory, or a function output, computed inside its
  // reader's kernel (fusion.h). Only in groups without views.
  std::vector<int> stores;
};

// Whether the group holds a view (and then is compiled by elementwise_views.h).
bool has_views(const ElementwiseGroup& group);

KernelResult make_group_kernel(const ElementwiseGroup& group, Context& context);

// The CUDA source of the group's kernel named `name` (for tests: NVRTC
// compiles it without a GPU). Without views it also defines `name`_v, the
// same kernel over vectors of consecutive elements, when the geometry
// allows one (launched when every buffer is 16-byte aligned).
std::string group_source(const ElementwiseGroup& group, const std::string& name);

// Multi-tensor launches (an optimizer's update of every parameter: the same
// code over tensors of many shapes). A group is shape-free when each
// external is the output's shape or a single element: its code is then the
// same for every shape, and groups of one key run as one launch over a
// table of their pointers and sizes, passed by value.
bool shape_free(const ElementwiseGroup& group);
std::string shape_free_key(const ElementwiseGroup& group);
// How many groups like this one a launch's parameters can hold.
size_t multi_group_capacity(const ElementwiseGroup& group);
std::string multi_group_source(const ElementwiseGroup& group, size_t members,
                               const std::string& name);
// One launch of `groups` (shape-free, one key, at most the capacity). Its
// LaunchArgs::inputs hold, group after group, the group's externals, then
// its output and its stored nodes' buffers; LaunchArgs::output is unused.
KernelResult make_multi_group_kernel(const std::vector<ElementwiseGroup>& groups, Context& context);

}  // namespace sexpgpu::cuda
