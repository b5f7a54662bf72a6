// The `tensorboard` sink plugin: `--sink tensorboard[:DIR]` writes the run's
// series as a TensorBoard event file in DIR (default: the run directory; a
// relative DIR is relative to it), so that `tensorboard --logdir runs`
// shows every run. One file per session of the run
// (events.out.tfevents.SECONDS.HOST.PID.N, TensorBoard's naming), holding:
//   - the file_version record "brain.Event:2";
//   - on a resume, a SessionLog START at the first step run again, so that
//     TensorBoard drops the values of the steps the resume repeats;
//   - the `open` event as the text summary "open" (its JSON, pretty);
//   - one Event per `step` and `eval` event: a scalar per numeric metric,
//     at the event's step and wall time.
// Other kinds are ignored. Records go to the disk through a writer thread
// (event_file_writer.h) that never holds up the run.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/sink_support.h"
#include "sexpgpu/sdk/log.h"
#include "sexpgpu/sdk/sink.h"
#include "tensorboard/event_file_writer.h"
#include "tensorboard/summaries.h"
#include "tensorboard/tfrecord.h"

namespace sexpgpu::sinks::tensorboard {
namespace {

using nlohmann::ordered_json;

// Records waiting for the disk beyond this are dropped (a step's record is
// about 30 bytes per series, so this is some 100 000 steps behind).
constexpr size_t kMaxPendingBytes = size_t{32} << 20;

// Seconds since the epoch of an RFC 3339 time ("2026-12-02T14:48:35.197Z",
// or with an offset "+01:00"), or nothing when `text` is not one.
std::optional<double> rfc3339_seconds(const std::string& text) {
  int year, month, day, hour, minute, second, used = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute,
                  &second, &used) != 6 ||
      used != 19)
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
    return std::nullopt;
  size_t i = 19;
  double fraction = 0;
  if (i < text.size() && text[i] == '.') {
    double scale = 0.1;
    size_t digits = 0;
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits, scale /= 10)
      fraction += (text[i] - '0') * scale;
    if (digits == 0) return std::nullopt;
  }
  long offset_s = 0;
  if (i < text.size() && (text[i] == 'Z' || text[i] == 'z')) {
    ++i;
  } else if (i + 6 == text.size() && (text[i] == '+' || text[i] == '-') && text[i + 3] == ':') {
    int oh, om;
    if (std::sscanf(text.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2 || oh > 23 || om > 59)
      return std::nullopt;
    offset_s = (oh * 60L + om) * 60L * (text[i] == '-' ? -1 : 1);
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != text.size()) return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<double>(::timegm(&tm) - offset_s) + fraction;
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// A host name fit for a file name: what is not [A-Za-z0-9._-] becomes '_'.
std::string file_name_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  std::string host(buf);
  for (char& c : host)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  return host;
}

class TensorboardSink {
 public:
  static constexpr const char* kName = "tensorboard";
  static constexpr const char* kVersion = "1.0.0";

  explicit TensorboardSink(const sdk::SinkOpen& open) {
    ordered_json opened =
        open.open_event.empty() ? ordered_json::object() : parse_event(open.open_event);
    std::optional<double> opened_at = time_of(opened);
    double wall = opened_at ? *opened_at : now_seconds();
    writer_ = create_file(directory(open.run_dir, open.arg), wall);
    append(file_version_event(wall));
    int64_t text_step = 0;
    auto resumed = opened.find("resumed_from");
    if (resumed != opened.end() && resumed->is_object()) {
      auto step = resumed->find("step");
      if (step != resumed->end() && step->is_number_unsigned() &&
          step->get<uint64_t>() < uint64_t(INT64_MAX)) {
        text_step = step->get<int64_t>();
        append(session_start_event(wall, text_step + 1));
      }
    }
    if (!open.open_event.empty())
      append(text_event(wall, text_step, "open", "```json\n" + opened.dump(2) + "\n```\n"));
  }

