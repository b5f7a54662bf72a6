// Optimizers as values (run-file.md, "Writing optimizers" and "Optimizer
// groups"): what defoptimizer's constructors return, the staging of one
// parameter's update in the function being staged, and the assignment of
// parameters to the groups `(optimizer)` returns.
//
// A constructor made by defoptimizer (prelude/optimizers.lisp) binds its
// hyperparameters and calls %make-optimizer with the states it declares and
// a closure (P G CTX STATE...) that stages the update and returns the list
// (NEW-P NEW-STATE...). A hyperparameter whose value is a function is a
// schedule: the closure calls it with CTX, so the body sees a staged scalar.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "lisp/interp.h"
#include "runfile/selector.h"

namespace sexpgpu::runfile {

// One (defstate NAME &key (init :zeros) (dtype :f32) shape).
struct StateDecl {
  std::string name;  // "m", lower case
  std::string init;  // "zeros", "ones", or "full" (:init was a number)
  double fill = 0;   // the initial value of every element: 0, 1 or the number
  ir::DType dtype = ir::DType::F32;
  lisp::Value shape_fn;  // nil: the parameter's shape; else a function of its shape list
  Span span;             // the defstate form
};

struct Optimizer : lisp::Foreign {
  std::string name;  // the constructor's name, lower case: "adamw"
  std::vector<StateDecl> states;
  lisp::Value update;  // (lambda (p g ctx state...) ...) => (new-p new-state...)
  // Every variable of the constructor's lambda list as bound ("lr" . 1e-3),
  // in lambda-list order; a function value is a schedule.
  std::vector<std::pair<std::string, lisp::Value>> hyper;
  Span update_span;  // the optimizer-update form: where a bad result is reported

  std::string print() const override { return "#<optimizer " + name + ">"; }
  std::string type_name() const override { return "OPTIMIZER"; }
};

// The optimizer behind a value, or nullptr.
Optimizer* as_optimizer(lisp::Value v);

// The shape of state `s` for a parameter of shape `param`: the parameter's,
// or what :shape's function returns for it (E-TYPE when that is not a list
// of integers, E-SHAPE for a negative one), at the defstate form.
ir::Shape state_shape(lisp::Interp& in, const StateDecl& s, const ir::Shape& param);

// The update of one parameter, staged in the current function. p, g and the
// states are nodes of it (states in declaration order). Returns the new
// parameter (cast to p's dtype) and each new state (cast to its declared
// dtype; a state the body did not setf comes back unchanged). A result of
// the wrong shape is E-SHAPE at the optimizer-update form; one that
// broadcasts to the right shape is broadcast.
struct StagedUpdate {
  ir::NodeId param;
  std::vector<ir::NodeId> states;
};
StagedUpdate stage_update(lisp::Interp& in, const Optimizer& opt, ir::NodeId p, ir::NodeId g,
                          std::span<const ir::NodeId> states);

// Each scheduled hyperparameter of `opt` staged once in the current function
// (reported as the series "NAME/GROUP"): its name and scalar node.
std::vector<std::pair<std::string, ir::NodeId>> stage_schedules(lisp::Interp& in,
                                                                const Optimizer& opt);

// The value schedules and optimizer-update bodies receive as CTX: #'ctx.
lisp::Value ctx_argument(lisp::Interp& in);

// An optimizer group: `(group NAME :select SELECTOR :use OPTIMIZER)`.
struct GroupSpec : lisp::Foreign {
  std::string name;  // lower case, without a colon: "hidden"
  lisp::Value selector;
  lisp::Value optimizer;
  Span span;  // the group form

  std::string print() const override;
  std::string type_name() const override { return "GROUP"; }
};

struct Group {
  std::string name;  // "default" for a single optimizer
  const Optimizer* optimizer = nullptr;
  lisp::Value optimizer_value;
  std::vector<size_t> members;  // indices into the params given to assign_groups
  Span span;                    // the group form (for "default", the form being evaluated)
};

// The groups of what `(optimizer)` returned: one optimizer (the group
// "default", every trainable parameter), or a list of groups, each trainable
// parameter going to the first whose selector takes it. A trainable
// parameter no group takes is E-PARAM-UNGROUPED listing them; a group that
// takes none is W-EMPTY-GROUP (unless `all_params` is false: the objective
// failed part-way, so some were never declared); two groups of one name, or
// a value that is neither, are E-TYPE.
std::vector<Group> assign_groups(lisp::Interp& in, lisp::Value optimizer_result,
                                 std::span<const ParamView> params, std::span<const bool> trainable,
                                 bool all_params = true);

// %make-optimizer, %hyper, the optimizer accessors, %make-group; and the
// selector builtins (selector.h).
void register_optimizers(lisp::Interp& in);

}  // namespace sexpgpu::runfile
