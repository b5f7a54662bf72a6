// Bias and residual additions a half-precision product does in cuBLASLt's
// epilogue. In bf16/f16 training a linear layer's product is widened to
// f32 for its bias and, in a residual block, for the residual stream:
// `r + (f32(a @ w) + bias)` is a generated kernel after the product that
// reads the half product, the bias and r and writes the f32 sum. The
// product can write that sum itself: D = A B + bias + C with C = r
// (cuBLASLt's EPILOGUE_BIAS, beta = 1), from its f32 accumulator, not
// rounded to half first (docs/numerics.md says so).
#pragma once

#include <vector>

#include "cuda/context.h"
#include "plan/lower.h"

namespace sexpgpu::cuda {

// Rewrites `lowered` in place: the last addition of a recognised chain
// becomes the product (operands a, b, bias[, addend]); the product's old
// node, its cast and the first addition die. `outputs` are the lowered ids
// of the function's outputs. Runs after absorb_casts.
void matmul_epilogues(cpu::Lowered& lowered, const std::vector<ir::NodeId>& outputs,
                      Context& context);

// A linear layer's bias gradient beside its weight gradient: a half
// product a^T b (a's transpose folded, lower.h) whose b (or what b
// reshapes) an f32 sum over every axis but the last also reads can write
// that sum itself (KernelRequest::bias_gradient), when everything reading
// the sum runs after the product. Per such sum, (sum, product); the graph
// is left as it is.
std::vector<std::pair<ir::NodeId, ir::NodeId>> bias_gradient_sums(
    const cpu::Lowered& lowered, const std::vector<ir::NodeId>& outputs);

}  // namespace sexpgpu::cuda
