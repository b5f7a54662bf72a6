// Result<T>: a value, or the Diagnostic (util/diagnostics.h) of why there is
// none; the one error type of the IR, the data library and the runtime
// (core/spec/README.md, "Errors"). std::expected is C++23.
//
// A failure made where the problem is found may carry no code yet
// (Result::failure(message): the IR's shape rules, a source's reader); the
// caller that knows what the failure means to the user attaches one
// (fail(code, message), E-SHAPE or E-LOADER-SOURCE) on the way up. Status is
// the Result of an operation that gives nothing but success.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "util/diagnostics.h"

namespace sexpgpu {

// The error side of a Result, convertible to a failed Result of any T:
// `return fail("E-IO", "cannot write " + path);`.
struct Failed {
  Diagnostic diagnostic;
};

inline Failed fail(std::string code, std::string message) {
  Diagnostic d;
  d.severity = severity_of(code);
  d.code = std::move(code);
  d.message = std::move(message);
  return Failed{std::move(d)};
}

template <class T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit on purpose
  Result(Failed f) : error_(std::move(f.diagnostic)) {}  // NOLINT: implicit on purpose
  static Result failure(std::string message) { return fail("", std::move(message)); }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }

  // The failure's message; empty when ok().
  const std::string& error() const { return error_.message; }
  // Its code ("E-DEVICE"), empty when ok() or when no caller attached one.
  const std::string& code() const { return error_.code; }
  const Diagnostic& diagnostic() const { return error_; }
  // The failure, to pass on as another Result's: `return r.failed();`.
  Failed failed() const { return Failed{error_}; }

 private:
  std::optional<T> value_;
  Diagnostic error_;
};

// Success or why not.
using Status = Result<std::monostate>;
inline Status ok_status() {
  return std::monostate{};
}

}  // namespace sexpgpu
