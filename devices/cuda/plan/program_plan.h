// The CUDA program's internal parts, shared by the files that implement
// it: the CudaProgram class and the Step and Slot of its flat plan. The
// class is split by concern (program_plan.cpp plans, program_merge.cpp
// merges steps into multi-tensor launches, program_run.cpp prepares and
// runs, program_report.cpp reports), so these declarations live here
// rather than in one file's anonymous namespace. Not for use outside
// devices/cuda/program*.cpp: devices use program.h.
#pragma once

#include <cuda_runtime_api.h>

#include <list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attention_views.h"
#include "cuda/codegen/elementwise.h"
#include "cuda/factories/kernel.h"
#include "cuda/profile.h"
#include "cuda/program.h"
#include "plan/in_place.h"
#include "plan/lower.h"

namespace sexpgpu::cuda::program_detail {

using cpu::Lowered;
using cpu::LoweredNode;
using ir::NodeId;
using ir::Op;

struct Slot {
  enum Kind : uint8_t { Input, Output, Arena, Constant, None } kind = None;
  size_t index = 0;  // input/output number, or arena/constant offset
};

struct Step {
  Kernel kernel;
  std::vector<Slot> inputs;
  Slot output;
  Slot scratch;
  NodeId origin;  // the IR node, for messages (-1: an operand cast)
  Op op;
  std::vector<NodeId> members;       // a fused group's IR nodes, in order
  ir::DType dtype = ir::DType::F32;  // the result's (the roofline's unit)
  double bytes = 0;                  // read and written, for the roofline
  // A generated elementwise kernel's group (for multi-tensor launches), and
  // per input the step that writes it (-1: an input or a constant).
  std::optional<ElementwiseGroup> group;
  std::vector<int64_t> producers;
  // What SEXPGPU_CUDA_CHECK reads back: the result's and operands' types.
  ir::TensorType type;
  std::vector<ir::TensorType> input_types;
  Slot link;  // shared with the linked step (KernelRequest::link)
  // A multi-tensor sum of squares: its inputs are (operand, result) pairs,
  // one per member, and it has no output of its own.
  bool pairs = false;
  // An elementwise step of the function's inputs alone (a weight's cast to
  // bf16), planned first: its result's buffer lives from the first step, so
  // it may join a multi-tensor launch there.
  bool hoisted = false;
  // A fused group's stored nodes (ElementwiseGroup::stores), in order.
  std::vector<Slot> stores;
  std::vector<ir::TensorType> store_types;
};

// A sum of squares' step, its node and the operand it squares.
struct SumOfSquares {
  size_t step, node;
  NodeId operand;
};

inline std::string node_label(const ir::Function& fn, NodeId origin, Op op) {
  if (origin < 0)
    return "a cast inserted by the CUDA lowering ('" + std::string(ir::info(op).ir_name) + "')";
  const ir::Node& n = fn.node(origin);
  return "%" + std::to_string(origin) + " = " + std::string(ir::info(n.op).ir_name) + " " +
         n.type.to_string();
}

struct DeviceFree {
  void operator()(void* p) const {
    if (p) cudaFree(p);
  }
};
using DevicePtr = std::unique_ptr<void, DeviceFree>;

// A captured step, for one binding of inputs and outputs.
struct Graph {
  std::vector<const void*> key;
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec) cudaGraphExecDestroy(exec);
  }
};

class CudaProgram final : public Program {
 public:
  explicit CudaProgram(Context& context) : ctx_(context) {}
  ~CudaProgram() override;
  std::string build(const ir::Function& fn);

  std::string run(std::span<const void* const> inputs, std::span<void* const> outputs,
                  cudaStream_t stream) override;
  size_t arena_bytes() const override { return arena_bytes_; }
  size_t constant_bytes() const override { return constant_bytes_; }
  std::string report_json() const override { return report_; }
  const ir::Function& function() const override { return fn_; }
  bool writes_in_place(size_t output, size_t input) const override {
    return plan::writes_in_place(access_, output, input);
  }

 private:
  std::string plan(const Lowered& lowered);
  std::string merge_multi_tensor();
  void merge_sums_of_squares(const Lowered& lowered, const std::vector<SumOfSquares>& sums,
                             const std::vector<Slot>& slot, const std::vector<size_t>& root,
                             std::vector<size_t>& step_of,
                             std::vector<std::pair<size_t, size_t>>& links);
  std::string prepare();
  std::string enqueue(std::span<const void* const> inputs, std::span<void* const> outputs,
                      cudaStream_t stream);
  std::string make_report(const Lowered& lowered) const;
  std::string check_step(size_t k, const LaunchArgs& launch, cudaStream_t stream) const;

  Context& ctx_;
  ir::Function fn_;
  std::vector<Step> steps_;
  // Per step before the multi-tensor merge: what it reads and writes of the
  // caller's buffers, and the launch it runs in after the merge.
  std::vector<plan::StepAccess> access_;
  std::vector<NodeViews> views_;  // per lowered node: attention operands read in place
  std::vector<std::pair<size_t, Kernel>> constant_kernels_;  // (offset, creation kernel)
  size_t constant_bytes_ = 0, arena_bytes_ = 0;
  DevicePtr arena_, constants_;
  std::list<Graph> graphs_;                          // most recent first
  std::vector<std::vector<const void*>> seen_once_;  // bindings run eagerly once
  std::string report_;
  std::unique_ptr<Profile> profile_;  // SEXPGPU_CUDA_PROFILE set
};

}  // namespace sexpgpu::cuda::program_detail
