// Staging (tensors.md): tensor builtins applied to staged tensors append IR
// nodes instead of computing, checking shapes and dtypes on the spot. A
// StagedTensor is the Lisp value of one IR node; the Stager owns the module
// being built and the function nodes go into.
//
// Outside any function being staged (a tensor made at top level or in
// `eval`), nodes go into a function named "toplevel", so every tensor
// builtin works everywhere and prints its type.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "lisp/interp.h"

namespace sexpgpu::stage {

using lisp::Interp;
using lisp::Value;

struct StagedTensor : lisp::Foreign {
  uint32_t function_serial = 0;  // which staged function the node is in
  ir::NodeId node = -1;
  ir::TensorType type;

  std::string print() const override { return "#<tensor " + type.to_string() + ">"; }
  std::string type_name() const override { return "TENSOR"; }
  const char* refuses_truth() const override;
};

// The tensor behind a value, or nullptr.
StagedTensor* as_tensor(Value v);

class Stager {
 public:
  explicit Stager(Interp& in);

  ir::Module& module() { return module_; }
  // The node limit per function (E-IR-LIMIT): language.md, 100,000.
  size_t node_limit = 100000;
  // Random ops and dropout: training functions draw, evaluation is identity.
  bool training = true;
  // Mixed precision (run-file.md, "Precision and numerics"): when set,
  // matrix products, convolutions and attention cast their float operands
  // to this dtype (bf16: bf16 inputs, f32 accumulation); everything else
  // keeps its dtypes, so the elementwise ops that follow promote back to
  // f32 and softmax, norms, reductions and the loss stay f32 islands.
  std::optional<ir::DType> autocast;

  // Starts staging into a new function NAME (the previous one is kept and
  // restored by end_function). E-USER-level errors (a name used twice) are
  // raised by the caller.
  void begin_function(const std::string& name);
  void end_function();
  // Ends the current function and drops it (its staging failed).
  void abandon_function();
  ir::Function& current();
  bool staging_toplevel() const { return fn_index_ == toplevel_index_; }

  // Wraps a node of the current function as a Lisp value.
  Value wrap(ir::NodeId node);
  // The node of a value in the current function: a staged tensor (checked
  // to belong to it), or a number or nested list turned into a constant of
  // `like` (numbers become constants of the tensor's dtype; a float number
  // with an integer or boolean tensor becomes :f32, so (* ids 0.5) is a
  // float as in NumPy). `what` names the argument in errors.
  ir::NodeId operand(Value v, std::string_view what, const ir::TensorType* like = nullptr);
  ir::NodeId tensor_operand(Value v, std::string_view what);  // E-TYPE unless a tensor

  // Adds one node at the current user form; E-SHAPE / E-DTYPE with the
  // rule's message when the operands do not fit; E-IR-LIMIT past the limit.
  ir::NodeId stage(ir::Op op, std::span<const ir::NodeId> operands, ir::Attrs attrs = {});
  ir::NodeId stage(ir::Op op, std::initializer_list<ir::NodeId> operands, ir::Attrs attrs = {}) {
    return stage(op, std::span<const ir::NodeId>(operands.begin(), operands.size()),
                 std::move(attrs));
  }
  Value stage_value(ir::Op op, std::initializer_list<ir::NodeId> operands, ir::Attrs attrs = {}) {
    return wrap(stage(op, operands, std::move(attrs)));
  }
  const ir::TensorType& type(ir::NodeId id) { return current().type(id); }

  // The function's RNG state input (seed, step, microbatch), made on first use.
  ir::NodeId rng_state();
  int64_t next_stream() { return next_stream_++; }

  Interp& interp() { return in_; }

 private:
  ir::Loc current_loc();

  Interp& in_;
  ir::Module module_;
  size_t fn_index_ = 0, toplevel_index_ = 0;
  uint32_t serial_ = 1;
  std::vector<uint32_t> serials_;  // per function in module_.functions
  std::vector<size_t> fn_stack_;
  int64_t next_stream_ = 0;
};

// The stager of an interpreter (set by install).
Stager& stager_of(Interp& in);
// Registers every tensor builtin and the tensor overloads of the generic
// CL ones in `in`, with a Stager that lives as long as `in`.
void install(Interp& in);

// Registration of each builtin group (builtins_*.cpp in this directory).
void register_tensor_basics(Interp& in);  // introspection, creation, random
void register_tensor_elementwise(Interp& in);
void register_tensor_shape(Interp& in);  // shape ops, linear algebra
void register_tensor_nn(Interp& in);     // neural ops, stage-function

}  // namespace sexpgpu::stage
