// The `jsonl` sink plugin: `--sink jsonl:PATH` appends a copy of the run's
// events to PATH (e.g. on a shared disk), one JSON line each, the `open`
// event first. PATH is required; relative to the run directory unless
// absolute; its parent directories are created. Frequent events (step,
// diag) wait in the stdio buffer until the next flush; every other kind is
// flushed at once; close fsyncs. The file is appended to, as the run's own
// events.jsonl is, so a resumed run continues the same copy.
#include <filesystem>
#include <memory>
#include <string>

#include "common/sink_support.h"

namespace sexpgpu::sinks {
namespace {

constexpr const char* kName = "jsonl";

class JsonlSink {
 public:
  explicit JsonlSink(const std::string& path) : out_(path, "a") {}

  void write_event(std::string_view line) {
    out_.write(line);
    out_.write("\n");
    if (!buffered_kind(event_kind(line))) out_.flush();
  }
  void flush() { out_.flush(); }
  void close() { out_.close(); }

 private:
  OutputFile out_;
};

std::string destination(std::string_view run_dir, std::string_view arg) {
  if (arg.empty())
    throw SinkFailure(SG_ERROR_INVALID_ARGUMENT,
                      "needs a destination file: --sink jsonl:PATH (PATH absolute, or relative "
                      "to the run directory)");
  std::string path = resolve_path(run_dir, arg);
  make_directories(std::filesystem::path(path).parent_path().string());
  return path;
}

sg_error* sink_open(const char* run_dir, size_t run_dir_len, const char* open_event,
                    size_t open_event_len, const char* arg, size_t arg_len, sg_sink** out_sink) {
  return firewall(kName, [&] {
    if (!out_sink) throw SinkFailure(SG_ERROR_INVALID_ARGUMENT, "open without out_sink");
    *out_sink = nullptr;
    std::string path = destination({run_dir, run_dir_len}, {arg, arg_len});
    auto sink = std::make_unique<JsonlSink>(path);
    if (open_event_len > 0) sink->write_event({open_event, open_event_len});
    *out_sink = reinterpret_cast<sg_sink*>(sink.release());
  });
}

JsonlSink& checked(sg_sink* sink) {
  if (!sink) throw SinkFailure(SG_ERROR_INVALID_ARGUMENT, "called with a NULL sink");
  return *reinterpret_cast<JsonlSink*>(sink);
}

sg_error* sink_event(sg_sink* sink, const char* event, size_t event_len) {
  return firewall(kName, [&] { checked(sink).write_event({event, event_len}); });
}

sg_error* sink_flush(sg_sink* sink) {
  return firewall(kName, [&] { checked(sink).flush(); });
}

sg_error* sink_close(sg_sink* sink) {
  return firewall(kName, [&] {
    std::unique_ptr<JsonlSink> owned(&checked(sink));  // freed even when close fails
    owned->close();
  });
}

const sg_sink_api kSinkApi = {sizeof(sg_sink_api), error_destroy, error_message,
                              error_code,          sink_open,     sink_event,
                              sink_flush,          sink_close,    nullptr /* extension */};

const sg_plugin kPlugin = {sizeof(sg_plugin), SG_ABI_MAJOR, SG_ABI_MINOR, SG_PLUGIN_SINK, kName,
                           "1.0.0",           &kSinkApi};

}  // namespace
}  // namespace sexpgpu::sinks

extern "C" const sg_plugin* sexpgpu_plugin_entry_v1(const sg_host_api* host) {
  // Uses none of the host's services; only refuses a table that is not one.
  if (!host || host->struct_size < offsetof(sg_host_api, extension)) return nullptr;
  return &sexpgpu::sinks::kPlugin;
}