  void event(std::string_view line) {
    writer_->check();
    std::string kind = event_kind(line);
    if (kind != "step" && kind != "eval") return;
    ordered_json event = parse_event(line);
    int64_t step = step_of(event, kind);
    std::optional<double> wall = time_of(event);
    if (!wall)
      throw Failure(
          SG_ERROR_INVALID_ARGUMENT,
          article(kind) + kind + " event needs an RFC 3339 `time`, got: " + line_start(line));
    std::vector<std::pair<std::string, double>> scalars;
    auto metrics = event.find("metrics");
    if (metrics != event.end() && !metrics->is_null()) {
      if (!metrics->is_object())
        throw Failure(SG_ERROR_INVALID_ARGUMENT, "an event's `metrics` must be an object, got: " +
                                                     metrics->dump().substr(0, 80));
      // null (a non-finite value in JSON), booleans, strings: not scalars.
      for (const auto& [name, value] : metrics->items())
        if (value.is_number()) scalars.emplace_back(name, value.get<double>());
    }
    if (!scalars.empty()) append(scalars_event(*wall, step, scalars));
  }

  // Records reach the disk as the writer thread gets to them; flush never
  // waits for a slow disk, it reports a write that failed.
  void flush() { writer_->check(); }

  void close() {
    std::exception_ptr failure;
    try {
      writer_->close();
    } catch (...) {
      failure = std::current_exception();
    }
    if (uint64_t n = writer_->dropped_records())
      sdk::log(SG_LOG_WARN, "tensorboard: " + std::to_string(n) + " records (" +
                                std::to_string(writer_->dropped_bytes()) + " bytes) of " +
                                writer_->path() +
                                " were dropped while the disk was behind; events.jsonl has them");
    if (failure) std::rethrow_exception(failure);
  }

 private:
  static std::string article(const std::string& kind) { return kind == "eval" ? "an " : "a "; }
  static std::string line_start(std::string_view line) { return std::string(line.substr(0, 80)); }

  static std::optional<double> time_of(const ordered_json& event) {
    auto t = event.find("time");
    if (t == event.end() || !t->is_string()) return std::nullopt;
    return rfc3339_seconds(t->get<std::string>());
  }

  static int64_t step_of(const ordered_json& event, const std::string& kind) {
    auto s = event.find("step");
    if (s == event.end() || !s->is_number_unsigned() || s->get<uint64_t>() > uint64_t(INT64_MAX))
      throw Failure(SG_ERROR_INVALID_ARGUMENT,
                    article(kind) + kind +
                        " event needs a `step`, an integer from 0 to 2^63-1, got: " +
                        (s == event.end() ? std::string("none") : s->dump()));
    return s->get<int64_t>();
  }

  static std::string directory(std::string_view run_dir, std::string_view arg) {
    if (arg.empty() && run_dir.empty())
      throw Failure(SG_ERROR_INVALID_ARGUMENT,
                    "no run directory and no --sink tensorboard:DIR to write the event file in");
    std::string dir = arg.empty() ? std::string(run_dir) : resolve_path(run_dir, arg);
    make_directories(dir);
    return dir;
  }

  // A new file named as TensorFlow names them; N counts up past a name
  // that is taken (two sessions of one process in one second).
  static std::unique_ptr<EventFileWriter> create_file(const std::string& dir, double wall) {
    std::string stem = "events.out.tfevents." + std::to_string(static_cast<int64_t>(wall)) + "." +
                       file_name_host() + "." + std::to_string(::getpid()) + ".";
    for (int n = 0;; ++n) {
      std::string path = (std::filesystem::path(dir) / (stem + std::to_string(n))).string();
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd >= 0) return std::make_unique<EventFileWriter>(path, fd, kMaxPendingBytes);
      if (errno != EEXIST || n == 999) fail_io("cannot create", path, errno);
    }
  }

  void append(const std::string& event) {
    if (!writer_->append(tfrecord(event)) && writer_->dropped_records() == 1)
      sdk::log(SG_LOG_WARN, "tensorboard: the disk is behind by more than " +
                                std::to_string(kMaxPendingBytes >> 20) + " MiB writing " +
                                writer_->path() + "; dropping records until it catches up");
  }

  std::unique_ptr<EventFileWriter> writer_;
};

}  // namespace
}  // namespace sexpgpu::sinks::tensorboard

SEXPGPU_SDK_ENTRY(sexpgpu::sdk::SinkPlugin<sexpgpu::sinks::tensorboard::TensorboardSink>::kPlugin)
