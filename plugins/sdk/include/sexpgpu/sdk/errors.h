// sexpgpu/sdk/errors.h: the C ABI's error objects and the exception firewall,
// for plugins written in C++17 or later (plugins/sdk/README.md). Inside a
// plugin, code throws (sdk::Failure for an error with a code, anything
// else for a bug); every function of the plugin's table runs its body
// through sdk::firewall, which turns whatever was thrown into an sg_error
// that the core frees through the table's error_destroy. Nothing but C
// crosses the ABI (sexpgpu/plugin.h, "No exceptions, no C++ types").
//
// Header-only: each plugin gets its own copy, so it links nothing of the
// core's. A plugin that includes this header uses its sg_error and defines
// no other.
#pragma once

#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "sexpgpu/plugin.h"

// The error object behind every sg_error* an SDK plugin returns.
struct sg_error {
  sg_error_code code;
  std::string message;
};

namespace sexpgpu::sdk {

// Thrown inside a plugin, turned into an error of that code (and message)
// at the ABI boundary.
class Failure : public std::runtime_error {
 public:
  Failure(sg_error_code code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  sg_error_code code() const noexcept { return code_; }

 private:
  sg_error_code code_;
};

[[noreturn]] inline void fail(sg_error_code code, const std::string& message) {
  throw Failure(code, message);
}

// The error returned when even allocating an error failed: static, never
// freed. Its message fits the string's inline buffer, so making it
// allocates nothing.
inline sg_error* out_of_memory() noexcept {
  static sg_error error{SG_ERROR_OUT_OF_MEMORY, "out of memory"};
  return &error;
}

// A fresh error whose message is "PLUGIN: TEXT MORE" (TEXT MORE when
// `plugin` is empty); out_of_memory() when it cannot be allocated.
inline sg_error* make_error(sg_error_code code, std::string_view plugin, std::string_view text,
                            std::string_view more = {}) noexcept {
  try {
    std::string message;
    message.reserve(plugin.size() + 2 + text.size() + more.size());
    if (!plugin.empty()) message.append(plugin).append(": ");
    message.append(text).append(more);
    return new sg_error{code, std::move(message)};
  } catch (...) {
    return out_of_memory();
  }
}

// The three error functions every table carries (SG_ERROR_FUNCTIONS).
inline void error_destroy(sg_error* error) noexcept {
  if (error != out_of_memory()) delete error;
}

inline void error_message(const sg_error* error, const char** out_message,
                          size_t* out_len) noexcept {
  *out_message = error->message.data();
  *out_len = error->message.size();
}

inline sg_error_code error_code(const sg_error* error) noexcept {
  return error->code;
}

// The error for the exception being handled: a Failure keeps its code and
// message; std::bad_alloc is out_of_memory(); anything else is a bug in the
// plugin, SG_ERROR_INTERNAL "PLUGIN: internal error: WHAT". Call it only
// inside a catch block.
inline sg_error* error_from_current_exception(std::string_view plugin) noexcept {
  try {
    throw;
  } catch (const Failure& e) {
    return make_error(e.code(), plugin, e.what());
  } catch (const std::bad_alloc&) {
    return out_of_memory();
  } catch (const std::exception& e) {
    return make_error(SG_ERROR_INTERNAL, plugin, "internal error: ", e.what());
  } catch (...) {
    return make_error(SG_ERROR_INTERNAL, plugin, "internal error (an exception of unknown type)");
  }
}

// Runs `body` and returns its error: the sg_error* it returns (a body
// returning void gives nullptr), or whatever it throws as an error object
// whose message starts with `plugin`. Every function of a table that can
// fail is `return sdk::firewall(kName, [&] { ... });`.
template <class Body>
sg_error* firewall(std::string_view plugin, Body&& body) noexcept {
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<Body&>>) {
      body();
      return nullptr;
    } else {
      return body();
    }
  } catch (...) {
    return error_from_current_exception(plugin);
  }
}

}  // namespace sexpgpu::sdk
