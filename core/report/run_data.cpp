// Reading run and sweep directories into a report's data (see run_data.h).
#include "report/run_data.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "run/events.h"

namespace sexpgpu::report {

namespace {

namespace fs = std::filesystem;

std::string text_of(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::string number_text(const json& v) {
  if (!v.is_number()) return v.dump();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v.get<double>());
  return buf;
}

// A diagnostic's values, flattened to "diag/NAME/KEY/SUBKEY" numbers.
// Histograms are left out: dozens of buckets are not series anyone reads
// one chart at a time (the events keep them).
void flatten(const json& v, const std::string& prefix,
             std::vector<std::pair<std::string, json>>& out) {
  if (v.is_number() || v.is_null()) {
    out.emplace_back(prefix, v);
    return;
  }
  if (!v.is_object()) return;
  for (const auto& [k, sub] : v.items())
    if (k.find("histogram") == std::string::npos) flatten(sub, prefix + "/" + k, out);
}

// The timeline's words for one event; "" for events the timeline leaves out.
std::string moment_kind(const json& e, bool first_open) {
  std::string kind = text_of(e, "kind");
  if (kind == "open") return first_open ? "start" : "resume";
  static const std::set<std::string> kept = {"stage",  "checkpoint", "target", "annotation",
                                             "signal", "warning",    "close"};
  return kept.count(kind) ? kind : "";
}

std::string moment_text(const json& e, const std::string& kind) {
  if (kind == "start") return "started: " + text_of(e, "slug") + " on " + text_of(e, "host");
  if (kind == "resume") {
    const json& r = e.value("resumed_from", json::object());
    return "resumed from step " + (r.contains("step") ? r["step"].dump() : std::string("?")) +
           (r.contains("checkpoint") && r["checkpoint"].is_string()
                ? " (" + r["checkpoint"].get<std::string>() + ")"
                : "");
  }
  if (kind == "stage")
    return "stage " + text_of(e, "stage") + " (index " + e.value("index", json()).dump() + ")";
  if (kind == "checkpoint") return "checkpoint " + text_of(e, "path");
  if (kind == "target")
    return "target reached: " + text_of(e, "metric") + " " + text_of(e, "op") + " " +
           number_text(e.value("value", json()));
  if (kind == "annotation") {
    std::string t = text_of(e, "text");
    if (e.contains("data") && !e["data"].is_null()) t += "  " + e["data"].dump();
    return t;
  }
  if (kind == "signal") return text_of(e, "signal") + ": " + text_of(e, "action");
  if (kind == "warning") return text_of(e, "code") + " " + text_of(e, "message");
  if (kind == "close") {
    std::string t = text_of(e, "state") + ", exit " + e.value("exit_code", json()).dump();
    if (e.contains("error") && e["error"].is_object())
      t += ": " + text_of(e["error"], "code") + " " + text_of(e["error"], "message");
    return t;
  }
  return "";
}

void add_point(RunData& run, const std::string& name, const char* source, const json& v,
               int64_t step, double wall_s) {
  if (!v.is_number() && !v.is_null()) return;
  Series& s = run.series[name];
  if (s.name.empty()) s.name = name, s.source = source;
  Point p{step, wall_s, std::nullopt};
  if (v.is_number()) p.value = v.get<double>();
  s.points.push_back(p);
}

std::optional<json> read_json_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

Status add_run(Report& report, const fs::path& dir) {
  auto events = run::read_events((dir / "events.jsonl").string());
  if (!events) return fail("", events.error());
  RunData run = run_from_events(*events, dir.string());
  if (auto status = read_json_file(dir / "status.json")) {
    run.status = *status;
    if (run.close.is_null() && run.status.is_object() && run.status.contains("state") &&
        run.status["state"].is_string())
      run.state = run.status["state"].get<std::string>();
  }
  report.runs.push_back(std::move(run));
  return ok_status();
}

}  // namespace

std::optional<double> parse_time(const std::string& text) {
  int y, mo, d, h, mi, s, consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &consumed) !=
      6)
    return std::nullopt;
  double frac = 0;
  size_t at = size_t(consumed);
  if (at < text.size() && text[at] == '.') {
    double scale = 0.1;
    for (++at; at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])); ++at)
      frac += (text[at] - '0') * scale, scale /= 10;
  }
  if (at >= text.size() || text[at] != 'Z') return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d;
  tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = s;
  return double(timegm(&tm)) + frac;
}

