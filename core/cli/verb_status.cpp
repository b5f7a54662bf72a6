// sexpgpu status RUN [--json]: a run's status.json for people (or as it is,
// with --json): state, step, metrics, ETA, last checkpoint, and what to do
// next. Exit codes: 0 printed, 2 no status file there, 3 one that cannot be
// read. The run's own state is in the output, not in the exit code.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/bundle_run.h"
#include "cli/verbs.h"
#include "run/status.h"

namespace sexpgpu::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
constexpr int kIoFailure = kRunFailed;

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string duration(double s) {
  long long t = static_cast<long long>(s + 0.5);
  char buf[48];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, t / 60 % 60);
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%llds", t);
  return buf;
}

std::string values_text(const json& values) {
  std::string out;
  if (!values.is_object()) return out;
  for (const auto& [k, v] : values.items())
    out +=
        (out.empty() ? "" : "  ") + k + " " + (v.is_number() ? number(v.get<double>()) : v.dump());
  return out;
}

void line(const std::string& label, const std::string& text) {
  if (text.empty()) return;
  std::string l = label;
  l.append(label.size() < 12 ? 12 - label.size() : 1, ' ');
  std::cout << l << text << "\n";
}

// A run still "running" whose process is gone from this host died without
// closing (killed, or the machine went down).
bool process_gone(const run::RunStatus& s) {
  if (run::is_final_state(s.state) || s.pid <= 0) return false;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || s.host != host) return false;
  return ::kill(static_cast<pid_t>(s.pid), 0) != 0 && errno == ESRCH;
}

std::string next_advice(const run::RunStatus& s) {
  if (s.next) return *s.next;
  if (s.state == "failed")
    return "read the error above (events.jsonl has the run's history); fix it and run again, "
           "with --resume latest to continue from the last checkpoint";
  if (s.state == "nonfinite")
    return "the last good checkpoint is kept; lower the learning rate or clip gradients, or "
           "set :finite (:on-nonfinite :skip), then run again with --resume latest";
  return "";
}

void print_human(const std::string& run_dir, const run::RunStatus& s) {
  std::string state = s.state;
  if (s.exit_code) state += " (exit " + std::to_string(*s.exit_code) + ")";
  line("run", run_dir);
  line("state", state);
  if (process_gone(s))
    line("", "process " + std::to_string(s.pid) +
                 " is not running: the run ended without closing (killed?)");
  std::string step;
  if (s.step) step = std::to_string(*s.step);
  if (s.step && s.steps && *s.steps > 0)
    step += " / " + std::to_string(*s.steps) + " (" +
            number(100.0 * static_cast<double>(*s.step) / static_cast<double>(*s.steps)) + "%)";
  if (s.stage.is_string())
    step += (step.empty() ? "" : "   ") + ("stage " + s.stage.get<std::string>());
  line("step", step);
  line("metrics", values_text(s.metrics));
  for (const auto& [pass, metrics] : s.eval.items()) line("eval " + pass, values_text(metrics));
  line("throughput", values_text(s.throughput));
  if (s.eta_s) line("eta", duration(*s.eta_s));
  if (s.last_checkpoint.is_object())
    line("checkpoint", "step " + s.last_checkpoint.value("step", json()).dump() + "  " +
                           s.last_checkpoint.value("path", std::string()));
  line("updated", s.updated + (s.pid ? "  (pid " + std::to_string(s.pid) + " on " + s.host + ")"
                                     : std::string()));
  if (s.error.is_object())
    line("error",
         s.error.value("code", std::string("")) + ": " + s.error.value("message", std::string("")));
  if (s.summary.is_object()) {
    line("final", values_text(s.summary.value("final", json::object())));
    std::string best;
    json best_j = s.summary.value("best", json::object());
    for (const auto& [k, b] : best_j.items())
      best += (best.empty() ? "" : "  ") + k + " " + number(b.value("value", 0.0)) + " @" +
              b.value("step", json()).dump();
    line("best", best);
    const json& t = s.summary.contains("target") ? s.summary["target"] : json();
    if (t.is_object())
      line("target", t.value("metric", std::string()) + " " + t.value("op", std::string()) + " " +
                         number(t.value("value", 0.0)) + ": " +
                         (t.value("reached", false) ? "reached at step " + t["step"].dump()
                                                    : std::string("not reached")));
  }
  line("next", next_advice(s));
}

// A bundle directory (docs/bundle.md) stands for its one run under
// runs/; "" (after saying why) when it has none or several.
std::string bundle_run(const std::string& arg) {
  std::vector<std::string> runs;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(fs::path(arg) / "runs", ec))
    if (fs::exists(e.path() / "status.json", ec)) runs.push_back(e.path().string());
  std::sort(runs.begin(), runs.end());
  if (runs.size() == 1) return runs.front();
  if (runs.empty()) {
    std::cerr << "sexpgpu status: bundle " << arg << " has no run yet (start "
              << (fs::path(arg) / "run.sh").string() << ")\n";
  } else {
    std::cerr << "sexpgpu status: bundle " << arg << " holds " << runs.size()
              << " runs; name one:\n";
    for (const std::string& r : runs) std::cerr << "  sexpgpu status " << r << "\n";
  }
  return "";
}

int status_verb(std::string arg, bool as_json) {
  if (is_bundle(arg)) {
    arg = bundle_run(arg);
    if (arg.empty()) return kUsage;
  }
  fs::path p(arg);
  std::error_code ec;
  fs::path file = fs::is_directory(p, ec) ? p / "status.json" : p;
  if (!fs::exists(p, ec)) {
    std::cerr << "sexpgpu status: " << arg
              << ": no such run directory (runs are under $SEXPGPU_RUNS, default ./runs)\n";
    return kUsage;
  }
  if (!fs::exists(file, ec)) {
    std::cerr << "sexpgpu status: " << file.string()
              << ": no status file (is this a run directory? runs are under $SEXPGPU_RUNS, "
                 "default ./runs)\n";
    return kUsage;
  }
  auto s = run::read_status(file.string());
  if (!s) {
    std::cerr << "sexpgpu status: " << s.error() << "\n";
    return kIoFailure;
  }
  if (as_json) {
    std::ifstream in(file, std::ios::binary);
    std::cout << json::parse(in, nullptr, false).dump(2) << "\n";  // as the run wrote it
  } else {
    print_human(fs::is_directory(p, ec) ? p.string() : p.parent_path().string(), *s);
  }
  return kOk;
}

}  // namespace

void add_status(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string run;
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("status", "a run's status: state, step, metrics, ETA, next");
  cmd->add_option("run", opts->run,
                  "the run directory (or its status.json, or a bundle with one run)")
      ->required();
  cmd->add_flag("--json", opts->json, "status.json as the run wrote it");
  cmd->callback([opts, &exit_code] { exit_code = status_verb(opts->run, opts->json); });
}

}  // namespace sexpgpu::cli
