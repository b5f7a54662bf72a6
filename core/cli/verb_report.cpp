// sexpgpu report RUN... [-o FILE] [--json]: one self-contained HTML file of
// runs (docs/report.md): a chart per series with every run overlaid, a
// sweep directory's points and table, each run's open metadata and summary,
// the events on a timeline. Exit codes: 0 written; 2 a RUN that is no run
// or sweep directory; 3 a file that cannot be read (events.jsonl, the
// charting library) or the page that cannot be written.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/verbs.h"
#include "report/page.h"
#include "report/run_data.h"
#include "run/events.h"
#include "util/atomic_file.h"

#ifndef SEXPGPU_VERSION
#define SEXPGPU_VERSION "0.0.0"
#endif

namespace sexpgpu::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A string field of sweep.json, which may have been edited by hand.
std::string text_field(const json& j, const char* key, const char* otherwise) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                : otherwise;
}

size_t points_of(const json& sweep) {
  return sweep.is_object() && sweep.contains("points") && sweep["points"].is_array()
             ? sweep["points"].size()
             : 0;
}

std::string title_of(const report::Report& r) {
  if (r.runs.empty() && r.sweeps.empty()) return "sexpgpu report";
  std::string names;
  size_t shown = 0;
  for (const report::SweepData& s : r.sweeps) {
    names += (names.empty() ? "" : ", ") + std::string("sweep ") +
             text_field(s.sweep, "sweep", "?") + " of " + text_field(s.sweep, "file", "?");
    ++shown;
  }
  std::vector<const report::RunData*> alone;
  for (size_t i = 0; i < r.runs.size(); ++i) {
    bool in_sweep = false;
    for (const report::SweepData& s : r.sweeps)
      for (size_t k : s.runs) in_sweep = in_sweep || k == i;
    if (!in_sweep) alone.push_back(&r.runs[i]);
  }
  size_t left = 0;
  for (const report::RunData* run : alone)
    if (shown < 4)
      names += (names.empty() ? "" : ", ") + run->label, ++shown;
    else
      ++left;
  if (left) names += " and " + std::to_string(left) + " more";
  return "sexpgpu report: " + names;
}

json summary_json(const std::string& path, const report::Report& r,
                  const std::vector<std::string>& series) {
  json runs = json::array();
  for (const report::RunData& run : r.runs)
    runs.push_back(
        {{"dir", run.dir}, {"label", run.label}, {"state", run.state}, {"events", run.events}});
  json sweeps = json::array();
  for (const report::SweepData& s : r.sweeps)
    sweeps.push_back({{"dir", s.dir},
                      {"sweep", text_field(s.sweep, "sweep", "")},
                      {"points", points_of(s.sweep)},
                      {"runs", s.runs.size()}});
  json drawn = json::array();
  for (const std::string& name : series) {
    size_t points = 0, in_runs = 0;
    std::string source;
    for (const report::RunData& run : r.runs)
      if (auto it = run.series.find(name); it != run.series.end())
        points += it->second.points.size(), ++in_runs, source = it->second.source;
    drawn.push_back({{"name", name}, {"source", source}, {"runs", in_runs}, {"points", points}});
  }
  return {{"path", path}, {"runs", runs}, {"sweeps", sweeps}, {"series", drawn}};
}

}  // namespace

void add_report(CLI::App& app, int& exit_code) {
  struct Opts {
    std::vector<std::string> runs;
    std::string out;
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("report", "write one self-contained HTML file charting runs (and sweeps)");
  cmd->add_option("run", opts->runs, "run directories or sweep directories")->required();
  cmd->add_option("-o,--out", opts->out,
                  "the HTML file to write (default: the first RUN's report.html)");
  cmd->add_flag("--json", opts->json, "print the path written and the series drawn as JSON");
  cmd->callback([opts, &exit_code]() {
    report::Report r;
    for (const std::string& dir : opts->runs) {
      bool usage = false;
      Status added = report::add_directory(r, dir, &usage);
      if (!added) {
        std::cerr << "sexpgpu report: " << added.error() << "\n";
        exit_code = usage ? kUsage : kRunFailed;
        return;
      }
    }
    report::make_labels_unique(r);
    const char* override_path = std::getenv("SEXPGPU_DYGRAPHS");
    Result<report::ChartLibrary> library =
        report::load_dygraphs(override_path ? override_path : "");
    if (!library) {
      std::cerr << "sexpgpu report: " << library.error() << "\n";
      exit_code = kRunFailed;
      return;
    }
    std::string out =
        opts->out.empty() ? (fs::path(opts->runs.front()) / "report.html").string() : opts->out;
    std::vector<std::string> series = report::series_order(r);
    json data = report::page_data(r, series, title_of(r), SEXPGPU_VERSION,
                                  run::rfc3339_utc(std::chrono::system_clock::now()));
    std::string error;
    if (!write_file_atomic(out, report::render_page(data, *library), &error)) {
      std::cerr << "sexpgpu report: cannot write " << out << ": " << error << "\n";
      exit_code = kRunFailed;
      return;
    }
    if (opts->json)
      std::cout << summary_json(out, r, series).dump() << "\n";
    else if (!quiet())
      std::cerr << "sexpgpu report: " << series.size() << " series of " << r.runs.size()
                << (r.runs.size() == 1 ? " run" : " runs") << " in " << out << "\n";
    exit_code = kOk;
  });
}

}  // namespace sexpgpu::cli
