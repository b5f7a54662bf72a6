// Gradient rules of the reductions (sum prod max min mean var std logsumexp
// norm) and of matmul. A reduction's cotangent g has the reduced shape; it
// is first given back the reduced axes as 1s (`kept`) so it broadcasts
// against x.
#include <stdexcept>

#include "ir/grad_rules.h"

namespace sexpgpu::ir::grad {
namespace {

struct Reduction {
  NodeId x;
  Axes axes;
  Shape kept_shape;  // x's shape with the reduced axes as 1
  double count;      // elements reduced into each result
};

Reduction reduction_of(const Vjp& v) {
  Reduction r;
  r.x = v.in(0);
  const Shape& xs = v.e.shape(r.x);
  r.axes = reduced_axes(v.node, xs.rank());
  r.kept_shape = keep_shape(xs, r.axes);
  r.count = 1;
  for (int64_t a : r.axes) r.count *= double(xs[a]);
  return r;
}

// prod: the product of the others. Exact with zeros: with none, y / x_i;
// with one, the product of the non-zeros at the zero and 0 elsewhere; with
// more, 0.
NodeId prod_partials(Emit& e, const Reduction& r) {
  DType d = e.dtype(r.x);
  NodeId is_zero = e.op(Op::Eq, {r.x, e.c(0.0, d)});
  NodeId zeros = e.sum(e.cast(is_zero, d), r.axes, true);
  NodeId nonzero_x = e.where(is_zero, e.c(1.0, d), r.x);
  NodeId nonzero_prod = e.reduce(Op::Prod, nonzero_x, r.axes, true);
  NodeId the_one_zero = e.op(Op::LogicalAnd, {is_zero, e.op(Op::Eq, {zeros, e.c(1.0, d)})});
  return e.where(e.op(Op::Eq, {zeros, e.c(0.0, d)}), e.div(nonzero_prod, nonzero_x),
                 e.where0(the_one_zero, nonzero_prod));
}

// max/min: the cotangent goes to the elements equal to the extreme, split
// evenly among ties (as PyTorch's amax/amin).
NodeId extreme_partials(Emit& e, const Reduction& r, NodeId y_kept) {
  DType d = e.dtype(r.x);
  NodeId hit = e.op(Op::Eq, {r.x, y_kept});
  NodeId ties = e.sum(e.cast(hit, d), r.axes, true);
  return e.where0(hit, e.div(e.c(1.0, d), ties));
}

// var/std: d var / dx = 2 (x - mean) / (n - correction).
NodeId centered(Emit& e, const Reduction& r) {
  return e.sub(r.x, e.mean(r.x, r.axes, true));
}

Cotangents reduction(const Vjp& v) {
  Emit& e = v.e;
  Reduction r = reduction_of(v);
  NodeId g = e.reshape(v.g, r.kept_shape);
  auto y = [&] { return e.reshape(v.self, r.kept_shape); };
  double dof = r.count - double(v.node.attrs.correction.value_or(1));
  NodeId partial;  // dy/dx, broadcasting against x
  switch (v.node.op) {
    case Op::Sum: return {e.expand(g, e.shape(r.x))};
    case Op::Mean: return {e.expand(e.scale(g, 1.0 / r.count), e.shape(r.x))};
    case Op::Prod: partial = prod_partials(e, r); break;
    case Op::Max:
    case Op::Min: partial = extreme_partials(e, r, y()); break;
    case Op::Var: partial = e.scale(centered(e, r), 2.0 / dof); break;
    case Op::Std: partial = e.div(centered(e, r), e.scale(y(), dof)); break;
    case Op::LogSumExp: partial = e.op(Op::Exp, {e.sub(r.x, y())}); break;
    case Op::Norm: {  // x / |x|; 0 where the norm is 0
      NodeId norm = y();
      NodeId zero_norm = e.op(Op::Eq, {norm, e.c(0.0, v.dt())});
      partial = e.div(r.x, e.where(zero_norm, e.c(1.0, v.dt()), norm));
      break;
    }
    default: throw std::logic_error("internal: not a reduction");
  }
  return {e.mul(g, partial)};
}

// NumPy matmul: a 1-D left operand is a row [1,k], a 1-D right one a column
// [k,1]; with those made 2-D, da = g b^T and db = a^T g, each summed back
// over the batch axes it was broadcast along (for a 2-D b, by folding the
// batch into the rows of one product).
Cotangents matmul(const Vjp& v) {
  Emit& e = v.e;
  Shape as = e.shape(v.in(0)), bs = e.shape(v.in(1));
  bool a_vec = as.rank() == 1, b_vec = bs.rank() == 1;
  Shape a2 = a_vec ? Shape{1, as[0]} : as;
  Shape b2 = b_vec ? Shape{bs[0], 1} : bs;
  Shape g2;  // the result with the dropped 1s back
  const Shape& ys = v.node.type.shape;
  int64_t kept = ys.rank() - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
  for (int64_t i = 0; i < kept; ++i) g2.push_back(ys[i]);
  g2.push_back(a_vec ? 1 : ys[kept]);
  g2.push_back(b_vec ? 1 : ys[ys.rank() - 1]);
  NodeId g = e.reshape(v.g, g2);
  Cotangents out(2);
  if (v.want(0)) {
    NodeId ga = e.op(Op::MatMul, {g, e.swap_last2(e.reshape(v.in_as_result(1), b2))});
    out[0] = e.reshape(e.unbroadcast(ga, TensorType{v.dt(), a2}), as);
    out[0] = e.cast(*out[0], e.dtype(v.in(0)));
  }
  if (v.want(1)) {
    NodeId gb;
    if (b2.rank() == 2 && a2.rank() > 2 && a2[a2.rank() - 1] > 0) {
      // A shared weight (x [B, T, K] @ w [K, N]): one [K, B*T] @ [B*T, N]
      // product, not B batched products summed over B afterwards.
      int64_t rows = *a2.numel() / a2[a2.rank() - 1];
      NodeId a_rows = e.reshape(v.in_as_result(0), Shape{rows, a2[a2.rank() - 1]});
      NodeId g_rows = e.reshape(g, Shape{rows, g2[g2.rank() - 1]});
      gb = e.op(Op::MatMul, {e.swap_last2(a_rows), g_rows});
    } else {
      gb = e.op(Op::MatMul, {e.swap_last2(e.reshape(v.in_as_result(0), a2)), g});
    }
    out[1] = e.reshape(e.unbroadcast(gb, TensorType{v.dt(), b2}), bs);
    out[1] = e.cast(*out[1], e.dtype(v.in(1)));
  }
  return out;
}

}  // namespace

Cotangents vjp_reduction(const Vjp& v) {
  return v.node.op == Op::MatMul ? matmul(v) : reduction(v);
}

}  // namespace sexpgpu::ir::grad
