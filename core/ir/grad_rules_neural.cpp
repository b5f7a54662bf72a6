// Gradient rules of the fused neural ops, written out in primitive IR ops:
// softmax, log_softmax, cross_entropy (through the fused cross_entropy_grad
// op; the written-out rule stays for comparison), layer_norm (dx through
// the fused layer_norm_grad op, the weight's and bias's through the fused
// layer_norm_param_grad, likewise), rms_norm, attention (through the
// fused attention_grad op, or written out with its probabilities
// recomputed from q and k where a float mask needs its own gradient), and
// conv2d and the pools through their gradient helpers, which are linear in
// g and so have their own adjoints here too.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "ir/grad_rules.h"

namespace sexpgpu::ir::grad {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int64_t last_axis(const Emit& e, NodeId x) {
  return e.shape(x).rank() - 1;
}

Cotangents softmax(const Vjp& v) {
  Emit& e = v.e;
  int64_t axis = *normalize_axis(*v.node.attrs.axis, v.node.type.shape.rank());
  NodeId y = v.self, g = v.g;
  if (v.node.op == Op::Softmax)  // y (g - sum(g y))
    return {e.mul(y, e.sub(g, e.sum(e.mul(g, y), {axis}, true)))};
  // log_softmax: g - softmax sum(g)
  return {e.sub(g, e.mul(e.op(Op::Exp, {y}), e.sum(g, {axis}, true)))};
}

}  // namespace

// Per row: d loss / d logits = softmax(logits) - one_hot(target), times the
// row's cotangent: g itself ("none"), g ("sum") or g / counted rows
// ("mean"), and 0 in rows whose target is ignore_index. Written out in
// primitive ops it materialises the probabilities and the one-hot; the
// fused cross_entropy_grad below computes the same. Declared here, outside
// the anonymous namespace, for test_cross_entropy_grad.cpp, which compares
// the two.
Cotangents cross_entropy_written_out(const Vjp& v);
Cotangents cross_entropy_written_out(const Vjp& v) {
  Emit& e = v.e;
  NodeId logits = e.cast(v.in(0), v.dt()), targets = v.in(1);
  const Shape& rows = e.shape(targets);
  DType d = v.dt(), td = e.dtype(targets);
  std::string reduction = v.node.attrs.reduction.value_or("mean");
  std::optional<NodeId> counted;  // bool [rows]
  if (v.node.attrs.ignore_index)
    counted = e.op(Op::Ne, {targets, e.c(double(*v.node.attrs.ignore_index), td)});
  NodeId per_row = v.g;
  if (reduction == "mean") {
    NodeId n = counted
                   ? e.op(Op::Maximum,
                          {e.sum(e.cast(*counted, d), all_axes(rows.rank()), false), e.c(1.0, d)})
                   : e.c(double(*rows.numel()), d);
    per_row = e.div(per_row, n);
  }
  per_row = e.expand(per_row, rows);
  if (counted) per_row = e.where0(*counted, per_row);
  Shape column = rows;
  column.push_back(1);
  int64_t classes = e.shape(logits).dims().back();
  NodeId one_hot = e.cast(e.op(Op::Eq, {e.reshape(targets, column), e.arange(classes, 0, td)}), d);
  NodeId probs = e.softmax(logits, last_axis(e, logits));
  NodeId gz = e.mul(e.sub(probs, one_hot), e.reshape(per_row, column));
  return {e.cast(gz, e.dtype(v.in(0))), std::nullopt};
}

namespace {

// The same gradient as one cross_entropy_grad node (ops.def), which a device
// runs as one pass over each row of logits.
Cotangents cross_entropy(const Vjp& v) {
  Emit& e = v.e;
  Attrs a;
  a.reduction = v.node.attrs.reduction;
  a.ignore_index = v.node.attrs.ignore_index;
  NodeId logits = e.cast(v.in(0), v.dt());
  NodeId gz = e.op(Op::CrossEntropyGrad, {logits, v.in(1), v.g}, std::move(a));
  return {e.cast(gz, e.dtype(v.in(0))), std::nullopt};
}

double norm_eps(const Vjp& v) {
  return v.node.attrs.eps.value_or(v.node.op == Op::LayerNorm ? 1e-5 : 1e-6);
}

// xhat = (x - mean) rstd (layer_norm) or x rstd (rms_norm) over the last
// axis, and rstd, as the forward computes them.
std::pair<NodeId, NodeId> normalised(const Vjp& v) {
  Emit& e = v.e;
  NodeId x = v.in_as_result(0);
  Axes last{last_axis(e, x)};
  NodeId centred = v.node.op == Op::LayerNorm ? e.sub(x, e.mean(x, last, true)) : x;
  NodeId rstd = e.op(
      Op::Rsqrt, {e.add(e.mean(e.mul(centred, centred), last, true), e.c(norm_eps(v), v.dt()))});
  return {e.mul(centred, rstd), rstd};
}

}  // namespace

