// CaseBuilder: random operands rounded to their dtype, ops added through the
// IR Builder (whose shape rule decides which dtypes a case covers), and the
// op -> case-family dispatch, a switch so that a new op fails to compile
// until it is given a family.
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
  switch (op) {
    case Op::Input:
    case Op::Param: return {};  // every case's operands are Inputs
    case Op::Neg:
    case Op::Abs:
    case Op::Square:
    case Op::Sign:
    case Op::Relu:
    case Op::Floor:
    case Op::Ceil:
    case Op::Round:
    case Op::Exp:
    case Op::Log:
    case Op::Log1p:
    case Op::Expm1:
    case Op::Sqrt:
    case Op::Rsqrt:
    case Op::Sin:
    case Op::Cos:
    case Op::Tanh:
    case Op::Sigmoid:
    case Op::Gelu:
    case Op::Silu:
    case Op::Softplus:
    case Op::Reciprocal:
    case Op::Erf:
    case Op::LogicalNot:
    case Op::IsFinite:
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Pow:
    case Op::Maximum:
    case Op::Minimum:
    case Op::Atan2:
    case Op::Mod:
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
    case Op::Eq:
    case Op::Ne:
    case Op::LogicalAnd:
    case Op::LogicalOr:
    case Op::Where:
    case Op::Clamp:
    case Op::Cast:
    case Op::StopGradient: return elementwise_cases(op);
    case Op::Sum:
    case Op::Prod:
    case Op::Max:
    case Op::Min:
    case Op::Mean:
    case Op::Var:
    case Op::Std:
    case Op::LogSumExp:
    case Op::Norm:
    case Op::ArgMax:
    case Op::ArgMin:
    case Op::MatMul: return reduction_cases(op);
    case Op::Full:
    case Op::Constant:
    case Op::Arange:
    case Op::RandomNormal:
    case Op::RandomUniform:
    case Op::RandomBernoulli: return creation_cases(op);
    case Op::Reshape:
    case Op::Permute:
    case Op::Expand:
    case Op::Concat:
    case Op::Slice:
    case Op::Take:
    case Op::IndexAdd:
    case Op::Pad:
    case Op::Flip: return shape_cases(op);
    case Op::Softmax:
    case Op::LogSoftmax:
    case Op::CrossEntropy:
    case Op::LayerNorm:
    case Op::RmsNorm:
    case Op::Attention:
    case Op::AttentionGrad:
    case Op::CrossEntropyGrad:
    case Op::LayerNormGrad:
    case Op::LayerNormParamGrad:
    case Op::Conv2d:
    case Op::Conv2dGradInput:
    case Op::Conv2dGradWeight:
    case Op::MaxPool2d:
    case Op::AvgPool2d:
    case Op::MaxPool2dGrad:
    case Op::AvgPool2dGrad: return neural_cases(op);
  }
  return {};
}

}  // namespace conformance
