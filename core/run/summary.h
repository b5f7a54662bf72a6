// The run's summary (spec/observe.md): what `close` and the status file
// report when a run ends, fed metric by metric as the run goes.
//
//   {"final": {METRIC: value}, "best": {METRIC: {"value", "step"}},
//    "steps", "wall_s", "tokens", "examples",
//    "target": {"metric", "op", "value", "reached", "step"}}
//
// final holds the last value of every series and evaluation metric. best
// follows one rule, by name alone: a metric whose name ends in "loss"
// ("train/loss", "val/loss") is best at its minimum, every other one at its
// maximum ("test/acc"). Ties keep the earlier step; non-finite values go to
// final (as null, JSON has no NaN) but never become best. The summary is
// plain data: the loop saves to_json() in state.json and restores it with
// from_json on a resume, so best survives preemption.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ir/types.h"

namespace sexpgpu::run {

// A declared target, `(METRIC OP VALUE)` with OP one of >= > <= < =.
struct Target {
  std::string metric;
  std::string op;  // ">=" ">" "<=" "<" "="
  double value = 0;
  bool reached = false;
  std::optional<int64_t> step;  // where it was first reached

  // A Target, or why not (an unknown op).
  static ir::Result<Target> make(std::string metric, std::string op, double value);
  // Checks one report of the metric; true only the first time it is met.
  bool check(const std::string& name, double reported, int64_t at_step);
  nlohmann::json to_json() const;
};

class RunSummary {
 public:
  static bool lower_is_better(std::string_view metric);
  // Whether a series has a best value: not the runtime's measurements
  // (step-ms, throughput, memory, epoch, grad-norm) nor schedules (lr/*).
  static bool has_best(std::string_view metric);

  // One reported value: updates final and, by the rule above, best.
  void observe(const std::string& metric, double value, int64_t step);
  // A value with no best (a schedule's): final only.
  void observe_final(const std::string& metric, double value) { final_[metric] = value; }
  // Every number of an object of metrics ({"train/loss": 0.3, ...}); other
  // values are ignored.
  void observe_all(const nlohmann::json& metrics, int64_t step);
  void set_counts(int64_t steps, double wall_s, int64_t tokens, int64_t examples);
  void set_target(const Target& target) { target_ = target; }

  const std::map<std::string, double>& final_values() const { return final_; }
  struct Best {
    double value;
    int64_t step;
  };
  const std::map<std::string, Best>& best() const { return best_; }

  nlohmann::json to_json() const;
  static ir::Result<RunSummary> from_json(const nlohmann::json& j);

 private:
  std::map<std::string, double> final_;
  std::map<std::string, Best> best_;
  int64_t steps_ = 0, tokens_ = 0, examples_ = 0;
  double wall_s_ = 0;
  std::optional<Target> target_;
};

}  // namespace sexpgpu::run
