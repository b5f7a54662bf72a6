// Casts a CUDA kernel can do itself: in bf16/f16 training the lowering
// surrounds the f32 row ops (cross-entropy, the norms, softmax) with casts
// from and to half precision: the bf16 logits are copied to f32 for the
// loss, a layer norm's f32 result is copied to bf16 for the next matrix
// product. Where the op's kernel reads and writes half storage itself
// (converting on load and rounding on store, the same values), those copies
// go: the op reads the cast's operand, and writes the cast's dtype.
//
// Two more change where rounding happens (docs/numerics.md says so): a sum
// of f32 values also rounded to half for a matrix product reads the half
// copy (a bias gradient, as under PyTorch's autocast), and a half product
// read only through a cast to f32 writes its f32 accumulator directly.
#pragma once

#include <vector>

#include "cuda/context.h"
#include "plan/lower.h"

namespace sexpgpu::cuda {

// Rewrites `lowered` in place: an absorbed operand cast is bypassed (it dies
// when nothing else reads it); an absorbed result cast becomes a reshape of
// the op's result (read in place). `outputs` are the lowered ids of the
// function's outputs, whose dtypes never change.
void absorb_casts(cpu::Lowered& lowered, const std::vector<ir::NodeId>& outputs, Context& context);

}  // namespace sexpgpu::cuda
