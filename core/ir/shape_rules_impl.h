// Shared pieces of the shape rules (shape_rules*.cpp), private to them: the
// message helpers, so every rule names the op and its operands the same way,
// and the rule families written outside shape_rules.cpp.
#pragma once

#include <span>
#include <string>

#include "ir/ops.h"

namespace sexpgpu::ir::rules {

using R = Result<TensorType>;

// "'concat'": the Lisp name when the op has one, else the IR name.
std::string op_label(Op op);
// "'concat' of f32[2,3] and f32[2,4]".
std::string described(Op op, std::span<const TensorType> in);
// described(op, in) + ": " + why.
R fail(Op op, std::span<const TensorType> in, const std::string& why);
// "[1,2]".
std::string list_text(std::span<const int64_t> values);
inline std::string list_text(const Dims& d) {
  return list_text({d.data(), d.size()});
}
inline DType float_of(DType d) {
  return is_float(d) ? d : DType::F32;
}

// shape_rules_shape.cpp: random, reshape, permute, expand, concat, slice,
// take, index_add, pad, flip.
R random(Op op, std::span<const TensorType> in, const Attrs& attrs);
R reshape(Op op, std::span<const TensorType> in, const Attrs& attrs);
R permute(Op op, std::span<const TensorType> in, const Attrs& attrs);
R expand(Op op, std::span<const TensorType> in, const Attrs& attrs);
R concat(Op op, std::span<const TensorType> in, const Attrs& attrs);
R slice(Op op, std::span<const TensorType> in, const Attrs& attrs);
R take(Op op, std::span<const TensorType> in, const Attrs& attrs);
R index_add(Op op, std::span<const TensorType> in, const Attrs& attrs);
R pad(Op op, std::span<const TensorType> in, const Attrs& attrs);
R flip(Op op, std::span<const TensorType> in, const Attrs& attrs);
// all_reduce: operands of one float dtype packed into one 1-D result.
R all_reduce(Op op, std::span<const TensorType> in, const Attrs& attrs);

// shape_rules_neural.cpp: softmax-like, cross_entropy and its gradient, norms and
// layer_norm's gradients, attention and its gradient, convolution and pooling with
// their gradient helpers.
R axis_same_float(Op op, std::span<const TensorType> in, const Attrs& attrs);
R cross_entropy(Op op, std::span<const TensorType> in, const Attrs& attrs);
R norm(Op op, std::span<const TensorType> in, const Attrs& attrs);
R layer_norm_grad(Op op, std::span<const TensorType> in, const Attrs& attrs);
R layer_norm_param_grad(Op op, std::span<const TensorType> in, const Attrs& attrs);
R attention(Op op, std::span<const TensorType> in, const Attrs& attrs);
R attention_grad(Op op, std::span<const TensorType> in, const Attrs& attrs);
R cross_entropy_grad(Op op, std::span<const TensorType> in, const Attrs& attrs);
R linear_cross_entropy(Op op, std::span<const TensorType> in, const Attrs& attrs);
R conv2d(Op op, std::span<const TensorType> in, const Attrs& attrs);
R conv2d_grad(Op op, std::span<const TensorType> in, const Attrs& attrs);
R pool2d(Op op, std::span<const TensorType> in, const Attrs& attrs);
R pool2d_grad(Op op, std::span<const TensorType> in, const Attrs& attrs);

}  // namespace sexpgpu::ir::rules
