// The IR passes (passes.h) but constant folding (passes_fold.cpp): dead code
// and common subexpression elimination, elementwise fusion marking, and the
// standard pipeline. Passes that replace nodes clear fusion groups, which
// describe the graph they were computed on: fuse_elementwise runs last.
#include "ir/passes.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <queue>
#include <string_view>
#include <utility>

#include "ir/elementwise.h"
#include "ir/passes/fuse_classifier.h"
#include "ir/passes_impl.h"
#include "ir/verify.h"

namespace sexpgpu::ir {

namespace pass_detail {

std::vector<NodeId> identity_replacement(const Function& fn) {
  std::vector<NodeId> r(fn.nodes.size());
  for (size_t i = 0; i < r.size(); ++i) r[i] = NodeId(i);
  return r;
}

NodeId resolve(const std::vector<NodeId>& replacement, NodeId id) {
  while (replacement[size_t(id)] != id) id = replacement[size_t(id)];
  return id;
}

void compact(Function& fn, const std::vector<NodeId>& replacement, const std::vector<bool>& keep) {
  std::vector<NodeId> new_id(fn.nodes.size(), -1);
  std::vector<Node> nodes;
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    Node& n = fn.nodes[i];
    bool leaf = n.op == Op::Input || n.op == Op::Param;
    if (!leaf && (replacement[i] != NodeId(i) || !keep[i])) continue;
    for (NodeId& in : n.inputs) in = new_id[size_t(resolve(replacement, in))];
    new_id[i] = NodeId(nodes.size());
    nodes.push_back(std::move(n));
  }
  fn.nodes = std::move(nodes);
  for (NodeId& id : fn.inputs) id = new_id[size_t(id)];
  for (Output& o : fn.outputs) o.node = new_id[size_t(resolve(replacement, o.node))];
}

std::vector<std::vector<NodeId>> users_of(const Function& fn) {
  std::vector<std::vector<NodeId>> users(fn.nodes.size());
  for (size_t i = 0; i < fn.nodes.size(); ++i)
    for (NodeId in : fn.nodes[i].inputs) users[size_t(in)].push_back(NodeId(i));
  return users;
}

}  // namespace pass_detail

using namespace pass_detail;

namespace {

void clear_fusion_groups(Function& fn) {
  for (Node& n : fn.nodes) n.fusion_group = -1;
}

}  // namespace

void eliminate_dead_code(Function& fn) {
  std::vector<bool> live(fn.nodes.size(), false);
  for (const Output& o : fn.outputs) live[size_t(o.node)] = true;
  // Operands come before their users: one backward sweep marks everything.
  for (size_t i = fn.nodes.size(); i-- > 0;)
    if (live[i])
      for (NodeId in : fn.nodes[i].inputs) live[size_t(in)] = true;
  compact(fn, identity_replacement(fn), live);
}

void eliminate_common_subexpressions(Function& fn) {
  std::vector<NodeId> replacement = identity_replacement(fn);
  // (op, resolved operands) -> the earlier nodes with them; attrs compared on a hit.
  std::map<std::pair<Op, std::vector<NodeId>>, std::vector<NodeId>> seen;
  bool merged = false;
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    Node& n = fn.nodes[i];
    if (n.op == Op::Input || n.op == Op::Param) continue;
    for (NodeId& in : n.inputs) in = resolve(replacement, in);
    std::vector<NodeId>& same = seen[{n.op, std::vector<NodeId>(n.inputs.begin(), n.inputs.end())}];
    auto twin = std::find_if(same.begin(), same.end(),
                             [&](NodeId j) { return fn.node(j).attrs == n.attrs; });
    if (twin == same.end()) {
      same.push_back(NodeId(i));
    } else {
      replacement[i] = *twin;
      merged = true;
    }
  }
  if (merged) clear_fusion_groups(fn);
  compact(fn, replacement, std::vector<bool>(fn.nodes.size(), true));
}

