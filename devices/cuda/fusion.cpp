// Fusion groups over a CUDA program's lowered graph (fusion.h).
#include "fusion.h"

#include <algorithm>
#include <map>

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

// `members` as one group (cpu::gather_group, with nodes read from outside
// allowed when the readers recompute them), or nullopt.
std::optional<cpu::LoweredGroup> gather(const Lowered& lowered, const std::vector<NodeId>& members,
                                        const std::vector<bool>& live, const FusionPlan& plan) {
  std::map<NodeId, int> index;
  for (size_t k = 0; k < members.size(); ++k) index[members[k]] = int(k);
  NodeId last = members.back();
  for (size_t i = 0; i < lowered.nodes.size(); ++i) {
    if (!live[i] || index.count(NodeId(i))) continue;
    for (NodeId in : lowered.nodes[i].inputs)
      if (index.count(in) && in != last && plan.recomputed_in[size_t(in)].empty())
        return std::nullopt;
  }
  return cpu::build_group(lowered, members);
}

// Computing a node again in each of `groups` reader groups instead of
// writing it once and reading it back pays when its operands of more than
// one element, read `groups` times instead of once, cost no more than the
// write and the reads they save.
bool worth_recomputing(const Lowered& lowered, size_t node, size_t groups) {
  int64_t wide = 0;
  for (NodeId in : lowered.nodes[node].inputs)
    if (lowered.nodes[size_t(in)].type.shape.numel().value_or(2) != 1) ++wide;
  return (int64_t(groups) - 1) * wide <= int64_t(groups) + 1;
}

}  // namespace

// Walking back from the last node, an elementwise node or a view joins the
// group of its readers when they are all in one group and each reads it
// once (reads_once), and the node is not an output; otherwise it starts a
// group. An elementwise node (not a view) whose readers are all computed
// by groups, several of them, each reader reading it once, is recomputed in
// each of those groups when that is cheap (worth_recomputing), and so may
// its operands be in turn (a bias add after a cast, read by three slices). Each group is then one
// generated kernel that writes only its last node; its views become index arithmetic
// (elementwise_views.h).
FusionPlan fusion_groups(const Lowered& lowered, const std::vector<bool>& live,
                         const std::vector<bool>& is_output, const std::vector<bool>& keep) {
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
  FusionPlan plan{std::vector<int>(count, -1), std::vector<std::vector<int>>(count)};
  int groups = 0;
  for (size_t i = count; i-- > 0;) {
    if (!fusable(i)) continue;
    if (in_place[i]) {
      plan.group[i] = groups++;
      continue;
    }
    // The groups that compute the readers (a recomputed reader's several),
    // when every reader is in some and reads the node once.
    std::vector<int> reader_groups;
    bool grouped = !is_output[i] && !readers[i].empty();
    for (size_t r : readers[i]) {
      std::vector<int> in = plan.recomputed_in[r];
      if (plan.group[r] >= 0) in.push_back(plan.group[r]);
      if (!fusable(r) || in.empty() || !reads_once(lowered, r, i)) {
        grouped = false;
        break;
      }
      for (int g : in)
        if (std::find(reader_groups.begin(), reader_groups.end(), g) == reader_groups.end())
          reader_groups.push_back(g);
    }
    bool recompute = grouped && reader_groups.size() > 1 && !keep[i] &&
                     !is_view(lowered.nodes[i].op) &&
                     worth_recomputing(lowered, i, reader_groups.size());
    if (recompute)
      plan.recomputed_in[i] = std::move(reader_groups);
    else
      plan.group[i] = grouped && reader_groups.size() == 1 ? reader_groups[0] : groups++;
  }
  return plan;
}

// Not one kernel when something outside the group reads a node other than
// its last (a node the group recomputes excepted: its readers all
// recompute it), or (without views) a member's shape differs from the
// result's.
std::optional<ElementwiseGroup> fused_group(const Lowered& lowered,
                                            const std::vector<NodeId>& members,
                                            const std::vector<bool>& live, const FusionPlan& plan,
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
  std::optional<cpu::LoweredGroup> g = gather(lowered, members, live, plan);
  if (!g) return std::nullopt;
  ElementwiseGroup fused{std::move(g->nodes), std::move(g->external_types), result, {}};
  if (views) {
    fused.shapes = std::move(shapes);
    if (!plan_views(fused)) return std::nullopt;
  }
  externals = g->externals;
  return fused;
}

// When a group recomputing a node cannot be one kernel, its nodes need
// that node's value in memory: the plan is made again with the node kept.
GroupPlan plan_groups(const Lowered& lowered, const std::vector<bool>& live,
                      const std::vector<bool>& is_output) {
  size_t count = lowered.nodes.size();
  std::vector<bool> keep(count, false);
  for (;;) {
    GroupPlan p{fusion_groups(lowered, live, is_output, keep), {}, {}};
    for (size_t i = 0; i < count; ++i) {
      if (p.fusion.group[i] >= 0) p.members[p.fusion.group[i]].push_back(NodeId(i));
      for (int g : p.fusion.recomputed_in[i]) p.members[g].push_back(NodeId(i));
    }
    bool replan = false;
    for (const auto& [group, members] : p.members) {
      if (members.size() < 2) continue;
      bool usable = std::all_of(members.begin(), members.end(), [&](NodeId id) {
        return id == members.back() || !is_output[size_t(id)];
      });
      ir::NodeIds externals;
      std::optional<ElementwiseGroup> g =
          usable ? fused_group(lowered, members, live, p.fusion, externals) : std::nullopt;
      if (g) {
        p.fused[group] = {std::move(*g), std::move(externals)};
        continue;
      }
      for (NodeId id : members)
        if (!p.fusion.recomputed_in[size_t(id)].empty()) {
          keep[size_t(id)] = true;
          replan = true;
        }
    }
    if (!replan) return p;
  }
}

// The sum squares on load when the square is in no fused group and its
// operand's value is in memory (not computed inside a fused group only).
std::map<size_t, size_t> squares_to_sum_on_load(const Lowered& lowered,
                                                const std::vector<bool>& live,
                                                const std::vector<bool>& is_output,
                                                const GroupPlan& groups) {
  auto fused = [&](size_t i) {
    int g = groups.fusion.group[i];
    return !groups.fusion.recomputed_in[i].empty() || (g >= 0 && groups.fused.count(g));
  };
  auto in_memory = [&](size_t i) {
    int g = groups.fusion.group[i];
    return !fused(i) ||
           (groups.fusion.recomputed_in[i].empty() && groups.members.at(g).back() == NodeId(i));
  };
  size_t count = lowered.nodes.size();
  std::vector<int> reads(count, 0);
  for (size_t i = 0; i < count; ++i)
    if (live[i])
      for (NodeId in : lowered.nodes[i].inputs) ++reads[size_t(in)];
  std::map<size_t, size_t> summed;
  for (size_t i = 0; i < count; ++i) {
    const cpu::LoweredNode& n = lowered.nodes[i];
    bool float_sum =
        n.op == Op::Sum && (n.type.dtype == ir::DType::F32 || n.type.dtype == ir::DType::F64);
    if (!live[i] || !float_sum) continue;
    size_t square = size_t(n.inputs[0]);
    const cpu::LoweredNode& s = lowered.nodes[square];
    bool alone = s.op == Op::Square && s.type.dtype == n.type.dtype && !is_output[square] &&
                 reads[square] == 1 && !fused(square) && in_memory(size_t(s.inputs[0]));
    if (alone) summed[i] = square;
  }
  return summed;
}

}  // namespace sexpgpu::cuda
