// A diagnostic's numbers at run time (diag_values.h).
#include "train/diag_values.h"

#include <cmath>

namespace sexpgpu::train {

using spec::DiagKind;
using spec::DiagOutput;

namespace {

// Finite numbers as JSON numbers, the others as null (JSON has no NaN).
nlohmann::json json_number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

}  // namespace

Result<nlohmann::json> reduce_with_plugin(const sg_reducer_api& api,
                                          std::span<const float> values) {
  auto failed = [&](const char* call, sg_error* err) {
    const char* text = nullptr;
    size_t len = 0;
    if (api.error_message) api.error_message(err, &text, &len);
    std::string message = std::string(call) + ": " + (text ? std::string(text, len) : "failed");
    if (api.error_destroy) api.error_destroy(err);
    return fail("E-DIAG-REDUCER", message);
  };
  size_t count = 0;
  const char* const* names = nullptr;
  api.outputs(&count, &names);
  sg_reducer_state* state = nullptr;
  if (sg_error* e = api.init("{}", 2, &state)) return failed("init", e);
  std::vector<double> numbers(count);
  const char* call = "update";
  sg_error* e = api.update(state, values.data(), values.size());
  if (!e) call = "finish", e = api.finish(state, numbers.data());
  api.destroy(state);
  if (e) return failed(call, e);
  if (count == 1) return json_number(numbers[0]);
  nlohmann::json out = nlohmann::json::object();
  for (size_t i = 0; i < count; ++i) out[names[i]] = json_number(numbers[i]);
  return out;
}

Status add_diag_values(const spec::DiagFunction& fn, const DiagDownloads& outputs,
                       const ReducerLookup& reducers, nlohmann::json& values) {
  for (const DiagOutput& o : fn.outputs) {
    const std::vector<float>& v = outputs.at(o.output);
    nlohmann::json value;
    switch (o.kind) {
      case DiagKind::Number: values[o.key] = json_number(v.at(0)); continue;
      case DiagKind::Reduced: value = json_number(v.at(0)); break;
      case DiagKind::Histogram: {
        nlohmann::json counts = nlohmann::json::array();
        for (size_t i = 2; i < v.size(); ++i) counts.push_back(int64_t(v[i]));
        value = {{"min", json_number(v.at(0))}, {"max", json_number(v.at(1))}, {"counts", counts}};
        break;
      }
      case DiagKind::Host: {
        const sg_reducer_api* api = reducers(o.reducer);
        if (!api)
          return fail("E-DIAG-REDUCER", "no reducer plugin named '" + o.reducer + "' is loaded");
        Result<nlohmann::json> r = reduce_with_plugin(*api, v);
        if (!r) return fail(r.code(), "reducer " + o.reducer + " " + r.error());
        value = *r;
        break;
      }
    }
    values[o.key][o.reducer] = value;
  }
  return ok_status();
}

}  // namespace sexpgpu::train
