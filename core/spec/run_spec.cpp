// The run spec's few functions (run_spec.h).
#include "spec/run_spec.h"

#include <algorithm>

namespace sexpgpu::spec {

std::string ctx_input_name(const std::string& key) {
  return "ctx:" + key;
}

std::optional<std::string> ctx_key_of_input(const std::string& input_name) {
  if (input_name.rfind("ctx:", 0) != 0) return std::nullopt;
  return input_name.substr(4);
}

const char* to_string(MetricReduce r) {
  switch (r) {
    case MetricReduce::Mean: return "mean";
    case MetricReduce::Sum: return "sum";
    case MetricReduce::Min: return "min";
    case MetricReduce::Max: return "max";
    case MetricReduce::Last: return "last";
  }
  return "mean";
}

const std::vector<std::string>& core_reducers() {
  static const std::vector<std::string> names = {
      "mean", "rms", "l2",        "max-abs",        "min",
      "max",  "std", "frac-zero", "frac-nonfinite", "histogram"};
  return names;
}

bool is_core_reducer(std::string_view name) {
  const std::vector<std::string>& all = core_reducers();
  return std::find(all.begin(), all.end(), name) != all.end();
}

const Diagnostic* DiagnosticPlan::find(const std::string& name) const {
  for (const Diagnostic& d : diagnostics)
    if (d.name == name) return &d;
  return nullptr;
}

std::string DiagnosticPlan::names() const {
  std::string out;
  for (const Diagnostic& d : diagnostics) out += (out.empty() ? "" : ", ") + d.name;
  return out;
}

StepFlops RunSpec::full_batch_flops() const {
  if (train_fns.empty()) return {};
  auto it = step_flops.find(train_fns.front().fn);
  return it == step_flops.end() ? StepFlops{} : it->second;
}

}  // namespace sexpgpu::spec
