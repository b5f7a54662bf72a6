// The CPU lowering of an IR function: the same graph with explicit casts, so
// each compute kernel sees operands of one compute dtype. An op whose
// operands differ from the dtype it computes in (add of i32 and f32, sum of
// bool) gets casts in front; an op computing in bf16/f16 computes in f32
// and is followed by a cast that rounds (tensors.md: the CPU emulates them
// by rounding at op boundaries); bool arithmetic computes in u8 and casts
// back (x != 0). Kernels then need only f32, f64, i32, i64, u8 and u16.
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace sexpgpu::cpu {

struct LoweredNode {
  ir::Op op;
  ir::NodeIds inputs;  // lowered ids
  ir::TensorType type;
  ir::Attrs attrs;
  ir::NodeId
      origin;  // the IR node it computes (for a cast after it: the same); -1: an operand cast
  // matmul only: operand i is stored with its last two axes swapped (a
  // permute folded into the gemm's transpose flag, see fold_transposes).
  std::array<bool, 2> transposed{};
};

struct Lowered {
  std::vector<LoweredNode> nodes;
  std::vector<ir::NodeId> of_original;  // IR node id -> the lowered node holding its value
};

struct LowerOptions {
  // Matrix products of bf16/f16 keep their dtype (a device whose matrix
  // units take them and accumulate in f32, as CUDA's do) instead of
  // computing in f32 and rounding after.
  bool native_half_matmul = false;
  // attention and attention_grad of bf16/f16 keep their dtype likewise (a
  // device with a flash-attention kernel that takes them).
  bool native_half_attention = false;
};

Lowered lower(const ir::Function& fn, const LowerOptions& options = {});

// A group of lowered nodes one kernel runs (a fusion group): each node's
// operands are earlier nodes of the group (k >= 0) or the group's external
// operands (k < 0: external -1 - k, in `externals`).
struct GroupedNode {
  ir::Op op;
  ir::Attrs attrs;
  ir::DType dtype;            // the result's
  std::vector<int> operands;  // k >= 0: node k of the group; k < 0: external -1 - k
};

struct LoweredGroup {
  std::vector<GroupedNode> nodes;  // in program order; the last one's value is the result
  ir::NodeIds externals;           // lowered ids of the operands from outside
  std::vector<ir::TensorType> external_types;
};

// `members` (lowered ids in program order) as one group's nodes and
// external operands, whatever reads them from outside.
LoweredGroup build_group(const Lowered& lowered, const std::vector<ir::NodeId>& members);

// `members` (lowered ids in program order, all live) as one group, or
// nullopt when a live node outside it (group_of[i] != group) reads a member
// other than the last: only the last one's value leaves the kernel.
std::optional<LoweredGroup> gather_group(const Lowered& lowered,
                                         const std::vector<ir::NodeId>& members,
                                         const std::vector<bool>& live,
                                         const std::vector<int>& group_of, int group);

// Points each matmul operand that is a permute swapping only the last two
// axes at the permute's operand, marking it transposed: gemm reads it
// transposed in place, and the permute's copy is gone unless something
// else reads it (the plan drops dead nodes).
void fold_transposes(Lowered& lowered);

// The types of `operands` (n's inputs, or what its kernel reads in their
// place) as n's op sees them: an operand whose transpose was folded
// (transposed[k]) with its last two axes swapped back.
std::vector<ir::TensorType> op_operand_types(const Lowered& lowered, const LoweredNode& n,
                                             const ir::NodeIds& operands);

// The nodes `outputs` need (live), which of them are outputs, and each
// node's live readers (once per operand it is read as), in program order.
struct LiveReaders {
  std::vector<bool> live, is_output;
  std::vector<std::vector<ir::NodeId>> of;
};
LiveReaders live_readers(const Lowered& lowered, const std::vector<ir::NodeId>& outputs);

}  // namespace sexpgpu::cpu
