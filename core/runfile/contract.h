// The run file's contract forms (run-file.md, "Contract names, in their
// order"): what defeval, defcurriculum, defdiagnostic and defrun record, and
// the checks on the file's shape as a whole (E-CONTRACT-MISSING,
// E-CONTRACT-SHAPE, W-ORDER).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lisp/interp.h"
#include "lisp/reader.h"
#include "run/summary.h"
#include "runfile/context.h"

namespace sexpgpu::runfile {

struct EvalDecl {
  std::string name;      // "test": metrics are reported as test/NAME
  std::string loader;    // :loader
  int64_t every = 0;     // :every N steps; 0: not periodically
  int64_t batches = -1;  // :batches N; -1: :all
  bool at_start = false, at_end = true;
  std::string fn = "evaluate";  // :fn, the function's name (lower case)
  Span span;
};

struct StageDecl {
  std::string name;   // "short"
  lisp::Value until;  // a function of no arguments staging the condition; nil for the last
  Span span;
};

struct DiagnosticDecl {
  std::string name;
  std::string over;   // params grads updates state activations
  lisp::Value value;  // the :value function
  std::vector<std::string> reduce;
  lisp::Value select;  // a selector, or nil for every tensor
  Span span;
};

struct RunDecl {
  Span span;
  int64_t steps = 0, epochs = 0;  // one of them is set
  int64_t microbatches = 1;
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
  std::optional<run::Target> target;
  bool target_stop = false;
  std::string device = "auto";
};

struct Contract {
  std::vector<EvalDecl> evals;
  std::vector<StageDecl> stages;
  Span curriculum_span;
  std::vector<DiagnosticDecl> diagnostics;
  std::optional<RunDecl> run;
  // Metrics by the name of the function they were staged in (context.cpp).
  std::map<std::string, std::vector<MetricDecl>> metrics;
};

Contract& contract_of(lisp::Interp& in);
const Contract& contract_of(const lisp::Interp& in);

// Whether the forms are a run file (they use any contract form): plain Lisp
// files are only evaluated.
bool is_run_file(const std::vector<lisp::ReadForm>& forms);

// After the file is evaluated: W-ORDER for contract forms out of order,
// E-CONTRACT-SHAPE for a contract function's lambda list or a second defrun,
// E-CONTRACT-MISSING for each required form that is absent.
void check_contract_forms(lisp::Interp& in, const std::vector<lisp::ReadForm>& forms);

// Registers %defeval, %defcurriculum, %defdiagnostic, %defrun.
void register_contract(lisp::Interp& in);

}  // namespace sexpgpu::runfile
