// The `csv` sink plugin: `--sink csv[:DIR]` writes the run's step metrics to
// DIR/steps.csv (step, time, one column per metric) and its evaluations to
// DIR/eval.csv (step, time, name, one column per metric). DIR defaults to
// the run directory; a relative DIR is relative to it. Other event kinds
// are ignored. Columns and late metric names: csv_table.h.
#include <exception>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "common/sink_support.h"
#include "csv/csv_table.h"
#include "sexpgpu/sdk/sink.h"

namespace sexpgpu::sinks {
namespace {

using nlohmann::ordered_json;

class CsvSink {
 public:
  static constexpr const char* kName = "csv";
  static constexpr const char* kVersion = "1.0.0";

  explicit CsvSink(const sdk::SinkOpen& open) : CsvSink(directory(open.run_dir, open.arg)) {}

  void event(std::string_view line) {
    ordered_json event = parse_event(line);
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
  explicit CsvSink(const std::string& dir)
      : steps_((std::filesystem::path(dir) / "steps.csv").string(), {"step", "time"}),
        evals_((std::filesystem::path(dir) / "eval.csv").string(), {"step", "time", "name"}) {}

  static std::string directory(std::string_view run_dir, std::string_view arg) {
    if (arg.empty() && run_dir.empty())
      throw Failure(SG_ERROR_INVALID_ARGUMENT,
                    "no run directory and no --sink csv:DIR to write steps.csv and eval.csv in");
    std::string dir = arg.empty() ? std::string(run_dir) : resolve_path(run_dir, arg);
    make_directories(dir);
    return dir;
  }
  static std::string cell(const ordered_json& event, const char* field) {
    auto it = event.find(field);
    return it == event.end() ? "" : csv_cell(*it);
  }
  static ordered_json metrics(const ordered_json& event) {
    auto it = event.find("metrics");
    if (it == event.end() || it->is_null()) return ordered_json::object();
    if (!it->is_object())
      throw Failure(SG_ERROR_INVALID_ARGUMENT,
                    "an event's `metrics` must be an object, got: " + it->dump());
    return *it;
  }

  CsvTable steps_;
  CsvTable evals_;
};

}  // namespace
}  // namespace sexpgpu::sinks

SEXPGPU_SDK_ENTRY(sexpgpu::sdk::SinkPlugin<sexpgpu::sinks::CsvSink>::kPlugin)
