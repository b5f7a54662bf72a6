// The IR's text form (tensors.md, "IR printed form"): numbered SSA lines,
// one node per line, with type and source position. What `sexpgpu ir`
// prints and what golden IR files hold.
#pragma once

#include <string>

#include "ir/graph.h"

namespace sexpgpu::ir {

std::string to_text(const Module& module, const Function& fn);
std::string to_text(const Module& module);  // every function, blank-line separated

}  // namespace sexpgpu::ir
