// Shape and dtype rules: one function per rule family of ops.h, selected by
// the op's row in ops.def. Messages name the op and every operand's type;
// the caller attaches E-SHAPE or E-DTYPE and the form's position. The
// shape-changing and neural families live in shape_rules_shape.cpp and
// shape_rules_neural.cpp.
#include <string>

#include "ir/ops.h"
#include "ir/shape_rules_impl.h"

namespace sexpgpu::ir {

std::optional<Op> op_by_lisp_name(std::string_view name) {
  for (const OpInfo& i : kOps)
    if (!i.lisp_name.empty() && i.lisp_name == name) return i.op;
  return std::nullopt;
}

std::optional<Op> op_by_ir_name(std::string_view name) {
  for (const OpInfo& i : kOps)
    if (i.ir_name == name) return i.op;
  return std::nullopt;
}

namespace rules {

std::string op_label(Op op) {
  const OpInfo& oi = info(op);
  return "'" + std::string(oi.lisp_name.empty() ? oi.ir_name : oi.lisp_name) + "'";
}

std::string described(Op op, std::span<const TensorType> in) {
  std::string s = op_label(op);
  for (size_t i = 0; i < in.size(); ++i) {
    s += i == 0 ? " of " : i + 1 == in.size() ? " and " : ", ";
    s += in[i].to_string();
  }
  return s;
}

R fail(Op op, std::span<const TensorType> in, const std::string& why) {
  return R::failure(described(op, in) + ": " + why);
}

std::string list_text(std::span<const int64_t> values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? "," : "") + std::to_string(values[i]);
  return s + "]";
}

}  // namespace rules

namespace {

using namespace rules;

std::string operands(std::span<const TensorType> in) {
  std::string s;
  for (const TensorType& t : in) s += (s.empty() ? "" : ", ") + t.to_string();
  return s;
}

R broadcast2(Op op, const TensorType& a, const TensorType& b, DType result) {
  std::optional<Shape> s = broadcast_shapes(a.shape, b.shape);
  if (!s) return R::failure(op_label(op) + ": " + broadcast_error(a, b));
  return TensorType{result, *s};
}

R reduce(Op op, const TensorType& x, const Attrs& attrs, DType result) {
  std::optional<std::span<const int64_t>> axes;
  if (attrs.axes) axes = std::span<const int64_t>(attrs.axes->data(), attrs.axes->size());
  Result<Shape> s = reduction_shape(x.shape, axes, attrs.keepdims.value_or(false));
  if (!s) return R::failure(op_label(op) + " of " + x.to_string() + ": " + s.error());
  return TensorType{result, *s};
}

// NumPy matmul: a 1-D left operand is a row (dropped after), a 1-D right
// operand a column (dropped after); leading (batch) dimensions broadcast.
R matmul(const TensorType& a, const TensorType& b) {
  std::string both = a.to_string() + " and " + b.to_string();
  if (a.shape.is_scalar() || b.shape.is_scalar())
    return R::failure("'matmul' of " + both + ": both operands need at least one dimension");
  Dims da(a.shape.begin(), a.shape.end()), db(b.shape.begin(), b.shape.end());
  bool a_vec = da.size() == 1, b_vec = db.size() == 1;
  if (a_vec) da.insert(da.begin(), 1);
  if (b_vec) db.push_back(1);
  int64_t m = da[da.size() - 2], k = da.back(), k2 = db[db.size() - 2], n = db.back();
  if (k != k2)
    return R::failure("'matmul' of " + both + ": the contracted dimensions differ (" +
                      std::to_string(k) + " and " + std::to_string(k2) + ")");
  Shape batch_a, batch_b;
  for (size_t i = 0; i + 2 < da.size(); ++i) batch_a.push_back(da[i]);
  for (size_t i = 0; i + 2 < db.size(); ++i) batch_b.push_back(db[i]);
  std::optional<Shape> batch = broadcast_shapes(batch_a, batch_b);
  if (!batch)
    return R::failure("'matmul' of " + both + ": the batch dimensions " + batch_a.to_string() +
                      " and " + batch_b.to_string() + " do not broadcast");
  Shape out = *batch;
  if (!a_vec) out.push_back(m);
  if (!b_vec) out.push_back(n);
  return TensorType{promote(a.dtype, b.dtype), out};
}

}  // namespace