// layer_norm: y = xhat w + b with xhat = (x - mean) rstd; rms_norm: y = xhat
// w with xhat = x rstd. With gh = g w (the cotangent of xhat), both give
// dx = rstd (gh - mean(gh) - xhat mean(gh xhat)), less the mean(gh) term for
// rms_norm, whose xhat is not centred. layer_norm's gradients go through
// the fused layer_norm_grad and layer_norm_param_grad below instead;
// declared here, outside the anonymous namespace, for
// test_layer_norm_grad.cpp and test_layer_norm_param_grad.cpp, which
// compare them.
Cotangents norm_written_out(const Vjp& v);
Cotangents norm_written_out(const Vjp& v) {
  Emit& e = v.e;
  bool layer = v.node.op == Op::LayerNorm;
  Axes last{e.shape(v.in(0)).rank() - 1};
  auto [xhat, rstd] = normalised(v);
  Cotangents out(v.node.inputs.size());
  if (v.want(0)) {
    NodeId gh = e.mul(v.g, v.in_as_result(1));
    NodeId inner = e.sub(gh, e.mul(xhat, e.mean(e.mul(gh, xhat), last, true)));
    if (layer) inner = e.sub(inner, e.mean(gh, last, true));
    out[0] = e.cast(e.mul(rstd, inner), e.dtype(v.in(0)));
  }
  if (v.want(1)) out[1] = e.unbroadcast(e.mul(v.g, xhat), e.type(v.in(1)));
  if (layer && v.want(2)) out[2] = e.unbroadcast(v.g, e.type(v.in(2)));
  return out;
}

