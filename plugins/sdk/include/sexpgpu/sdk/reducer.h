// sexpgpu/sdk/reducer.h: a reducer plugin from one C++ class
// (plugins/sdk/README.md). ReducerPlugin<R> is the whole sg_reducer_api:
// each call checks its arguments, runs behind the firewall (errors.h) and
// calls R, so R holds only its arithmetic. R provides:
//
//   static constexpr const char* kName = "kurtosis";   // what :reduce names
//   static constexpr const char* kVersion = "1.0.0";
//   static constexpr const char* kOutputs[] = {"kurtosis"};  // its numbers
//   explicit R(std::string_view options_json);  // `init`: may throw
//   void update(const float* values, size_t count);  // called any number of times
//   void finish(double* out);                        // writes std::size(kOutputs) numbers
#pragma once

#include <cctype>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>

#include "sexpgpu/sdk/errors.h"
#include "sexpgpu/sdk/tables.h"

namespace sexpgpu::sdk {

// For a reducer that takes no options: refuses any options but "{}" (or
// none), so a misspelt option is an error rather than silently ignored.
inline void no_options(std::string_view options_json) {
  std::string compact;
  for (char c : options_json)
    if (!std::isspace(static_cast<unsigned char>(c))) compact += c;
  if (!compact.empty() && compact != "{}")
    fail(SG_ERROR_INVALID_ARGUMENT,
         "takes no options, given " + std::string(options_json.substr(0, 80)));
}

template <class R>
struct ReducerPlugin {
  static R& checked(sg_reducer_state* state) {
    if (!state) fail(SG_ERROR_INVALID_ARGUMENT, "called with a NULL state");
    return *reinterpret_cast<R*>(state);
  }

  static void name(const char** out_name, size_t* out_len) {
    *out_name = R::kName;
    *out_len = std::string_view(R::kName).size();
  }

  static void outputs(size_t* out_count, const char* const** out_names) {
    *out_count = std::size(R::kOutputs);
    *out_names = R::kOutputs;
  }

  static sg_error* init(const char* options, size_t options_len, sg_reducer_state** out_state) {
    return firewall(R::kName, [&] {
      if (!out_state) fail(SG_ERROR_INVALID_ARGUMENT, "init without out_state");
      *out_state = nullptr;
      auto state = std::make_unique<R>(std::string_view(options, options ? options_len : 0));
      *out_state = reinterpret_cast<sg_reducer_state*>(state.release());
    });
  }

  static sg_error* update(sg_reducer_state* state, const float* values, size_t count) {
    return firewall(R::kName, [&] {
      R& r = checked(state);
      if (count > 0 && !values) fail(SG_ERROR_INVALID_ARGUMENT, "update with NULL values");
      r.update(values, count);
    });
  }

  static sg_error* finish(sg_reducer_state* state, double* out_values) {
    return firewall(R::kName, [&] {
      R& r = checked(state);
      if (!out_values) fail(SG_ERROR_INVALID_ARGUMENT, "finish without out_values");
      r.finish(out_values);
    });
  }

  static void destroy(sg_reducer_state* state) { delete reinterpret_cast<R*>(state); }

  static constexpr sg_reducer_api kApi =
      reducer_table(name, outputs, init, update, finish, destroy);
  static constexpr sg_plugin kPlugin = describe(SG_PLUGIN_REDUCER, R::kName, R::kVersion, &kApi);
};

}  // namespace sexpgpu::sdk
