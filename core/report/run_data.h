// What a report draws, read from run directories (docs/report.md): each
// run's series (step and eval metrics, diagnostics' numbers) with the step
// and the wall time of every point, its events on a timeline, its `open`
// metadata and its summary; a sweep directory's sweep.json and its points.
//
// Reading never changes a run: a run still going can be read at any time
// (run::read_events skips a last line cut short). A resumed run's points
// past the step it resumed from are dropped: the resume undid them, and the
// session after it reports those steps again.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"

namespace sexpgpu::report {

using nlohmann::json;

struct Point {
  int64_t step = 0;
  double wall_s = 0;            // seconds since the run's first event
  std::optional<double> value;  // none: the event held null (a non-finite value)
};

struct Series {
  std::string name;    // "train/loss", "held-out/acc", "diag/grad-norm/global"
  std::string source;  // "step", "eval" or "diag": the event kind it came from
  std::vector<Point> points;
};

// One event of the timeline, in words for people, with the event as it is.
struct Moment {
  std::string kind;  // "start", "resume", "stage", "checkpoint", "target", "annotation",
                     // "signal", "warning", "close"
  std::optional<int64_t> step;
  double wall_s = 0;
  std::string time;  // the event's own RFC 3339 text
  std::string text;
  json event;
};

struct RunData {
  std::string dir;          // as named on the command line (or found in a sweep)
  std::string label;        // the slug, unique among the runs of one report
  std::string state;        // the close event's, else the status file's, else "running"
  std::vector<json> opens;  // every session's open event, in order
  json close = nullptr;     // the last close event
  json status = nullptr;    // status.json when readable
  std::map<std::string, Series> series;
  std::vector<Moment> timeline;
  size_t events = 0;
};

struct SweepData {
  std::string dir;
  json sweep;                // sweep.json as written
  std::vector<size_t> runs;  // the report's runs that are this sweep's points, in point order
};

struct Report {
  std::vector<RunData> runs;
  std::vector<SweepData> sweeps;
};

// Seconds since the Unix epoch of an RFC 3339 UTC time as events carry it
// ("2026-11-30T03:02:09.078Z"); none for text of another form.
std::optional<double> parse_time(const std::string& rfc3339);

// A run's data from its events, in file order.
RunData run_from_events(const std::vector<json>& events, const std::string& dir);

// Adds what DIR holds to the report: a run directory (events.jsonl) as one
// run, a sweep directory (sweep.json) as its points that have run plus its
// table. Fails with a message naming DIR when it is neither or cannot be read;
// `usage` is set when the failure is the argument's (no such directory, no
// run there) rather than a file's.
Status add_directory(Report& report, const std::string& dir, bool* usage);

// Makes the runs' labels unique ("mlp", "mlp (2)"): charts key lines by label.
void make_labels_unique(Report& report);

// The series names of every run, in the order the page shows them: the
// training loss and train/ metrics, evaluation metrics, schedules, the
// runtime's measurements, then diagnostics.
std::vector<std::string> series_order(const Report& report);

}  // namespace sexpgpu::report
