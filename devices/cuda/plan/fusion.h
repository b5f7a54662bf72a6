// Which lowered nodes of a CUDA program run as one generated kernel: the
// fusion groups over the lowered graph (so the casts the lowering inserted
// fuse too; ir::fuse_elementwise sees only the IR's nodes), elementwise
// nodes and views (elementwise.h, is_view) alike, and a group's nodes as
// the ElementwiseGroup that elementwise.h compiles. A cheap elementwise node
// read by several groups is computed again in each of them instead of being
// written out (an optimizer's scaled gradient, read by both moments). A
// float sum of a square nothing else reads squares on load instead.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "cuda/codegen/elementwise.h"
#include "plan/lower.h"

namespace sexpgpu::cuda {

struct FusionPlan {
  // A group id per lowered node (-1: neither elementwise nor a view, not
  // live, or recomputed).
  std::vector<int> group;
  // Per node, the groups that each compute it again (empty: none); such a
  // node has no kernel and no buffer of its own.
  std::vector<std::vector<int>> recomputed_in;
};

// Nodes marked in `keep` are never recomputed (a group recomputing them
// could not be one kernel).
FusionPlan fusion_groups(const cpu::Lowered& lowered, const std::vector<bool>& live,
                         const std::vector<bool>& is_output, const std::vector<bool>& keep);

// A group's members (lowered ids in program order, the nodes it recomputes
// included) as one kernel's nodes, with the lowered ids of its operands from outside in
// `externals`; nullopt when it cannot be one kernel.
std::optional<ElementwiseGroup> fused_group(const cpu::Lowered& lowered,
                                            const std::vector<ir::NodeId>& members,
                                            const std::vector<bool>& live, const FusionPlan& plan,
                                            ir::NodeIds& externals);

// The fusion plan, and each group of two or more nodes that can be one
// kernel with its ElementwiseGroup and externals. A group whose result is
// read by a later group element for element (and otherwise only by steps
// after that group's, or as a function output) is computed inside it, which
// then writes that result too: its members, besides the last, that leave
// the kernel are `stored` (an optimizer's new moments, read by the
// parameter's update and returned; a gradient sum and its bf16 copy).
struct GroupPlan {
  FusionPlan fusion;
  std::map<int, std::vector<ir::NodeId>> members;  // per group, in program order
  std::map<int, std::pair<ElementwiseGroup, ir::NodeIds>> fused;
  std::map<int, std::vector<ir::NodeId>> stored;  // per group, in program order
};

GroupPlan plan_groups(const cpu::Lowered& lowered, const std::vector<bool>& live,
                      const std::vector<bool>& is_output);

// Per float sum reading a square that nothing else reads, the square: the
// sum squares each element as it loads it (the same products, summed in
// the same order: kernels_reduce.h), and the square needs no kernel and no
// buffer (a gradient's global norm: sum(square(g)) per parameter).
std::map<size_t, size_t> squares_to_sum_on_load(const cpu::Lowered& lowered,
                                                const std::vector<bool>& live,
                                                const std::vector<bool>& is_output,
                                                const GroupPlan& groups);

}  // namespace sexpgpu::cuda
