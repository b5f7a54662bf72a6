// Conformance cases of the reductions, matmul and the creation ops (full,
// constant, arange and the three random draws, which the harness judges by
// bit equality with the CPU device and by their statistics).
#include "case_builder.h"

namespace conformance {

namespace {

Attrs reduce_attrs(std::initializer_list<int64_t> axes, bool keepdims = false) {
  Attrs a;
  if (axes.size() > 0) a.axes = dims(axes);
  a.keepdims = keepdims;
  return a;
}

std::string axes_label(std::initializer_list<int64_t> axes, bool keepdims) {
  std::string s = "axes ";
  s += axes.size() ? Shape(std::span<const int64_t>(axes.begin(), axes.size())).to_string() : "all";
  return keepdims ? s + " keepdims" : s;
}

// op over `axes` of x (of `shape`); `terms` is the number of elements reduced.
Case reduction(Op op, std::initializer_list<int64_t> axes, double terms, bool keepdims = false,
               std::optional<int64_t> correction = {}, Shape shape = {2, 3, 4}) {
  Attrs a = reduce_attrs(axes, keepdims);
  a.correction = correction;
  std::string label = axes_label(axes, keepdims);
  if (correction) label += " correction " + std::to_string(*correction);
  return {label, op, terms, [=](CaseBuilder& c) {
            Draw how = Draw::Any;
            if (op == Op::Max || op == Op::Min || op == Op::ArgMax || op == Op::ArgMin)
              how = Draw::Grid;  // ties: the first extreme must win
            Values v = c.draw(c.dt(), *shape.numel(), how);
            if (op == Op::Prod && ir::is_float(c.dt()))  // a product of ~1s stays in range
              for (double& x : v) x = (x < 0 ? -1 : 1) * c.uniform(0.97, 1.03);
            return c.op(op, {c.input(c.dt(), shape, v)}, a);
          }};
}

Case matmul(Shape a, Shape b) {
  double k = double(a[a.rank() - 1]);
  return {"", Op::MatMul, k, [=](CaseBuilder& c) {
            NodeId x = c.input(a, Draw::Unit);
            return c.op(Op::MatMul, {x, c.input(b, Draw::Unit)});
          }};
}

Attrs typed(DType d, Dims shape) {
  Attrs a;
  a.dtype = d;
  a.shape = shape;
  return a;
}

Case full_case() {
  return {"", Op::Full, 1, [](CaseBuilder& c) {
            Attrs a = typed(c.dt(), dims({2, 3}));
            a.value = ir::is_float(c.dt()) ? 2.5 : ir::is_bool(c.dt()) ? 1 : 3;
            return c.op(Op::Full, {}, a);
          }};
}

Case constant_case() {
  return {"", Op::Constant, 1, [](CaseBuilder& c) {
            Attrs a = typed(c.dt(), dims({2, 3}));
            a.data = c.draw(c.dt(), 6, Draw::Any);
            return c.op(Op::Constant, {}, a);
          }};
}

Case arange_case() {
  return {"", Op::Arange, 1, [](CaseBuilder& c) {
            Attrs a = typed(c.dt(), dims({5}));
            bool is_float = ir::is_float(c.dt());
            a.start = is_float ? -1.0 : 1.0;
            a.step = is_float ? 0.75 : 2.0;
            return c.op(Op::Arange, {}, a);
          }};
}

// 4096 draws from the state (seed 1234, step 7, microbatch 2), stream 5.
Case random_case(Op op) {
  return {"", op, 1, [=](CaseBuilder& c) {
            Attrs a = typed(c.dt(), dims({64, 64}));
            a.stream = 5;
            if (op == Op::RandomNormal) a.mean = 0.5, a.stddev = 2.0;
            if (op == Op::RandomUniform) a.low = -1.0, a.high = 3.0;
            if (op == Op::RandomBernoulli) a.p = 0.3;
            NodeId state = c.input(DType::I64, {3}, Values{1234, 7, 2});
            return c.op(op, {state}, a);
          }};
}

// Large reductions along the contiguous and the strided axis: the kernels'
// vector loops, tails and threads.
std::vector<Case> large_reductions(Op op) {
  return {reduction(op, {1}, 257, false, {}, {33, 257}),
          reduction(op, {0}, 33, false, {}, {33, 257})};
}

std::vector<Case> with(std::vector<Case> a, std::vector<Case> b) {
  for (Case& c : b) a.push_back(std::move(c));
  return a;
}

}  // namespace

std::vector<Case> reduction_cases(Op op) {
  switch (op) {
    case Op::Var:
    case Op::Std:
      return with({reduction(op, {1}, 3), reduction(op, {2}, 4, true), reduction(op, {}, 24),
                   reduction(op, {0, 2}, 8, false, 0)},
                  large_reductions(op));
    case Op::ArgMax:
    case Op::ArgMin:
      return with({reduction(op, {1}, 3), reduction(op, {}, 24), reduction(op, {2}, 4, true)},
                  large_reductions(op));
    case Op::MatMul:
      return {matmul({2, 3}, {3, 4}),
              matmul({3}, {3, 4}),
              matmul({2, 3}, {3}),
              matmul({3}, {3}),
              matmul({2, 1, 2, 3}, {3, 3, 2}),
              matmul({4, 16}, {16, 5}),
              matmul({65, 130}, {130, 67}),
              matmul({3, 33, 70}, {70, 17})};
    default:
      return with({reduction(op, {1}, 3), reduction(op, {0, 2}, 8, true), reduction(op, {}, 24)},
                  large_reductions(op));
  }
}

std::vector<Case> creation_cases(Op op) {
  switch (op) {
    case Op::Full: return {full_case()};
    case Op::Constant: return {constant_case()};
    case Op::Arange: return {arange_case()};
    default: return {random_case(op)};
  }
}

}  // namespace conformance
