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
#include "runfile/context.h"
#include "spec/run_spec.h"

namespace sexpgpu::runfile {

// defeval's pass and defrun's settings, as the run spec holds them.
using spec::EvalDecl;
using spec::RunDecl;

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
