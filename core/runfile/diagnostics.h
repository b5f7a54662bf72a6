// Diagnostics (observe.md, "Diagnostics"; run-file.md, "Diagnostics in the
// file"): the built-in set and defdiagnostic, each staged as its own IR
// function that the loop runs only on sampled steps, and only when selected.
//
// The functions live in the plan's own module, not in CompiledRun::module:
// the loop compiles and allocates for a diagnostic only when it is selected,
// so an unselected one costs nothing at run time (and adding one leaves the
// run's IR hash alone). Their inputs, bound by name as the loop's are:
//
//   param (Param nodes)  the parameters the step started from
//   new:PATH             the parameter after the update (its spare buffer)
//   grad:PATH            the gradient, summed over microbatches (the
//                        function divides by :microbatches)
//   state:PATH/NAME      the optimizer state after the update
//   probe:NAME           an activation, from a diag:forward function
//   ctx:KEY, rng         as for the training step
//
// diag:forward[@ROWS] is the objective's forward pass (batch:FIELD..., ctx,
// rng, params -> probe:NAME...), staged like train_step[@ROWS] (the same
// random streams, so the same dropout masks), run on the batch of the
// step's last microbatch. Every output of a diagnostic function is f32.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "lisp/interp.h"
#include "runfile/compile.h"
#include "runfile/contract.h"
#include "sexpgpu/plugin.h"

namespace sexpgpu::runfile {

// The histogram reducer's bins (its output is f32[2 + kHistogramBins]: the
// finite values' min and max, then the count in each of the equal bins
// between them).
inline constexpr int64_t kHistogramBins = 16;

// mean rms l2 max-abs min max std frac-zero frac-nonfinite histogram.
const std::vector<std::string>& core_reducers();
bool is_core_reducer(std::string_view name);

// How an output of a diagnostic function becomes part of the diag event.
enum class DiagKind {
  Number,     // a scalar: values[key] = number
  Reduced,    // a scalar: values[key][reducer] = number
  Histogram,  // f32[2 + bins]: values[key][reducer] = {min, max, counts}
  Host,       // the value itself (f32, any shape), reduced on the host by
              // the reducer plugin `reducer`: values[key][reducer]
};

struct DiagOutput {
  std::string key;      // a path, "PATH/STATE", a probe's name, or "global"
  std::string reducer;  // "" for Number
  std::string output;   // the function's output name
  DiagKind kind = DiagKind::Number;
};

// One IR function of a diagnostic.
struct DiagFunction {
  std::string fn;    // "diag:grad-norm", "diag:act-rms:activations@96"
  int64_t rows = 0;  // over activations: the train batch's rows it is for; 0 otherwise
  std::vector<DiagOutput> outputs;
};

struct Diagnostic {
  std::string name;
  bool builtin = true;
  bool over_activations = false;  // needs diag:forward
  // Its parameter-side function (when it has one), then one per train batch
  // size over activations (none when the model has no probe).
  std::vector<DiagFunction> fns;
  std::vector<std::string> plugin_reducers;  // :reduce names that are not core ones
};

struct DiagnosticPlan {
  // Every function below, verified but not optimized: the run optimizes the
  // ones it compiles (ir::optimize), so check pays for no passes.
  ir::Module module;
  std::vector<SizedFunction> forwards;  // diag:forward per train size (none without probes)
  std::vector<std::string> probes;      // the probes' names, in staging order
  std::vector<Diagnostic> diagnostics;  // the built-ins, then the file's in order

  const Diagnostic* find(const std::string& name) const;
  // "grad-norm, grad-rms, ...": for messages.
  std::string names() const;
};

// "" when each name is a diagnostic of the run, else why not (listing the
// diagnostics): what `run --diag NAME` checks before it starts.
std::string unknown_diagnostics(const CompiledRun& run, const std::vector<std::string>& names);

// ---- at run time --------------------------------------------------------------------------

// A reducer plugin's numbers for `values` (init with "{}", one update,
// finish): a number, or {NAME: number} when it names several outputs.
ir::Result<nlohmann::json> reduce_with_plugin(const sg_reducer_api& api,
                                              std::span<const float> values);

// The outputs of one run of a diagnostic function, downloaded as floats.
using DiagDownloads = std::map<std::string, std::vector<float>>;
using ReducerLookup = std::function<const sg_reducer_api*(const std::string& name)>;

// Adds fn's numbers to a diag event's `values` (observe.md): KEY: number,
// or KEY: {REDUCER: number}, a histogram as {"min", "max", "counts"}; a
// non-finite number is null (JSON has no NaN). "" or why not (a reducer
// plugin's error).
std::string add_diag_values(const DiagFunction& fn, const DiagDownloads& outputs,
                            const ReducerLookup& reducers, nlohmann::json& values);

// After the contract is staged: stages the diagnostics into the plan's
// module and sets run.diagnostics. Errors are reported at the forms
// concerned: a defdiagnostic's at it (a :reduce naming no reducer of the
// core nor of env.reducer_plugins among them), defrun's :diagnostics
// :select at defrun.
void stage_diagnostics(lisp::Interp& in, CompiledRun& run, const Contract& contract,
                       const CompileEnv& env = {});

}  // namespace sexpgpu::runfile
