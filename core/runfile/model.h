// The run file's models and parameters (run-file.md, "Models and
// parameters"): the parameter registry that defparam fills, the scope path
// that defmodel and scope push, call-site checks per trace, probes, and the
// staging of the IR function `init`. The macros (defmodel, defparam, scope)
// are in prelude/models.lisp; sexpgpu/nn (prelude/sexpgpu/nn.lisp) is
// written over them. docs/models.md is the user's page.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "lisp/interp.h"

namespace sexpgpu::runfile {

struct ParamDecl {
  std::string path;               // "mlp.fc1.weight"
  ir::TensorType type;            // shape and dtype as declared (default :f32)
  lisp::Value init;               // a function of the shape list giving a staged tensor
  std::string init_text;          // for explain: "uniform(±0.0357)", "normal(std=0.02)", ...
  std::vector<std::string> tags;  // lower-case keyword names without colon ("no-decay")
  bool trainable = true;
  std::string tie;  // the path whose storage this one shares, "" for its own
  Span span;        // where it was first declared (the user's call site)
};

struct Params {
  std::vector<ParamDecl> decls;  // in declaration order
  const ParamDecl* find(const std::string& path) const;
  // The decl that owns the storage of `path` (follows :tie); nullptr if unknown.
  const ParamDecl* storage(const std::string& path) const;
  // Appends a declaration (its path must be new).
  void add(ParamDecl decl);

 private:
  std::unordered_map<std::string, size_t> index_;
};

// The parameters an interpreter has declared (empty before register_models).
const Params& params_of(const lisp::Interp& in);

// The compiler stages each contract function as one "trace": it calls
// begin_trace before and end_trace after. Declaring one path from two
// different user call sites within one trace is E-PARAM-REDECLARED (showing
// both positions); the same call site again (a loop) returns the same param.
// A model called outside any trace (at top level) is a trace of its own.
void begin_trace(lisp::Interp& in);
void end_trace(lisp::Interp& in);
// begin_trace and end_trace as a scope: the trace ends however it is left,
// so a failed staging leaves no call sites behind for the next one.
class TraceScope {
 public:
  explicit TraceScope(lisp::Interp& in) : in_(in) { begin_trace(in); }
  ~TraceScope() { end_trace(in_); }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  lisp::Interp& in_;
};

// Probes recorded by (probe "name" x) in the current (or last ended) trace:
// the name qualified by the scope path ("gpt.h.0.attn-out"), and the node in
// the function that was being staged.
struct Probe {
  std::string name;
  ir::NodeId node;
  Span span;
};
const std::vector<Probe>& probes_of(const lisp::Interp& in);

// Stages the IR function "init" into the stager's module: no inputs but the
// rng state (stager.rng_state()), one output per storage parameter (ties
// excluded) named "param:PATH", made by calling that param's init function
// with its shape (a list of integers) and casting to its dtype; an init
// result of the wrong shape is E-PARAM-INIT at the declaration.
void stage_init_function(lisp::Interp& in);

// Registers defparam's, scope's, param's and probe's builtins with a fresh
// (empty) registry.
void register_models(lisp::Interp& in);

}  // namespace sexpgpu::runfile
