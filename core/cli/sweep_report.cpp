// What `sexpgpu sweep` writes for others to read: sweep.json (atomically,
// after every point), the closing table on standard output, and the live
// line on standard error (see sweep.h, docs/sweep.md).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <set>

#include "cli/sweep.h"
#include "cli/verbs.h"
#include "run/events.h"
#include "util/atomic_file.h"

namespace sexpgpu::cli {

namespace {

std::string number(const ojson& v) {
  if (!v.is_number()) return v.is_null() ? "-" : v.dump();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v.get<double>());
  return buf;
}

const ojson& field(const ojson& j, const char* key) {
  static const ojson null = nullptr;
  return j.is_object() && j.contains(key) ? j[key] : null;
}

}  // namespace

std::string SweepPoint::label() const {
  std::string out;
  for (const auto& [k, v] : knobs) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out;
}

ojson sweep_json(const SweepRecord& r) {
  ojson points = ojson::array();
  for (const SweepPoint& p : r.points) {
    ojson knobs = ojson::object();
    for (const auto& [k, v] : p.knobs) knobs[k] = v;
    const ojson& s = p.summary;
    points.push_back({{"index", p.index},
                      {"knobs", knobs},
                      {"slug", p.slug},
                      {"run_dir", p.run_dir},
                      {"state", p.state},
                      {"action", p.action.empty() ? ojson(nullptr) : ojson(p.action)},
                      {"exit_code", p.exit_code ? ojson(*p.exit_code) : ojson(nullptr)},
                      {"steps", field(s, "steps")},
                      {"final", s.is_object() ? field(s, "final") : ojson(nullptr)},
                      {"best", field(s, "best")},
                      {"target", field(s, "target")},
                      {"error", p.error}});
  }
  return {
      {"sweep", r.sweep},         {"file", r.file},
      {"file_hash", r.file_hash}, {"dir", r.dir},
      {"state", r.state},         {"exit_code", r.exit_code ? ojson(*r.exit_code) : ojson(nullptr)},
      {"from", r.from},           {"jobs", r.jobs},
      {"started", r.started},     {"updated", r.updated},
      {"command", r.command},     {"points", points}};
}

std::string write_sweep_json(SweepRecord& r) {
  r.updated = run::rfc3339_utc(std::chrono::system_clock::now());
  std::string error;
  if (!write_file_atomic(r.dir + "/sweep.json", sweep_json(r).dump(2) + "\n", &error)) return error;
  return "";
}

std::string sweep_table(const SweepRecord& r) {
  // Columns: point, each knob, each metric with a best (its final value
  // and its best with the step), target, state, run directory.
  std::vector<std::string> knob_names, metrics;
  std::set<std::string> seen;
  if (!r.points.empty())
    for (const auto& [k, v] : r.points[0].knobs) knob_names.push_back(k);
  for (const SweepPoint& p : r.points)
    if (const ojson& best = field(p.summary, "best"); best.is_object())
      for (const auto& [name, b] : best.items())
        if (seen.insert(name).second) metrics.push_back(name);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head = {"point"};
  head.insert(head.end(), knob_names.begin(), knob_names.end());
  for (const std::string& m : metrics) head.push_back(m + " (best@step)");
  for (const char* h : {"target", "state", "run directory"}) head.push_back(h);
  rows.push_back(head);
  for (const SweepPoint& p : r.points) {
    std::vector<std::string> row = {std::to_string(p.index)};
    for (const auto& [k, v] : p.knobs) row.push_back(v);
    for (const std::string& m : metrics) {
      const ojson& fin = field(field(p.summary, "final"), m.c_str());
      const ojson& best = field(field(p.summary, "best"), m.c_str());
      std::string cell = number(fin);
      if (best.is_object())
        cell += " (" + number(field(best, "value")) + "@" + number(field(best, "step")) + ")";
      row.push_back(cell);
    }
    const ojson& t = field(p.summary, "target");
    row.push_back(!t.is_object()                ? "-"
                  : field(t, "reached") == true ? "reached@" + number(field(t, "step"))
                                                : "not reached");
    row.push_back(p.state);
    row.push_back(p.run_dir);
    rows.push_back(row);
  }
  std::vector<size_t> width(head.size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  size_t finished = 0;
  for (const SweepPoint& p : r.points) finished += p.state == "finished";
  std::string out = "sweep " + r.sweep + " of " + r.file + ": " + r.state + ", " +
                    std::to_string(finished) + "/" + std::to_string(r.points.size()) +
                    " points finished, in " + r.dir + "\n";
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i)
      line += row[i] + (i + 1 < row.size() ? std::string(width[i] - row[i].size() + 2, ' ') : "");
    out += line + "\n";
  }
  return out;
}

LiveLine::LiveLine() : tty_(isatty(STDERR_FILENO)), quiet_(quiet()) {}

void LiveLine::progress(const SweepPoint& p, size_t points) {
  if (quiet_) return;
  std::string line = "point " + std::to_string(p.index) + "/" + std::to_string(points) + " " +
                     p.label() + ": step " + std::to_string(p.step) + "/" + std::to_string(p.steps);
  if (const ojson& loss = field(p.metrics, "train/loss"); !loss.is_null())
    line += "  loss " + number(loss);
  if (const ojson& ms = field(p.metrics, "step-ms"); !ms.is_null())
    line += "  " + number(ms) + " ms/step";
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    shown_ = true;
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

void LiveLine::say(const std::string& line) {
  if (quiet_) return;
  clear();
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

void LiveLine::clear() {
  if (shown_) std::fprintf(stderr, "\r\033[K");
  shown_ = false;
}

}  // namespace sexpgpu::cli
