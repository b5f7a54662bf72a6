// sexpgpu eval [FILE] -e FORM [--readably], and the REPL: evaluate at
// compile time and print the values, one per line, on standard output.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/verbs.h"
#include "runfile/session.h"

#ifdef SEXPGPU_HAVE_EDITLINE
#include <editline/readline.h>
#endif

namespace sexpgpu::cli {

namespace {

// Where values go: standard output, one per line, or with --json the
// "values" list of the one document printed at the end.
nlohmann::json* g_json_values = nullptr;

void print_values(lisp::Interp& in, const std::vector<lisp::Value>& vals, bool readably) {
  lisp::PrintOptions o;
  o.escape = true;
  o.upcase = readably;
  o.readably = readably;
  for (const lisp::Value& v : vals) {
    if (g_json_values)
      g_json_values->push_back(in.print(v, o));
    else
      std::cout << in.print(v, o) << "\n";
  }
  std::cout.flush();
}

// Report new diagnostics on standard error (with --json they go into the
// document instead; under --quiet only errors), returning whether any was
// an error.
bool flush_diagnostics(runfile::Session& s, size_t& shown) {
  bool error = false;
  const auto& all = s.sink.all();
  for (; shown < all.size(); ++shown) {
    bool is_error = all[shown].severity == Severity::Error;
    if (!g_json_values && (is_error || !quiet()))
      std::cerr << render_human(s.sources, all[shown], use_color_stderr());
    if (is_error) error = true;
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

int repl(runfile::Session& s, bool readably) {
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

struct EvalOpts {
  std::string file;
  std::string expr;
  bool readably = false;
  bool stats = false;
  bool json = false;
  LimitFlags limits;
};

// Evaluates what the flags say; the session (nullptr when none could be
// made), its diagnostics reported as they came.
runfile::Session* evaluate(const EvalOpts& opts, int& exit_code) {
  // Left to the OS at exit (see verb_check.cpp): freeing it costs more than it saves.
  runfile::Session& s = *new runfile::Session(opts.limits.limits);
  if (!opts.limits.request(s.selection().request)) {
    exit_code = kUsage;
    return nullptr;
  }
  size_t shown = 0;
  bool failed = false;
  if (!opts.file.empty()) {
    if (!load_or_report(s, opts.file, "eval")) {
      exit_code = kUsage;
      std::error_code ec;
      s.sink.report(Diagnostic{"E-IO",
                               Severity::Error,
                               {},
                               "cannot read " + opts.file +
                                   (std::filesystem::exists(opts.file, ec) ? "" : ": no such file"),
                               "",
                               {}});
      return &s;
    }
    failed |= flush_diagnostics(s, shown);
  }
  if (!opts.expr.empty()) {
    std::vector<lisp::Value> vals;
    uint64_t steps_before = s.interp->total_steps;
    auto start = std::chrono::steady_clock::now();
    bool ok = s.eval_string("<-e>", opts.expr, &vals);
    if (opts.stats) {
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      uint64_t steps = s.interp->total_steps - steps_before;
      std::cerr << "steps " << steps << ", " << secs << " s, " << uint64_t(double(steps) / secs)
                << " steps/s\n";
    }
    failed |= flush_diagnostics(s, shown);
    if (ok) print_values(*s.interp, vals, opts.readably);
    exit_code = failed || !ok ? kFileErrors : kOk;
    return &s;
  }
  if (isatty(0) && !g_json_values) {
    exit_code = repl(s, opts.readably);
    return &s;
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
    return &s;
  }
  s.interp->current_file = "<stdin>";
  for (const lisp::ReadForm& rf : forms) {
    lisp::Value v;
    bool ok = s.interp->eval_toplevel(rf.form, &v, &rf.span);
    failed |= flush_diagnostics(s, shown) || !ok;
    if (ok) print_values(*s.interp, s.interp->last_values(v), opts.readably);
  }
  exit_code = failed ? kFileErrors : kOk;
  return &s;
}

}  // namespace

void add_eval(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<EvalOpts>();
  CLI::App* cmd =
      app.add_subcommand("eval", "evaluate forms at compile time and print their values");
  cmd->add_option("file", opts->file, "a run file to load first");
  cmd->add_option("-e,--expr", opts->expr, "the forms to evaluate");
  cmd->add_flag("--readably", opts->readably, "print with prin1 as SBCL does (upper-case symbols)");
  cmd->add_flag("--stats", opts->stats, "report evaluation steps and time of -e on standard error");
  cmd->add_flag("--json", opts->json,
                "one JSON document: {values, diagnostics} (forms from -e or standard input)");
  opts->limits.add_to(cmd);
  cmd->callback([opts, &exit_code]() {
    if (!opts->json) {
      (void)evaluate(*opts, exit_code);
      return;
    }
    // --json: one document at the end, whatever happened; no REPL.
    static nlohmann::json values = nlohmann::json::array();
    g_json_values = &values;
    runfile::Session* session = evaluate(*opts, exit_code);
    nlohmann::json doc = {
        {"values", values},
        {"diagnostics", session ? diagnostics_json(*session) : nlohmann::json::array()}};
    std::cout << doc.dump(2) << "\n";
  });
}

}  // namespace sexpgpu::cli
