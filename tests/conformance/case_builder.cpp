// CaseBuilder: random operands rounded to their dtype, ops added through the
// IR Builder (whose shape rule decides which dtypes a case covers), and the
// dispatch from ops.def's kernel family to the case lists, a switch so that
// a new family fails to compile until it has cases.
#include "case_builder.h"

namespace conformance {

Dims dims(std::initializer_list<int64_t> v) {
  Dims d;  // push_back: GCC 12 warns falsely on small_vector's range constructor
  for (int64_t x : v) d.push_back(x);
  return d;
}

namespace {

ir::Module module_of_f() {
  ir::Module m;
  m.functions.emplace_back().name = "f";
  return m;
}

}  // namespace

CaseBuilder::CaseBuilder(uint64_t seed, DType dtype)
    : module_(module_of_f()), builder_(module_.functions[0]), dtype_(dtype), rng_(seed) {}

NodeId CaseBuilder::input(DType dtype, const Shape& shape, const Values& values) {
  TensorType type{dtype, shape};
  inputs_.push_back(cpu::HostTensor::from_doubles(type, values));
  return builder_.input("x" + std::to_string(inputs_.size() - 1), type);
}

NodeId CaseBuilder::input(DType dtype, const Shape& shape, Draw how) {
  return input(dtype, shape, draw(dtype, *shape.numel(), how));
}

NodeId CaseBuilder::op(Op op, std::initializer_list<NodeId> operands, Attrs attrs) {
  return this->op(op, std::span<const NodeId>(operands.begin(), operands.size()), attrs);
}

NodeId CaseBuilder::op(Op op, std::span<const NodeId> operands, Attrs attrs) {
  ir::Result<NodeId> r = builder_.add(op, operands, std::move(attrs));
  if (!r) throw Refused(r.error());
  return *r;
}

namespace {

double draw_float(CaseBuilder& c, Draw how) {
  switch (how) {
    case Draw::Any: return c.uniform(-2, 2);
    case Draw::Positive: return c.uniform(0.5, 2);
    case Draw::NonZero: return c.uniform(0.3, 2) * (c.integer(0, 1) ? 1 : -1);
    case Draw::Grid: return 0.5 * double(c.integer(-3, 3));
    case Draw::Unit: return c.uniform(-1, 1);
  }
  return 0;
}

double draw_int(CaseBuilder& c, Draw how, bool is_signed) {
  int64_t lo = is_signed ? -4 : 0, hi = is_signed ? 4 : 8;
  switch (how) {
    case Draw::Any:
    case Draw::Unit: return double(c.integer(lo, hi));
    case Draw::Positive: return double(c.integer(1, 4));
    case Draw::NonZero: {
      int64_t v = c.integer(1, 4);
      return double(is_signed && c.integer(0, 1) ? -v : v);
    }
    case Draw::Grid: return double(is_signed ? c.integer(-2, 2) : c.integer(0, 3));
  }
  return 0;
}

}  // namespace

Values CaseBuilder::draw(DType dtype, int64_t n, Draw how) {
  Values v(static_cast<size_t>(n), 0.0);
  for (double& x : v) {
    if (ir::is_float(dtype)) {
      x = draw_float(*this, how);
    } else if (ir::is_int(dtype)) {
      x = draw_int(*this, how, ir::is_signed(dtype));
    } else {
      x = how == Draw::Positive || how == Draw::NonZero ? 1.0 : double(integer(0, 1));
    }
  }
  return v;
}

ir::Module CaseBuilder::finish(NodeId result) {
  module_.functions[0].outputs.push_back({"y", result});
  return std::move(module_);
}

std::vector<Case> cases_for(Op op) {
  switch (ir::info(op).family) {
    case ir::Family::Leaf: return {};  // every case's operands are Inputs
    case ir::Family::Elementwise:
    case ir::Family::Cast: return elementwise_cases(op);
    case ir::Family::Reduce:
    case ir::Family::MatMul: return reduction_cases(op);
    case ir::Family::Creation:
    case ir::Family::Random: return creation_cases(op);
    case ir::Family::Shape: return shape_cases(op);
    case ir::Family::Nn:
    case ir::Family::Attention:
    case ir::Family::Conv:
    case ir::Family::Pool: return neural_cases(op);
    case ir::Family::Collective: return collective_cases(op);
  }
  return {};
}

}  // namespace conformance
