// The IR verifier, run after staging and after every pass: operand ids
// defined before use, operand counts, each node's type equal to its op's
// shape rule applied to its operands, the attributes its op needs present,
// `inputs` exactly the Input/Param nodes, outputs naming existing nodes.
#pragma once

#include <string>

#include "ir/graph.h"

namespace sexpgpu::ir {

// Empty when the function is well-formed; else the first problem, naming
// the node ("%12 = matmul ...: ...").
std::string verify(const Module& module, const Function& fn);
std::string verify(const Module& module);

}  // namespace sexpgpu::ir
