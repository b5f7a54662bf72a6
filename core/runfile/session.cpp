// Session: prelude loading, files and strings evaluated form by form.
#include "runfile/session.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runfile/compile.h"
#include "runfile/context.h"
#include "runfile/contract.h"
#include "runfile/loaders.h"
#include "runfile/model.h"
#include "runfile/optimizer.h"
#include "stage/stager.h"
#include "util/log.h"

namespace sexpgpu::runfile {

using lisp::Interp;
using lisp::Limits;
using lisp::LispError;
using lisp::ReadForm;
using lisp::Value;

Session::Session(const Limits& limits) {
  interp = std::make_unique<Interp>(sources, sink);
  stage::install(*interp);
  interp->extensions.emplace<select::Selection>();
  select::register_builtins(*interp);
  runfile::register_loaders(*interp);
  runfile::register_models(*interp);
  runfile::register_optimizers(*interp);
  runfile::register_context(*interp);
  runfile::register_compile(*interp);
  // The prelude is ours: it loads under the default limits, and the user's
  // limits (and heap accounting) start with the user's file.
  log::Stopwatch prelude;
  load_prelude(*interp);
  log::debug("compile: prelude loaded in {:.1f} ms", prelude.ms());
  interp->limits = limits;
  stage::stager_of(*interp).node_limit = limits.ir_nodes;
  interp->reset_heap_accounting();
}

bool Session::load_file(const std::string& path, std::string* io_error) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    if (io_error) *io_error = path + " is a directory, not a run file";
    return false;
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    if (io_error) *io_error = "cannot read " + path;
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  load_source(path, ss.str());
  return true;
}

void Session::load_source(const std::string& path, std::string text) {
  size_t bytes = text.size();
  uint32_t id = sources.add(path, std::move(text));
  std::string saved = interp->current_file;
  interp->current_file = path;
  log::Stopwatch took;
  std::vector<ReadForm> forms = read_file_forms(*interp, id);
  log::info("compile: read {} ({} bytes, {} forms) in {:.1f} ms", path, bytes, forms.size(),
            took.ms());
  log::Stopwatch evaluating;
  // The first file is the run file: its selection is read before it runs.
  bool run_file = !selection_read_;
  if (run_file) {
    selection_read_ = true;
    select::preread(*interp, forms, selection());
  }
  for (const ReadForm& rf : forms) interp->eval_toplevel(rf.form, nullptr, &rf.span);
  log::info("compile: evaluated {} in {:.1f} ms", path, evaluating.ms());
  if (run_file) {
    select::warn_unused(*interp, forms, selection());
    is_run_file = runfile::is_run_file(forms);
    this->forms = forms;
  }
  interp->current_file = saved;
}

void Session::compile() {
  if (!is_run_file) return;
  log::Stopwatch took;
  runfile::check_contract_forms(*interp, forms);
  std::optional<runfile::CompiledRun> run = runfile::compile_run(*interp, forms, {reducer_plugins});
  if (run) compiled = std::make_shared<runfile::CompiledRun>(std::move(*run));
  log::info("compile: {} in {:.1f} ms", compiled ? "compiled the run file" : "compile failed",
            took.ms());
}

bool Session::eval_string(const std::string& name, const std::string& text,
                          std::vector<Value>* last) {
  std::vector<ReadForm> forms;
  try {
    forms = read_string_forms(*interp, name, text);
  } catch (LispError& e) {
    sink.report(std::move(e.diag));
    return false;
  }
  std::string saved = interp->current_file;
  interp->current_file = name;
  bool ok = true;
  for (const ReadForm& rf : forms) {
    Value v;
    if (!interp->eval_toplevel(rf.form, &v, &rf.span)) {
      ok = false;
      break;
    }
    if (last) *last = interp->last_values(v);
  }
  interp->current_file = saved;
  return ok;
}

}  // namespace sexpgpu::runfile
