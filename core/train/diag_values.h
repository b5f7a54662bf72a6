// A diagnostic's numbers at run time (observe.md, "Diagnostics"): the
// outputs of one run of a diagnostic function (spec/run_spec.h's
// DiagFunction), downloaded, become the `values` of its diag event; an
// output a reducer plugin reduces goes through the plugin's sg_reducer_api.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "sexpgpu/plugin.h"
#include "spec/run_spec.h"
#include "util/result.h"

namespace sexpgpu::train {

// A reducer plugin's numbers for `values` (init with "{}", one update,
// finish): a number, or {NAME: number} when it names several outputs.
Result<nlohmann::json> reduce_with_plugin(const sg_reducer_api& api, std::span<const float> values);

// The outputs of one run of a diagnostic function, downloaded as floats.
using DiagDownloads = std::map<std::string, std::vector<float>>;
using ReducerLookup = std::function<const sg_reducer_api*(const std::string& name)>;

// Adds fn's numbers to a diag event's `values` (observe.md): KEY: number,
// or KEY: {REDUCER: number}, a histogram as {"min", "max", "counts"}; a
// non-finite number is null (JSON has no NaN). Fails with E-DIAG-REDUCER
// and a reducer plugin's error.
Status add_diag_values(const spec::DiagFunction& fn, const DiagDownloads& outputs,
                       const ReducerLookup& reducers, nlohmann::json& values);

}  // namespace sexpgpu::train
