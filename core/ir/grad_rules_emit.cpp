// The IR-building helpers the gradient rules share (grad_rules.h, Emit):
// shape ops with their attributes filled in, and unbroadcast, which every
// rule of a broadcasting op ends with.
#include <algorithm>
#include <numeric>

#include "ir/grad_rules.h"

namespace sexpgpu::ir::grad {

Dims dims_of(const Shape& s) {
  return Dims(s.begin(), s.end());
}

Axes reduced_axes(const Node& node, int64_t rank) {
  if (!node.attrs.axes) return all_axes(rank);
  // The shape rule accepted these axes when the node was made.
  return *normalize_axes({node.attrs.axes->data(), node.attrs.axes->size()}, rank);
}

Shape keep_shape(const Shape& x, const Axes& axes) {
  Shape s = x;
  for (int64_t a : axes) s[a] = 1;
  return s;
}

NodeId Emit::cast(NodeId x, DType dtype) {
  if (this->dtype(x) == dtype) return x;
  Attrs a;
  a.dtype = dtype;
  return op(Op::Cast, {x}, std::move(a));
}

NodeId Emit::reshape(NodeId x, const Shape& shape) {
  if (this->shape(x) == shape) return x;
  Attrs a;
  a.shape = dims_of(shape);
  return op(Op::Reshape, {x}, std::move(a));
}

NodeId Emit::expand(NodeId x, const Shape& shape) {
  if (this->shape(x) == shape) return x;
  Attrs a;
  a.shape = dims_of(shape);
  return op(Op::Expand, {x}, std::move(a));
}

NodeId Emit::permute(NodeId x, const Dims& axes) {
  Attrs a;
  a.axes = axes;
  return op(Op::Permute, {x}, std::move(a));
}

NodeId Emit::swap_last2(NodeId x) {
  Dims axes(size_t(shape(x).rank()));
  std::iota(axes.begin(), axes.end(), int64_t{0});
  std::swap(axes[axes.size() - 1], axes[axes.size() - 2]);
  return permute(x, axes);
}

NodeId Emit::reduce(Op op, NodeId x, const Axes& axes, bool keepdims) {
  Attrs a;
  a.axes = Dims(axes.begin(), axes.end());
  a.keepdims = keepdims;
  return this->op(op, {x}, std::move(a));
}

NodeId Emit::slice(NodeId x, const Dims& starts, const Dims& ends, const Dims& steps) {
  Attrs a;
  a.starts = starts;
  a.ends = ends;
  a.steps = steps;
  return op(Op::Slice, {x}, std::move(a));
}

NodeId Emit::pad(NodeId x, const Dims& pads, double value) {
  if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; })) return x;
  Attrs a;
  a.pads = pads;
  a.value = value;
  return op(Op::Pad, {x}, std::move(a));
}

NodeId Emit::arange(int64_t n, double start, DType dtype) {
  Attrs a;
  a.shape = Dims{n};
  a.start = start;
  a.step = 1.0;
  a.dtype = dtype;
  return op(Op::Arange, {}, std::move(a));
}

NodeId Emit::softmax(NodeId x, int64_t axis) {
  Attrs a;
  a.axis = axis;
  return op(Op::Softmax, {x}, std::move(a));
}

// NumPy broadcasting aligns from the right: g's leading extra axes, and the
// axes where the target has 1 and g does not, were stretched.
NodeId Emit::unbroadcast(NodeId g, const TensorType& target) {
  const Shape& from = shape(g);
  const Shape& to = target.shape;
  int64_t lead = from.rank() - to.rank();
  Axes stretched;
  for (int64_t a = 0; a < from.rank(); ++a)
    if (a < lead || (to[a - lead] == 1 && from[a] != 1)) stretched.push_back(a);
  NodeId out = g;
  if (!stretched.empty()) out = reshape(sum(g, stretched, true), to);
  return cast(reshape(out, to), target.dtype);
}

}  // namespace sexpgpu::ir::grad
