// Module lookups and the Builder: every node is made here, through its op's
// shape rule.
#include "ir/graph.h"

#include <stdexcept>

namespace sexpgpu::ir {

uint32_t Module::file_id(const std::string& path) {
  for (size_t i = 1; i < files.size(); ++i)
    if (files[i] == path) return uint32_t(i);
  files.push_back(path);
  return uint32_t(files.size() - 1);
}

const Function* Module::find(std::string_view name) const {
  for (const Function& f : functions)
    if (f.name == name) return &f;
  return nullptr;
}

Function* Module::find(std::string_view name) {
  for (Function& f : functions)
    if (f.name == name) return &f;
  return nullptr;
}

namespace {
Attrs leaf_attrs(std::string name, const TensorType& type) {
  Attrs a;
  a.name = std::move(name);
  a.shape = Dims(type.shape.begin(), type.shape.end());
  a.dtype = type.dtype;
  return a;
}
}  // namespace

NodeId Builder::input(std::string name, const TensorType& type) {
  NodeId id = must(Op::Input, {}, leaf_attrs(std::move(name), type));
  fn_.inputs.push_back(id);
  return id;
}

NodeId Builder::param(std::string path, const TensorType& type) {
  NodeId id = must(Op::Param, {}, leaf_attrs(std::move(path), type));
  fn_.inputs.push_back(id);
  return id;
}

Result<NodeId> Builder::add(Op op, std::span<const NodeId> operands, Attrs attrs) {
  std::vector<TensorType> types;
  types.reserve(operands.size());
  for (NodeId id : operands) types.push_back(fn_.type(id));
  Result<TensorType> t = infer_type(op, types, attrs);
  if (!t) return Result<NodeId>::failure(t.error());
  Node n{op, NodeIds(operands.begin(), operands.end()), *t, std::move(attrs), loc_};
  fn_.nodes.push_back(std::move(n));
  return NodeId(fn_.nodes.size() - 1);
}

NodeId Builder::must(Op op, std::span<const NodeId> operands, Attrs attrs) {
  Result<NodeId> r = add(op, operands, std::move(attrs));
  if (!r) throw std::logic_error("internal: " + r.error());
  return *r;
}

NodeId Builder::scalar(double value, DType dtype) { return full(Shape{}, value, dtype); }

NodeId Builder::full(const Shape& shape, double value, DType dtype) {
  Attrs a;
  a.shape = Dims(shape.begin(), shape.end());
  a.dtype = dtype;
  a.value = value;
  return must(Op::Full, {}, std::move(a));
}

}  // namespace sexpgpu::ir
