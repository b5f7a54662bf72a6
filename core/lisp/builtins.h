// Helpers shared by the builtins_*.cpp files: argument access and the
// registration macro. A builtin is `Value fn(Interp&, Value* args, int n)`,
// registered with its name, arity and a one-line doc (shown by `sexpgpu docs`
// and checked against docs/builtins.md).
#pragma once

#include "lisp/interp.h"

namespace sexpgpu::lisp {

// Define a builtin in one line: BUILTIN(in, "CAR", 1, 1, "first element", { ... })
// (The body is variadic so commas inside braces need no extra parentheses.)
#define SG_BUILTIN(in, NAME, MIN, MAX, DOC, ...)                      \
  (in).defbuiltin(NAME, MIN, MAX,                                     \
                  [](Interp & in, Value * args, int nargs) -> Value { \
                    (void)args;                                       \
                    (void)nargs;                                      \
                    in.current_operator = NAME;                       \
                    __VA_ARGS__                                       \
                  },                                                  \
                  DOC)

inline Value car_of(Value v) { return v.is_cons() ? v.cons()->car : v; }
inline Value cdr_of(Value v) { return v.is_cons() ? v.cons()->cdr : v; }

// Call a Lisp function from a builtin, keeping only its primary value, so a
// predicate returning several values does not leak them into our result.
inline Value call1(Interp& in, Value fn, Value* args, int n) {
  Value r = in.apply(fn, args, n);
  in.single();
  return r;
}
inline Value call1(Interp& in, Value fn, Value a) {
  return call1(in, fn, &a, 1);
}
inline Value call2(Interp& in, Value fn, Value a, Value b) {
  Value xs[2] = {a, b};
  return call1(in, fn, xs, 2);
}

// Lower-case operator name for messages.
std::string op_name(const char* upper);

// Structural predicates used across files.
bool typep(Interp& in, Value v, Value type);
bool condition_typep(Interp& in, Value cond, Value type);
std::string format_float(double x);

// Call a :key function (nil: identity) and a :test/:test-not predicate the
// way sequence functions do.
struct TestFn {
  Interp& in;
  Value test;      // function or nil
  Value test_not;  // function or nil
  Value key;       // function or nil
  Value apply_key(Value x) const { return key.is_nil() ? x : in.call(key, {x}); }
  bool operator()(Value item, Value elem) const;  // (test item (key elem))
};

// Run `format` (format.cpp): directives applied to args.
std::string lisp_format(Interp& in, const std::u32string& control, Value* args, int nargs);

// Define NAME as a function (or macro) in the current scope, warning with
// W-SHADOW when a user file replaces a builtin or prelude definition.
void define_function(Interp& in, Symbol* s, Value fn, bool macro);

}  // namespace sexpgpu::lisp
