// The run file compiled (run-file.md): after the file is evaluated, the
// contract functions are staged into the IR functions the fixed training
// loop runs, and everything the loop needs to drive them is collected into
// the run spec (spec/run_spec.h, which lists the functions and their inputs).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "lisp/interp.h"
#include "lisp/reader.h"
#include "runfile/context.h"
#include "runfile/contract.h"
#include "runfile/loaders.h"
#include "spec/run_spec.h"

namespace sexpgpu::runfile {

// The run spec's parts, by the names the compiler has always used.
using spec::EvalPass;
using spec::GroupEntry;
using spec::kMaxBatchShapes;
using spec::MetricEntry;
using spec::ParamEntry;
using spec::SizedFunction;
using spec::StageInfo;
using spec::StateEntry;
using spec::StepFlops;

// What compile_run gives: the run spec the training loop reads, and what
// only the compiler's own readers (explain, the golden tests) look at.
struct CompiledRun : spec::RunSpec {
  ir::Module staged;  // the module before the passes
  bool has_prepare = false;
  // Ctx keys read by any function; metric keys are checked to be series.
  std::vector<std::string> ctx_keys;

  const ParamEntry* find_param(const std::string& path) const;
};

// What the compiler is told of the machine it compiles for, as plain data
// (the CLI fills it from the plugin host; the compiler never loads plugins).
struct CompileEnv {
  // The names of the loaded reducer plugins: a defdiagnostic's :reduce
  // naming neither a core reducer nor one of these is E-DIAG-REDUCER.
  // Called only when a :reduce names no core reducer, so a file that uses
  // only the core's never pays for loading the plugins; empty when unknown:
  // any name is accepted (the run checks it).
  std::function<std::vector<std::string>()> reducer_plugins;
};

// Stages the contract of an evaluated run file. Errors are reported to the
// interpreter's sink (each at its form) and give nullopt; nothing is staged
// when the file already has errors.
std::optional<CompiledRun> compile_run(lisp::Interp& in, const std::vector<lisp::ReadForm>& forms,
                                       const CompileEnv& env = {});

// Registers the builtin compile_run's steps run through.
void register_compile(lisp::Interp& in);

}  // namespace sexpgpu::runfile
