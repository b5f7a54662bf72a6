// The IR's cost model: what `sexpgpu explain` reports as FLOPs, bytes moved
// and memory, computed from the IR alone so it needs no device.
//
// FLOPs per node, by op family (a multiply-add counts two):
//   matmul              2·M·N·K per batch element: 2 · numel(result) · K, K the
//                       contracted length (1-D operands as NumPy treats them)
//   conv2d              2·N·Cout·Hout·Wout·(Cin/groups)·KH·KW: 2 · numel(result)
//                       · numel(w) / Cout; conv2d_grad_input the same product
//                       (the transposed convolution), conv2d_grad_weight
//                       2 · numel(g) · Cin/groups·KH·KW
//   attention           the two products q·kᵀ and p·v: 4·B·H·Tq·Tk·D, halved
//                       under `causal` (half the scores are masked); the
//                       softmax between them (a few per score, not 4·D) is
//                       left out. attention_grad (its gradient, with q·kᵀ
//                       recomputed) the five products of the backward, 2.5
//                       times the forward (10·B·H·Tq·Tk·D), halved the same
//                       way. A float mask's gradient rule stages matmuls
//                       instead, counted as such
//   elementwise         one per result element, transcendentals included (exp,
//                       tanh and gelu count as one like add); a fused group is
//                       the sum of its members
//   reductions          per input element: 1 for sum, prod, max, min, mean,
//                       argmax, argmin; 2 for norm (square, add); 4 for var and
//                       std (the mean, subtract, square, add) and for logsumexp
//                       (max, subtract, exp, add)
//   softmax, log_softmax, cross_entropy   5 per input (logit) element: max,
//                       subtract, exp, sum, normalise
//   cross_entropy_grad  6 per logit element: softmax's 5, then subtracting
//                       the one-hot and scaling as one
//   layer_norm 7, rms_norm 4 per input element (statistics, normalise, scale,
//                       shift)
//   layer_norm_grad     10 per element of x: the statistics (3), xhat (2), g
//                       weight and the two sums (3), the result (2)
//   layer_norm_param_grad  8 per element of x: the statistics (3), xhat (2),
//                       g xhat and the two column sums (3)
//   pools               KH·KW per result element (the grads: per element of g)
//   index_add           one add per element of g
//   0 FLOPs             inputs, params, creation (full, constant, arange),
//                       random draws, casts, stop_gradient and the shape ops
//                       (reshape, permute, expand, concat, slice, take, pad,
//                       flip): they move data but compute nothing
//
// Bytes per node: a node reads its operands and writes its result (sizes
// from their types), except inputs and params (already in memory) and views,
// which share their operand's buffer: reshape, stop_gradient, and a
// transpose of the last two axes that only matmuls read (devices fold it
// into the product, as BLAS's transpose flags do; devices/cpu does). A fused
// group reads each operand from outside the group once and writes only its
// last node.
//
// Only nodes some output depends on are counted: the staged (unoptimised)
// module may still hold dead code.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ir/graph.h"

namespace sexpgpu::ir {

struct Cost {
  double flops = 0;  // a double: large models overflow no integer type first
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  Cost& operator+=(const Cost& o) {
    flops += o.flops;
    bytes_read += o.bytes_read;
    bytes_written += o.bytes_written;
    return *this;
  }
};

// The FLOPs of one node, by the rules above.
double node_flops(const Function& fn, const Node& node);

// The cost of the live nodes among [begin, end) of `fn` (end < 0: to the last
// node).
Cost function_cost(const Function& fn, NodeId begin = 0, NodeId end = -1);

// Which nodes some output of `fn` depends on (inputs and params included
// only when read).
std::vector<bool> live_nodes(const Function& fn);

// ---------------------------------------------------------------------------
// Memory: a liveness-based arena plan, as a device that plans its memory
// statically would make (the CPU device makes the same kind, with its own
// lowering): each intermediate buffer lives from the node that writes it to
// its last reader, and buffers whose lives do not overlap share bytes.

inline constexpr int64_t kPlanAlignment = 64;

// One buffer's life in node order.
struct BufferLife {
  int64_t first;  // the step that writes it
  int64_t last;   // the last step that reads it (>= first)
  int64_t bytes;
};

struct ArenaPlan {
  std::vector<int64_t> offsets;  // per buffer, in the order given
  int64_t bytes = 0;             // the arena's size
};

// First fit over live intervals: buffers (given in order of `first`) take
// the lowest free range that holds them, 64-byte aligned; a buffer is free
// for buffers written after its last reader (never during that step, so no
// result overlaps its own operands).
ArenaPlan plan_arena(std::span<const BufferLife> buffers);

struct MemoryUse {
  int64_t input_bytes = 0;   // Input nodes (batch fields, ctx, rng)
  int64_t param_bytes = 0;   // Param nodes
  int64_t output_bytes = 0;  // every output, written to its own buffer
  // The arena of everything else: intermediates, constants included; fused
  // members but a group's last node take none, and views share their
  // operand's buffer.
  int64_t intermediate_peak = 0;
};

MemoryUse plan_memory(const Function& fn);

// Bytes of one value of this type.
int64_t type_bytes(const TensorType& t);

}  // namespace sexpgpu::ir
