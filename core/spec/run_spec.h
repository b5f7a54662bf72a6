// The run spec (core/spec/README.md): everything the fixed training loop
// needs to run a compiled run file, as plain data and with no Lisp in it.
// The compiler (runfile/compile.h) produces it from an evaluated run file;
// the runtime (core/train) reads it. It holds the staged IR functions
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
// and the tables that say how to drive them: parameters, optimizer states
// and groups, metrics, evaluation passes, curriculum stages, the loaders,
// defrun's settings, the diagnostics and each step's FLOPs.
//
// A function is staged for the loader's batch size and, when an epoch ends
// in a smaller batch or a curriculum stage changes :batch or :seq-len, again
// for each other batch shape the loader can give (data::Loader::stage_rows):
// NAME@ROWS, or NAME@ROWSxSEQ for a stage's :seq-len. Inputs are fed by
// name: "batch:x", "ctx:step", "rng", and Param nodes by path.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "spec/loaders.h"
#include "util/diagnostics.h"

namespace sexpgpu::spec {

// ---- inputs by name ------------------------------------------------------------------------

// The IR input name of a ctx key: "ctx:" + key.
std::string ctx_input_name(const std::string& key);
// The key of a ctx input name, or nullopt when it is not one.
std::optional<std::string> ctx_key_of_input(const std::string& input_name);

// ---- parameters, optimizer state, metrics ---------------------------------------------------

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

// How an evaluation pass folds a metric over its batches.
enum class MetricReduce { Mean, Sum, Min, Max, Last };
const char* to_string(MetricReduce r);

struct MetricEntry {
  std::string name;  // "acc"
  MetricReduce reduce = MetricReduce::Mean;
};

// ---- staged functions -----------------------------------------------------------------------

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

// The FLOPs of one optimizer step by the IR's cost model (ir/cost.h): every
// microbatch's forward and backward pass of one batch shape, the gradient
// sums, the update. explain reports them; the trainer's mfu series divides
// them by the step's time.
struct StepFlops {
  double forward = 0, backward = 0, accumulate = 0, update = 0;
  double total() const { return forward + backward + accumulate + update; }
};

// ---- evaluation, curriculum, defrun ---------------------------------------------------------

struct EvalDecl {
  std::string name;      // "test": metrics are reported as test/NAME
  std::string loader;    // :loader
  int64_t every = 0;     // :every N steps; 0: not periodically
  int64_t batches = -1;  // :batches N; -1: :all
  bool at_start = false, at_end = true;
  std::string fn = "evaluate";  // :fn, the function's name (lower case)
  Span span;
};

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
  // The function staged for this stage's own batch (its :batch and
  // :seq-len), by base name: "train_step" -> "train_step@8", "eval:val" ->
  // "eval:val@8" (ir --stage; the remainders a stage can also give are
  // the base's other variants).
  std::map<std::string, std::string> fns;
};

// defrun's :target, `(METRIC OP VALUE)` with OP one of >= > <= < = (checked
// by the compiler; the loop follows it with run::Target).
struct TargetDecl {
  std::string metric;
  std::string op;
  double value = 0;
};

// defrun's settings.
struct RunDecl {
  Span span;
  int64_t steps = 0, epochs = 0;  // one of them is set
  int64_t microbatches = 1;
  // The size of a gradient bucket, one all_reduce (docs/devices.md,
  // "Gradient buckets"); PyTorch DDP's 25 MiB.
  int64_t bucket_bytes = 26214400;
  std::string precision = "f32";  // f32 tf32 bf16
  std::string master_weights = "f32";
  int64_t seed = 0;
  std::optional<double> clip_norm;
  int64_t log_every = 10;
  std::optional<int64_t> checkpoint_every;
  int64_t checkpoint_keep = 3;
  bool checkpoint_at_end = true;
  int64_t diagnostics_every = 100;
  std::vector<std::string> diagnostics_select;
  bool skip_nonfinite = false;  // :on-nonfinite :skip (default :stop)
  int64_t max_skips = 10;
  std::optional<TargetDecl> target;
  bool target_stop = false;
  std::string device = "auto";
  bool device_given = false;  // :device was written (else "auto" is the default)
};

// ---- diagnostics (observe.md, "Diagnostics") ------------------------------------------------
//
// Each diagnostic is staged as its own IR function that the loop runs only
// on sampled steps, and only when selected. The functions live in the
// plan's own module, not in RunSpec::module: the loop compiles and
// allocates for a diagnostic only when it is selected, so an unselected one
// costs nothing at run time (and adding one leaves the run's IR hash
// alone). Their inputs, bound by name as the loop's are:
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

// The histogram reducer's bins (its output is f32[2 + kHistogramBins]: the
// finite values' min and max, then the count in each of the equal bins
// between them).
inline constexpr int64_t kHistogramBins = 16;

// The reducers staged as IR: mean rms l2 max-abs min max std frac-zero
// frac-nonfinite histogram. Any other :reduce name is a reducer plugin's.
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

// ---- the spec -------------------------------------------------------------------------------

struct RunSpec {
  ir::Module module;  // every function, after ir::optimize
  RunDecl run;
  int64_t steps = 0;  // :steps, or :epochs times the train loader's batches per epoch
  std::string train_loader = "train";
  std::vector<SizedFunction> train_fns;  // full batch first
  std::vector<MetricEntry> train_metrics;
  // One optimizer step's FLOPs for each of train_fns, by its function name.
  std::map<std::string, StepFlops> step_flops;
  std::vector<ParamEntry> params;
  std::vector<StateEntry> states;
  std::vector<GroupEntry> groups;
  std::vector<EvalPass> evals;
  std::vector<StageInfo> stages;  // empty without defcurriculum
  Loaders loaders;                // every defloader, in definition order
  // The diagnostics, each its own function (above); null when the file has
  // none to offer.
  std::shared_ptr<const DiagnosticPlan> diagnostics;

  // The step FLOPs of the full batch (train_fns' first).
  StepFlops full_batch_flops() const;
};

}  // namespace sexpgpu::spec
