// The verbs of the command line, one file each. Each registers its
// subcommand on the app; its callback stores the exit code. The CLI is the
// only place that turns diagnostics into exit codes (cli.md).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "lisp/interp.h"
#include "runfile/session.h"
#include "select/selection.h"

namespace sexpgpu::cli {

// cli.md's exit codes.
enum Exit {
  kOk = 0,
  kFileErrors = 1,
  kUsage = 2,
  kRunFailed = 3,  // device, plugin, data or I/O failure at run time
  kNonfinite = 4,
  kCannotRun = 5,
  kResumable = 75,
  kInterrupted = 130
};

// The flags every verb that reads a run file takes: the selection
// (--variant, --set, --point) and the evaluation limits.
struct LimitFlags {
  lisp::Limits limits;
  std::vector<std::string> variants, sets;
  std::string point;
  void add_to(CLI::App* cmd);
  // The selection request; false (after printing why) for a malformed --set.
  bool request(select::Request& out) const;
  // A session that has read `file` under these flags, its diagnostics
  // printed on standard error; nullptr (exit_code set to kUsage, the reason
  // printed as "sexpgpu VERB: ...") when the flags or the file are unusable.
  // With `compile`, a run file is also compiled (Session::compile) before
  // the diagnostics are printed; without `print_diagnostics` they are left
  // in the session (for --json). Under --quiet only errors are printed.
  // `reducer_plugins` (the loaded ones: PluginHost::names) lets the
  // compiler refuse a :reduce that names no reducer here; empty accepts any.
  std::unique_ptr<runfile::Session> load(
      const std::string& file, const char* verb, int& exit_code, bool compile = false,
      bool print_diagnostics = true,
      std::function<std::vector<std::string>()> reducer_plugins = {}) const;
};

// The names of the reducer plugins that load here (the search path `run`
// uses), for LimitFlags::load: the plugins are loaded at the first call
// only, which the compiler makes only when a :reduce names no core
// reducer (loading them, with the CUDA plugin's cuBLASLt, costs more than
// checking a file).
std::function<std::vector<std::string>()> lazy_reducer_plugins();

// A numeric flag's check: its text must be a whole decimal number from
// `min` to `max`; a fraction, hex, an empty string or a number past the range
// is a usage error (exit 2) naming the flag and its range, before the
// verb runs (CLI11 would otherwise saturate or wrap it).
CLI::Validator integer_range(int64_t min, int64_t max);
// "at least 1", "0 to 9223372036854775807 (2^63-1)", ...
std::string range_text(int64_t min, int64_t max);

// --quiet, global (before or after the verb): nothing on standard error
// but errors.
bool quiet();
void add_quiet(CLI::App& app);

// --log LEVEL, global (before or after the verb), over SEXPGPU_LOG: the
// log's level (util/log.h), set once the line is parsed. Call after
// add_quiet: under --quiet the log shows errors only.
void add_log(CLI::App& app);
// The --log value given ("" when none), for the settings table.
std::string log_flag();
// Sets the log's level again once the config file is read: its `[log]
// level` counts where neither --log nor SEXPGPU_LOG names a level.
void set_log_level(const std::optional<std::string>& config_level);

// Reads a run file into a session; false (after printing "sexpgpu VERB:
// cannot read FILE: no such file" or why) when it is not a readable file.
bool load_or_report(runfile::Session& s, const std::string& file, const char* verb);

// The session's diagnostics as check --json gives them: a JSON list.
nlohmann::json diagnostics_json(const runfile::Session& s);
// One diagnostic with no position, for a failure that is not the file's
// (a missing file, a device): the same shape as check --json's entries.
nlohmann::json bare_diagnostic(const std::string& code, const std::string& message,
                               const std::string& file = "");

// Whether a status file's `pid` and `host` name a process alive on this
// host: a run still going elsewhere (run and sweep leave its directory alone).
bool live_process_here(int64_t pid, const std::string& host);

// A name as the Lisp's symbols print it, lower-cased (knobs, sweeps).
std::string lower(std::string s);
// A file's bytes ("" when it cannot be read).
std::string read_text(const std::string& path);

// What --json prints for a file a verb cannot read: check --json's list
// with one E-IO diagnostic ("cannot read FILE: no such file").
nlohmann::json unreadable_file_json(const std::string& file);

// The process's command line as typed (argv), for run's records.
const std::vector<std::string>& command_line();
void set_command_line(int argc, char** argv);

// True when standard error is a terminal and NO_COLOR is unset.
bool use_color_stderr();
bool use_color_stdout();

void add_check(CLI::App& app, int& exit_code);
void add_eval(CLI::App& app, int& exit_code);
void add_fmt(CLI::App& app, int& exit_code);
void add_doctor(CLI::App& app, int& exit_code);
void add_docs(CLI::App& app, int& exit_code);
void add_ir(CLI::App& app, int& exit_code);
void add_explain(CLI::App& app, int& exit_code);
void add_checkpoint(CLI::App& app, int& exit_code);
void add_status(CLI::App& app, int& exit_code);
void add_variants(CLI::App& app, int& exit_code);
void add_annotate(CLI::App& app, int& exit_code);
void add_run(CLI::App& app, int& exit_code);
void add_sweep(CLI::App& app, int& exit_code);
void add_new(CLI::App& app, int& exit_code);
void add_diff(CLI::App& app, int& exit_code);
void add_watch(CLI::App& app, int& exit_code);
void add_report(CLI::App& app, int& exit_code);
void add_bundle(CLI::App& app, int& exit_code);

}  // namespace sexpgpu::cli
