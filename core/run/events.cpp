// EventLog and read_events (see events.h).
#include "run/events.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>

namespace sexpgpu::run {

namespace {

bool durable_kind(const std::string& kind) {
  return kind == "open" || kind == "checkpoint" || kind == "signal" || kind == "close";
}

// Whether a non-empty file's last byte is something other than a newline.
bool ends_mid_line(int fd) {
  off_t size = ::lseek(fd, 0, SEEK_END);
  if (size <= 0) return false;
  char last = '\n';
  return ::pread(fd, &last, 1, size - 1) == 1 && last != '\n';
}

bool write_line(int fd, const std::string& line) {
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(fd, line.data() + off, line.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

json merged(json fields, const json& more) {
  if (more.is_object())
    for (const auto& [k, v] : more.items()) fields[k] = v;
  return fields;
}

}  // namespace

std::string rfc3339_utc(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
  int millis = static_cast<int>(ms - secs * 1000);
  std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return buf;
}

std::string event_line(const std::string& kind, std::chrono::system_clock::time_point time,
                       std::optional<int64_t> step, const json& fields) {
  // Built by hand so kind, time and step lead, whatever the fields' order.
  std::string line = "{\"kind\":" + json(kind).dump() + ",\"time\":\"" + rfc3339_utc(time) + "\"";
  if (step) line += ",\"step\":" + std::to_string(*step);
  if (fields.is_object())
    for (const auto& [k, v] : fields.items())
      line += "," + json(k).dump() + ":" + v.dump(-1, ' ', false, json::error_handler_t::replace);
  return line + "}";
}

ir::Result<EventLog> EventLog::create(const std::string& path, Clock clock) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return ir::Result<EventLog>::failure(path +
                                         ": cannot open for appending: " + std::strerror(errno));
  if (ends_mid_line(fd) && !write_line(fd, "\n")) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return ir::Result<EventLog>::failure(path + ": cannot write: " + why);
  }
  if (!clock) clock = [] { return std::chrono::system_clock::now(); };
  return EventLog(path, fd, std::move(clock));
}

EventLog EventLog::discarding() {
  return EventLog("", -1, [] { return std::chrono::system_clock::now(); });
}

EventLog::EventLog(EventLog&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(other.fd_),
      clock_(std::move(other.clock_)),
      mirror_(std::move(other.mirror_)) {
  other.fd_ = -1;
}

EventLog& EventLog::operator=(EventLog&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    clock_ = std::move(other.clock_);
    mirror_ = std::move(other.mirror_);
    other.fd_ = -1;
  }
  return *this;
}

EventLog::~EventLog() {
  if (fd_ >= 0) ::close(fd_);
}

std::string EventLog::append(const std::string& kind, std::optional<int64_t> step,
                             const json& fields) {
  if (!fields.is_null() && !fields.is_object())
    return path_ + ": the fields of a '" + kind + "' event must be an object";
  if (fields.is_object())
    for (const auto& [k, v] : fields.items())
      if (k == "kind" || k == "time" || k == "step")
        return path_ + ": a '" + kind + "' event may not set '" + k + "' in its fields";
  if (path_.empty()) return "";  // discarding()
  std::string line = event_line(kind, clock_(), step, fields) + "\n";
  if (!write_line(fd_, line)) return path_ + ": cannot append: " + std::strerror(errno);
  if (durable_kind(kind) && ::fdatasync(fd_) != 0)
    return path_ + ": cannot sync: " + std::strerror(errno);
  if (mirror_) mirror_(line.substr(0, line.size() - 1));
  return "";
}

std::string EventLog::open(const json& metadata, const json& resumed_from) {
  json fields = metadata.is_object() ? metadata : json::object();
  if (!resumed_from.is_null()) fields["resumed_from"] = resumed_from;
  return append("open", std::nullopt, fields);
}

std::string EventLog::stage(int64_t step, const std::string& name, int64_t index,
                            const json& loaders) {
  return append("stage", step, {{"stage", name}, {"index", index}, {"loaders", loaders}});
}

std::string EventLog::step(int64_t step, const json& metrics, const json& more) {
  return append("step", step, merged({{"metrics", metrics}}, more));
}

std::string EventLog::eval(int64_t step, const std::string& name, const json& metrics,
                           int64_t batches, int64_t examples, double ms) {
  return append("eval", step,
                {{"name", name},
                 {"metrics", metrics},
                 {"batches", batches},
                 {"examples", examples},
                 {"ms", ms}});
}

std::string EventLog::diag(int64_t step, const std::string& name, const json& values) {
  return append("diag", step, {{"name", name}, {"values", values}});
}

std::string EventLog::checkpoint(int64_t step, const std::string& path, uint64_t bytes, double ms,
                                 const std::vector<std::string>& kept,
                                 const std::vector<std::string>& removed) {
  return append(
      "checkpoint", step,
      {{"path", path}, {"bytes", bytes}, {"ms", ms}, {"kept", kept}, {"removed", removed}});
}

std::string EventLog::warning(std::optional<int64_t> step, const std::string& code,
                              const std::string& message, const json& more) {
  return append("warning", step, merged({{"code", code}, {"message", message}}, more));
}

std::string EventLog::annotation(std::optional<int64_t> step, const std::string& text,
                                 const json& data) {
  return append("annotation", step, {{"text", text}, {"data", data}});
}

std::string EventLog::target(int64_t step, const std::string& metric, const std::string& op,
                             double value) {
  return append("target", step,
                {{"metric", metric}, {"op", op}, {"value", value}, {"reached", true}});
}

std::string EventLog::signal(int64_t step, const std::string& signal, const std::string& action) {
  return append("signal", step, {{"signal", signal}, {"action", action}});
}

std::string EventLog::close(int64_t step, const std::string& state, int exit_code,
                            const json& summary, const json& error) {
  json fields = {{"state", state}, {"exit_code", exit_code}, {"summary", summary}};
  if (!error.is_null()) fields["error"] = error;
  return append("close", step, fields);
}

ir::Result<std::vector<json>> read_events(const std::string& path) {
  using R = ir::Result<std::vector<json>>;
  std::ifstream in(path, std::ios::binary);
  if (!in) return R::failure(path + ": cannot open: " + std::strerror(errno));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
  std::vector<json> parsed(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) parsed[i] = json::parse(lines[i], nullptr, false);
  std::vector<json> events;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    if (parsed[i].is_object()) {
      events.push_back(std::move(parsed[i]));
      continue;
    }
    // A line cut short by a crash is the last one, or (once the run resumed)
    // the one before the resume's open event.
    size_t next = i + 1;
    while (next < lines.size() && lines[next].empty()) ++next;
    bool cut_short = next == lines.size() ||
                     (parsed[next].is_object() && parsed[next].value("kind", "") == "open");
    if (!cut_short) return R::failure(path + ":" + std::to_string(i + 1) + ": not a JSON object");
  }
  return events;
}

}  // namespace sexpgpu::run
