// Conformance cases of the elementwise ops: unary, binary (with NumPy
// broadcasting and mixed-dtype promotion), comparisons, where, clamp and
// every cast. Operands stay in each op's domain (log of positives, divisors
// away from 0) and comparisons draw from a grid so that equalities occur.
#include <cmath>
#include <limits>

#include "case_builder.h"
#include "ir/elementwise.h"
#include "unary_domain.h"

namespace conformance {

namespace {

// Values for a unary op's operand: a float unary op's domain
// (unary_domains.def), and the points the other ops' meanings single out
// (halves for round, infinities and NaN for isfinite).
Values unary_values(CaseBuilder& c, Op op, int64_t n) {
  DType d = c.dt();
  testing::UnaryDomain domain = testing::unary_domain(op);
  bool float_unary = ir::is_float_unary(op);
  if (!ir::is_float(d))
    return c.draw(d, n, float_unary && domain.lo > 0 ? Draw::Positive : Draw::Any);
  Values v(static_cast<size_t>(n));
  double inf = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < v.size(); ++i) {
    if (float_unary) {
      v[i] = c.uniform(domain.lo, domain.hi);
      if (domain.away_from_zero && c.integer(0, 1)) v[i] = -v[i];
      continue;
    }
    switch (op) {
      case Op::Floor:
      case Op::Ceil:
      case Op::Round: v[i] = 0.25 * double(c.integer(-12, 12)); break;
      case Op::IsFinite: {
        double special[] = {inf, -inf, std::nan(""), c.uniform(-2, 2)};
        v[i] = special[c.integer(0, 3)];
        break;
      }
      case Op::LogicalNot: v[i] = c.draw(d, 1, Draw::Grid)[0]; break;
      default: v[i] = c.uniform(-2, 2);
    }
  }
  return v;
}

Case unary(Op op, Attrs attrs = {}, std::string label = "", Shape shape = {3, 4}) {
  return {label, op, 1, [=](CaseBuilder& c) {
            Values v = unary_values(c, op, *shape.numel());
            return c.op(op, {c.input(c.dt(), shape, v)}, attrs);
          }};
}

// Dividend and divisor of a floored mod: a / b stays 0.2 or more from an
// integer, where rounding the quotient in a narrow dtype could not move
// floor(a / b).
std::pair<NodeId, NodeId> mod_operands(CaseBuilder& c, const Shape& sa, const Shape& sb) {
  if (!ir::is_float(c.dt()) || !(sb.rank() == 1 && sa[sa.rank() - 1] == sb[0]))
    return {c.input(sa, Draw::Any), c.input(sb, Draw::NonZero)};
  Values b = c.draw(c.dt(), sb[0], Draw::NonZero);
  Values a(static_cast<size_t>(*sa.numel()));
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = b[i % b.size()] * (double(c.integer(-2, 2)) + c.uniform(0.2, 0.8));
  return {c.input(c.dt(), sa, a), c.input(c.dt(), sb, b)};
}

std::pair<Draw, Draw> binary_draws(Op op, DType d) {
  switch (op) {
    case Op::Div: return {Draw::Any, Draw::NonZero};
    case Op::Pow:
      return ir::is_float(d) ? std::pair{Draw::Positive, Draw::Any}
                             : std::pair{Draw::Any, Draw::Positive};
    case Op::Atan2: return {Draw::NonZero, Draw::NonZero};
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
    case Op::Eq:
    case Op::Ne:
    case Op::LogicalAnd:
    case Op::LogicalOr:
    case Op::Maximum:
    case Op::Minimum: return {Draw::Grid, Draw::Grid};
    default: return {Draw::Any, Draw::Any};
  }
}

Case binary(Op op, Shape sa, Shape sb) {
  return {"", op, 1, [=](CaseBuilder& c) {
            if (op == Op::Mod) {
              auto [a, b] = mod_operands(c, sa, sb);
              return c.op(op, {a, b});
            }
            auto [da, db] = binary_draws(op, c.dt());
            NodeId a = c.input(sa, da);
            return c.op(op, {a, c.input(sb, db)});
          }};
}

// op(x of the dtype under test, y of `other`): the promotion rule at work.
Case mixed(Op op, DType other) {
  return {"with " + std::string(ir::ir_name(other)), op, 1, [=](CaseBuilder& c) {
            auto [da, db] = binary_draws(op, other);
            NodeId a = c.input({3, 4}, da);
            return c.op(op, {a, c.input(other, {4}, db)});
          }};
}

std::vector<Case> binary_cases(Op op) {
  // The large one reaches the kernels' vector loops, their tails and threads.
  std::vector<Case> cases = {binary(op, {3, 4}, {4}), binary(op, {2, 1, 3}, {4, 1}),
                             binary(op, {}, {2, 3}), binary(op, {67, 129}, {129})};
  if (op == Op::Add) {
    cases.push_back(mixed(op, DType::I32));
    cases.push_back(mixed(op, DType::Bool));
    cases.push_back(mixed(op, DType::BF16));
  }
  if (op == Op::Mul || op == Op::Div) cases.push_back(mixed(op, DType::F32));
  if (op == Op::Div) cases.push_back(mixed(op, DType::I32));
  if (op == Op::Lt || op == Op::Eq) cases.push_back(mixed(op, DType::I64));
  return cases;
}

Case where_case() {
  return {"", Op::Where, 1, [](CaseBuilder& c) {
            NodeId cond = c.input(DType::Bool, {3, 1}, Values{1, 0, 1});
            NodeId a = c.input({3, 4}), b = c.input({4});
            return c.op(Op::Where, {cond, a, b});
          }};
}

// lo below hi everywhere, x on both sides of each.
Case clamp_case() {
  return {"", Op::Clamp, 1, [](CaseBuilder& c) {
            DType d = c.dt();
            bool is_signed = ir::is_float(d) || ir::is_signed(d);
            Values lo(4), hi{ir::is_bool(d) ? 1.0 : is_signed ? 1.5 : 5.0};
            for (double& v : lo) {
              v = ir::is_float(d) ? c.uniform(-1, -0.5)
                  : is_signed     ? -double(c.integer(1, 2))
                                  : double(c.integer(0, 2));
            }
            NodeId x = c.input({3, 4}, Draw::Any);
            return c.op(Op::Clamp, {x, c.input(d, {4}, lo), c.input(d, {}, hi)});
          }};
}

// Cast from the dtype under test to `to`; negative values only where `to`
// is signed (a negative float to an unsigned integer has no meaning).
Case cast_case(DType to) {
  return {"to " + std::string(ir::ir_name(to)), Op::Cast, 1, [=](CaseBuilder& c) {
            Attrs a;
            a.dtype = to;
            Values v = c.draw(c.dt(), 12, Draw::Any);
            bool unsigned_target = ir::is_int(to) && !ir::is_signed(to);
            if (unsigned_target && ir::is_float(c.dt()))
              for (double& x : v) x = std::abs(x) * 3;
            if (ir::is_float(c.dt())) v[0] = 0;  // to bool: the one false
            return c.op(Op::Cast, {c.input(c.dt(), {3, 4}, v)}, a);
          }};
}

}  // namespace

std::vector<Case> elementwise_cases(Op op) {
  switch (ir::info(op).rule) {
    case ir::Rule::UnarySame:
    case ir::Rule::UnaryFloat:
    case ir::Rule::UnaryBool: {
      return {unary(op), unary(op, {}, "large", {67, 129})};
    }
    case ir::Rule::BinaryPromote:
    case ir::Rule::BinaryFloat:
    case ir::Rule::Compare: return binary_cases(op);
    case ir::Rule::Where: return {where_case()};
    case ir::Rule::Clamp: return {clamp_case()};
    case ir::Rule::Cast: {
      std::vector<Case> cases;
      for (DType to : ir::kAllDTypes) cases.push_back(cast_case(to));
      return cases;
    }
    default: return {};
  }
}

}  // namespace conformance
