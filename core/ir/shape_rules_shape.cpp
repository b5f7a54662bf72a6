// Shape and dtype rules of the random and shape-changing ops (ops.def,
// "Random" and "Shape"): random draws, reshape, permute, expand, concat,
// slice, take and its gradient index_add, pad, flip. Attributes arrive as
// staging resolved them (no -1 in reshape, slice bounds clamped), so the
// rules check rather than interpret.
#include <string>

#include "ir/shape_rules_impl.h"

namespace sexpgpu::ir::rules {

namespace {

std::string attr_missing(const char* name) {
  return std::string("the `") + name + "` attribute is missing";
}

// The `shape` attribute as a checked Shape.
Result<Shape> shape_attr(const Attrs& attrs) {
  if (!attrs.shape) return Result<Shape>::failure(attr_missing("shape"));
  return make_shape({attrs.shape->data(), attrs.shape->size()});
}

bool is_index_dtype(DType d) {
  return is_int(d);
}

}  // namespace

R random(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  if (in[0].dtype != DType::I64)
    return fail(op, in,
                "the RNG state must have dtype i64, not " + std::string(ir_name(in[0].dtype)));
  if (!(in[0].shape == Shape{3})) return fail(op, in, "the RNG state must be i64[3]");
  if (!attrs.dtype) return fail(op, in, attr_missing("dtype"));
  if (op != Op::RandomBernoulli && !is_float(*attrs.dtype))
    return fail(op, in,
                "the dtype must be a float dtype, not " + std::string(ir_name(*attrs.dtype)));
  if (op == Op::RandomBernoulli && attrs.p && !(*attrs.p >= 0 && *attrs.p <= 1))
    return fail(op, in, "p = " + std::to_string(*attrs.p) + " is not in [0, 1]");
  Result<Shape> s = shape_attr(attrs);
  if (!s) return fail(op, in, s.error());
  return TensorType{*attrs.dtype, *s};
}

R reshape(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  Result<Shape> s = shape_attr(attrs);
  if (!s) return fail(op, in, s.error());
  if (s->numel() != in[0].shape.numel())
    return fail(op, in,
                "cannot reshape to " + s->to_string() + ": " +
                    std::to_string(in[0].shape.numel().value_or(-1)) + " elements into " +
                    std::to_string(s->numel().value_or(-1)));
  return TensorType{in[0].dtype, *s};
}

R permute(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  if (!attrs.axes) return fail(op, in, attr_missing("axes"));
  const Shape& x = in[0].shape;
  if (int64_t(attrs.axes->size()) != x.rank())
    return fail(op, in,
                "the axes " + list_text(*attrs.axes) + " are not a permutation of the " +
                    std::to_string(x.rank()) + " axes");
  Result<Axes> sorted = normalize_axes({attrs.axes->data(), attrs.axes->size()}, x.rank());
  if (!sorted) return fail(op, in, sorted.error());
  Shape out;
  for (int64_t a : *attrs.axes) out.push_back(x[*normalize_axis(a, x.rank())]);
  return TensorType{in[0].dtype, out};
}

R expand(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  Result<Shape> s = shape_attr(attrs);
  if (!s) return fail(op, in, s.error());
  if (!broadcastable_to(in[0].shape, *s)) return fail(op, in, broadcast_to_error(in[0], *s));
  return TensorType{in[0].dtype, *s};
}

R concat(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  if (in.empty()) return R::failure(op_label(op) + " needs at least one tensor");
  if (!attrs.axis) return fail(op, in, attr_missing("axis"));
  const TensorType& first = in[0];
  Result<int64_t> axis = normalize_axis(*attrs.axis, first.shape.rank());
  if (!axis) return fail(op, in, axis.error());
  Shape out = first.shape;
  for (size_t i = 1; i < in.size(); ++i) {
    const TensorType& t = in[i];
    if (t.dtype != first.dtype)
      return fail(op, in,
                  "every operand needs the same dtype (cast first): " + first.to_string() +
                      " and " + t.to_string());
    if (t.shape.rank() != first.shape.rank())
      return fail(
          op, in,
          "every operand needs the same rank: " + first.to_string() + " and " + t.to_string());
    for (int64_t a = 0; a < out.rank(); ++a) {
      if (a == *axis) continue;
      if (t.shape[a] != first.shape[a])
        return fail(op, in,
                    "the sizes differ at axis " + std::to_string(a) + " (" +
                        std::to_string(first.shape[a]) + " and " + std::to_string(t.shape[a]) +
                        "), which is not the concatenation axis " + std::to_string(*axis));
    }
    out[*axis] += t.shape[*axis];
  }
  return TensorType{first.dtype, out};
}

R slice(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  if (!attrs.starts || !attrs.ends || !attrs.steps)
    return fail(op, in, attr_missing(!attrs.starts ? "starts" : !attrs.ends ? "ends" : "steps"));
  const Shape& x = in[0].shape;
  const Dims &starts = *attrs.starts, &ends = *attrs.ends, &steps = *attrs.steps;
  size_t rank = size_t(x.rank());
  if (starts.size() != rank || ends.size() != rank || steps.size() != rank)
    return fail(op, in,
                "starts " + list_text(starts) + ", ends " + list_text(ends) + " and steps " +
                    list_text(steps) + " need one number per axis (" + std::to_string(rank) + ")");
  Shape out;
  for (size_t i = 0; i < rank; ++i) {
    int64_t dim = x[int64_t(i)], b = starts[i], e = ends[i], s = steps[i];
    if (!(0 <= b && b <= e && e <= dim) || s < 1)
      return fail(op, in,
                  "at axis " + std::to_string(i) + " the range start " + std::to_string(b) +
                      ", end " + std::to_string(e) + ", step " + std::to_string(s) +
                      " is not within 0 <= start <= end <= " + std::to_string(dim) +
                      " with step >= 1");
    out.push_back((e - b + s - 1) / s);
  }
  return TensorType{in[0].dtype, out};
}

R take(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  const TensorType &x = in[0], &ids = in[1];
  if (!is_index_dtype(ids.dtype))
    return fail(op, in, "the ids need an integer dtype, not " + std::string(ir_name(ids.dtype)));
  if (!attrs.axis) return fail(op, in, attr_missing("axis"));
  Result<int64_t> axis = normalize_axis(*attrs.axis, x.shape.rank());
  if (!axis) return fail(op, in, axis.error());
  Shape out;
  for (int64_t a = 0; a < *axis; ++a) out.push_back(x.shape[a]);
  for (int64_t d : ids.shape) out.push_back(d);
  for (int64_t a = *axis + 1; a < x.shape.rank(); ++a) out.push_back(x.shape[a]);
  return TensorType{x.dtype, out};
}

// take's gradient: the result is x's shape; g must be what take(x, ids) gave.
R index_add(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  const TensorType &g = in[0], &ids = in[1];
  Result<Shape> x_shape = shape_attr(attrs);
  if (!x_shape) return fail(op, in, x_shape.error());
  TensorType x{g.dtype, *x_shape};
  TensorType args[] = {x, ids};
  R taken = take(Op::Take, args, attrs);
  if (!taken) return fail(op, in, "as the gradient of " + taken.error());
  if (!(taken->shape == g.shape))
    return fail(op, in,
                "g should have the shape " + taken->shape.to_string() + " of taking ids from " +
                    x_shape->to_string());
  return x;
}

R pad(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  if (!attrs.pads) return fail(op, in, attr_missing("pads"));
  const Shape& x = in[0].shape;
  const Dims& pads = *attrs.pads;
  if (int64_t(pads.size()) != 2 * x.rank())
    return fail(op, in,
                "pads " + list_text(pads) +
                    " needs 2 numbers (before, after) per axis: " + std::to_string(2 * x.rank()));
  Shape out;
  for (int64_t a = 0; a < x.rank(); ++a) {
    int64_t before = pads[size_t(2 * a)], after = pads[size_t(2 * a + 1)];
    if (before < 0 || after < 0)
      return fail(op, in, "pads " + list_text(pads) + " has a negative number");
    out.push_back(x[a] + before + after);
  }
  return TensorType{in[0].dtype, out};
}

R flip(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  if (!attrs.axes) return fail(op, in, attr_missing("axes"));
  Result<Axes> axes = normalize_axes({attrs.axes->data(), attrs.axes->size()}, in[0].shape.rank());
  if (!axes) return fail(op, in, axes.error());
  return in[0];
}

R all_reduce(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  if (in.empty()) return R::failure(op_label(op) + " needs at least one tensor");
  if (!attrs.reduction) return fail(op, in, attr_missing("reduction"));
  if (*attrs.reduction != "mean" && *attrs.reduction != "sum")
    return fail(op, in, "reduction \"" + *attrs.reduction + "\" is not \"mean\" or \"sum\"");
  if (!is_float(in[0].dtype))
    return fail(op, in, "the operands must be floats (gradients), not " + in[0].to_string());
  int64_t total = 0;
  for (const TensorType& t : in) {
    if (t.dtype != in[0].dtype)
      return fail(op, in,
                  "every operand needs the same dtype (one bucket per dtype): " +
                      in[0].to_string() + " and " + t.to_string());
    std::optional<int64_t> n = t.shape.numel();
    if (!n || __builtin_add_overflow(total, *n, &total))
      return fail(op, in, "the operands have more elements than a 64-bit count holds");
  }
  return TensorType{in[0].dtype, Shape{total}};
}

}  // namespace sexpgpu::ir::rules
