// A compilation session: the source map, the diagnostics, and an interpreter
// with the prelude loaded. Every verb that reads Lisp starts from one. It is
// the compiler's composition root: it installs the layers above the Lisp
// (the stager, the selection, the run file's builtins) into the
// interpreter's extension slot (docs/architecture.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lisp/interp.h"
#include "lisp/reader.h"
#include "select/selection.h"

namespace sexpgpu::runfile {

struct CompiledRun;

class Session {
 public:
  explicit Session(const lisp::Limits& limits = {});
  SourceMap sources;
  DiagnosticSink sink;
  std::unique_ptr<lisp::Interp> interp;
  // The file's declared selection; set `selection().request` before
  // loading the file (the verbs' --variant/--set/--point).
  select::Selection& selection() { return *select::selection_of(*interp); }

  // Reads and evaluates a file, each top-level form on its own: an error in
  // one is reported and the next is still evaluated. False if the file
  // cannot be read (the message says why).
  bool load_file(const std::string& path, std::string* io_error);
  // The same for text already in memory (named `path` in diagnostics).
  void load_source(const std::string& path, std::string text);
  // Evaluates the forms of `text` (named `name` in diagnostics); the values
  // of the last form are stored in `last`. False on the first error.
  bool eval_string(const std::string& name, const std::string& text,
                   std::vector<lisp::Value>* last);

  // The run file's top-level forms as read, and whether it is a run file
  // (it uses a contract form such as defloader or defrun; other files are
  // plain Lisp, only evaluated).
  std::vector<lisp::ReadForm> forms;
  bool is_run_file = false;

  // For a run file: checks the contract's shape and stages it into the IR
  // the loop runs (runfile/compile.h), reporting errors to the sink.
  // `compiled` is set when it succeeded.
  void compile();
  // Set before compile(): the loaded reducer plugins' names, which
  // defdiagnostic :reduce may name besides the core's (runfile::CompileEnv,
  // called only for a non-core name); empty accepts any name.
  std::function<std::vector<std::string>()> reducer_plugins;
  std::shared_ptr<CompiledRun> compiled;

 private:
  bool selection_read_ = false;
};

}  // namespace sexpgpu::runfile
