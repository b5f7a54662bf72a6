// Attention operands read where they already are. A transformer's lowering
// feeds attention through copies: q, k and v are slices of one [B,T,3C]
// product, reshaped to [B,T,H,D], permuted to [B,H,T,D] and cast to bf16;
// the result is permuted back to [B,T,H,D] for the output projection, and
// the gradient g arrives as [B,T,C] and is permuted too. The tensor-core
// kernels take each [B,H,T,D] operand as strides instead (HeadStrides), so
// these copies go:
//   - an operand that is a chain of slice, reshape and permute (with at most
//     one cast to the attention's dtype on top) of a buffer is read in
//     place, when the chain is a strided view with D contiguous and 16-byte
//     aligned rows. A cast of an f32 widening of a half value of the
//     attention's dtype reads the half value (the round trip is exact);
//     another cast becomes one cast of the whole source (one kernel, not one
//     per slice), whose slices are then read in place;
//   - an attention result read only by permutes to [B,T,H,D] (and as o by
//     its attention_grad) is written as [B,T,H,D]: the permutes become
//     reshapes, read in place.
// Only bf16/f16 attention with D <= kFlashGradMaxHeadDim qualifies (the
// tensor-core kernels of both directions). Results are bit for bit those of
// the copies.
#pragma once

#include <vector>

#include "cuda/context.h"
#include "cuda/factories/kernel.h"
#include "plan/lower.h"

namespace sexpgpu::cuda {

// Rewrites `lowered` in place and returns, per lowered node, the views its
// kernel reads and writes (KernelRequest::views). Nodes the rewrite leaves
// unread die; `outputs` (the function's outputs) keep their values.
std::vector<NodeViews> view_attention_operands(cpu::Lowered& lowered,
                                               const std::vector<ir::NodeId>& outputs);

// A strided view of a row-major buffer of `source` shape through `chain`
// (slice, reshape and permute nodes, from the source outward), if the chain
// is one: its logical shape, offset and strides. Exposed for tests.
struct StridedView {
  ir::Dims shape, strides;
  int64_t offset = 0;
};
std::optional<StridedView> compose_views(const ir::Shape& source,
                                         const std::vector<const cpu::LoweredNode*>& chain);

}  // namespace sexpgpu::cuda
