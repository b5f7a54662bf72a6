// The operand domain of a float unary op for the tests that draw operands
// (unary_domains.def): the conformance suite and the gradient checks.
#pragma once

#include "ir/ops.h"

namespace sexpgpu::testing {

struct UnaryDomain {
  double lo = -2, hi = 2;
  bool away_from_zero = false;  // magnitude in [lo, hi), either sign
};

inline UnaryDomain unary_domain(ir::Op op) {
  switch (op) {
#define SG_UNARY_DOMAIN(id, lo, hi, away) \
  case ir::Op::id:                        \
    return {lo, hi, away};
#include "unary_domains.def"
#undef SG_UNARY_DOMAIN
    default: return {};
  }
}

}  // namespace sexpgpu::testing
