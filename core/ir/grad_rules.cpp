// The gradient rules (STYLE.md, "Gradients are IR"): the dispatch by the
// kernel family of ops.def, and the vector-Jacobian products of the
// elementwise ops (a unary op's rule is its case of unary_derivative).
// The other groups live in grad_rules_{reduce,shape,neural}.cpp.
//
// Conventions every rule follows: cotangents are computed in the result's
// dtype, then summed back over broadcast axes and cast to the operand's
// dtype (Emit::unbroadcast). At a kink the rules pick a subgradient and
// say which.
#include "ir/grad_rules.h"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace sexpgpu::ir {

bool operand_differentiable(Op op, size_t slot) {
  if (!info(op).differentiable) return false;
  switch (op) {
    case Op::Where: return slot != 0;          // the condition
    case Op::Take:                             // the ids
    case Op::IndexAdd:                         // the ids
    case Op::CrossEntropy: return slot != 1;   // the targets
    case Op::MaxPool2dGrad: return slot != 0;  // x only picks the routes
    default: return true;
  }
}

Result<Cotangents> vjp(Builder& b, NodeId id, NodeId g, const std::vector<bool>& wanted) {
  const Node node = b.fn().node(id);  // a copy: the rules append nodes
  grad::Emit e(b);
  const grad::Vjp v{e, node, id, g, wanted};
  if (!info(node.op).differentiable)
    return Result<Cotangents>::failure("'" + std::string(info(node.op).ir_name) +
                                       "' has no gradient");
  switch (info(node.op).family) {
    case Family::Elementwise:
    case Family::Cast: return grad::vjp_elementwise(v);
    case Family::Reduce:
    case Family::MatMul: return grad::vjp_reduction(v);
    case Family::Shape: return grad::vjp_shape(v);
    case Family::Nn:
    case Family::Attention:
    case Family::Conv:
    case Family::Pool: return grad::vjp_neural(v);
    // Leaves have no operands: the sweep ends at them.
    case Family::Leaf: return Cotangents{};
    case Family::Creation:
    case Family::Random:
    case Family::Collective: break;  // not differentiable (ops.def)
  }
  return Result<Cotangents>::failure("no gradient rule for '" + std::string(info(node.op).ir_name) +
                                     "'");
}

