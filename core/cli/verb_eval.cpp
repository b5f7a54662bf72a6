// sexpgpu eval [FILE] -e FORM [--readably], and the REPL: evaluate at
// compile time and print the values, one per line, on standard output.
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <sstream>

#include "cli/verbs.h"
#include "lisp/session.h"

#ifdef SEXPGPU_HAVE_EDITLINE
#include <editline/readline.h>
#endif

namespace sexpgpu::cli {

namespace {

void print_values(lisp::Interp& in, const std::vector<lisp::Value>& vals, bool readably) {
  lisp::PrintOptions o;
  o.escape = true;
  o.upcase = readably;
  o.readably = readably;
  for (const lisp::Value& v : vals) std::cout << in.print(v, o) << "\n";
  std::cout.flush();
}

// Report new diagnostics on standard error, returning whether any was an error.
bool flush_diagnostics(lisp::Session& s, size_t& shown) {
  bool error = false;
  const auto& all = s.sink.all();
  for (; shown < all.size(); ++shown) {
    std::cerr << render_human(s.sources, all[shown], use_color_stderr());
    if (all[shown].severity == Severity::Error) error = true;
  }
  return error;
}

// Whether `text` holds at least one complete form (so the REPL can evaluate).
bool balanced(const std::string& text) {
  int depth = 0;
  bool in_string = false, escape = false, comment = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (comment) {
      if (c == '\n') comment = false;
      continue;
    }
    if (in_string) {
      if (escape)
        escape = false;
      else if (c == '\\')
        escape = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '\\' && i + 1 < text.size()) {
      ++i;
      any = true;
      continue;
    }
    if (c == ';')
      comment = true;
    else if (c == '"')
      in_string = true, any = true;
    else if (c == '(')
      ++depth, any = true;
    else if (c == ')')
      --depth;
    else if (!isspace((unsigned char)c))
      any = true;
  }
  return any && depth <= 0 && !in_string;
}

int repl(lisp::Session& s, bool readably) {
  size_t shown = s.sink.all().size();
  int counter = 0;
#ifdef SEXPGPU_HAVE_EDITLINE
  std::string pending;
  for (;;) {
    char* line = readline(pending.empty() ? "sexpgpu> " : "       > ");
    if (!line) break;
    pending += line;
    pending += '\n';
    if (*line) add_history(line);
    free(line);
    if (!balanced(pending)) continue;
    std::vector<lisp::Value> vals;
    bool ok = s.eval_string("<repl-" + std::to_string(++counter) + ">", pending, &vals);
    flush_diagnostics(s, shown);
    if (ok) print_values(*s.interp, vals, readably);
    pending.clear();
  }
  std::cout << "\n";
#else
  (void)counter;
  (void)readably;
  std::cerr << "sexpgpu eval: this build has no line editing; pipe forms on standard input\n";
#endif
  return kOk;
}

}  // namespace

void add_eval(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string file;
    std::string expr;
    bool readably = false;
    bool stats = false;
    LimitFlags limits;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("eval", "evaluate forms at compile time and print their values");
  cmd->add_option("file", opts->file, "a run file to load first");
  cmd->add_option("-e,--expr", opts->expr, "the forms to evaluate");
  cmd->add_flag("--readably", opts->readably, "print with prin1 as SBCL does (upper-case symbols)");
  cmd->add_flag("--stats", opts->stats, "report evaluation steps and time of -e on standard error");
  opts->limits.add_to(cmd);
  cmd->callback([opts, &exit_code]() {
    // Left to the OS at exit (see verb_check.cpp): freeing it costs more than it saves.
    lisp::Session& s = *new lisp::Session(opts->limits.limits);
    if (!opts->limits.request(s.selection().request)) {
      exit_code = kUsage;
      return;
    }
    size_t shown = 0;
    bool failed = false;
    if (!opts->file.empty()) {
      std::string io_error;
      if (!s.load_file(opts->file, &io_error)) {
        std::cerr << "sexpgpu eval: " << io_error << "\n";
        exit_code = kUsage;
        return;
      }
      failed |= flush_diagnostics(s, shown);
    }
    if (!opts->expr.empty()) {
      std::vector<lisp::Value> vals;
      uint64_t steps_before = s.interp->total_steps;
      auto start = std::chrono::steady_clock::now();
      bool ok = s.eval_string("<-e>", opts->expr, &vals);
      if (opts->stats) {
        double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        uint64_t steps = s.interp->total_steps - steps_before;
        std::cerr << "steps " << steps << ", " << secs << " s, " << uint64_t(double(steps) / secs)
                  << " steps/s\n";
      }
      failed |= flush_diagnostics(s, shown);
      if (ok) print_values(*s.interp, vals, opts->readably);
      exit_code = failed || !ok ? kFileErrors : kOk;
      return;
    }
    if (isatty(0)) {
      exit_code = repl(s, opts->readably);
      return;
    }
    // Forms from standard input: each evaluated and its values printed.
    std::stringstream ss;
    ss << std::cin.rdbuf();
    std::vector<lisp::ReadForm> forms;
    try {
      forms = lisp::read_string_forms(*s.interp, "<stdin>", ss.str());
    } catch (lisp::LispError& e) {
      s.sink.report(std::move(e.diag));
      flush_diagnostics(s, shown);
      exit_code = kFileErrors;
      return;
    }
    s.interp->current_file = "<stdin>";
    for (const lisp::ReadForm& rf : forms) {
      lisp::Value v;
      bool ok = s.interp->eval_toplevel(rf.form, &v, &rf.span);
      failed |= flush_diagnostics(s, shown) || !ok;
      if (ok) print_values(*s.interp, s.interp->last_values(v), opts->readably);
    }
    exit_code = failed ? kFileErrors : kOk;
  });
}

}  // namespace sexpgpu::cli
