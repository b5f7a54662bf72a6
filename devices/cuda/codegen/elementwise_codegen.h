// The scalar pieces of generated elementwise kernels (elementwise.cpp
// defines them), shared by the plain groups' code (elementwise.cpp) and the
// groups with views (elementwise_views.cpp): how a dtype lives in registers
// and memory, and the expression of one node over its operands' registers.
#pragma once

#include <string>
#include <vector>

#include "elementwise.h"

namespace sexpgpu::cuda::codegen {

// The register type a value of `d` lives in.
const char* value_type(ir::DType d);
// The type an element of `d` is stored as.
const char* storage_type(ir::DType d);
// A stored element as its register value, and back.
std::string load(ir::DType d, const std::string& element);
std::string store(ir::DType d, const std::string& value);
// `value` written to a tensor of `d` (pad's fill), as its stored bits and
// as its register value.
std::string raw_constant(double value, ir::DType d);
std::string constant(double value, ir::DType d);

// One operand of a node: its register name and dtype.
struct Operand {
  std::string name;
  ir::DType dtype;
};

// The expression computing `node` (not a view) from its operands' registers,
// in a kernel whose result has dtype `result`: a result rounded to bf16 takes
// tanh from the GPU's tanh.approx (relative error under 2^-10.9, a quarter
// of bf16's half-ulp) instead of libdevice's tanhf, which costs more than
// the memory traffic of a GELU kernel.
ir::Result<std::string> expression(const GroupNode& node, const std::vector<Operand>& in,
                                   ir::DType result = ir::DType::F32);

}  // namespace sexpgpu::cuda::codegen
