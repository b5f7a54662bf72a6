// Reverse-mode autodiff on the IR (tensors.md, "Autodiff"). The gradient of
// a scalar node with respect to chosen nodes (parameters), built from each
// op's vector-Jacobian product (grad_rules.cpp, one per differentiable row of
// ops.def), appended to the same function as ordinary, verified IR.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace sexpgpu::ir {

struct Gradients {
  std::vector<NodeId> grads;         // one per `wrt`, in order, of the wrt's type
  std::vector<size_t> unreached;     // indices into `wrt` the loss does not depend on (zero grads)
};

// The loss is reached from a trainable node only through ops with no
// gradient (E-NONDIFF): the op that cut the path and where it was staged.
struct NonDifferentiable {
  size_t wrt_index;
  NodeId blocking_node;
};

// `loss` must be a scalar float node. Gradients of non-reached wrt nodes are
// zeros (the caller warns W-UNUSED-PARAM); a wrt reached only through
// non-differentiable ops is reported in `nondiff` and gets zeros too.
Gradients differentiate(Function& fn, NodeId loss, const std::vector<NodeId>& wrt,
                        std::vector<NonDifferentiable>* nondiff = nullptr);

}  // namespace sexpgpu::ir
