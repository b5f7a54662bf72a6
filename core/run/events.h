// events.jsonl: one JSON object per line, appended as things happen
// (spec/observe.md, "JSONL events").
//
// Every line is {"kind", "time", "step" (where it applies), fields...}:
// kind, time and step first, then the kind's fields in name order. time is
// RFC 3339 UTC with milliseconds ("2025-01-02T03:04:05.678Z").
//
// Durability: each event is one write(2) on a file opened O_APPEND, so it is
// in the kernel when the call returns (a crash of the process, even
// SIGKILL, loses nothing) and lines from two writers (the run and `sexpgpu
// annotate`) never interleave. fdatasync follows only the events a resume or
// a post-mortem depends on: open, checkpoint, signal and close. Syncing
// every step event would cost a disk flush per log interval (milliseconds
// locally, far more on network filesystems) for events that only a power
// loss could take, and a checkpoint's event is synced anyway.
//
// Opening an existing file appends (a resumed run). If the file ends in a
// line cut short (a power loss mid-write), a newline is written first so the
// next event starts its own line; read_events skips that one broken line.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ir/types.h"

namespace sexpgpu::run {

using nlohmann::json;
using Clock = std::function<std::chrono::system_clock::time_point()>;

// "2025-01-02T03:04:05.678Z".
std::string rfc3339_utc(std::chrono::system_clock::time_point t);

// One event's line as EventLog writes it (without the newline): kind, time
// and step first, then the fields. For events of a run that has no
// events.jsonl (run --json failing before its directory is written).
std::string event_line(const std::string& kind, std::chrono::system_clock::time_point time,
                       std::optional<int64_t> step, const json& fields);

class EventLog {
 public:
  // Opens path for appending, creating it; clock defaults to the system's.
  static ir::Result<EventLog> create(const std::string& path, Clock clock = {});
  // A log that writes nothing and mirrors nothing: the events of a rank
  // other than 0 in a run of several processes (rank 0 writes the run's).
  static EventLog discarding();
  EventLog(EventLog&& other) noexcept;
  EventLog& operator=(EventLog&& other) noexcept;
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;
  ~EventLog();

  const std::string& path() const { return path_; }
  // Called with every line appended (without its newline), after it is
  // written: `run --json` mirrors events on standard output, sinks get them.
  void set_mirror(std::function<void(const std::string& line)> mirror) {
    mirror_ = std::move(mirror);
  }

  // Appends one event; fields must be an object (or null for none) and must
  // not hold kind, time or step. Returns "" or why the write failed.
  [[nodiscard]] std::string append(const std::string& kind, std::optional<int64_t> step,
                                   const json& fields);

  // One helper per kind of the table; extra fields may be merged in through
  // `more` (an object), since new fields may be added to any kind.
  [[nodiscard]] std::string open(const json& metadata, const json& resumed_from = nullptr);
  [[nodiscard]] std::string stage(int64_t step, const std::string& name, int64_t index,
                                  const json& loaders);
  [[nodiscard]] std::string step(int64_t step, const json& metrics, const json& more = nullptr);
  [[nodiscard]] std::string eval(int64_t step, const std::string& name, const json& metrics,
                                 int64_t batches, int64_t examples, double ms);
  [[nodiscard]] std::string diag(int64_t step, const std::string& name, const json& values);
  [[nodiscard]] std::string checkpoint(int64_t step, const std::string& path, uint64_t bytes,
                                       double ms, const std::vector<std::string>& kept,
                                       const std::vector<std::string>& removed);
  [[nodiscard]] std::string warning(std::optional<int64_t> step, const std::string& code,
                                    const std::string& message, const json& more = nullptr);
  [[nodiscard]] std::string annotation(std::optional<int64_t> step, const std::string& text,
                                       const json& data = nullptr);
  [[nodiscard]] std::string target(int64_t step, const std::string& metric, const std::string& op,
                                   double value);
  [[nodiscard]] std::string signal(int64_t step, const std::string& signal,
                                   const std::string& action);
  [[nodiscard]] std::string close(int64_t step, const std::string& state, int exit_code,
                                  const json& summary, const json& error = nullptr);

 private:
  EventLog(std::string path, int fd, Clock clock)
      : path_(std::move(path)), fd_(fd), clock_(std::move(clock)) {}
  std::string path_;
  int fd_ = -1;
  Clock clock_;
  std::function<void(const std::string&)> mirror_;
};

// Every event of a file, in order. A last line cut short is skipped (it is
// what a crash mid-write leaves); any other line that is not a JSON object
// is an error naming the file and line.
ir::Result<std::vector<json>> read_events(const std::string& path);

}  // namespace sexpgpu::run
