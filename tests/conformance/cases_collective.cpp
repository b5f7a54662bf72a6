// Conformance cases of the collective family (ops.def, "Collective"):
// all_reduce in a world of one, where it packs its operands in order into
// one 1-D result (the suite's devices are opened without a world).
#include "case_builder.h"

namespace conformance {

namespace {

Attrs reduction(const char* r) {
  Attrs a;
  a.reduction = r;
  return a;
}

}  // namespace

std::vector<Case> collective_cases(Op op) {
  if (op != Op::AllReduce) return {};
  return {{"mean, operands of several shapes", op, 1,
           [](CaseBuilder& c) {
             NodeId s = c.input({}), m = c.input({2, 3}), v = c.input({5}), t = c.input({2, 1, 2});
             return c.op(Op::AllReduce, {m, s, v, t}, reduction("mean"));
           }},
          {"sum, one operand", op, 1,
           [](CaseBuilder& c) {
             return c.op(Op::AllReduce, {c.input({3, 4})}, reduction("sum"));
           }},
          {"large", op, 1, [](CaseBuilder& c) {
             NodeId a = c.input({67, 129}), b = c.input({33, 257});
             return c.op(Op::AllReduce, {a, b}, reduction("mean"));
           }}};
}

}  // namespace conformance