RunData run_from_events(const std::vector<json>& events, const std::string& dir) {
  RunData run;
  run.dir = dir;
  run.events = events.size();
  std::optional<double> start;
  for (const json& e : events) {
    std::string kind = text_of(e, "kind");
    std::optional<double> t = parse_time(text_of(e, "time"));
    if (!start && t) start = t;
    double wall = t && start ? *t - *start : 0;
    std::optional<int64_t> step;
    if (e.contains("step") && e["step"].is_number_integer()) step = e["step"].get<int64_t>();

    bool first_open = kind == "open" && run.opens.empty();
    if (kind == "open") {
      run.opens.push_back(e);
      // A resume goes back to its checkpoint's step: what was reported past
      // it is reported again by this session.
      if (!first_open && e.contains("resumed_from") && e["resumed_from"].is_object() &&
          e["resumed_from"].contains("step") && e["resumed_from"]["step"].is_number_integer()) {
        int64_t back_to = e["resumed_from"]["step"].get<int64_t>();
        for (auto& [name, s] : run.series)
          std::erase_if(s.points, [&](const Point& p) { return p.step > back_to; });
      }
    }
    if (kind == "close") run.close = e;
    if (step && (kind == "step" || kind == "eval") && e.contains("metrics") &&
        e["metrics"].is_object())
      for (const auto& [name, v] : e["metrics"].items())
        add_point(run, name, kind == "step" ? "step" : "eval", v, *step, wall);
    if (step && kind == "diag" && e.contains("values")) {
      std::vector<std::pair<std::string, json>> flat;
      flatten(e["values"], "diag/" + text_of(e, "name"), flat);
      for (const auto& [name, v] : flat) add_point(run, name, "diag", v, *step, wall);
    }
    std::string moment = moment_kind(e, first_open);
    if (!moment.empty())
      run.timeline.push_back({moment, step, wall, text_of(e, "time"), moment_text(e, moment), e});
  }
  for (auto it = run.series.begin(); it != run.series.end();)
    it = it->second.points.empty() ? run.series.erase(it) : std::next(it);
  const json* first = run.opens.empty() ? nullptr : &run.opens.front();
  run.label = first ? text_of(*first, "slug") : "";
  if (run.label.empty()) {
    fs::path normal = fs::path(dir).lexically_normal();  // "runs/a/" ends in an empty name
    run.label = (normal.has_filename() ? normal : normal.parent_path()).filename().string();
  }
  if (run.label.empty()) run.label = dir;
  run.state = run.close.is_object() ? text_of(run.close, "state") : "running";
  return run;
}

Status add_directory(Report& report, const std::string& dir, bool* usage) {
  *usage = false;
  fs::path path(dir);
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    *usage = true;
    return fail("", dir + (fs::exists(path, ec) ? ": not a directory" : ": no such run directory"));
  }
  if (fs::exists(path / "events.jsonl", ec)) return add_run(report, path);
  if (!fs::exists(path / "sweep.json", ec)) {
    *usage = true;
    return fail("", dir + " holds no run (no events.jsonl) and no sweep (no sweep.json)");
  }
  std::optional<json> sweep = read_json_file(path / "sweep.json");
  if (!sweep || !sweep->is_object())
    return fail("", (path / "sweep.json").string() + ": cannot be read as JSON");
  SweepData data{dir, *sweep, {}};
  const json& points = sweep->value("points", json::array());
  for (const json& p : points) {
    // A point's run directory is inside the sweep directory, named by its
    // slug (docs/sweep.md); run_dir in sweep.json is as the sweep named it,
    // relative to where it ran.
    std::string slug = text_of(p, "slug");
    if (slug.empty() || slug.find('/') != std::string::npos || slug == "." || slug == "..")
      continue;
    fs::path point_dir = path / slug;
    if (!fs::exists(point_dir / "events.jsonl", ec)) continue;
    Status added = add_run(report, point_dir);
    if (!added) return added;
    data.runs.push_back(report.runs.size() - 1);
  }
  report.sweeps.push_back(std::move(data));
  return ok_status();
}

void make_labels_unique(Report& report) {
  std::map<std::string, int> seen;
  for (RunData& r : report.runs) {
    int n = ++seen[r.label];
    if (n > 1) r.label += " (" + std::to_string(n) + ")";
  }
}

std::vector<std::string> series_order(const Report& report) {
  std::set<std::string> names;
  std::map<std::string, std::string> source;
  for (const RunData& r : report.runs)
    for (const auto& [name, s] : r.series) names.insert(name), source.emplace(name, s.source);
  static const std::vector<std::string> measured = {
      "grad-norm", "step-ms", "examples-per-s", "tokens-per-s", "mfu", "memory-bytes", "epoch"};
  auto rank = [&](const std::string& n) -> int {
    if (n == "train/loss") return 0;
    if (n.starts_with("train/")) return 1;
    if (source[n] == "eval") return 2;
    if (source[n] == "diag") return 6;
    if (n.starts_with("lr/")) return 3;
    if (std::find(measured.begin(), measured.end(), n) != measured.end()) return 5;
    return 4;  // other schedules (momentum/default) and the file's own
  };
  std::vector<std::string> out(names.begin(), names.end());
  std::stable_sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) {
    int ra = rank(a), rb = rank(b);
    if (ra != rb) return ra < rb;
    if (ra == 5)
      return std::find(measured.begin(), measured.end(), a) <
             std::find(measured.begin(), measured.end(), b);
    return a < b;
  });
  return out;
}

}  // namespace sexpgpu::report
