// Which lowered nodes of a CUDA program run as one generated kernel: the
// fusion groups over the lowered graph (so the casts the lowering inserted
// fuse too; ir::fuse_elementwise sees only the IR's nodes), elementwise
// nodes and views (elementwise.h, is_view) alike, and a group's nodes as
// the ElementwiseGroup that elementwise.h compiles.
#pragma once

#include <optional>
#include <vector>

#include "elementwise.h"
#include "lower.h"

namespace sexpgpu::cuda {

// A group id per lowered node (-1: neither elementwise nor a view, or not live).
std::vector<int> fusion_groups(const cpu::Lowered& lowered, const std::vector<bool>& live,
                               const std::vector<bool>& is_output);

// Group `group`'s members (lowered ids in program order) as one kernel's
// nodes, with the lowered ids of its operands from outside in `externals`;
// nullopt when it cannot be one kernel.
std::optional<ElementwiseGroup> fused_group(const cpu::Lowered& lowered,
                                            const std::vector<ir::NodeId>& members,
                                            const std::vector<bool>& live,
                                            const std::vector<int>& group_id, int group,
                                            ir::NodeIds& externals);

}  // namespace sexpgpu::cuda
