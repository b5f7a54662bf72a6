// StatusFile, RunStatus and resume_command (see status.h).
#include "run/status.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "util/atomic_file.h"

namespace sexpgpu::run {

namespace {

std::string this_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

template <class T>
json or_null(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

// Reads an optional key of type T; false when present with another type.
template <class T>
bool read_optional(const json& j, const char* key, std::optional<T>& out) {
  if (!j.contains(key) || j[key].is_null()) return true;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!j[key].is_string()) return false;
  } else if constexpr (std::is_integral_v<T>) {
    if (!j[key].is_number_integer()) return false;
  } else {
    if (!j[key].is_number()) return false;
  }
  out = j[key].get<T>();
  return true;
}

std::string shell_quote(const std::string& word) {
  bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./:=,+@%", c);
  });
  if (plain) return word;
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

bool is_run_state(std::string_view s) {
  return std::find(kRunStates.begin(), kRunStates.end(), s) != kRunStates.end();
}

bool is_final_state(std::string_view s) {
  return s == "finished" || s == "stopped" || s == "preempted" || s == "failed" || s == "nonfinite";
}

json RunStatus::to_json() const {
  return {{"state", state},
          {"step", or_null(step)},
          {"steps", or_null(steps)},
          {"stage", stage},
          {"metrics", metrics},
          {"eval", eval},
          {"throughput", throughput},
          {"eta_s", or_null(eta_s)},
          {"last_checkpoint", last_checkpoint},
          {"pid", pid},
          {"host", host},
          {"started", started},
          {"updated", updated},
          {"exit_code", or_null(exit_code)},
          {"error", error},
          {"summary", summary},
          {"next", or_null(next)}};
}

ir::Result<RunStatus> RunStatus::from_json(const json& j) {
  using R = ir::Result<RunStatus>;
  if (!j.is_object()) return R::failure("the status is not a JSON object");
  RunStatus s;
  if (!j.contains("state") || !j["state"].is_string() ||
      !is_run_state(j["state"].get<std::string>()))
    return R::failure("the status has no known state (" +
                      (j.contains("state") ? j["state"].dump() : std::string("none")) + ")");
  s.state = j["state"].get<std::string>();
  std::optional<std::string> host, started, updated;
  std::optional<int64_t> pid;
  if (!read_optional(j, "step", s.step) || !read_optional(j, "steps", s.steps) ||
      !read_optional(j, "eta_s", s.eta_s) || !read_optional(j, "exit_code", s.exit_code) ||
      !read_optional(j, "next", s.next) || !read_optional(j, "pid", pid) ||
      !read_optional(j, "host", host) || !read_optional(j, "started", started) ||
      !read_optional(j, "updated", updated))
    return R::failure("a status field has the wrong type");
  s.pid = pid.value_or(0);
  s.host = host.value_or("");
  s.started = started.value_or("");
  s.updated = updated.value_or("");
  auto object_or = [&](const char* key, json fallback) {
    return j.contains(key) && !j[key].is_null() ? j[key] : fallback;
  };
  s.stage = object_or("stage", nullptr);
  s.metrics = object_or("metrics", json::object());
  s.eval = object_or("eval", json::object());
  s.throughput = object_or("throughput", json::object());
  s.last_checkpoint = object_or("last_checkpoint", nullptr);
  s.error = object_or("error", nullptr);
  s.summary = object_or("summary", nullptr);
  return s;
}

StatusFile::StatusFile(std::string path, Clock clock)
    : path_(std::move(path)), clock_(std::move(clock)) {
  if (!clock_) clock_ = [] { return std::chrono::system_clock::now(); };
  status_.pid = ::getpid();
  status_.host = this_host();
  status_.started = rfc3339_utc(clock_());
}

std::string StatusFile::write() {
  status_.updated = rfc3339_utc(clock_());
  if (path_.empty()) return "";
  std::string error;
  if (!write_file_atomic(path_, status_.to_json().dump(2) + "\n", &error)) return error;
  return "";
}

std::string StatusFile::set_state(const std::string& state) {
  if (!is_run_state(state)) return "'" + state + "' is not a run state";
  status_.state = state;
  return write();
}

std::string StatusFile::on_step(int64_t step, const json& metrics, const json& throughput,
                                std::optional<double> eta_s) {
  status_.step = step;
  status_.metrics = metrics;
  status_.throughput = throughput;
  status_.eta_s = eta_s;
  return write();
}

std::string StatusFile::on_eval(const std::string& pass, const json& metrics) {
  status_.eval[pass] = metrics;
  return write();
}

std::string StatusFile::on_checkpoint(int64_t step, const std::string& path) {
  status_.last_checkpoint = {{"step", step}, {"path", path}};
  return write();
}

std::string StatusFile::finish(const std::string& state, int exit_code, const json& summary,
                               const json& error, std::optional<std::string> next) {
  if (!is_final_state(state)) return "'" + state + "' is not a state a run ends in";
  status_.state = state;
  status_.exit_code = exit_code;
  status_.summary = summary;
  status_.error = error;
  status_.next = std::move(next);
  status_.eta_s.reset();
  return write();
}

ir::Result<RunStatus> read_status(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ir::Result<RunStatus>::failure(path + ": cannot open: " + std::strerror(errno));
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded()) return ir::Result<RunStatus>::failure(path + ": not JSON");
  ir::Result<RunStatus> s = RunStatus::from_json(j);
  if (!s) return ir::Result<RunStatus>::failure(path + ": " + s.error());
  return s;
}

std::string resume_command(const std::vector<std::string>& argv) {
  std::string out;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    if (w == "--fresh" || w.starts_with("--resume=")) continue;
    if (w == "--resume") {
      ++i;  // and its value
      continue;
    }
    out += (out.empty() ? "" : " ") + shell_quote(w);
  }
  return out + " --resume latest";
}

}  // namespace sexpgpu::run
