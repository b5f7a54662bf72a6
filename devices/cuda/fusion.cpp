// Fusion groups over a CUDA program's lowered graph (fusion.h).
#include "fusion.h"

#include "elementwise_views.h"
#include "geometry.h"
#include "ir/elementwise.h"

namespace sexpgpu::cuda {

using cpu::Lowered;
using ir::NodeId;
using ir::Op;

namespace {

// Whether `reader`, in the group of `node`, reads each element of `node`
// at most once per output element: elementwise ops (and expand) must not
// broadcast it (that would compute it again for every copy), views that
// pick elements (permute, slice, pad, reshape, flip) may.
bool reads_once(const Lowered& lowered, size_t reader, size_t node) {
  const ir::Shape& shape = lowered.nodes[node].type.shape;
  const cpu::LoweredNode& r = lowered.nodes[reader];
  if (r.op == Op::Expand) return r.type.shape.numel() == shape.numel();
  return is_view(r.op) || r.type.shape == shape;
}

// A permute that moves the last axis: fused, its reads would stride across
// rows, one element per memory sector; alone it is a tiled transpose.
bool transposes_rows(const cpu::LoweredNode& n) {
  if (n.op != Op::Permute) return false;
  int64_t rank = int64_t(n.attrs.axes->size());
  return rank > 0 && cpu::norm_axis(n.attrs.axes->back(), rank) != rank - 1;
}

}  // namespace

// Walking back from the last node, an elementwise node or a view joins the
// group of its readers when they are all in one group and each reads it
// once (reads_once), and the node is not an output; otherwise it starts a
// group. Each group is then one generated kernel that writes only its last
// node; its views become index arithmetic (elementwise_views.h).
std::vector<int> fusion_groups(const Lowered& lowered, const std::vector<bool>& live,
                               const std::vector<bool>& is_output) {
  size_t count = lowered.nodes.size();
  std::vector<std::vector<size_t>> readers(count);
  for (size_t i = 0; i < count; ++i)
    if (live[i])
      for (NodeId in : lowered.nodes[i].inputs) readers[size_t(in)].push_back(i);
  auto fusable = [&](size_t i) {
    Op op = lowered.nodes[i].op;
    if (!live[i] || op == Op::StopGradient || transposes_rows(lowered.nodes[i])) return false;
    return ir::is_elementwise(op) || is_view(op);
  };
  // A reshape of something no group computes is better left out: it is
  // free where it stands (the program reads its operand in place) and
  // keeps its readers' flat, vectorised walk.
  std::vector<bool> in_place(count, false);
  for (size_t i = 0; i < count; ++i) {
    if (lowered.nodes[i].op != Op::Reshape) continue;
    size_t operand = size_t(lowered.nodes[i].inputs[0]);
    in_place[i] = !fusable(operand) || in_place[operand];
  }
  std::vector<int> group(count, -1);
  int groups = 0;
  for (size_t i = count; i-- > 0;) {
    if (!fusable(i)) continue;
    if (in_place[i]) {
      group[i] = groups++;
      continue;
    }
    int g = -1;
    bool joins = !is_output[i] && !readers[i].empty();
    for (size_t r : readers[i]) {
      if (!fusable(r) || (g >= 0 && group[r] != g) || !reads_once(lowered, r, i)) {
        joins = false;
        break;
      }
      g = group[r];
    }
    group[i] = joins ? g : groups++;
  }
  return group;
}

// Not one kernel when something outside the group reads a node other than
// its last, or (without views) a member's shape differs from the result's.
std::optional<ElementwiseGroup> fused_group(const Lowered& lowered,
                                            const std::vector<NodeId>& members,
                                            const std::vector<bool>& live,
                                            const std::vector<int>& group_id, int group,
                                            ir::NodeIds& externals) {
  const ir::TensorType& result = lowered.nodes[size_t(members.back())].type;
  std::vector<ir::Shape> shapes;
  bool views = false, one_shape = true;
  for (NodeId id : members) {
    const cpu::LoweredNode& n = lowered.nodes[size_t(id)];
    views = views || is_view(n.op);
    one_shape = one_shape && n.type.shape == result.shape;
    shapes.push_back(n.type.shape);
  }
  if (!views && !one_shape) return std::nullopt;
  std::optional<cpu::LoweredGroup> g = cpu::gather_group(lowered, members, live, group_id, group);
  if (!g) return std::nullopt;
  ElementwiseGroup fused{std::move(g->nodes), std::move(g->external_types), result, {}};
  if (views) {
    fused.shapes = std::move(shapes);
    if (!plan_views(fused)) return std::nullopt;
  }
  externals = g->externals;
  return fused;
}

}  // namespace sexpgpu::cuda
