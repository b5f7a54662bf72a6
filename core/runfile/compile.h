// The run file compiled (run-file.md): after the file is evaluated, the
// contract functions are staged into the IR functions the fixed training
// loop runs, and everything the loop needs to drive them is collected.
//
//   init                 rng -> param:PATH for every storage parameter
//   train_step[@ROWS]    batch:FIELD..., ctx:KEY..., rng, params
//                        -> loss, metric:NAME..., grad:PATH...
//   accumulate           (microbatches > 1) acc:PATH, grad:PATH -> sum:PATH
//   update               params, grad:PATH, state:PATH/NAME, ctx:KEY...
//                        -> grad-norm, SERIES/GROUP..., param:PATH..., state:PATH/NAME...
//   eval:PASS[@ROWS]     batch:FIELD..., ctx:KEY..., params -> metric:NAME...
//
//   until:STAGE          ctx:KEY... -> until (1 when the stage is over)
//
// A function is staged for the loader's batch size and, when an epoch ends
// in a smaller batch or a curriculum stage changes :batch or :seq-len, again
// for each other batch shape the loader can give (data::Loader::stage_rows):
// NAME@ROWS, or NAME@ROWSxSEQ for a stage's :seq-len. Inputs are fed by
// name: "batch:x", "ctx:step", "rng", and Param nodes by path.
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

namespace sexpgpu::runfile {

struct ParamEntry {
  std::string path;  // the storage path
  ir::TensorType type;
  bool trainable = true;
  std::string init;  // how it is initialised, for explain
  std::vector<std::string> tags;
  std::vector<std::string> tied;  // other paths naming this storage
  std::string group;              // the optimizer group ("" when not trained)
};

struct StateEntry {
  std::string param;  // the parameter's path
  std::string name;   // the state's name: "m"
  ir::TensorType type;
  double fill = 0;  // its initial value
  std::string tensor_name() const { return param + "/" + name; }
};

struct GroupEntry {
  std::string name;
  std::string optimizer;            // the constructor's name: "adamw"
  std::vector<std::string> params;  // member paths
  std::vector<std::string> series;  // scheduled values reported: "lr/default"
};

struct MetricEntry {
  std::string name;  // "acc"
  MetricReduce reduce = MetricReduce::Mean;
};

// One staged function for one batch shape.
struct SizedFunction {
  std::string fn;  // "train_step", "train_step@96" or "train_step@128x64"
  int64_t rows = 0;
  int64_t seq_len = 0;  // a token source's window length; 0 for the others
  // A training step's: nodes [0, forward_nodes) of its staged function are
  // the forward pass (prepare, objective, metrics), the gradient's follow.
  int64_t forward_nodes = 0;
};

// More batch shapes than this for one function is an error (compile_run):
// each is a compiled program, and :drop-last needs none but the batches.
inline constexpr size_t kMaxBatchShapes = 16;

struct EvalPass {
  EvalDecl decl;
  std::vector<SizedFunction> fns;  // the full batch first, then the stages' other shapes
  std::vector<MetricEntry> metrics;
};

// A curriculum stage (defcurriculum): its name and the function that says
// when it ends ("" for the last).
struct StageInfo {
  std::string name;
  std::string until_fn;  // "until:NAME": ctx inputs -> until (f32, 1 when it holds)
};

struct DiagnosticPlan;  // runfile/diagnostics.h

struct CompiledRun {
  ir::Module module;  // every function, after ir::optimize
  ir::Module staged;  // the same before the passes
  RunDecl run;
  int64_t steps = 0;  // :steps, or :epochs times the train loader's batches per epoch
  std::string train_loader = "train";
  std::vector<SizedFunction> train_fns;  // full batch first
  std::vector<MetricEntry> train_metrics;
  std::vector<ParamEntry> params;
  std::vector<StateEntry> states;
  std::vector<GroupEntry> groups;
  std::vector<EvalPass> evals;
  std::vector<StageInfo> stages;  // empty without defcurriculum
  // The diagnostics, each its own function (runfile/diagnostics.h); null
  // when the file has none to offer.
  std::shared_ptr<const DiagnosticPlan> diagnostics;
  bool has_prepare = false;
  // Ctx keys read by any function; metric keys are checked to be series.
  std::vector<std::string> ctx_keys;

  const ParamEntry* find_param(const std::string& path) const;
};

// The FLOPs of one optimizer step by the IR's cost model (ir/cost.h): every
// microbatch's forward and backward pass of the full batch (or of the batch
// shape `train` gives, one of train_fns), the gradient sums, the update.
// explain reports them; the trainer's mfu series divides them by the step's
// time.
struct StepFlops {
  double forward = 0, backward = 0, accumulate = 0, update = 0;
  double total() const { return forward + backward + accumulate + update; }
};
StepFlops step_flops(const CompiledRun& run, const SizedFunction* train = nullptr);

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
