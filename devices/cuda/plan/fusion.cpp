// Fusion groups over a CUDA program's lowered graph (fusion.h).
#include "fusion.h"

#include <algorithm>
#include <map>
#include <set>

#include "cuda/codegen/elementwise_views.h"
#include "ir/elementwise.h"
#include "plan/geometry.h"

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

// Whether a group computes every member at its result's shape, without
// views: a member's value is then element i of a tensor of that shape.
bool uniform(const Lowered& lowered, const std::vector<NodeId>& members) {
  const ir::Shape& shape = lowered.nodes[size_t(members.back())].type.shape;
  return std::all_of(members.begin(), members.end(), [&](NodeId id) {
    const cpu::LoweredNode& n = lowered.nodes[size_t(id)];
    return !is_view(n.op) && n.type.shape == shape;
  });
}

// Walking the groups in program order, group X, whose result x is read by
// groups and other steps, joins the earliest group Y reading x when both
// are uniform at x's shape and every other reader of x runs after Y: Y's
// kernel then computes x and writes it (stored) as well as its own result.
// It reads X's operands instead of x, once, and X's kernel is gone; x's
// later readers read it from memory as before. Running X's work at Y's
// place is safe: X's operands are all computed before x.
void store_in_readers(const Lowered& lowered, const std::vector<bool>& live, GroupPlan& p) {
  size_t count = lowered.nodes.size();
  std::vector<std::vector<size_t>> readers(count);
  for (size_t i = 0; i < count; ++i)
    if (live[i])
      for (NodeId in : lowered.nodes[i].inputs) readers[size_t(in)].push_back(i);
  std::map<int, int> joined;  // group -> the group it joined
  auto find = [&](int g) {
    for (auto it = joined.find(g); it != joined.end(); it = joined.find(g)) g = it->second;
    return g;
  };
  auto last = [&](int g) { return size_t(p.members.at(g).back()); };
  // The groups computing node r (none: r has a step of its own).
  auto groups_of = [&](size_t r) {
    std::vector<int> gs;
    auto add = [&](int g) {
      g = find(g);
      if (std::find(gs.begin(), gs.end(), g) == gs.end()) gs.push_back(g);
    };
    if (p.fusion.group[r] >= 0) add(p.fusion.group[r]);
    for (int g : p.fusion.recomputed_in[r]) add(g);
    return gs;
  };
  std::vector<int> order;
  for (const auto& [g, members] : p.members) order.push_back(g);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return last(a) < last(b); });
  std::set<int> grown;  // groups that others joined
  for (int x_group : order) {
    const std::vector<NodeId>& xs = p.members.at(x_group);
    size_t x = last(x_group);
    bool own_kernel = xs.size() == 1 || p.fused.count(x_group) || grown.count(x_group);
    if (!own_kernel || !uniform(lowered, xs)) continue;
    // Whether Y can compute x: its kernel is one and uniform at x's shape,
    // and every other reader of x runs after it.
    auto can_join = [&](int y) {
      const std::vector<NodeId>& ys = p.members.at(y);
      bool usable = (ys.size() == 1 || p.fused.count(y) || grown.count(y)) &&
                    uniform(lowered, ys) &&
                    lowered.nodes[last(y)].type.shape == lowered.nodes[x].type.shape;
      for (size_t r : readers[x]) {
        std::vector<int> gs = groups_of(r);
        if (gs.empty()) usable = usable && r > last(y);
        for (int g : gs) usable = usable && (g == y || last(g) > last(y));
      }
      return usable;
    };
    int y = -1;
    for (size_t r : readers[x])
      for (int g : groups_of(r))
        if (g != x_group && (y < 0 || last(g) < last(y))) y = g;
    // A scalar group no group reads at once joins the next scalar group
    // instead (an optimizer's schedule and bias corrections: one launch,
    // not one each).
    if ((y < 0 || !can_join(y)) && lowered.nodes[x].type.shape.is_scalar()) {
      y = -1;
      for (int g : order)
        if (p.members.count(g) && last(g) > x && lowered.nodes[last(g)].type.shape.is_scalar()) {
          y = g;
          break;
        }
    }
    if (y < 0 || !can_join(y)) continue;
    std::vector<NodeId> merged = p.members.at(y);
    merged.insert(merged.end(), xs.begin(), xs.end());
    std::sort(merged.begin(), merged.end());
    merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
    p.members[y] = std::move(merged);
    std::vector<NodeId>& stored = p.stored[y];
    stored.push_back(NodeId(x));
    if (auto it = p.stored.find(x_group); it != p.stored.end()) {
      stored.insert(stored.end(), it->second.begin(), it->second.end());
      p.stored.erase(it);
    }
    std::sort(stored.begin(), stored.end());
    p.members.erase(x_group);
    p.fused.erase(x_group);
    joined[x_group] = y;
    grown.insert(y);
  }
  if (grown.empty()) return;
  for (size_t i = 0; i < count; ++i) {
    if (p.fusion.group[i] >= 0) p.fusion.group[i] = find(p.fusion.group[i]);
    std::vector<int>& in = p.fusion.recomputed_in[i];
    for (int& g : in) g = find(g);
    std::sort(in.begin(), in.end());
    in.erase(std::unique(in.begin(), in.end()), in.end());
  }
  for (int g : grown) {
    if (joined.count(g)) continue;  // itself joined a later group
    const std::vector<NodeId>& members = p.members.at(g);
    cpu::LoweredGroup built = cpu::build_group(lowered, members);
    ElementwiseGroup fused{std::move(built.nodes),
                           std::move(built.external_types),
                           lowered.nodes[size_t(members.back())].type,
                           {},
                           {}};
    for (NodeId id : p.stored.at(g))
      fused.stores.push_back(int(std::find(members.begin(), members.end(), id) - members.begin()));
    p.fused[g] = {std::move(fused), std::move(built.externals)};
  }
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
  // A float square of a function input that a float sum reads (a gradient
  // norm's, squared on load by the sum: squares_to_sum_on_load) besides
  // groups (an optimizer's second moment, without clipping).
  auto summed_square = [&](size_t i, size_t r) {
    const cpu::LoweredNode& s = lowered.nodes[i];
    const cpu::LoweredNode& sum = lowered.nodes[r];
    bool float_square = s.op == Op::Square && (s.type.dtype == ir::DType::F32 ||
                                                s.type.dtype == ir::DType::F64);
    return float_square && lowered.nodes[size_t(s.inputs[0])].op == Op::Input &&
           sum.op == Op::Sum && sum.type.dtype == s.type.dtype && sum.inputs[0] == NodeId(i);
  };
  FusionPlan plan{std::vector<int>(count, -1), std::vector<std::vector<int>>(count)};
  int groups = 0;
  for (size_t i = count; i-- > 0;) {
    if (!fusable(i)) continue;
    if (in_place[i]) {
      plan.group[i] = groups++;
      continue;
    }
    // The groups that compute the readers (a recomputed reader's several),
    // when every reader is in some and reads the node once; one float sum
    // squaring it on load may read it besides.
    std::vector<int> reader_groups;
    bool grouped = !is_output[i] && !readers[i].empty();
    bool summed = false;
    for (size_t r : readers[i]) {
      if (!summed && summed_square(i, r)) {
        summed = true;
        continue;
      }
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
    if (summed && grouped && !reader_groups.empty() && !keep[i]) {
      plan.recomputed_in[i] = std::move(reader_groups);  // the sum squares on load
      continue;
    }
    if (summed) grouped = false;  // the sum reads it from memory
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
    if (!replan) {
      store_in_readers(lowered, live, p);
      return p;
    }
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
    if (!fused(i)) return true;
    if (!groups.fusion.recomputed_in[i].empty()) return false;
    auto stored = groups.stored.find(g);
    return groups.members.at(g).back() == NodeId(i) ||
           (stored != groups.stored.end() &&
            std::count(stored->second.begin(), stored->second.end(), NodeId(i)));
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
    // Read by this sum and by groups that recompute it (fusion_groups).
    bool beside_groups = s.op == Op::Square && s.type.dtype == n.type.dtype &&
                         !is_output[square] && !groups.fusion.recomputed_in[square].empty() &&
                         lowered.nodes[size_t(s.inputs[0])].op == Op::Input;
    if (alone || beside_groups) summed[i] = square;
  }
  return summed;
}

}  // namespace sexpgpu::cuda
