// The fused classifier: a linear layer's cross-entropy and its gradients as
// one linear_cross_entropy op (ops.def), so a device computes the logits a
// block of rows at a time and never holds them, nor their gradient, for all
// rows at once (GPT-2's [16384, 50304] are 1.5 GiB each in bf16).
//
// The pattern is what staging and autodiff make of (cross-entropy (matmul x
// w) y) in a training step: z = matmul(x, w) with w [C, V], read (through a
// cast to the loss's dtype or not) only by one cross_entropy and its
// cross_entropy_grad; that gradient (through a cast back to z's dtype or
// not) read only by matmul's two gradient products, dx = dz w^T and dw =
// x^T dz. Reduction "mean" or "sum"; the cotangent g of the loss must not
// depend on the loss (it is the seed 1, or a constant scale of it). The op
// takes the cross_entropy's place in the node order, with what g is made of
// moved before it, so the step computes the loss and both gradients there,
// at the end of the forward pass.
#pragma once

#include "ir/graph.h"

namespace sexpgpu::ir {

// Rewrites every such classifier of `fn`; returns how many.
int fuse_classifier(Function& fn);

}  // namespace sexpgpu::ir
