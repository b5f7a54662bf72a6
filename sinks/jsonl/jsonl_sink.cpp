// The `jsonl` sink plugin: `--sink jsonl:PATH` appends a copy of the run's
// events to PATH (e.g. on a shared disk), one JSON line each, the `open`
// event first. PATH is required; relative to the run directory unless
// absolute; its parent directories are created. Frequent events (step,
// diag) wait in the stdio buffer until the next flush; every other kind is
// flushed at once; close fsyncs. The file is appended to, as the run's own
// events.jsonl is, so a resumed run continues the same copy.
#include <filesystem>
#include <string>

#include "common/sink_support.h"
#include "sexpgpu/sdk/sink.h"

namespace sexpgpu::sinks {
namespace {

class JsonlSink {
 public:
  static constexpr const char* kName = "jsonl";
  static constexpr const char* kVersion = "1.0.0";

  explicit JsonlSink(const sdk::SinkOpen& open) : out_(destination(open.run_dir, open.arg), "a") {
    if (!open.open_event.empty()) event(open.open_event);
  }

  void event(std::string_view line) {
    out_.write(line);
    out_.write("\n");
    if (!buffered_kind(event_kind(line))) out_.flush();
  }
  void flush() { out_.flush(); }
  void close() { out_.close(); }

 private:
  static std::string destination(std::string_view run_dir, std::string_view arg) {
    if (arg.empty())
      throw Failure(SG_ERROR_INVALID_ARGUMENT,
                    "needs a destination file: --sink jsonl:PATH (PATH absolute, or relative "
                    "to the run directory)");
    std::string path = resolve_path(run_dir, arg);
    make_directories(std::filesystem::path(path).parent_path().string());
    return path;
  }

  OutputFile out_;
};

}  // namespace
}  // namespace sexpgpu::sinks

SEXPGPU_SDK_ENTRY(sexpgpu::sdk::SinkPlugin<sexpgpu::sinks::JsonlSink>::kPlugin)
