// What `sexpgpu sweep` knows of its points, shared by verb_sweep.cpp (the
// verb: planning, children, signals) and sweep_report.cpp (sweep.json, the
// live line, the closing table). docs/sweep.md describes every field.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sexpgpu::cli {

using ojson = nlohmann::ordered_json;

struct SweepPoint {
  size_t index = 0;
  std::vector<std::pair<std::string, std::string>> knobs;  // knob -> value as Lisp prints it
  std::string slug, run_dir;
  // pending (not run by this command yet), running, the run's own end
  // (finished stopped preempted failed nonfinite), or killed (the process
  // ended by a signal before its run closed).
  std::string state = "pending";
  // What this command does with it: run, resume, retry, fresh, skip, busy
  // (another process runs it), or "" (before --from: left alone).
  std::string action;
  std::optional<int> exit_code;
  ojson summary = nullptr;  // the run's summary (status.md): final, best, target, ...
  ojson error = nullptr;    // {"code", "message"} when it failed
  // For the live line: the run's steps and its latest step event.
  int64_t steps = 0, step = 0;
  ojson metrics = nullptr;

  // "lr=0.003 width=128"
  std::string label() const;
};

struct SweepRecord {
  std::string sweep, file, file_hash, dir;
  std::vector<std::string> command;
  size_t from = 0, jobs = 1;
  std::string state = "running", started, updated;
  std::optional<int> exit_code;
  std::vector<SweepPoint> points;
};

// Where each of `jobs` slots runs: its --device and --threads words, or
// why the jobs cannot be placed without sharing a device. With one job,
// `device` and `threads` go through as typed ("" and 0: run's defaults);
// with more, `device` is the resolved one (flag, SEXPGPU_DEVICE, defrun).
struct Placement {
  std::vector<std::vector<std::string>> slot_args;
  std::string error;
};
Placement place(size_t jobs, std::string device, int threads);

// sweep.json's document (also the last line of sweep --json).
ojson sweep_json(const SweepRecord& r);
// Writes DIR/sweep.json atomically; "" or why not.
std::string write_sweep_json(SweepRecord& r);
// The closing table, for people (standard output).
std::string sweep_table(const SweepRecord& r);

// The progress of the points on standard error: one line, refreshed in
// place on a terminal; plain lines otherwise; nothing under --quiet.
class LiveLine {
 public:
  LiveLine();
  ~LiveLine() { clear(); }
  void progress(const SweepPoint& p, size_t points);  // a step of point p
  void say(const std::string& line);                  // a line that stays
  void clear();

 private:
  bool tty_, quiet_, shown_ = false;
};

}  // namespace sexpgpu::cli
