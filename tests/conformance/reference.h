// The judge of a conformance case: the f64 reference (the case's function
// with every float dtype widened to f64, run by the CPU executor on the same
// operand values), the tolerances by dtype, and the comparison of a
// device's outputs with the reference. Random ops are judged instead by bit
// equality with the CPU executor in their own dtype and by statistics.
#pragma once

#include <string>
#include <vector>

#include "case_builder.h"

namespace conformance {

// One case at one dtype, ready to run on any device.
struct Prepared {
  std::string name;  // "add f16: add(f16[3,4], f16[4]) -> f16[3,4]"
  Op op;
  DType dtype;
  double terms = 1;
  bool random = false;
  ir::Module module;
  std::string ir_json;
  std::vector<cpu::HostTensor> inputs;
  std::vector<cpu::HostTensor> expected;  // f64 (random: the CPU executor's own dtype)
};

// The case's function with every float dtype replaced by f64; integer and
// bool values stay, and where an op turned them into floats (exp of an i32)
// they are cast to f64 first. The error names the node that would not widen.
ir::Result<ir::Module> widen(const ir::Module& module);

// What preparing a case at a dtype gave: the case, or the shape rule's
// refusal of the dtype (skipped), or an error of the reference itself.
struct Preparation {
  enum { Ready, Refused, Broken } status;
  std::string message;  // the refusal or the error
  Prepared prepared;
};

// Builds the case (operands drawn from `seed`), widens it and runs the
// reference; a Broken message says which step failed.
Preparation prepare(const Case& c, DType dtype, uint64_t seed);

// Relative tolerance of a float dtype (0 for integers and bool: exact).
double relative_tolerance(DType d);

// "" when `got` (a device's outputs) matches; else the worst element, both
// values and the bound it broke.
std::string judge(const Prepared& p, const std::vector<cpu::HostTensor>& got);

}  // namespace conformance
