// The interface between the CUDA program (program_plan.cpp) and its kernel
// families, as on the CPU device (devices/cpu/kernel.h): a factory per op
// family turns one lowered node, with its operand types, into a Kernel whose
// dtype dispatch, strides, grid and library descriptors are all resolved at
// compile time; launching it only enqueues work on a stream.
//
// Factories are host C++ (kernels_*.cpp, compiled by the C++ compiler); the
// __global__ functions live in *.cu files that include only CUDA headers and
// their family's plain launch header (*_launch.h), so nvcc never sees the IR
// library's headers.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cuda/context.h"
#include "ir/ops.h"

namespace sexpgpu::cuda {

// What a kernel's launch sees at run time: device pointers only.
struct LaunchArgs {
  const void* const* inputs;  // the node's operands, in order, dense row-major
  void* output;               // dense row-major, never overlapping an input
  void* scratch;              // Kernel::scratch_bytes of device memory (256-aligned), or null
  cudaStream_t stream;
  // A buffer shared with one other step (Kernel::link_bytes): the earlier
  // step writes it, the later one reads it; null when not linked.
  void* link = nullptr;
  // A generated elementwise kernel's other results (ElementwiseGroup::stores).
  void* const* stores = nullptr;
};

// Enqueues the kernel's work on args.stream and returns "" or what failed
// (cuda_error in check.h). It runs inside CUDA graph capture, so it must not
// synchronize, allocate, free, or copy from pageable host memory; everything
// it needs beyond LaunchArgs is captured by value at compile time.
using LaunchFn = std::function<std::string(const LaunchArgs&)>;

struct Kernel {
  LaunchFn launch;
  std::string name;          // for the lowering report: "softmax<f32> rows=512 cols=50257"
  size_t scratch_bytes = 0;  // temporary device memory the launch needs (the arena holds it)
  // Device memory or library objects the kernel owns for its lifetime (a
  // constant's data, cuBLASLt descriptors), freed with the program.
  std::shared_ptr<void> resources;
  // Work that needs the GPU, done once before the first launch (choosing a
  // cuBLASLt algorithm, uploading a constant): factories run also where
  // there is no GPU (Context::plan_only), so they must not touch it
  // themselves. Returns "" or what failed. May be empty.
  std::function<std::string()> prepare;
  // A linked pair (KernelRequest::link): the bytes the writer leaves in
  // LaunchArgs::link for its reader, and whether the reader reads them.
  size_t link_bytes = 0;
  bool reads_link = false;
  // The launch leaves work on another stream (the all_reduce op's
  // collective, Context::collective): the program joins it
  // (Collective::join) before the first step that reads this one's result,
  // and at its end.
  bool forks = false;
};

// An attention operand or result read or written in place as a view of
// another node's buffer (attention_views.h): the logical [B,H,T,D] shape,
// where element (0,0,0,0) is and the strides of b, h and t, in elements; D
// is contiguous.
struct HeadView {
  ir::Shape shape;
  int64_t offset = 0;
  int64_t batch = 0, head = 0, row = 0;
  bool operator==(const HeadView&) const = default;
};

// The views of one node's operands (one entry each, nullopt: dense as its
// type says) and of its result or its result's parts.
struct NodeViews {
  std::vector<std::optional<HeadView>> operands;
  std::optional<HeadView> output;
  // attention_grad: where dq, dk and dv go in its result's buffer (empty:
  // the dense [B,H,Tq+2Tk,D]).
  std::vector<HeadView> output_parts;
  const std::optional<HeadView>& operand(size_t i) const {
    static const std::optional<HeadView> dense;
    return i < operands.size() ? operands[i] : dense;
  }
};

struct KernelRequest {
  ir::Op op;
  const ir::Attrs& attrs;
  std::span<const ir::TensorType> inputs;
  const ir::TensorType& output;
  Context& context;
  // matmul: operand i is stored with its last two axes swapped (a permute
  // folded into the transpose flag, devices/plan/lower.h fold_transposes).
  std::array<bool, 2> transposed{};
  // attention, cross_entropy: also write the row statistics (the
  // log-sum-exp) that the gradient node of the same operands reads, instead
  // of recomputing them; attention_grad, cross_entropy_grad: read them
  // (asked only when the forward's kernel writes them: Kernel::link_bytes >
  // 0). Likewise layer_norm_grad leaves its partial column sums to the
  // layer_norm_param_grad of the same operands. A kernel that cannot
  // leaves them alone.
  bool link = false;
  // attention, attention_grad: operands and result that are views of other
  // buffers (null: all dense). Other kernels are never given views.
  const NodeViews* views = nullptr;
  // matmul a^T b of half matrices: also write the sums of b over its rows
  // (a linear layer's bias gradient, beside its weight gradient), f32,
  // through LaunchArgs::stores[0]. A kernel that cannot fails instead.
  bool bias_gradient = false;
};

using KernelResult = ir::Result<Kernel>;

// Dispatches on the op to the family factories below (kernels.cpp).
KernelResult make_kernel(const KernelRequest& request);

// The families, one pair of files each (factory .cpp, kernels .cu).
KernelResult make_elementwise_kernel(const KernelRequest& request);  // elementwise.cpp (NVRTC)
KernelResult make_creation_kernel(const KernelRequest& request);     // kernels_creation.cpp
KernelResult make_random_kernel(const KernelRequest& request);       // kernels_random.cpp
KernelResult make_reduce_kernel(const KernelRequest& request);       // kernels_reduce.cpp
KernelResult make_shape_kernel(const KernelRequest& request);        // kernels_shape.cpp
KernelResult make_matmul_kernel(const KernelRequest& request);       // kernels_matmul.cpp
KernelResult make_nn_kernel(const KernelRequest& request);           // kernels_nn.cpp
KernelResult make_norm_param_kernel(const KernelRequest& request);   // kernels_norm_param.cpp
KernelResult make_attention_kernel(const KernelRequest& request);    // kernels_attention.cpp
KernelResult make_conv_kernel(const KernelRequest& request);         // kernels_conv.cpp
KernelResult make_pool_kernel(const KernelRequest& request);         // kernels_pool.cpp
KernelResult make_collective_kernel(const KernelRequest& request);   // kernels_collective.cpp
// linear_cross_entropy, composed of the matmul and nn kernels (kernels_classifier.cpp).
KernelResult make_linear_cross_entropy_kernel(const KernelRequest& request);

// A device-to-device copy of `bytes` (an output that is an input, a
// reshape that must materialise).
Kernel make_copy_kernel(size_t bytes);

// A kernel of `launch` called `name`, with no scratch, resources or prepare.
Kernel kernel_of(LaunchFn launch, std::string name);

// The most blocks a grid-stride kernel launches: eight per multiprocessor.
int max_blocks(const Context& context);

// Scratch pieces a kernel carves out of its scratch start at multiples of
// this: what cuBLASLt's algorithms and vector loads may assume of a pointer.
inline constexpr size_t kPointerAlignment = 256;
inline size_t pointer_aligned(size_t bytes) {
  return (bytes + kPointerAlignment - 1) / kPointerAlignment * kPointerAlignment;
}

// bf16 or f16: the types the tensor cores take and the plan's passes
// round to.
inline bool is_half(ir::DType d) {
  return d == ir::DType::BF16 || d == ir::DType::F16;
}

// "add<f32>": the op's IR name and the compute dtype, for kernel names.
std::string kernel_label(ir::Op op, ir::DType dtype);
// The failure every factory gives for a case it has no kernel for.
KernelResult no_kernel(const KernelRequest& request, const std::string& why);

}  // namespace sexpgpu::cuda
