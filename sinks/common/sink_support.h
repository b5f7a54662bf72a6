// What the stock sink plugins (jsonl, csv) share: the error objects of the
// C ABI, the exception firewall every table entry goes through, run-relative
// paths, a stdio file that reports errno, and the event's `kind`.
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

#include "sexpgpu/plugin.h"

// The plugin's error object; the core frees it through error_destroy.
struct sg_error {
  sg_error_code code;
  std::string message;
};

namespace sexpgpu::sinks {

// Thrown inside a plugin and turned into an sg_error at the ABI boundary.
class SinkFailure : public std::runtime_error {
 public:
  SinkFailure(sg_error_code code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  sg_error_code code() const { return code_; }

 private:
  sg_error_code code_;
};

// An SG_ERROR_IO failure naming what was attempted, the path and errno's text.
[[noreturn]] void fail_io(const std::string& what, const std::string& path, int err);

// The error functions of a table (SG_ERROR_FUNCTIONS).
void error_destroy(sg_error* error);
void error_message(const sg_error* error, const char** out_message, size_t* out_len);
sg_error_code error_code(const sg_error* error);

// Runs `body` and turns whatever it throws into an error object whose
// message starts with `plugin`: no exception crosses the ABI.
sg_error* error_from_current_exception(const char* plugin) noexcept;
template <class Body>
sg_error* firewall(const char* plugin, Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (...) {
    return error_from_current_exception(plugin);
  }
}

// ARG as a path: absolute as is, else relative to the run directory (or to
// the working directory when there is no run directory).
std::string resolve_path(std::string_view run_dir, std::string_view arg);

// Creates `dir` and its parents; SG_ERROR_IO when it cannot.
void make_directories(const std::string& dir);

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
