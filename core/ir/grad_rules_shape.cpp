// Gradient rules of the shape ops: each moves the cotangent back to where
// the forward op took its elements from (reshape back, permute by the
// inverse, sum over expanded axes, slice out of concat and pad, scatter into
// zeros for slice and take, flip again).
#include <stdexcept>

#include "ir/grad_rules.h"

namespace sexpgpu::ir::grad {
namespace {

Cotangents concat(const Vjp& v) {
  Emit& e = v.e;
  const Shape& ys = v.node.type.shape;
  int64_t axis = *normalize_axis(*v.node.attrs.axis, ys.rank());
  Dims starts(size_t(ys.rank()), 0), ends = dims_of(ys), steps(size_t(ys.rank()), 1);
  Cotangents out(v.node.inputs.size());
  int64_t at = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t len = e.shape(v.in(i))[axis];
    starts[size_t(axis)] = at;
    ends[size_t(axis)] = at + len;
    if (v.want(i)) out[i] = e.slice(v.g, starts, ends, steps);
    at += len;
  }
  return out;
}

// The adjoint of slice: g's elements back at start + k*step of each axis,
// zeros between and around. A step s > 1 interleaves s-1 zeros after each
// element (reshape [n] -> [n,1], pad to [n,s], reshape to [n*s]); the tail
// past the input's end is cut off; then a pad puts the block at `start`.
Cotangents slice(const Vjp& v) {
  Emit& e = v.e;
  const TensorType& xt = e.type(v.in(0));
  const Shape& xs = xt.shape;
  if (v.node.type.shape.numel() == 0) return {e.zeros(xt)};
  const Dims &starts = *v.node.attrs.starts, &steps = *v.node.attrs.steps;
  NodeId g = v.g;
  Shape cur = e.shape(g);
  for (int64_t a = 0; a < xs.rank(); ++a) {
    int64_t step = steps[size_t(a)], n = cur[a];
    if (step == 1) continue;
    Shape split;
    for (int64_t i = 0; i < cur.rank(); ++i) {
      split.push_back(cur[i]);
      if (i == a) split.push_back(1);
    }
    Dims pads(size_t(2 * split.rank()), 0);
    pads[size_t(2 * (a + 1) + 1)] = step - 1;
    g = e.pad(e.reshape(g, split), pads, 0.0);
    cur[a] = n * step;
    g = e.reshape(g, cur);
  }
  Dims zero(size_t(xs.rank()), 0), one(size_t(xs.rank()), 1), kept = dims_of(cur);
  Dims pads(size_t(2 * xs.rank()), 0);
  bool trim = false;
  for (int64_t a = 0; a < xs.rank(); ++a) {
    size_t i = size_t(a);
    kept[i] = std::min(cur[a], xs[a] - starts[i]);
    trim = trim || kept[i] != cur[a];
    pads[2 * i] = starts[i];
    pads[2 * i + 1] = xs[a] - starts[i] - kept[i];
  }
  if (trim) g = e.slice(g, zero, kept, one);
  return {e.pad(g, pads, 0.0)};
}

// pad's operand sits at `before` of each axis of the result (pads are
// non-negative: the shape rule says so).
Cotangents pad(const Vjp& v) {
  const Shape& xs = v.e.shape(v.in(0));
  const Dims& pads = *v.node.attrs.pads;
  Dims starts, ends, steps(size_t(xs.rank()), 1);
  for (int64_t a = 0; a < xs.rank(); ++a) {
    starts.push_back(pads[size_t(2 * a)]);
    ends.push_back(pads[size_t(2 * a)] + xs[a]);
  }
  return {v.e.slice(v.g, starts, ends, steps)};
}

Cotangents take(const Vjp& v) {
  Attrs a;
  a.axis = v.node.attrs.axis;
  a.shape = dims_of(v.e.shape(v.in(0)));
  return {v.e.op(Op::IndexAdd, {v.g, v.in(1)}, std::move(a)), std::nullopt};
}

// index_add is linear in g, the adjoint of take: its own adjoint is take.
Cotangents index_add(const Vjp& v) {
  Attrs a;
  a.axis = v.node.attrs.axis;
  return {v.e.op(Op::Take, {v.g, v.in(1)}, std::move(a)), std::nullopt};
}

Cotangents permute(const Vjp& v) {
  const Dims& axes = *v.node.attrs.axes;
  int64_t rank = int64_t(axes.size());
  Dims inverse(axes.size());
  for (int64_t i = 0; i < rank; ++i) inverse[size_t(*normalize_axis(axes[size_t(i)], rank))] = i;
  return {v.e.permute(v.g, inverse)};
}

}  // namespace

Cotangents vjp_shape(const Vjp& v) {
  Emit& e = v.e;
  switch (v.node.op) {
    case Op::Reshape: return {e.reshape(v.g, e.shape(v.in(0)))};
    case Op::Permute: return permute(v);
    case Op::Expand: return {e.unbroadcast(v.g, e.type(v.in(0)))};
    case Op::Concat: return concat(v);
    case Op::Slice: return slice(v);
    case Op::Take: return take(v);
    case Op::IndexAdd: return index_add(v);
    case Op::Pad: return pad(v);
    case Op::Flip: {
      Attrs a;
      a.axes = v.node.attrs.axes;
      return {e.op(Op::Flip, {v.g}, std::move(a))};
    }
    default: throw std::logic_error("internal: not a shape op");
  }
}

}  // namespace sexpgpu::ir::grad
