// status.json: the one file to poll (spec/observe.md, "The status file"),
// replaced by write-to-temporary-and-rename at every step event and state
// change, so a reader never sees half a file.
//
// Every key is always present (null until known), so a script can index it
// without checking: state, step, steps, stage, metrics (latest), eval
// (latest per pass), throughput, eta_s, last_checkpoint ({step, path}),
// pid, host, started, updated, exit_code, error, summary and next. summary
// and next are set when the run ends; next is the exact command that
// resumes a resumable stop (stopped, preempted), null otherwise.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/types.h"
#include "run/events.h"

namespace sexpgpu::run {

inline constexpr std::array<std::string_view, 10> kRunStates = {
    "starting", "compiling", "running",   "evaluating", "checkpointing",
    "finished", "stopped",   "preempted", "failed",     "nonfinite"};
bool is_run_state(std::string_view s);
// Whether a run in this state has ended (finished and after).
bool is_final_state(std::string_view s);

struct RunStatus {
  std::string state = "starting";
  std::optional<int64_t> step, steps;
  json stage = nullptr;              // the stage's name
  json metrics = json::object();     // the latest step event's metrics
  json eval = json::object();        // pass name -> its latest metrics
  json throughput = json::object();  // e.g. {"examples-per-s", "tokens-per-s", "step-ms"}
  std::optional<double> eta_s;
  json last_checkpoint = nullptr;  // {"step", "path"}
  int64_t pid = 0;
  std::string host, started, updated;  // times in RFC 3339 UTC
  std::optional<int> exit_code;
  json error = nullptr;    // {"code", "message"}
  json summary = nullptr;  // as in the close event
  std::optional<std::string> next;

  json to_json() const;
  // Checks the state and the types of the known keys; unknown keys are
  // allowed (fields may be added).
  static ir::Result<RunStatus> from_json(const json& j);
};

class StatusFile {
 public:
  // Fills pid, host and started from this process and clock; writes nothing
  // until the first update. An empty path writes nothing ever (a rank other
  // than 0: rank 0 writes the run's status).
  explicit StatusFile(std::string path, Clock clock = {});

  const std::string& path() const { return path_; }
  const RunStatus& status() const { return status_; }
  // For changes the helpers below do not cover; call write() after.
  RunStatus& edit() { return status_; }

  // Sets updated and replaces the file. Returns "" or why not.
  [[nodiscard]] std::string write();

  [[nodiscard]] std::string set_state(const std::string& state);
  [[nodiscard]] std::string on_step(int64_t step, const json& metrics, const json& throughput,
                                    std::optional<double> eta_s);
  [[nodiscard]] std::string on_eval(const std::string& pass, const json& metrics);
  [[nodiscard]] std::string on_checkpoint(int64_t step, const std::string& path);
  // The end: state, exit code, summary, error (null unless failed) and next
  // (the resume command for a resumable stop, else nullopt).
  [[nodiscard]] std::string finish(const std::string& state, int exit_code, const json& summary,
                                   const json& error, std::optional<std::string> next);

 private:
  std::string path_;
  Clock clock_;
  RunStatus status_;
};

ir::Result<RunStatus> read_status(const std::string& path);

// The command that resumes a run started with argv: the same words with any
// --resume VALUE / --resume=VALUE / --fresh taken out and `--resume latest`
// added, each word shell-quoted where it needs it.
std::string resume_command(const std::vector<std::string>& argv);

}  // namespace sexpgpu::run
