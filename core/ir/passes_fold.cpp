// Constant folding and algebraic identities (passes.h, fold_constants).
// Folding uses elementwise.h, the same scalar definitions the CPU kernels
// use, so a folded value is exactly what the device would have computed:
// in the result dtype's compute type, rounded to the result dtype.
//
// An elementwise node whose operands are all `full` (every element one
// value; scalars the common case) becomes a `full` of its own type. The
// identities (x+0, 0+x, x-0, x*1, 1*x, x/1, x^1, reshape/expand to the same
// shape, permute by the identity, cast to the same dtype) apply only when
// the result's type is x's, so broadcasting and promotion are never lost.
#include <optional>
#include <type_traits>

#include "ir/elementwise.h"
#include "ir/passes.h"
#include "ir/passes_impl.h"

namespace sexpgpu::ir {

namespace {

bool is_full(const Function& fn, NodeId id, double value) {
  const Node& n = fn.node(id);
  return n.op == Op::Full && n.attrs.value == value;
}

// The value of elementwise node `n` whose operands are fulls of values `v`.
double folded_value(const Function& fn, const Node& n, const std::vector<double>& v) {
  const DType out = n.type.dtype;
  auto in_dtype = [&](size_t k) { return fn.type(n.inputs[k]).dtype; };
  // Computes f(T{}) in the result dtype's compute type T, rounded to the dtype.
  auto in_out_type = [&](auto f) {
    return round_to_dtype(with_compute_type(out, [&](auto t) { return double(f(t)); }), out);
  };
  switch (info(n.op).rule) {
    case Rule::UnarySame:
    case Rule::UnaryFloat:
      return in_out_type([&](auto t) { return apply_unary(n.op, convert<decltype(t)>(v[0])); });
    case Rule::BinaryPromote:
    case Rule::BinaryFloat:
      return in_out_type([&](auto t) {
        using T = decltype(t);
        return apply_binary(n.op, convert<T>(v[0]), convert<T>(v[1]));
      });
    case Rule::Clamp:
      return in_out_type([&](auto t) {
        using T = decltype(t);
        return apply_clamp(convert<T>(v[0]), convert<T>(v[1]), convert<T>(v[2]));
      });
    case Rule::UnaryBool:
      return with_compute_type(in_dtype(0), [&](auto t) {
        return apply_predicate(n.op, convert<decltype(t)>(v[0])) ? 1.0 : 0.0;
      });
    case Rule::Compare:
      return with_compute_type(promote(in_dtype(0), in_dtype(1)), [&](auto t) {
        using T = decltype(t);
        return apply_compare(n.op, convert<T>(v[0]), convert<T>(v[1])) ? 1.0 : 0.0;
      });
    case Rule::Where: return round_to_dtype(v[0] != 0 ? v[1] : v[2], out);
    case Rule::Cast:
      // Integers convert as integers (wrapping); floats truncate and saturate.
      if (is_float(in_dtype(0))) return round_to_dtype(v[0], out);
      return in_out_type([&](auto t) { return convert<decltype(t)>(int64_t(v[0])); });
    default: return v[0];  // not elementwise: the caller never asks
  }
}

// Rewrites elementwise `n` into a full of its type when its operands are
// all fulls; false when they are not.
bool fold_node(const Function& fn, Node& n) {
  if (!is_elementwise(n.op) || n.inputs.empty()) return false;
  std::vector<double> values;
  for (NodeId in : n.inputs) {
    const Node& operand = fn.node(in);
    if (operand.op != Op::Full || !operand.attrs.value) return false;
    values.push_back(*operand.attrs.value);
  }
  Attrs full;
  full.shape = Dims(n.type.shape.begin(), n.type.shape.end());
  full.dtype = n.type.dtype;
  full.value = folded_value(fn, n, values);
  n.op = Op::Full;
  n.inputs.clear();
  n.attrs = std::move(full);
  return true;
}

bool is_identity_permutation(const Dims& axes) {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != int64_t(i) && axes[i] != int64_t(i) - int64_t(axes.size())) return false;
  return true;
}

// The operand `n` equals, when it is an identity.
std::optional<NodeId> identity_of(const Function& fn, const Node& n) {
  auto same_type_as = [&](size_t k) -> std::optional<NodeId> {
    if (fn.type(n.inputs[k]) == n.type) return n.inputs[k];
    return std::nullopt;
  };
  switch (n.op) {
    case Op::Add:
      if (is_full(fn, n.inputs[1], 0)) return same_type_as(0);
      if (is_full(fn, n.inputs[0], 0)) return same_type_as(1);
      return std::nullopt;
    case Op::Mul:
      if (is_full(fn, n.inputs[1], 1)) return same_type_as(0);
      if (is_full(fn, n.inputs[0], 1)) return same_type_as(1);
      return std::nullopt;
    case Op::Sub:
      if (is_full(fn, n.inputs[1], 0)) return same_type_as(0);
      return std::nullopt;
    case Op::Div:
    case Op::Pow:
      if (is_full(fn, n.inputs[1], 1)) return same_type_as(0);
      return std::nullopt;
    case Op::Reshape:
    case Op::Expand:
    case Op::Cast: return same_type_as(0);
    case Op::Permute:
      if (is_identity_permutation(*n.attrs.axes)) return same_type_as(0);
      return std::nullopt;
    default: return std::nullopt;
  }
}

}  // namespace

void fold_constants(Function& fn) {
  using namespace pass_detail;
  std::vector<NodeId> replacement = identity_replacement(fn);
  bool changed = false;
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    Node& n = fn.nodes[i];
    for (NodeId& in : n.inputs) in = resolve(replacement, in);
    // reshape(reshape(x)) reads x directly; the outer reshape fixes the shape.
    if (n.op == Op::Reshape && fn.node(n.inputs[0]).op == Op::Reshape) {
      n.inputs[0] = fn.node(n.inputs[0]).inputs[0];
      changed = true;
    }
    if (fold_node(fn, n)) {
      changed = true;
    } else if (std::optional<NodeId> same = identity_of(fn, n)) {
      replacement[i] = *same;
      changed = true;
    }
  }
  if (changed)
    for (Node& n : fn.nodes) n.fusion_group = -1;
  compact(fn, replacement, std::vector<bool>(fn.nodes.size(), true));
}

}  // namespace sexpgpu::ir
