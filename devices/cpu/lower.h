// The CPU lowering of an IR function: the same graph with explicit casts, so
// each compute kernel sees operands of one compute dtype. An op whose
// operands differ from the dtype it computes in (add of i32 and f32, sum of
// bool) gets casts in front; an op computing in bf16/f16 computes in f32
// and is followed by a cast that rounds (tensors.md: the CPU emulates them
// by rounding at op boundaries); bool arithmetic computes in u8 and casts
// back (x != 0). Kernels then need only f32, f64, i32, i64, u8 and u16.
#pragma once

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
};

struct Lowered {
  std::vector<LoweredNode> nodes;
  std::vector<ir::NodeId> of_original;  // IR node id -> the lowered node holding its value
};

Lowered lower(const ir::Function& fn);

}  // namespace sexpgpu::cpu