// Groups grow from their last node backwards: a producer joins when it is
// elementwise, of the group's shape, no output, and read only by members.
// Candidates are taken highest id first, so a producer's users (all later)
// are decided before it: the group is the largest such set.
void fuse_elementwise(Function& fn) {
  clear_fusion_groups(fn);
  std::vector<std::vector<NodeId>> users = users_of(fn);
  std::vector<bool> is_output(fn.nodes.size(), false), seen(fn.nodes.size(), false);
  for (const Output& o : fn.outputs) is_output[size_t(o.node)] = true;
  std::vector<int32_t> group(fn.nodes.size(), -1);
  std::vector<NodeId> roots;
  for (size_t r = fn.nodes.size(); r-- > 0;) {
    if (group[r] >= 0 || !is_elementwise(fn.nodes[r].op)) continue;
    const int32_t g = int32_t(roots.size());
    const Shape& shape = fn.nodes[r].type.shape;
    size_t size = 1;
    group[r] = g;
    std::priority_queue<NodeId> candidates;
    for (NodeId p : fn.nodes[r].inputs) candidates.push(p);
    std::vector<NodeId> visited;
    while (!candidates.empty()) {
      NodeId p = candidates.top();
      candidates.pop();
      if (seen[size_t(p)]) continue;
      seen[size_t(p)] = true;
      visited.push_back(p);
      const Node& pn = fn.node(p);
      bool joins = group[size_t(p)] < 0 && is_elementwise(pn.op) && !is_output[size_t(p)] &&
                   pn.type.shape == shape &&
                   std::all_of(users[size_t(p)].begin(), users[size_t(p)].end(),
                               [&](NodeId u) { return group[size_t(u)] == g; });
      if (!joins) continue;
      group[size_t(p)] = g;
      ++size;
      for (NodeId q : pn.inputs) candidates.push(q);
    }
    for (NodeId p : visited) seen[size_t(p)] = false;
    if (size == 1) {
      group[r] = -1;
      continue;
    }
    roots.push_back(NodeId(r));
  }
  // Number the groups in program order of their last nodes.
  std::vector<int32_t> renumber(roots.size());
  for (size_t k = 0; k < roots.size(); ++k) renumber[k] = int32_t(roots.size() - 1 - k);
  for (size_t i = 0; i < fn.nodes.size(); ++i)
    if (group[i] >= 0) fn.nodes[i].fusion_group = renumber[size_t(group[i])];
}

// The fused classifier (passes/fuse_classifier.h), then the folding of the
// scalars it made. SEXPGPU_FUSE_CLASSIFIER=0 leaves the classifier as
// staged, to measure one against the other (docs/devices.md).
namespace {

void fuse_classifiers(Function& fn) {
  if (fuse_classifier(fn) == 0) return;
  fold_constants(fn);
  eliminate_dead_code(fn);
}

std::string run_pipeline(const Module& module, Function& fn, bool classifier) {
  const std::pair<const char*, void (*)(Function&)> pipeline[] = {
      {"fold_constants", fold_constants},
      {"eliminate_common_subexpressions", eliminate_common_subexpressions},
      {"eliminate_dead_code", eliminate_dead_code},
      {"fuse_classifier", fuse_classifiers},
      {"fuse_elementwise", fuse_elementwise},
  };
  for (const auto& [name, pass] : pipeline) {
    if (!classifier && pass == fuse_classifiers) continue;
    pass(fn);
    if (std::string problem = verify(module, fn); !problem.empty())
      return std::string("after ") + name + ": " + problem;
  }
  return "";
}

}  // namespace

std::string optimize(const Module& module, Function& fn) {
  const char* env = std::getenv("SEXPGPU_FUSE_CLASSIFIER");
  return run_pipeline(module, fn, !(env && std::string_view(env) == "0"));
}

std::string optimize_without_classifier(const Module& module, Function& fn) {
  return run_pipeline(module, fn, false);
}

}  // namespace sexpgpu::ir
