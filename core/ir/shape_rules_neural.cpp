// Shape and dtype rules of the neural ops (ops.def, "Neural"): softmax and
// log_softmax, cross_entropy and its gradient, layer_norm (and its gradients
// with respect to x and to the weight and bias) and rms_norm, attention,
// conv2d and the pools, with the gradient helpers of conv and pool, which
// re-check that their operands are what the forward op would have given.
#include <string>
#include <tuple>

#include "ir/shape_rules_impl.h"

namespace sexpgpu::ir::rules {

namespace {

std::string attr_missing(const char* name) {
  return std::string("the `") + name + "` attribute is missing";
}

std::string str(int64_t v) {
  return std::to_string(v);
}

// A pair attribute (stride, padding, ...): exactly two numbers, each >= min.
std::string check_pair(const char* name, const std::optional<Dims>& value, int64_t min) {
  if (!value) return attr_missing(name);
  if (value->size() != 2)
    return std::string("`") + name + "` " + list_text(*value) + " needs two numbers (h, w)";
  if ((*value)[0] < min || (*value)[1] < min)
    return std::string("`") + name + "` " + list_text(*value) + " needs numbers >= " + str(min);
  return "";
}

// One spatial output size of a window sweep; < 1 when the window does not fit.
int64_t window_out(int64_t in, int64_t pad, int64_t dilation, int64_t kernel, int64_t stride) {
  int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

std::string shape_of_rank4(const char* what, const TensorType& t) {
  if (t.shape.rank() == 4) return "";
  return std::string(what) + " must have rank 4, not " + str(t.shape.rank()) + " (" +
         t.to_string() + ")";
}

Result<Shape> rank4_shape_attr(const Attrs& attrs) {
  if (!attrs.shape) return Result<Shape>::failure(attr_missing("shape"));
  Result<Shape> s = make_shape({attrs.shape->data(), attrs.shape->size()});
  if (s && s->rank() != 4)
    return Result<Shape>::failure("the `shape` " + s->to_string() + " must have rank 4");
  return s;
}

// q, k, v of [B,H,T,D] with one B, H and D, and k and v of one T: "" or why not.
std::string qkv_error(std::span<const TensorType> in) {
  const char* names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i)
    if (std::string m = shape_of_rank4(names[i], in[i]); !m.empty())
      return m + "; q, k, v are [B,H,T,D]";
  const Shape &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
  for (int i = 1; i < 3; ++i) {
    const Shape& s = in[i].shape;
    if (s[0] != q[0] || s[1] != q[1] || s[3] != q[3])
      return std::string(names[i]) + " and q differ in B, H or D ([B,H,T,D])";
  }
  if (k[2] != v[2]) return "k and v need the same T (axis 2)";
  return "";
}

// The scores' shape [B,H,Tq,Tk], which a mask broadcasts to.
Shape scores_shape(std::span<const TensorType> in) {
  const Shape &q = in[0].shape, &k = in[1].shape;
  return Shape{q[0], q[1], q[2], k[2]};
}

}  // namespace

R axis_same_float(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  if (!attrs.axis) return fail(op, in, attr_missing("axis"));
  Result<int64_t> axis = normalize_axis(*attrs.axis, in[0].shape.rank());
  if (!axis) return fail(op, in, axis.error());
  return TensorType{float_of(in[0].dtype), in[0].shape};
}

R cross_entropy(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  const TensorType &logits = in[0], &targets = in[1];
  if (!is_int(targets.dtype))
    return fail(op, in,
                "the targets need an integer dtype (class indices), not " +
                    std::string(ir_name(targets.dtype)));
  if (logits.shape.rank() < 1) return fail(op, in, "the logits need a class axis (rank >= 1)");
  Shape rows;
  for (int64_t a = 0; a + 1 < logits.shape.rank(); ++a) rows.push_back(logits.shape[a]);
  if (!(rows == targets.shape))
    return fail(op, in,
                "the targets should have the shape " + rows.to_string() +
                    " (the logits' shape without the class axis)");
  std::string reduction = attrs.reduction.value_or("mean");
  DType dtype = float_of(logits.dtype);
  if (reduction == "mean" || reduction == "sum") return TensorType{dtype, Shape{}};
  if (reduction == "none") return TensorType{dtype, rows};
  return fail(op, in, "reduction \"" + reduction + "\" is not one of \"mean\", \"sum\", \"none\"");
}

// cross_entropy_grad (logits, targets, g): the operands cross_entropy had,
// with the logits already in a float dtype (the gradient rule casts them to
// the loss's dtype), and g shaped as cross_entropy's result.
R cross_entropy_grad(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  const TensorType &logits = in[0], &g = in[2];
  if (!is_float(logits.dtype))
    return fail(op, in, "the logits need a float dtype, not " + std::string(ir_name(logits.dtype)));
  R loss = cross_entropy(op, in.first(2), attrs);
  if (!loss) return loss;
  if (!(g == *loss))
    return fail(op, in,
                "g should be " + loss->to_string() + ", the type of cross_entropy's result");
  return logits;
}

// linear_cross_entropy (x, w, targets, g): x [..., C] and w [C, V] of one
// float dtype, targets as cross_entropy's for logits [..., V], g a scalar
// of the result's dtype (f32, or x's when wider).
R linear_cross_entropy(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  const TensorType &x = in[0], &w = in[1], &g = in[3];
  if (!is_float(x.dtype) || w.dtype != x.dtype) return fail(op, in, "x and w need one float dtype");
  if (x.shape.rank() < 1 || w.shape.rank() != 2 || w.shape[0] != x.shape[x.shape.rank() - 1])
    return fail(op, in, "x [..., C] and w [C, V] do not fit");
  Shape logits;
  for (int64_t a = 0; a + 1 < x.shape.rank(); ++a) logits.push_back(x.shape[a]);
  logits.push_back(w.shape[1]);
  TensorType z{x.dtype, logits};
  TensorType ce_in[2] = {z, in[2]};
  Attrs summed = attrs;
  summed.reduction = "sum";
  if (R loss = cross_entropy(op, ce_in, summed); !loss) return loss;
  DType dtype = x.dtype == DType::F64 ? DType::F64 : DType::F32;
  if (!(g == TensorType{dtype, Shape{}}))
    return fail(op, in, "g should be " + TensorType{dtype, Shape{}}.to_string());
  std::optional<int64_t> xs = x.shape.numel(), ws = w.shape.numel();
  if (!xs || !ws) return fail(op, in, "x and w need known sizes");
  return TensorType{dtype, Shape{*xs + *ws + 1}};
}

R norm(Op op, std::span<const TensorType> in, const Attrs&) {
  const TensorType& x = in[0];
  if (x.shape.rank() < 1) return fail(op, in, "x needs at least one axis to normalise over");
  Shape last{x.shape[x.shape.rank() - 1]};
  DType dtype = x.dtype;
  for (size_t i = 1; i < in.size(); ++i) {
    const char* what = i == 1 ? "the weight" : "the bias";
    if (!(in[i].shape == last))
      return fail(
          op, in,
          std::string(what) + " should have the shape " + last.to_string() + " (x's last axis)");
    dtype = promote(dtype, in[i].dtype);
  }
  return TensorType{float_of(dtype), x.shape};
}

// layer_norm_grad (x, weight, g): the gradient rule casts all three to
// layer_norm's result dtype, so one float dtype is all a kernel sees.
R layer_norm_grad(Op op, std::span<const TensorType> in, const Attrs&) {
  const TensorType &x = in[0], &w = in[1], &g = in[2];
  if (x.shape.rank() < 1) return fail(op, in, "x needs at least one axis to normalise over");
  if (!is_float(x.dtype) || w.dtype != x.dtype || g.dtype != x.dtype)
    return fail(op, in, "x, the weight and g need one float dtype");
  Shape last{x.shape[x.shape.rank() - 1]};
  if (!(w.shape == last))
    return fail(op, in,
                "the weight should have the shape " + last.to_string() + " (x's last axis)");
  if (!(g.shape == x.shape)) return fail(op, in, "g should have x's shape " + x.shape.to_string());
  return x;
}

// layer_norm_param_grad (x, g): as layer_norm_grad, both already in
// layer_norm's result dtype; one row of C for the weight, one for the bias.
R layer_norm_param_grad(Op op, std::span<const TensorType> in, const Attrs&) {
  const TensorType &x = in[0], &g = in[1];
  if (x.shape.rank() < 1) return fail(op, in, "x needs at least one axis to normalise over");
  if (!is_float(x.dtype) || g.dtype != x.dtype) return fail(op, in, "x and g need one float dtype");
  if (!(g.shape == x.shape)) return fail(op, in, "g should have x's shape " + x.shape.to_string());
  return TensorType{x.dtype, Shape{2, x.shape[x.shape.rank() - 1]}};
}

R attention(Op op, std::span<const TensorType> in, const Attrs&) {
  if (in.size() != 3 && in.size() != 4)
    return fail(op, in,
                "takes q, k, v and an optional mask, given " + str(in.size()) + " tensor operands");
  if (std::string m = qkv_error(in); !m.empty()) return fail(op, in, m);
  DType dtype = float_of(promote(promote(in[0].dtype, in[1].dtype), in[2].dtype));
  if (in.size() == 4) {
    const TensorType& mask = in[3];
    if (!is_bool(mask.dtype) && !is_float(mask.dtype))
      return fail(op, in,
                  "the mask's dtype must be bool (true = keep) or a float (added), not " +
                      std::string(ir_name(mask.dtype)));
    Shape scores = scores_shape(in);
    if (!broadcastable_to(mask.shape, scores))
      return fail(op, in, "the mask: " + broadcast_to_error(mask, scores) + " ([B,H,Tq,Tk])");
  }
  const Shape& q = in[0].shape;
  return TensorType{dtype, Shape{q[0], q[1], q[2], in[2].shape[3]}};
}

// attention_grad (q, k, v, o, g [, bool mask]) -> dq, dk, dv stacked along
// axis 2. The gradient rule casts the five values to the attention's result
// dtype, so one dtype is all a kernel has to handle.
R attention_grad(Op op, std::span<const TensorType> in, const Attrs&) {
  if (in.size() != 5 && in.size() != 6)
    return fail(op, in,
                "takes q, k, v, o, g and an optional bool mask, given " + str(in.size()) +
                    " tensor operands");
  if (std::string m = qkv_error(in); !m.empty()) return fail(op, in, m);
  DType dtype = in[0].dtype;
  for (int i = 0; i < 5; ++i)
    if (!is_float(in[size_t(i)].dtype) || in[size_t(i)].dtype != dtype)
      return fail(op, in, "q, k, v, o and g need one float dtype");
  const Shape &q = in[0].shape, &k = in[1].shape;
  for (int i = 3; i < 5; ++i)
    if (!(in[size_t(i)].shape == q))
      return fail(op, in,
                  std::string(i == 3 ? "o" : "g") + " should have q's shape " + q.to_string());
  if (in.size() == 6) {
    const TensorType& mask = in[5];
    if (!is_bool(mask.dtype))
      return fail(
          op, in,
          "the mask's dtype must be bool (true = keep), not " + std::string(ir_name(mask.dtype)));
    Shape scores = scores_shape(in);
    if (!broadcastable_to(mask.shape, scores))
      return fail(op, in, "the mask: " + broadcast_to_error(mask, scores) + " ([B,H,Tq,Tk])");
  }
  return TensorType{dtype, Shape{q[0], q[1], q[2] + 2 * k[2], q[3]}};
}

R conv2d(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  const TensorType &x = in[0], &w = in[1];
  if (std::string m = shape_of_rank4("x", x); !m.empty()) return fail(op, in, m + " (N,C,H,W)");
  if (std::string m = shape_of_rank4("w", w); !m.empty())
    return fail(op, in, m + " (O,C/groups,KH,KW)");
  for (auto [name, value, min] :
       {std::tuple{"stride", &attrs.stride, 1}, std::tuple{"padding", &attrs.padding, 0},
        std::tuple{"dilation", &attrs.dilation, 1}})
    if (std::string m = check_pair(name, *value, min); !m.empty()) return fail(op, in, m);
  if (!attrs.groups) return fail(op, in, attr_missing("groups"));
  int64_t groups = *attrs.groups, c = x.shape[1], o = w.shape[0];
  if (groups < 1) return fail(op, in, "groups = " + str(groups) + " must be >= 1");
  if (c % groups != 0 || o % groups != 0)
    return fail(op, in,
                "groups = " + str(groups) + " must divide the input channels (" + str(c) +
                    ") and the output channels (" + str(o) + ")");
  if (w.shape[1] != c / groups)
    return fail(op, in,
                "w's axis 1 should be C/groups = " + str(c / groups) + ", not " + str(w.shape[1]));
  Shape out{x.shape[0], o, 0, 0};
  for (int i = 0; i < 2; ++i) {
    size_t j = size_t(i);
    out[2 + i] = window_out(x.shape[2 + i], (*attrs.padding)[j], (*attrs.dilation)[j],
                            w.shape[2 + i], (*attrs.stride)[j]);
    if (out[2 + i] < 1)
      return fail(op, in,
                  std::string("the kernel does not fit the padded input along ") +
                      (i == 0 ? "H" : "W") + " (output size < 1)");
  }
  return TensorType{promote(x.dtype, w.dtype), out};
}

// conv2d_grad_input (g, w) and conv2d_grad_weight (x, g): `shape` is the
// missing forward operand's; conv2d of the forward operands must give g.
R conv2d_grad(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  Result<Shape> shape = rank4_shape_attr(attrs);
  if (!shape) return fail(op, in, shape.error());
  bool grad_input = op == Op::Conv2dGradInput;
  const TensorType& g = grad_input ? in[0] : in[1];
  const TensorType& other = grad_input ? in[1] : in[0];
  TensorType missing{other.dtype, *shape};
  TensorType fwd[] = {grad_input ? missing : other, grad_input ? other : missing};
  R y = conv2d(Op::Conv2d, fwd, attrs);
  if (!y) return fail(op, in, "as the gradient of " + y.error());
  if (!(y->shape == g.shape))
    return fail(op, in, "g should have the conv2d output's shape " + y->shape.to_string());
  return TensorType{promote(in[0].dtype, in[1].dtype), *shape};
}

R pool2d(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  const TensorType& x = in[0];
  if (std::string m = shape_of_rank4("x", x); !m.empty()) return fail(op, in, m + " (N,C,H,W)");
  for (auto [name, value, min] :
       {std::tuple{"kernel", &attrs.kernel, 1}, std::tuple{"stride", &attrs.stride, 1},
        std::tuple{"padding", &attrs.padding, 0}})
    if (std::string m = check_pair(name, *value, min); !m.empty()) return fail(op, in, m);
  Shape out{x.shape[0], x.shape[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    size_t j = size_t(i);
    int64_t k = (*attrs.kernel)[j], p = (*attrs.padding)[j];
    // As PyTorch: a window must hold at least one real element.
    if (2 * p > k)
      return fail(op, in,
                  "padding " + list_text(*attrs.padding) + " must be at most half the kernel " +
                      list_text(*attrs.kernel));
    out[2 + i] = window_out(x.shape[2 + i], p, 1, k, (*attrs.stride)[j]);
    if (out[2 + i] < 1)
      return fail(op, in,
                  std::string("the kernel does not fit the padded input along ") +
                      (i == 0 ? "H" : "W") + " (output size < 1)");
  }
  DType dtype = op == Op::AvgPool2d ? float_of(x.dtype) : x.dtype;
  return TensorType{dtype, out};
}

// max_pool2d_grad (x, g) and avg_pool2d_grad (g): the result is `shape`
// (x's); g must be what the pool gave.
R pool2d_grad(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  Result<Shape> shape = rank4_shape_attr(attrs);
  if (!shape) return fail(op, in, shape.error());
  bool is_max = op == Op::MaxPool2dGrad;
  const TensorType& g = is_max ? in[1] : in[0];
  if (is_max && !(in[0].shape == *shape))
    return fail(op, in, "x should have the `shape` " + shape->to_string());
  TensorType x{is_max ? in[0].dtype : g.dtype, *shape};
  R y = pool2d(is_max ? Op::MaxPool2d : Op::AvgPool2d, {&x, 1}, attrs);
  if (!y) return fail(op, in, "as the gradient of " + y.error());
  if (!(y->shape == g.shape))
    return fail(op, in, "g should have the pool output's shape " + y->shape.to_string());
  return TensorType{g.dtype, *shape};
}

}  // namespace sexpgpu::ir::rules
