// The contract's runtime context (run-file.md, "Curriculum and ctx"): `ctx`
// keys become staged scalar inputs of the function being staged, which the
// runtime feeds every step; and `metric`, which marks a staged scalar as a
// reported series of that function.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "lisp/interp.h"
#include "spec/run_spec.h"

namespace sexpgpu::runfile {

// One ctx key: its name as the IR input is called ("ctx:step") and its type.
struct CtxKey {
  std::string key;  // "step", "progress", or a metric name "val/loss"
  ir::DType dtype;
  bool metric = false;  // a reported metric's latest value
};

// The input names of ctx keys, shared with the runtime (spec/run_spec.h).
using spec::ctx_input_name;
using spec::ctx_key_of_input;
// The keyword keys, in table order (for E-CTX-KEY's list and docs).
const std::vector<CtxKey>& ctx_keyword_keys();

using spec::MetricReduce;
using spec::to_string;

struct MetricDecl {
  std::string name;  // "acc" (reported as train/acc or EVAL/acc)
  ir::NodeId node;   // a scalar of the function it was reported in
  MetricReduce reduce = MetricReduce::Mean;
  Span span;
};

// The metrics reported while staging function `fn` (by name), in order.
std::vector<MetricDecl> metrics_of(const lisp::Interp& in, const std::string& fn);

// The value the contract functions receive as CTX: the function `ctx`.
lisp::Value ctx_function(lisp::Interp& in);

void register_context(lisp::Interp& in);

}  // namespace sexpgpu::runfile