Result<TensorType> infer_type(Op op, std::span<const TensorType> in, const Attrs& attrs) {
  const OpInfo& oi = info(op);
  if (oi.arity >= 0 && in.size() != size_t(oi.arity))
    return R::failure(op_label(op) + " takes " + std::to_string(oi.arity) + " tensor operand" +
                      (oi.arity == 1 ? "" : "s") + ", given " + std::to_string(in.size()));
  switch (oi.rule) {
    case Rule::UnarySame: return in[0];
    case Rule::UnaryFloat: return TensorType{float_of(in[0].dtype), in[0].shape};
    case Rule::UnaryBool: return TensorType{DType::Bool, in[0].shape};
    case Rule::BinaryPromote:
      return broadcast2(op, in[0], in[1], promote(in[0].dtype, in[1].dtype));
    case Rule::BinaryFloat:
      return broadcast2(op, in[0], in[1], float_of(promote(in[0].dtype, in[1].dtype)));
    case Rule::Compare: return broadcast2(op, in[0], in[1], DType::Bool);
    case Rule::Where: {
      if (!is_bool(in[0].dtype))
        return R::failure("'where': the condition is " + in[0].to_string() +
                          ", whose dtype is not :bool (compare first, e.g. (> x 0))");
      R ab = broadcast2(op, in[1], in[2], promote(in[1].dtype, in[2].dtype));
      if (!ab) return ab;
      std::optional<Shape> s = broadcast_shapes(in[0].shape, ab->shape);
      if (!s)
        return R::failure("'where': the condition " + in[0].to_string() +
                          " does not broadcast with the values " + ab->to_string());
      return TensorType{ab->dtype, *s};
    }
    case Rule::Clamp:
      for (size_t i = 1; i < 3; ++i)
        if (!broadcastable_to(in[i].shape, in[0].shape))
          return R::failure("'clamp' of " + operands(in) + ": " +
                            broadcast_to_error(in[i], in[0].shape));
      return in[0];
    case Rule::Cast:
      if (!attrs.dtype) return R::failure("'cast' needs a dtype");
      return TensorType{*attrs.dtype, in[0].shape};
    case Rule::ReduceSame:
      return reduce(
          op, in[0], attrs,
          is_bool(in[0].dtype) && (op == Op::Sum || op == Op::Prod) ? DType::I32 : in[0].dtype);
    case Rule::ReduceFloat: return reduce(op, in[0], attrs, float_of(in[0].dtype));
    case Rule::ReduceIndex:
      if (attrs.axes && attrs.axes->size() > 1)
        return R::failure(op_label(op) + " of " + in[0].to_string() + ": one axis at most");
      return reduce(op, in[0], attrs, DType::I32);
    case Rule::MatMul: return matmul(in[0], in[1]);
    case Rule::FromAttrs: {
      if (!attrs.dtype || !attrs.shape)
        return R::failure(op_label(op) + " needs a dtype and a shape");
      Result<Shape> s =
          make_shape(std::span<const int64_t>(attrs.shape->data(), attrs.shape->size()));
      if (!s) return R::failure(op_label(op) + ": " + s.error());
      return TensorType{*attrs.dtype, *s};
    }
    case Rule::Random: return rules::random(op, in, attrs);
    case Rule::Reshape: return rules::reshape(op, in, attrs);
    case Rule::Permute: return rules::permute(op, in, attrs);
    case Rule::Expand: return rules::expand(op, in, attrs);
    case Rule::Concat: return rules::concat(op, in, attrs);
    case Rule::Slice: return rules::slice(op, in, attrs);
    case Rule::Take: return rules::take(op, in, attrs);
    case Rule::IndexAdd: return rules::index_add(op, in, attrs);
    case Rule::Pad: return rules::pad(op, in, attrs);
    case Rule::Flip: return rules::flip(op, in, attrs);
    case Rule::AxisSameFloat: return rules::axis_same_float(op, in, attrs);
    case Rule::CrossEntropy: return rules::cross_entropy(op, in, attrs);
    case Rule::Norm: return rules::norm(op, in, attrs);
    case Rule::Attention: return rules::attention(op, in, attrs);
    case Rule::AttentionGrad: return rules::attention_grad(op, in, attrs);
    case Rule::CrossEntropyGrad: return rules::cross_entropy_grad(op, in, attrs);
    case Rule::LinearCrossEntropy: return rules::linear_cross_entropy(op, in, attrs);
    case Rule::LayerNormGrad: return rules::layer_norm_grad(op, in, attrs);
    case Rule::LayerNormParamGrad: return rules::layer_norm_param_grad(op, in, attrs);
    case Rule::Conv2d: return rules::conv2d(op, in, attrs);
    case Rule::Conv2dGrad: return rules::conv2d_grad(op, in, attrs);
    case Rule::Pool2d: return rules::pool2d(op, in, attrs);
    case Rule::Pool2dGrad: return rules::pool2d_grad(op, in, attrs);
    case Rule::AllReduce: return rules::all_reduce(op, in, attrs);
  }
  return R::failure(op_label(op) + ": no shape rule");  // unreachable: -Werror=switch
}

}  // namespace sexpgpu::ir