namespace {

// Row `row` of layer_norm_param_grad's [2, C] result as operand `slot`'s
// cotangent: [C] in that operand's dtype.
NodeId param_row(const Vjp& v, NodeId sums, int64_t row, size_t slot) {
  Emit& e = v.e;
  int64_t C = e.shape(sums)[1];
  NodeId picked = e.slice(sums, {row, 0}, {row + 1, C}, {1, 1});
  return e.cast(e.reshape(picked, Shape{C}), e.dtype(v.in(slot)));
}

// layer_norm's dx as one layer_norm_grad node and the weight's and bias's
// gradients as one layer_norm_param_grad node, each of which a device runs
// as one pass over x and g. The bias alone needs only the column sums of g,
// which do not read x.
Cotangents norm(const Vjp& v) {
  if (v.node.op != Op::LayerNorm) return norm_written_out(v);
  Emit& e = v.e;
  Cotangents out(v.node.inputs.size());
  Attrs a;
  a.eps = norm_eps(v);
  if (v.want(0)) {
    NodeId dx = e.op(Op::LayerNormGrad, {v.in_as_result(0), v.in_as_result(1), v.g}, a);
    out[0] = e.cast(dx, e.dtype(v.in(0)));
  }
  if (v.want(1)) {
    NodeId sums = e.op(Op::LayerNormParamGrad, {v.in_as_result(0), v.g}, a);
    out[1] = param_row(v, sums, 0, 1);
    if (v.want(2)) out[2] = param_row(v, sums, 1, 2);
  } else if (v.want(2)) {
    out[2] = e.unbroadcast(v.g, e.type(v.in(2)));
  }
  return out;
}

double attention_scale(const Vjp& v) {
  return v.node.attrs.scale.value_or(1.0 / std::sqrt(double(v.e.shape(v.in(0))[3])));
}

// attention: s = q k^T scale (+ mask, or -inf where a bool mask or
// causality hides a key), p = softmax(s), o = p v. Backward: dv = p^T g,
// dp = g v^T, ds = p (dp - sum(dp p)), dq = ds k scale, dk = ds^T q scale,
// and a float mask gets ds. Written out, it holds the [B,H,Tq,Tk] scores:
// used only where a float mask needs its own gradient ds.
Cotangents attention_decomposed(const Vjp& v) {
  Emit& e = v.e;
  DType d = v.dt();
  NodeId q = v.in_as_result(0), k = v.in_as_result(1);
  const Shape &qs = e.shape(q), &ks = e.shape(k);
  int64_t tq = qs[2], tk = ks[2];
  double scale = attention_scale(v);
  NodeId s = e.scale(e.op(Op::MatMul, {q, e.swap_last2(k)}), scale);
  bool has_mask = v.node.inputs.size() == 4;
  if (has_mask) {
    NodeId mask = v.in(3);
    s = is_bool(e.dtype(mask)) ? e.where(mask, s, e.c(-kInf, d)) : e.add(s, e.cast(mask, d));
  }
  if (v.node.attrs.causal.value_or(false)) {  // query i sees keys j <= i + tk - tq
    NodeId rows = e.reshape(e.arange(tq, double(tk - tq), DType::I64), Shape{tq, 1});
    NodeId sees = e.op(Op::Ge, {rows, e.arange(tk, 0, DType::I64)});
    s = e.where(sees, s, e.c(-kInf, d));
  }
  NodeId p = e.softmax(s, 3);
  Cotangents out(v.node.inputs.size());
  if (v.want(2)) out[2] = e.cast(e.op(Op::MatMul, {e.swap_last2(p), v.g}), e.dtype(v.in(2)));
  bool need_scores = v.want(0) || v.want(1) || (has_mask && v.want(3));
  if (!need_scores) return out;
  NodeId dp = e.op(Op::MatMul, {v.g, e.swap_last2(v.in_as_result(2))});
  NodeId ds = e.mul(p, e.sub(dp, e.sum(e.mul(dp, p), {3}, true)));
  if (v.want(0)) out[0] = e.cast(e.scale(e.op(Op::MatMul, {ds, k}), scale), e.dtype(v.in(0)));
  if (v.want(1))
    out[1] = e.cast(e.scale(e.op(Op::MatMul, {e.swap_last2(ds), q}), scale), e.dtype(v.in(1)));
  if (has_mask && v.want(3)) out[3] = e.unbroadcast(ds, e.type(v.in(3)));
  return out;
}

// The same gradient as one attention_grad node (ops.def), which a device
// runs as a flash-attention backward, and dq, dk, dv sliced out of its
// result. Its operands are all of the attention's result dtype, o being
// the attention node itself; attention's shape rule already gives q, k and
// v one D, as attention_grad needs.
Cotangents attention(const Vjp& v) {
  Emit& e = v.e;
  bool has_mask = v.node.inputs.size() == 4;
  bool bool_mask = has_mask && is_bool(e.dtype(v.in(3)));
  if (has_mask && !bool_mask) return attention_decomposed(v);
  Cotangents out(v.node.inputs.size());
  if (!v.want(0) && !v.want(1) && !v.want(2)) return out;
  Attrs a;
  a.scale = attention_scale(v);
  a.causal = v.node.attrs.causal;
  NodeId q = v.in_as_result(0), k = v.in_as_result(1), val = v.in_as_result(2);
  NodeId grads = has_mask ? e.op(Op::AttentionGrad, {q, k, val, v.self, v.g, v.in(3)}, a)
                          : e.op(Op::AttentionGrad, {q, k, val, v.self, v.g}, a);
  const Shape &qs = e.shape(q), &ks = e.shape(k);
  int64_t tq = qs[2], tk = ks[2];
  int64_t rows[] = {0, tq, tq + tk, tq + 2 * tk};  // dq, dk, dv along axis 2
  for (size_t i = 0; i < 3; ++i) {
    if (!v.want(i)) continue;
    Dims starts{0, 0, rows[i], 0}, ends{qs[0], qs[1], rows[i + 1], qs[3]};
    out[i] = e.cast(e.slice(grads, starts, ends, {1, 1, 1, 1}), e.dtype(v.in(i)));
  }
  return out;
}

Attrs conv_attrs(const Node& node, const Shape& shape) {
  Attrs a;
  a.stride = node.attrs.stride;
  a.padding = node.attrs.padding;
  a.dilation = node.attrs.dilation;
  a.groups = node.attrs.groups;
  a.shape = dims_of(shape);
  return a;
}

Attrs pool_attrs(const Node& node, const Shape& shape) {
  Attrs a;
  a.kernel = node.attrs.kernel;
  a.stride = node.attrs.stride;
  a.padding = node.attrs.padding;
  a.shape = dims_of(shape);
  return a;
}

// conv2d(x, w) is bilinear; its helpers are its partial adjoints:
// <c, grad_input(g, w)> = <conv2d(c, w), g> and
// <c, grad_weight(x, g)> = <conv2d(x, c), g>, which gives every rule here.
Cotangents conv2d(const Vjp& v) {
  Emit& e = v.e;
  const Node& n = v.node;
  NodeId c = v.g;
  auto a = [&] { return v.in_as_result(0); };  // built only where a rule reads it
  auto b = [&] { return v.in_as_result(1); };
  auto out_as = [&](size_t i, NodeId value) { return e.cast(value, e.dtype(v.in(i))); };
  auto conv = [&](NodeId x, NodeId w) {
    Attrs at = conv_attrs(n, {});
    at.shape.reset();
    return e.op(Op::Conv2d, {x, w}, std::move(at));
  };
  auto grad_input = [&](NodeId g, NodeId w, NodeId like) {
    return e.op(Op::Conv2dGradInput, {g, w}, conv_attrs(n, e.shape(like)));
  };
  auto grad_weight = [&](NodeId x, NodeId g, NodeId like) {
    return e.op(Op::Conv2dGradWeight, {x, g}, conv_attrs(n, e.shape(like)));
  };
  Cotangents out(2);
  switch (n.op) {
    case Op::Conv2d:  // (x, w)
      if (v.want(0)) out[0] = out_as(0, grad_input(c, b(), v.in(0)));
      if (v.want(1)) out[1] = out_as(1, grad_weight(a(), c, v.in(1)));
      break;
    case Op::Conv2dGradInput:  // (g, w) -> dx; c is x-shaped
      if (v.want(0)) out[0] = out_as(0, conv(c, b()));
      if (v.want(1)) out[1] = out_as(1, grad_weight(c, a(), v.in(1)));
      break;
    case Op::Conv2dGradWeight:  // (x, g) -> dw; c is w-shaped
      if (v.want(0)) out[0] = out_as(0, grad_input(b(), c, v.in(0)));
      if (v.want(1)) out[1] = out_as(1, conv(a(), c));
      break;
    default: throw std::logic_error("internal: not a conv op");
  }
  return out;
}

// The adjoint of max_pool2d_grad in g: each window's value of c at the
// window's first maximum of x. Written out as the kernel's offsets in
// row-major order, each a strided slice of the padded x and c, keeping the
// c of a strictly greater x (so the first maximum wins, as in the forward
// routing).
NodeId max_pool_gather(const Vjp& v, NodeId x, NodeId c) {
  Emit& e = v.e;
  const Dims &kernel = *v.node.attrs.kernel, &stride = *v.node.attrs.stride,
             &padding = *v.node.attrs.padding;
  const Shape& gs = e.shape(v.in(1));
  Dims pads{0, 0, 0, 0, padding[0], padding[0], padding[1], padding[1]};
  NodeId xp = e.pad(x, pads, -kInf), cp = e.pad(c, pads, 0.0);
  std::optional<NodeId> best, picked;
  for (int64_t i = 0; i < kernel[0]; ++i)
    for (int64_t j = 0; j < kernel[1]; ++j) {
      Dims starts{0, 0, i, j};
      Dims ends{gs[0], gs[1], i + (gs[2] - 1) * stride[0] + 1, j + (gs[3] - 1) * stride[1] + 1};
      Dims steps{1, 1, stride[0], stride[1]};
      NodeId xs = e.slice(xp, starts, ends, steps), cs = e.slice(cp, starts, ends, steps);
      if (!best) {
        best = xs;
        picked = cs;
        continue;
      }
      NodeId greater = e.op(Op::Gt, {xs, *best});
      picked = e.where(greater, cs, *picked);
      bool last = i + 1 == kernel[0] && j + 1 == kernel[1];
      if (!last) best = e.where(greater, xs, *best);
    }
  return *picked;
}

Cotangents pool(const Vjp& v) {
  Emit& e = v.e;
  const Node& n = v.node;
  auto pool_of = [&](Op op, NodeId x) {
    Attrs a = pool_attrs(n, {});
    a.shape.reset();
    return e.op(op, {x}, std::move(a));
  };
  switch (n.op) {
    case Op::MaxPool2d:
      return {e.op(Op::MaxPool2dGrad, {v.in(0), v.g}, pool_attrs(n, e.shape(v.in(0))))};
    case Op::AvgPool2d:
      return {e.cast(e.op(Op::AvgPool2dGrad, {v.g}, pool_attrs(n, e.shape(v.in(0)))),
                     e.dtype(v.in(0)))};
    case Op::MaxPool2dGrad:  // (x, g): x only chooses the routes
      return {std::nullopt, e.cast(max_pool_gather(v, v.in(0), v.g), e.dtype(v.in(1)))};
    case Op::AvgPool2dGrad:  // linear in g, the adjoint of avg_pool2d
      return {e.cast(pool_of(Op::AvgPool2d, v.g), e.dtype(v.in(0)))};
    default: throw std::logic_error("internal: not a pool op");
  }
}

}  // namespace

Cotangents vjp_neural(const Vjp& v) {
  switch (v.node.op) {
    case Op::Softmax:
    case Op::LogSoftmax: return softmax(v);
    case Op::CrossEntropy: return cross_entropy(v);
    case Op::LayerNorm:
    case Op::RmsNorm: return norm(v);
    case Op::Attention: return attention(v);
    case Op::Conv2d:
    case Op::Conv2dGradInput:
    case Op::Conv2dGradWeight: return conv2d(v);
    case Op::MaxPool2d:
    case Op::AvgPool2d:
    case Op::MaxPool2dGrad:
    case Op::AvgPool2dGrad: return pool(v);
    default: throw std::logic_error("internal: not a neural op");
  }
}

}  // namespace sexpgpu::ir::grad
