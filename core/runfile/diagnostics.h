// Diagnostics (observe.md, "Diagnostics"; run-file.md, "Diagnostics in the
// file"): the built-in set and defdiagnostic, each staged as its own IR
// function that the loop runs only on sampled steps, and only when selected.
// What is staged, and the names the functions' inputs go by, is the run
// spec's diagnostic plan (spec/run_spec.h); the loop reduces and reports the
// outputs (train/diag_values.h).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "lisp/interp.h"
#include "runfile/compile.h"
#include "runfile/contract.h"
#include "spec/run_spec.h"

namespace sexpgpu::runfile {

// The diagnostic plan's parts, as the run spec holds them.
using spec::core_reducers;
using spec::DiagFunction;
using spec::DiagKind;
using spec::Diagnostic;
using spec::DiagnosticPlan;
using spec::DiagOutput;
using spec::is_core_reducer;
using spec::kHistogramBins;

// "" when each name is a diagnostic of the run, else why not (listing the
// diagnostics): what `run --diag NAME` checks before it starts.
std::string unknown_diagnostics(const spec::RunSpec& run, const std::vector<std::string>& names);

// After the contract is staged: stages the diagnostics into the plan's
// module and sets run.diagnostics. Errors are reported at the forms
// concerned: a defdiagnostic's at it (a :reduce naming no reducer of the
// core nor of env.reducer_plugins among them), defrun's :diagnostics
// :select at defrun.
void stage_diagnostics(lisp::Interp& in, CompiledRun& run, const Contract& contract,
                       const CompileEnv& env = {});

}  // namespace sexpgpu::runfile
