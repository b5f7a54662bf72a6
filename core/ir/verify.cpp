// The IR verifier (verify.h): re-derives every node's type through its shape
// rule and checks what the rules cannot see: operand order, the attributes
// each op needs (ops.def's `needs`), leaves against the calling convention and
// the parameter table, outputs, source positions and fusion groups. It stops
// at the first problem, since later ones are usually its echoes.
#include "ir/verify.h"

#include <map>
#include <set>
#include <string_view>
#include <vector>

#include "ir/elementwise.h"

namespace sexpgpu::ir {

namespace {

bool present(const Attrs& attrs, AttrId id) {
  switch (id) {
#define SG_ATTR(name, kind) \
  case AttrId::name:        \
    return attrs.name.has_value();
#include "ir/attrs.def"
#undef SG_ATTR
  }
  return false;
}

// "%12 = matmul %3 %5" (ids as stored, not as printed), for messages.
std::string node_label(const Function& fn, NodeId id) {
  const Node& n = fn.node(id);
  std::string s = "%" + std::to_string(id) + " = " + std::string(info(n.op).ir_name);
  for (NodeId in : n.inputs) s += " %" + std::to_string(in);
  return s;
}

// Attribute values the shape rules do not read but the kernels do.
std::string check_attr_values(const Node& n) {
  if (n.op == Op::Constant && n.attrs.data &&
      int64_t(n.attrs.data->size()) != n.type.shape.numel().value_or(-1))
    return "`data` has " + std::to_string(n.attrs.data->size()) + " values for the shape " +
           n.type.shape.to_string();
  if ((n.op == Op::Var || n.op == Op::Std) && n.attrs.correction && *n.attrs.correction < 0)
    return "correction " + std::to_string(*n.attrs.correction) + " is negative";
  return "";
}

std::string check_node(const Module& module, const Function& fn, NodeId id) {
  const Node& n = fn.node(id);
  for (NodeId in : n.inputs)
    if (in < 0 || in >= id)
      return "operand %" + std::to_string(in) + " is not defined before its use";
  for (AttrId a : parse_needs(info(n.op).needs))
    if (!present(n.attrs, a)) return "the `" + std::string(attr_name(a)) + "` attribute is missing";
  std::vector<TensorType> types;
  for (NodeId in : n.inputs) types.push_back(fn.type(in));
  Result<TensorType> t = infer_type(n.op, types, n.attrs);
  if (!t) return t.error();
  if (!(*t == n.type))
    return "the node's type " + n.type.to_string() + " is not its rule's " + t->to_string();
  if (std::string m = check_attr_values(n); !m.empty()) return m;
  if (n.loc.file >= module.files.size())
    return "the source position names file " + std::to_string(n.loc.file) + " of " +
           std::to_string(module.files.size());
  if (n.fusion_group < -1) return "fusion group " + std::to_string(n.fusion_group) + " is invalid";
  if (n.fusion_group >= 0 && !is_elementwise(n.op))
    return "only elementwise nodes join a fusion group";
  return "";
}

// `inputs` lists every Input then every Param node, once each; a Param's
// path is in the module's table with the same type.
std::string check_leaves(const Module& module, const Function& fn) {
  std::vector<NodeId> leaves;
  for (size_t i = 0; i < fn.nodes.size(); ++i)
    if (fn.nodes[i].op == Op::Input) leaves.push_back(NodeId(i));
  for (size_t i = 0; i < fn.nodes.size(); ++i)
    if (fn.nodes[i].op == Op::Param) leaves.push_back(NodeId(i));
  std::set<NodeId> listed(fn.inputs.begin(), fn.inputs.end());
  std::set<NodeId> expected(leaves.begin(), leaves.end());
  if (listed != expected || fn.inputs.size() != leaves.size())
    return "`inputs` must list each input and param node once";
  for (size_t i = 1; i < fn.inputs.size(); ++i)
    if (fn.node(fn.inputs[i - 1]).op == Op::Param && fn.node(fn.inputs[i]).op == Op::Input)
      return "`inputs` lists param %" + std::to_string(fn.inputs[i - 1]) + " before input %" +
             std::to_string(fn.inputs[i]) + " (inputs come first)";
  std::set<std::string> names;
  for (NodeId id : fn.inputs) {
    const Node& n = fn.node(id);
    if (n.attrs.name->empty() || !names.insert(*n.attrs.name).second)
      return node_label(fn, id) + ": the name \"" + *n.attrs.name + "\" is empty or repeated";
    if (n.op != Op::Param) continue;
    const ParamInfo* p = nullptr;
    for (const ParamInfo& q : module.params)
      if (q.path == *n.attrs.name) p = &q;
    if (!p) return node_label(fn, id) + ": \"" + *n.attrs.name + "\" is not a module parameter";
    if (!(p->type == n.type))
      return node_label(fn, id) + ": the parameter \"" + p->path + "\" is " + p->type.to_string() +
             ", the node " + n.type.to_string();
  }
  return "";
}

std::string check_outputs(const Function& fn) {
  std::set<std::string> names;
  for (const Output& o : fn.outputs) {
    if (o.node < 0 || size_t(o.node) >= fn.nodes.size())
      return "output \"" + o.name + "\" names node %" + std::to_string(o.node) +
             ", which is not there";
    if (o.name.empty() || !names.insert(o.name).second)
      return "output name \"" + o.name + "\" is empty or repeated";
  }
  return "";
}

// Within a fusion group every node but the last feeds only the group (and
// is no output), so the group runs as one kernel writing one result; all
// have the result's shape.
std::string check_fusion_groups(const Function& fn) {
  std::map<int32_t, std::vector<NodeId>> groups;
  for (size_t i = 0; i < fn.nodes.size(); ++i)
    if (fn.nodes[i].fusion_group >= 0) groups[fn.nodes[i].fusion_group].push_back(NodeId(i));
  std::vector<std::vector<NodeId>> users(fn.nodes.size());
  for (size_t i = 0; i < fn.nodes.size(); ++i)
    for (NodeId in : fn.nodes[i].inputs) users[size_t(in)].push_back(NodeId(i));
  std::set<NodeId> outputs;
  for (const Output& o : fn.outputs) outputs.insert(o.node);
  for (const auto& [group, members] : groups) {
    NodeId last = members.back();
    for (NodeId id : members) {
      if (!(fn.type(id).shape == fn.type(last).shape))
        return node_label(fn, id) + ": fusion group " + std::to_string(group) + " mixes shapes " +
               fn.type(id).shape.to_string() + " and " + fn.type(last).shape.to_string();
      if (id == last) continue;
      bool inside = !outputs.count(id);
      for (NodeId u : users[size_t(id)]) inside = inside && fn.node(u).fusion_group == group;
      if (!inside)
        return node_label(fn, id) + ": is used outside its fusion group " + std::to_string(group) +
               " but is not the group's last node";
    }
  }
  return "";
}

}  // namespace

std::string verify(const Module& module, const Function& fn) {
  std::string where = "fn " + fn.name + ": ";
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    std::string m = check_node(module, fn, NodeId(i));
    if (m.empty()) continue;
    const Loc& loc = fn.nodes[i].loc;
    std::string at;
    if (loc.valid() && loc.file < module.files.size())
      at = " (" + module.files[loc.file] + ":" + std::to_string(loc.line) + ":" +
           std::to_string(loc.col) + ")";
    return where + node_label(fn, NodeId(i)) + at + ": " + m;
  }
  for (std::string m : {check_leaves(module, fn), check_outputs(fn), check_fusion_groups(fn)})
    if (!m.empty()) return where + m;
  return "";
}

std::string verify(const Module& module) {
  std::set<std::string> names;
  for (const Function& fn : module.functions) {
    if (!names.insert(fn.name).second) return "fn " + fn.name + ": defined twice";
    if (std::string m = verify(module, fn); !m.empty()) return m;
  }
  std::set<std::string> paths;
  for (const ParamInfo& p : module.params)
    if (!paths.insert(p.path).second) return "param \"" + p.path + "\" is listed twice";
  if (module.files.empty() || !module.files[0].empty())
    return "the module's file table must begin with \"\" (no file)";
  return "";
}

}  // namespace sexpgpu::ir
