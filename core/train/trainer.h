// The fixed training loop (run-file.md, observe.md): given a run spec
// (spec/run_spec.h), trains it on a device plugin, writing the run
// directory (events, status, checkpoints) as it goes, and returns how the
// run ended. The CLI turns that into the exit code and the closing lines
// (cli.md); the loop prints progress, never an error.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dist/world.h"
#include "host/plugin_host.h"
#include "run/summary.h"
#include "spec/run_spec.h"
#include "util/diagnostics.h"

namespace sexpgpu::train {

// How a run ended (the close event's `state` in parentheses).
enum class RunEnd {
  Finished,     // every step, or a :target with :stop reached ("finished")
  Refused,      // stopped before the run directory was written; nothing recorded
  Failed,       // a device, data, I/O or resume failure ("failed")
  NonFinite,    // a non-finite step under :on-nonfinite :stop, or too many skipped ("nonfinite")
  Stopped,      // SIGINT: checkpointed and resumable ("stopped")
  Preempted,    // SIGTERM: checkpointed and resumable ("preempted")
  Interrupted,  // a second signal: stopped at once, no checkpoint ("stopped")
};

// What train() gives back: how the run ended, why (for Refused, Failed and
// NonFinite: the error's code and message), and what the closing lines on
// standard output say.
struct RunOutcome {
  RunEnd end = RunEnd::Finished;
  std::string state;  // the close event's state ("failed" for Refused)
  std::optional<Diagnostic> error;
  int64_t step = 0, steps = 0;
  double wall_s = 0;
  // The final value of each series that has a best value (RunSummary::has_best), by name.
  std::vector<std::pair<std::string, double>> final_values;
  std::optional<run::Target> target;
  std::optional<std::string> resume_command;  // a stopped or preempted run's
};

struct RunOptions {
  std::string file;     // the run file as given
  std::string run_dir;  // where everything goes (made if missing)
  std::string slug;
  std::string device = "auto";         // cpu, cuda, cuda:N, auto
  int threads = 0;                     // CPU device threads; 0: every core
  bool deterministic = false;          // results that repeat bit for bit (GPU devices)
  std::optional<int64_t> steps, seed;  // --steps, --seed
  std::string resume;                  // "", "latest" or a checkpoint path
  bool allow_changed = false;
  bool json = false;               // events on standard output, one per line
  bool quiet = false;              // nothing on standard error but errors
  std::vector<std::string> sinks;  // NAME[:ARG]
  std::vector<std::string> diags;  // --diag NAME: sampled besides defrun's :diagnostics
  std::vector<std::string> argv;   // the command line, for open and the resume command
  nlohmann::json selection;        // {"variants", "knobs": {...}, "slug"}
  std::string file_text;           // the run file's text, copied into the run dir
  std::vector<std::pair<std::string, std::string>> modules;  // user modules: path, text
  // The exit code of an outcome (the CLI's, cli.md), which the loop also
  // records in the close event and status.json. Required.
  std::function<int(const RunOutcome&)> exit_code_of;
  // A problem the run goes on after (a sink that failed), for the CLI to
  // print; none when empty.
  std::function<void(const std::string& message)> report;
  // This process among the run's (docs/run.md, "Several GPUs and nodes"):
  // a world of one unless the rank variables say otherwise.
  dist::World world;
};

// Trains, or refuses to: nothing is printed but progress (and with --json
// the events), the outcome says the rest.
RunOutcome train(const spec::RunSpec& run, const RunOptions& options, host::PluginHost& plugins);

// The `close` event of a run that failed before its directory was written
// (no events.jsonl): state "failed", `exit_code`, an empty summary and
// `error` ({code, message}, and for a file's errors `diagnostics`, the
// list check --json gives). run --json prints it as its last line.
std::string unstarted_close_line(int exit_code, const nlohmann::json& error);

// The ordinal of a device spec: 0 for "cpu" or "cuda", N for "cuda:N";
// nullopt when what follows the ':' is not a number from 0 to kMaxOrdinal.
constexpr int kMaxOrdinal = 1023;
std::optional<int> device_ordinal(const std::string& spec);

// A content hash for run files, modules and the IR: 16 hex digits of
// 64-bit FNV-1a (identity, not security).
std::string content_hash(std::string_view text);

}  // namespace sexpgpu::train
