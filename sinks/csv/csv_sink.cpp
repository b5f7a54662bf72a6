// The `csv` sink plugin: `--sink csv[:DIR]` writes the run's step metrics to
// DIR/steps.csv (step, time, one column per metric) and its evaluations to
// DIR/eval.csv (step, time, name, one column per metric). DIR defaults to
// the run directory; a relative DIR is relative to it. Other event kinds
// are ignored. Columns and late metric names: csv_table.h.
#include <exception>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/sink_support.h"
#include "csv/csv_table.h"

namespace sexpgpu::sinks {
namespace {

constexpr const char* kName = "csv";
using nlohmann::ordered_json;

class CsvSink {
 public:
  explicit CsvSink(const std::string& dir)
      : steps_((std::filesystem::path(dir) / "steps.csv").string(), {"step", "time"}),
        evals_((std::filesystem::path(dir) / "eval.csv").string(), {"step", "time", "name"}) {}

  void write_event(std::string_view line) {
    ordered_json event = parse(line);
    auto kind_field = event.find("kind");
    std::string kind =
        kind_field != event.end() && kind_field->is_string() ? kind_field->get<std::string>() : "";
    if (kind == "step") steps_.append({cell(event, "step"), cell(event, "time")}, metrics(event));
    if (kind == "eval")
      evals_.append({cell(event, "step"), cell(event, "time"), cell(event, "name")},
                    metrics(event));
    if (!buffered_kind(kind)) flush();
  }
  void flush() {
    steps_.flush();
    evals_.flush();
  }
  // Closes both files even when the first fails; reports the first failure.
  void close() {
    std::exception_ptr first;
    for (CsvTable* table : {&steps_, &evals_}) {
      try {
        table->close();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
  }

 private:
  static ordered_json parse(std::string_view line) {
    ordered_json event = ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (event.is_discarded())
      throw SinkFailure(SG_ERROR_INVALID_ARGUMENT,
                        "an event is not JSON: " + std::string(line.substr(0, 80)));
    if (!event.is_object())
      throw SinkFailure(SG_ERROR_INVALID_ARGUMENT, "an event must be one JSON object, got: " +
                                                       std::string(line.substr(0, 80)));
    return event;
  }
  static std::string cell(const ordered_json& event, const char* field) {
    auto it = event.find(field);
    return it == event.end() ? "" : csv_cell(*it);
  }
  static ordered_json metrics(const ordered_json& event) {
    auto it = event.find("metrics");
    if (it == event.end() || it->is_null()) return ordered_json::object();
    if (!it->is_object())
      throw SinkFailure(SG_ERROR_INVALID_ARGUMENT,
                        "an event's `metrics` must be an object, got: " + it->dump());
    return *it;
  }

  CsvTable steps_;
  CsvTable evals_;
};

std::string directory(std::string_view run_dir, std::string_view arg) {
  if (arg.empty() && run_dir.empty())
    throw SinkFailure(SG_ERROR_INVALID_ARGUMENT,
                      "no run directory and no --sink csv:DIR to write steps.csv and eval.csv in");
  std::string dir = arg.empty() ? std::string(run_dir) : resolve_path(run_dir, arg);
  make_directories(dir);
  return dir;
}

sg_error* sink_open(const char* run_dir, size_t run_dir_len, const char*, size_t, const char* arg,
                    size_t arg_len, sg_sink** out_sink) {
  return firewall(kName, [&] {
    if (!out_sink) throw SinkFailure(SG_ERROR_INVALID_ARGUMENT, "open without out_sink");
    *out_sink = nullptr;
    auto sink = std::make_unique<CsvSink>(directory({run_dir, run_dir_len}, {arg, arg_len}));
    *out_sink = reinterpret_cast<sg_sink*>(sink.release());
  });
}

CsvSink& checked(sg_sink* sink) {
  if (!sink) throw SinkFailure(SG_ERROR_INVALID_ARGUMENT, "called with a NULL sink");
  return *reinterpret_cast<CsvSink*>(sink);
}

sg_error* sink_event(sg_sink* sink, const char* event, size_t event_len) {
  return firewall(kName, [&] { checked(sink).write_event({event, event_len}); });
}

sg_error* sink_flush(sg_sink* sink) {
  return firewall(kName, [&] { checked(sink).flush(); });
}

sg_error* sink_close(sg_sink* sink) {
  return firewall(kName, [&] {
    std::unique_ptr<CsvSink> owned(&checked(sink));  // freed even when close fails
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
