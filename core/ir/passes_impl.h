// Shared by the passes (passes*.cpp), private to them: the one place nodes
// are removed and renumbered, so every pass keeps `inputs` and `outputs`
// pointing right the same way.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace sexpgpu::ir::pass_detail {

// Rewrites `fn` after a pass decided, per node, what stands for it from now
// on: replacement[i] == i keeps node i; replacement[i] == j < i forwards
// every use of i (operands, outputs) to j (following chains) and drops i;
// keep[i] false drops a node nothing uses any more. The survivors are
// renumbered densely in their order. Input and Param nodes are never
// dropped.
void compact(Function& fn, const std::vector<NodeId>& replacement, const std::vector<bool>& keep);

// replacement[i] == i for every node: the starting point of a pass.
std::vector<NodeId> identity_replacement(const Function& fn);

// users[i]: the nodes that read node i (with repeats when read twice).
std::vector<std::vector<NodeId>> users_of(const Function& fn);

// What node i stands for after following its replacement chain.
NodeId resolve(const std::vector<NodeId>& replacement, NodeId id);

}  // namespace sexpgpu::ir::pass_detail