namespace grad {
namespace {

// d/dx of gelu(x) = x * Phi(x) is Phi(x) + x * phi(x), with
// Phi(x) = (1 + erf(x / sqrt 2)) / 2 and phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
NodeId gelu_exact_derivative(Emit& e, NodeId x) {
  DType d = e.dtype(x);
  NodeId cdf =
      e.scale(e.add(e.c(1.0, d), e.op(Op::Erf, {e.scale(x, std::numbers::sqrt2 / 2)})), 0.5);
  NodeId pdf =
      e.scale(e.op(Op::Exp, {e.scale(e.mul(x, x), -0.5)}), 1.0 / std::sqrt(2 * std::numbers::pi));
  return e.add(cdf, e.mul(x, pdf));
}

// gelu_tanh(x) = x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
NodeId gelu_tanh_derivative(Emit& e, NodeId x) {
  const double k = std::sqrt(2.0 / std::numbers::pi), a = 0.044715;
  DType d = e.dtype(x);
  NodeId x2 = e.mul(x, x);
  NodeId u = e.scale(e.add(x, e.scale(e.mul(x2, x), a)), k);
  NodeId t = e.op(Op::Tanh, {u});
  NodeId du = e.scale(e.add(e.c(1.0, d), e.scale(x2, 3 * a)), k);
  NodeId sech2 = e.sub(e.c(1.0, d), e.mul(t, t));
  return e.scale(e.add(e.add(e.c(1.0, d), t), e.mul(e.mul(x, sech2), du)), 0.5);
}

// dy/dx of a unary op, from x and y = op(x).
NodeId unary_derivative(Emit& e, const Node& node, NodeId x, NodeId y) {
  DType d = e.dtype(x);
  auto one = [&] { return e.c(1.0, d); };
  switch (node.op) {
    case Op::Abs: return e.op(Op::Sign, {x});  // 0 at 0
    case Op::Square: return e.scale(x, 2.0);
    case Op::Exp: return y;
    case Op::Log: return e.op(Op::Reciprocal, {x});
    case Op::Log1p: return e.op(Op::Reciprocal, {e.add(x, one())});
    case Op::Expm1: return e.add(y, one());
    case Op::Sqrt: return e.div(e.c(0.5, d), y);
    case Op::Rsqrt: return e.scale(e.mul(e.mul(y, y), y), -0.5);
    case Op::Sin: return e.op(Op::Cos, {x});
    case Op::Cos: return e.neg(e.op(Op::Sin, {x}));
    case Op::Tanh: return e.sub(one(), e.mul(y, y));
    case Op::Sigmoid: return e.mul(y, e.sub(one(), y));
    case Op::Gelu: return gelu_exact_derivative(e, x);
    case Op::GeluTanh: return gelu_tanh_derivative(e, x);
    case Op::Silu: {
      NodeId s = e.op(Op::Sigmoid, {x});
      return e.mul(s, e.add(one(), e.mul(x, e.sub(one(), s))));
    }
    case Op::Softplus: return e.op(Op::Sigmoid, {x});
    case Op::Reciprocal: return e.neg(e.mul(y, y));
    case Op::Erf:  // 2 / sqrt(pi) exp(-x^2)
      return e.scale(e.op(Op::Exp, {e.neg(e.mul(x, x))}), std::numbers::inv_sqrtpi * 2);
    default:
      throw std::logic_error("internal: no unary derivative for " +
                             std::string(info(node.op).ir_name));
  }
}

Cotangents one(NodeId g) {
  return Cotangents{g};
}

// maximum/minimum: the cotangent goes to the larger (smaller) operand; at a
// tie it is split evenly, as PyTorch does.
Cotangents extremum(const Vjp& v, Op wins) {
  Emit& e = v.e;
  NodeId a = v.in_as_result(0), b = v.in_as_result(1);
  DType d = v.dt();
  NodeId share_a =
      e.add(e.cast(e.op(wins, {a, b}), d), e.scale(e.cast(e.op(Op::Eq, {a, b}), d), 0.5));
  Cotangents out(2);
  if (v.want(0)) out[0] = e.unbroadcast(e.mul(v.g, share_a), e.type(v.in(0)));
  if (v.want(1)) out[1] = e.unbroadcast(e.mul(v.g, e.sub(e.c(1.0, d), share_a)), e.type(v.in(1)));
  return out;
}

// pow(a, b) = a^b: d/da = b a^(b-1); d/db = a^b log a, taken as 0 where
// a <= 0 (there the power is only defined for integer b, constant in b).
Cotangents power(const Vjp& v) {
  Emit& e = v.e;
  NodeId a = v.in_as_result(0);
  DType d = v.dt();
  Cotangents out(2);
  if (v.want(0)) {
    NodeId b = v.in_as_result(1);
    NodeId da = e.mul(b, e.op(Op::Pow, {a, e.sub(b, e.c(1.0, d))}));
    out[0] = e.unbroadcast(e.mul(v.g, da), e.type(v.in(0)));
  }
  if (v.want(1)) {
    NodeId positive = e.op(Op::Gt, {a, e.c(0.0, d)});
    NodeId safe_a = e.where(positive, a, e.c(1.0, d));
    NodeId db = e.mul(v.self, e.op(Op::Log, {safe_a}));
    out[1] = e.unbroadcast(e.mul(v.g, e.where0(positive, db)), e.type(v.in(1)));
  }
  return out;
}

// clamp(x, lo, hi) = min(max(x, lo), hi), as PyTorch: the cotangent goes
// to hi where max(x, lo) > hi, else to lo where x < lo, else to x (ties go
// to x).
Cotangents clamp(const Vjp& v) {
  Emit& e = v.e;
  NodeId x = v.in(0), lo = v.in_as_result(1), hi = v.in_as_result(2);
  NodeId above = e.op(Op::Gt, {e.op(Op::Maximum, {x, lo}), hi});
  NodeId below = e.op(Op::LogicalAnd, {e.op(Op::Lt, {x, lo}), e.op(Op::LogicalNot, {above})});
  NodeId zero = e.c(0.0, v.dt());
  Cotangents out(3);
  if (v.want(0)) out[0] = e.where(e.op(Op::LogicalOr, {above, below}), zero, v.g);
  if (v.want(1)) out[1] = e.unbroadcast(e.where0(below, v.g), e.type(v.in(1)));
  if (v.want(2)) out[2] = e.unbroadcast(e.where0(above, v.g), e.type(v.in(2)));
  return out;
}

Cotangents binary(const Vjp& v) {
  Emit& e = v.e;
  NodeId g = v.g, ga = g, gb = g;
  auto a = [&] { return v.in_as_result(0); };  // built only where a rule reads it
  auto b = [&] { return v.in_as_result(1); };
  switch (v.node.op) {
    case Op::Add: break;
    case Op::Sub: gb = e.neg(g); break;
    case Op::Mul:
      if (v.want(0)) ga = e.mul(g, b());
      if (v.want(1)) gb = e.mul(g, a());
      break;
    case Op::Div:
      if (v.want(0)) ga = e.div(g, b());
      if (v.want(1)) gb = e.neg(e.div(e.mul(g, v.self), b()));
      break;
    case Op::Atan2: {  // atan2(a, b): d/da = b / (a^2+b^2), d/db = -a / (a^2+b^2)
      NodeId av = a(), bv = b();
      NodeId r2 = e.add(e.mul(av, av), e.mul(bv, bv));
      if (v.want(0)) ga = e.div(e.mul(g, bv), r2);
      if (v.want(1)) gb = e.neg(e.div(e.mul(g, av), r2));
      break;
    }
    default: throw std::logic_error("internal: not a binary rule");
  }
  Cotangents out(2);
  if (v.want(0)) out[0] = e.unbroadcast(ga, e.type(v.in(0)));
  if (v.want(1)) out[1] = e.unbroadcast(gb, e.type(v.in(1)));
  return out;
}

}  // namespace

Cotangents vjp_elementwise(const Vjp& v) {
  Emit& e = v.e;
  switch (v.node.op) {
    case Op::Neg: return one(e.neg(v.g));
    case Op::Relu: return one(e.where0(e.op(Op::Gt, {v.in(0), e.c(0.0, v.dt())}), v.g));  // 0 at 0
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Atan2: return binary(v);
    case Op::Pow: return power(v);
    case Op::Maximum: return extremum(v, Op::Gt);
    case Op::Minimum: return extremum(v, Op::Lt);
    case Op::Where: {
      NodeId cond = v.in(0), zero = e.c(0.0, v.dt());
      Cotangents out(3);
      if (v.want(1)) out[1] = e.unbroadcast(e.where(cond, v.g, zero), e.type(v.in(1)));
      if (v.want(2)) out[2] = e.unbroadcast(e.where(cond, zero, v.g), e.type(v.in(2)));
      return out;
    }
    case Op::Clamp: return clamp(v);
    case Op::Cast: return one(e.cast(v.g, e.dtype(v.in(0))));
    default: {
      NodeId x = v.in(0);
      return one(e.mul(v.g, unary_derivative(e, v.node, x, v.self)));
    }
  }
}

}  // namespace grad
}  // namespace sexpgpu::ir
