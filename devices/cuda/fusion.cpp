// Fusion groups over a CUDA program's lowered graph (fusion.h).
#include "fusion.h"

#include "ir/elementwise.h"

namespace sexpgpu::cuda {

using cpu::Lowered;
using ir::NodeId;
using ir::Op;

// Walking back from the last node, an elementwise node joins the group of
// its readers when they are all elementwise and all in one group, and the
// node has the group's shape and is not an output; otherwise it starts a
// group. Each group is then one generated kernel that writes only its last
// node.
std::vector<int> fusion_groups(const Lowered& lowered, const std::vector<bool>& live,
                               const std::vector<bool>& is_output) {
  size_t count = lowered.nodes.size();
  std::vector<std::vector<size_t>> readers(count);
  for (size_t i = 0; i < count; ++i)
    if (live[i])
      for (NodeId in : lowered.nodes[i].inputs) readers[size_t(in)].push_back(i);
  auto fusable = [&](size_t i) {
    Op op = lowered.nodes[i].op;
    return live[i] && ir::is_elementwise(op) && op != Op::StopGradient;
  };
  std::vector<int> group(count, -1);
  std::vector<ir::Shape> shape_of_group;
  for (size_t i = count; i-- > 0;) {
    if (!fusable(i)) continue;
    int g = -1;
    bool joins = !is_output[i] && !readers[i].empty();
    for (size_t r : readers[i]) {
      if (!fusable(r) || (g >= 0 && group[r] != g)) {
        joins = false;
        break;
      }
      g = group[r];
    }
    if (joins && lowered.nodes[i].type.shape == shape_of_group[size_t(g)]) {
      group[i] = g;
      continue;
    }
    group[i] = int(shape_of_group.size());
    shape_of_group.push_back(lowered.nodes[i].type.shape);
  }
  return group;
}

// Not one kernel when something outside the group reads a node other than
// its last, or a member's shape differs from the result's.
std::optional<ElementwiseGroup> fused_group(const Lowered& lowered,
                                            const std::vector<NodeId>& members,
                                            const std::vector<bool>& live,
                                            const std::vector<int>& group_id, int group,
                                            ir::NodeIds& externals) {
  const ir::TensorType& result = lowered.nodes[size_t(members.back())].type;
  for (NodeId id : members)
    if (!(lowered.nodes[size_t(id)].type.shape == result.shape)) return std::nullopt;
  std::optional<cpu::LoweredGroup> g = cpu::gather_group(lowered, members, live, group_id, group);
  if (!g) return std::nullopt;
  externals = g->externals;
  return ElementwiseGroup{std::move(g->nodes), std::move(g->external_types), result};
}

}  // namespace sexpgpu::cuda
