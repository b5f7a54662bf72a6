// The interface between the CPU plan (plan.h) and its kernels: a factory
// per op family turns one lowered node, with its operand types, into a
// Kernel whose dtype dispatch, strides and sizes are all resolved; running
// it is then a plain call on the buffers.
#pragma once

#include <array>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ir/ops.h"
#include "plan/lower.h"

namespace sexpgpu::cpu {

class Collective;  // collective.h

// Reads inputs[i] (dense row-major, of the request's input types) and writes
// output. Returns "" or a run-time error (e.g. an id out of range in take).
using KernelFn = std::function<std::string(const void* const* inputs, void* output)>;

struct Kernel {
  KernelFn fn;
  std::string name;  // for the lowering report: "add<f32> same-shape"
};

struct KernelRequest {
  ir::Op op;
  const ir::Attrs& attrs;
  std::span<const ir::TensorType> inputs;
  const ir::TensorType& output;
  int threads;  // worker threads a kernel may use (>= 1, thread_pool.h)
  // matmul: operand i (typed above as the op sees it) is stored with its
  // last two axes swapped (lower.h, fold_transposes).
  std::array<bool, 2> transposed{};
  // The other processes of the run (collective.h), for all_reduce; null: a
  // world of one.
  Collective* collective = nullptr;
};

using KernelResult = ir::Result<Kernel>;

// Dispatches on the op to the family factories below (kernels.cpp).
KernelResult make_kernel(const KernelRequest& request);

// The families, one file each.
KernelResult make_elementwise_kernel(const KernelRequest& request);  // kernels_elementwise.cpp
KernelResult make_cast_kernel(const KernelRequest& request);         // kernels_cast.cpp
KernelResult make_creation_kernel(const KernelRequest& request);     // kernels_cast.cpp
KernelResult make_random_kernel(const KernelRequest& request);       // kernels_random.cpp
KernelResult make_reduce_kernel(const KernelRequest& request);       // kernels_reduce.cpp
KernelResult make_shape_kernel(const KernelRequest& request);        // kernels_shape.cpp
KernelResult make_matmul_kernel(const KernelRequest& request);       // kernels_matmul.cpp
KernelResult make_nn_kernel(const KernelRequest& request);           // kernels_nn.cpp
KernelResult make_attention_kernel(const KernelRequest& request);    // kernels_attention.cpp
KernelResult make_conv_kernel(const KernelRequest& request);         // kernels_conv.cpp
KernelResult make_pool_kernel(const KernelRequest& request);         // kernels_pool.cpp
KernelResult make_collective_kernel(const KernelRequest& request);   // kernels_collective.cpp

// One fusion group of ir::fuse_elementwise as one kernel
// (kernels_fused.cpp). Its nodes all have the output's shape; each operand
// is an earlier node of the group or one of the external operands, which
// are broadcastable to the output.
using FusedNode = GroupedNode;  // lower.h

struct FusedRequest {
  std::vector<FusedNode> nodes;  // in program order; the last one's value is the output
  std::vector<ir::TensorType> externals;
  ir::TensorType output;
  int threads;
};

// Fails for a group it does not handle (a cast in it, a dtype but f32/f64
// or a bool condition or result); the caller then runs its nodes one by one.
KernelResult make_fused_kernel(const FusedRequest& request);

// A copy of `bytes` bytes (reshape/stop_gradient when not aliased, outputs
// that are inputs).
Kernel make_copy_kernel(size_t bytes);

// "add<f32>": the op's IR name and the compute dtype, for kernel names.
std::string kernel_label(ir::Op op, ir::DType dtype);
// The failure every factory gives for a dtype it has no kernel for.
KernelResult no_kernel(const KernelRequest& request, const std::string& why);

}  // namespace sexpgpu::cpu
