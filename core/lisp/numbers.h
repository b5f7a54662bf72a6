// Generic arithmetic on Lisp numbers (64-bit integers and doubles), shared by
// the number builtins (builtins_number.cpp, builtins_math.cpp) and by files
// that extend the generic operators: a staged-tensor file re-registers `+`
// and friends with a wrapper that handles tensors and calls these otherwise.
//
// Rules (language.md, "Deliberate differences"): integer results that do not
// fit in 64 bits are E-OVERFLOW (so is a finite float operation whose result
// is infinite, which SBCL signals as floating-point-overflow); any division by
// zero is E-DIV-ZERO; `/` of integers that do not divide exactly gives a
// double; an int mixed with a double gives a double. A non-number is E-TYPE.
#pragma once

#include "lisp/interp.h"

namespace sexpgpu::lisp {

// The two-argument operators; `op` names the Lisp operator in messages.
Value add2(Interp& in, Value a, Value b, const char* op = "+");
Value sub2(Interp& in, Value a, Value b, const char* op = "-");
Value mul2(Interp& in, Value a, Value b, const char* op = "*");
Value div2(Interp& in, Value a, Value b, const char* op = "/");
Value negate(Interp& in, Value a, const char* op = "-");

// Exact comparison of two reals (an integer and a double compare as the
// rationals they denote, as SBCL does): -1, 0, 1, or 2 when unordered (NaN).
int num_compare(Interp& in, Value a, Value b, const char* op);

// E-TYPE unless v is a number; returns v.
Value check_number(Interp& in, Value v, const char* op);
// The value as a double (E-TYPE unless a number).
double to_double(Interp& in, Value v, const char* op);
// E-TYPE unless v is an integer.
int64_t check_integer(Interp& in, Value v, const char* op);

// Errors with the operands shown: (op a b) or (op a) when b is unset (p == nullptr).
[[noreturn]] void overflow_error(Interp& in, const char* op, Value a, Value b = Value());
[[noreturn]] void div_zero_error(Interp& in, const char* op, Value a, Value b = Value());
// A double result of a float operation: E-OVERFLOW when it is infinite but the
// operands were finite.
Value float_result(Interp& in, double r, const char* op, Value a, Value b = Value());

// The second half of the number builtins (builtins_math.cpp): expt, logs and
// trigonometry, bitwise operations, random, parse-integer, coerce.
void register_math_builtins(Interp& in);

}  // namespace sexpgpu::lisp
