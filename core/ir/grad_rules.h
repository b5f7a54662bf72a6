// The vector-Jacobian products of the ops (grad_rules*.cpp), used by
// autodiff.cpp; internal to the IR library. Every rule is written in IR ops
// through Builder::must, so the backward pass is ordinary, verified IR.
//
// A rule gets the forward node, the cotangent g of its output (the node's
// type) and which operands need a cotangent; it returns one entry per
// operand: the cotangent, of that operand's type, or nullopt where none was
// wanted or none flows (take's ids, where's condition, ...).
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"

namespace sexpgpu::ir {

using Cotangents = std::vector<std::optional<NodeId>>;

// Whether a gradient can flow from `op`'s output into operand `slot` at
// all: the op is differentiable (ops.def) and the slot is not an index, a
// condition or another operand the output depends on only piecewise
// constantly. Dtypes are the caller's business (integers carry none).
bool operand_differentiable(Op op, size_t slot);

// The cotangents of `node`'s operands; fails with "'sign' has no gradient"
// for the ops ops.def marks non-differentiable.
Result<Cotangents> vjp(Builder& b, NodeId node, NodeId g, const std::vector<bool>& wanted);

namespace grad {

// Terse IR construction for the rules: each call adds one well-typed node
// (or none where it would be the identity).
class Emit {
 public:
  explicit Emit(Builder& b) : b_(b) {}

  // Copies: a reference into the function's nodes would dangle once the
  // next node is added.
  TensorType type(NodeId x) const { return b_.type(x); }
  Shape shape(NodeId x) const { return b_.type(x).shape; }
  DType dtype(NodeId x) const { return b_.type(x).dtype; }

  NodeId op(Op op, std::initializer_list<NodeId> in, Attrs attrs = {}) {
    return b_.must(op, in, std::move(attrs));
  }
  NodeId c(double value, DType dtype) { return b_.scalar(value, dtype); }
  NodeId zeros(const TensorType& t) { return b_.full(t.shape, 0.0, t.dtype); }

  NodeId add(NodeId x, NodeId y) { return op(Op::Add, {x, y}); }
  NodeId sub(NodeId x, NodeId y) { return op(Op::Sub, {x, y}); }
  NodeId mul(NodeId x, NodeId y) { return op(Op::Mul, {x, y}); }
  NodeId div(NodeId x, NodeId y) { return op(Op::Div, {x, y}); }
  NodeId neg(NodeId x) { return op(Op::Neg, {x}); }
  // x * value, value a constant of x's dtype.
  NodeId scale(NodeId x, double value) { return mul(x, c(value, dtype(x))); }
  NodeId where(NodeId cond, NodeId a, NodeId b) { return op(Op::Where, {cond, a, b}); }
  // where(cond, a, 0) in a's dtype.
  NodeId where0(NodeId cond, NodeId a) { return where(cond, a, c(0.0, dtype(a))); }

  NodeId cast(NodeId x, DType dtype);
  NodeId reshape(NodeId x, const Shape& shape);
  NodeId expand(NodeId x, const Shape& shape);
  NodeId permute(NodeId x, const Dims& axes);
  NodeId swap_last2(NodeId x);  // transpose of the last two axes
  NodeId reduce(Op op, NodeId x, const Axes& axes, bool keepdims);
  NodeId sum(NodeId x, const Axes& axes, bool keepdims) {
    return reduce(Op::Sum, x, axes, keepdims);
  }
  NodeId mean(NodeId x, const Axes& axes, bool keepdims) {
    return reduce(Op::Mean, x, axes, keepdims);
  }
  NodeId slice(NodeId x, const Dims& starts, const Dims& ends, const Dims& steps);
  NodeId pad(NodeId x, const Dims& pads, double value);
  NodeId arange(int64_t n, double start, DType dtype);
  NodeId softmax(NodeId x, int64_t axis);

  // g (of a broadcast result) summed back to `target`'s shape and cast to
  // its dtype: the cotangent of an operand that was broadcast or promoted.
  NodeId unbroadcast(NodeId g, const TensorType& target);

 private:
  Builder& b_;
};

// The arguments of one rule: the forward node (a copy: rules append to the
// function's node vector), its id, the output's cotangent and the wanted
// operands.
struct Vjp {
  Emit& e;
  const Node& node;
  NodeId self;
  NodeId g;
  const std::vector<bool>& wanted;

  NodeId in(size_t i) const { return node.inputs[i]; }
  bool want(size_t i) const { return wanted[i]; }
  DType dt() const { return node.type.dtype; }
  // Operand i in the result's dtype (the computation's dtype).
  NodeId in_as_result(size_t i) const { return e.cast(in(i), dt()); }
};

// Rule groups, one file each. Each returns the operands' cotangents.
Cotangents vjp_elementwise(const Vjp& v);  // grad_rules.cpp
Cotangents vjp_reduction(const Vjp& v);    // grad_rules_reduce.cpp (and matmul)
Cotangents vjp_shape(const Vjp& v);        // grad_rules_shape.cpp
Cotangents vjp_neural(const Vjp& v);       // grad_rules_neural.cpp

// The reduced axes of a reduction node (normalised; absent: all) and the
// node's keepdims.
Axes reduced_axes(const Node& node, int64_t rank);
// x's shape with `axes` kept as 1: where a reduction's result broadcasts.
Shape keep_shape(const Shape& x, const Axes& axes);
Dims dims_of(const Shape& s);

}  // namespace grad
}  // namespace sexpgpu::ir
