// The IR: SSA functions of nodes, each with its op (ops.def), operands,
// result type, attributes (attrs.def) and the source position that staged
// it; a module holds the functions, the parameter table and the file names
// positions refer to. Builder is the one way nodes are made: it runs the
// op's shape rule, so every node it adds is well-typed by construction, and
// the verifier (verify.h) re-checks that after every pass.
//
// Numbering: a function's nodes are in definition order and an operand's id
// is always smaller than its user's. Input and Param nodes are the
// function's arguments; `inputs` lists them in calling order (every Input,
// then every Param), which is the order of a device's `run` buffers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/ops.h"
#include "ir/types.h"

namespace sexpgpu::ir {

// The IR JSON's `version` (explain.md, "The JSON form"): bumped on any
// change to what existing IR means (an op or attribute renamed, removed or
// read differently, a field). A new op is not one: IR without it reads as
// before, and a reader without it refuses it by name. 2: the tanh form of
// gelu is the op gelu_tanh; the attribute `approximate` is gone. 3: every
// training function carries data parallel's gradient buckets (all_reduce).
inline constexpr int kIrVersion = 3;

using NodeId = int32_t;
using NodeIds = boost::container::small_vector<NodeId, 4>;

// A source position: `file` indexes Module::files (0: none).
struct Loc {
  uint32_t file = 0;
  uint32_t line = 0, col = 0;
  bool valid() const { return file != 0; }
  friend bool operator==(const Loc&, const Loc&) = default;
};

struct Node {
  Op op;
  NodeIds inputs;
  TensorType type;
  Attrs attrs;
  Loc loc;
  // Nodes with the same non-negative group form one fused elementwise
  // kernel (passes.h, fuse_elementwise); -1: on its own.
  int32_t fusion_group = -1;
};

struct Output {
  std::string name;  // "loss", "grad:mlp.fc1.weight", ...
  NodeId node;
};

struct Function {
  std::string name;
  std::vector<Node> nodes;
  std::vector<NodeId> inputs;  // Input then Param nodes, calling order
  std::vector<Output> outputs;

  const Node& node(NodeId id) const { return nodes[size_t(id)]; }
  Node& node(NodeId id) { return nodes[size_t(id)]; }
  const TensorType& type(NodeId id) const { return node(id).type; }
};

// A model parameter as the runtime sees it (tensors.md, IR JSON `params`).
struct ParamInfo {
  std::string path;
  TensorType type;
  bool trainable = true;
};

struct Module {
  std::vector<std::string> files = {""};  // [0]: no file
  std::vector<ParamInfo> params;
  std::vector<Function> functions;

  uint32_t file_id(const std::string& path);  // adds it when new
  const Function* find(std::string_view name) const;
  Function* find(std::string_view name);
};

// Adds well-typed nodes to a function. add() returns the shape rule's
// message when the operands do not fit; the staging layer turns it into an
// E-SHAPE/E-DTYPE at the user's form.
class Builder {
 public:
  explicit Builder(Function& fn) : fn_(fn) {}

  // Where the nodes added next come from.
  void set_loc(Loc loc) { loc_ = loc; }
  Loc loc() const { return loc_; }

  NodeId input(std::string name, const TensorType& type);
  NodeId param(std::string path, const TensorType& type);
  Result<NodeId> add(Op op, std::span<const NodeId> operands, Attrs attrs = {});
  Result<NodeId> add(Op op, std::initializer_list<NodeId> operands, Attrs attrs = {}) {
    return add(op, std::span<const NodeId>(operands.begin(), operands.size()), std::move(attrs));
  }
  // For code that builds nodes it knows are well-typed (autodiff, passes):
  // a failed shape rule there is a bug in the core, reported by throwing
  // std::logic_error with the rule's message.
  NodeId must(Op op, std::span<const NodeId> operands, Attrs attrs = {});
  NodeId must(Op op, std::initializer_list<NodeId> operands, Attrs attrs = {}) {
    return must(op, std::span<const NodeId>(operands.begin(), operands.size()), std::move(attrs));
  }

  NodeId scalar(double value, DType dtype);
  NodeId full(const Shape& shape, double value, DType dtype);

  Function& fn() { return fn_; }
  const TensorType& type(NodeId id) const { return fn_.type(id); }

 private:
  Function& fn_;
  Loc loc_;
};

}  // namespace sexpgpu::ir
