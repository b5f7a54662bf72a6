// What the stock sink plugins (jsonl, csv) share beyond the plugin SDK
// (plugins/sdk: the error objects, the firewall, the table): run-relative
// paths, a stdio file that reports errno, and the event's `kind`.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "sexpgpu/sdk/errors.h"

namespace sexpgpu::sinks {

using sdk::Failure;

// An SG_ERROR_IO failure naming what was attempted, the path and errno's text.
[[noreturn]] void fail_io(const std::string& what, const std::string& path, int err);

// ARG as a path: absolute as is, else relative to the run directory (or to
// the working directory when there is no run directory).
std::string resolve_path(std::string_view run_dir, std::string_view arg);

// Creates `dir` and its parents; SG_ERROR_IO when it cannot.
void make_directories(const std::string& dir);

// An event line as a JSON object (key order kept); SG_ERROR_INVALID_ARGUMENT
// naming the line's start when it is not JSON or not an object.
nlohmann::ordered_json parse_event(std::string_view line);

// The top-level "kind" of an event line, "" when it has none or is not
// JSON. Reads only as far as the key, so long events cost little.
std::string event_kind(std::string_view event_json);

// Whether an event of this kind may wait in the stdio buffer until the next
// flush: the frequent ones (step, diag). Every other kind (open, eval,
// checkpoint, close, ...) is flushed as soon as it is written.
bool buffered_kind(std::string_view kind);

// A file written through stdio whose every failure is an SG_ERROR_IO naming
// the path and errno's text.
class OutputFile {
 public:
  // Opens `path` for appending ("a") or replacing ("w").
  OutputFile(std::string path, const char* mode);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::string& path() const { return path_; }
  void write(std::string_view bytes);
  void flush();
  // Flushes, fsyncs and closes; later calls do nothing.
  void close();

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace sexpgpu::sinks
