// Number builtins, part one: the generic arithmetic of numbers.h (+ - * /),
// comparisons, min/max/abs/signum, the rounding family (floor ceiling
// truncate round, their f-variants, mod rem), predicates, float, gcd/lcm,
// isqrt. Part two (expt, logs, trigonometry, bitwise operations, random,
// parse-integer, coerce) is builtins_math.cpp.
//
// Every result matches SBCL's except where language.md lists a deliberate
// difference (no ratios, no bignums, no complex numbers, every float a double,
// E-DIV-ZERO for float division by zero). Rounding with float operands follows
// SBCL's definitions exactly (numbers.lisp): the quotient is the truncation of
// x/y and the remainder x - q*y, then adjusted; that is why (mod 0.1 0.01) is
// 0.0 here as in SBCL, not what C's fmod gives.
#include <cmath>
#include <cstdint>

#include "lisp/builtins.h"
#include "lisp/numbers.h"

namespace sexpgpu::lisp {

// ---- errors and conversions -------------------------------------------------------

// A default Value (a null symbol) marks a missing second operand.
static bool is_unset(Value v) {
  return v.kind == Kind::Symbol && v.p == nullptr;
}

static std::string operation(Interp& in, const char* op, Value a, Value b) {
  std::string s = std::string("(") + op + " " + in.show(a);
  if (!is_unset(b)) s += " " + in.show(b);
  return s + ")";
}

void overflow_error(Interp& in, const char* op, Value a, Value b) {
  bool floats = a.is_float() || b.is_float();
  in.fail("E-OVERFLOW",
          std::string(floats ? "floating-point overflow: " : "integer overflow: ") +
              operation(in, op, a, b) +
              (floats ? " is too large for a double" : " does not fit in a 64-bit integer"),
          floats ? "" : "integers are 64-bit (there are no bignums); use floats for larger values");
}

void div_zero_error(Interp& in, const char* op, Value a, Value b) {
  in.fail("E-DIV-ZERO", "division by zero: " + operation(in, op, a, b));
}

Value check_number(Interp& in, Value v, const char* op) {
  if (!v.is_number()) in.type_error(v, "a number", op);
  return v;
}

double to_double(Interp& in, Value v, const char* op) {
  if (v.is_float()) return v.f;
  if (v.is_int()) return double(v.i);
  in.type_error(v, "a number", op);
}

int64_t check_integer(Interp& in, Value v, const char* op) {
  if (!v.is_int()) in.type_error(v, "an integer", op);
  return v.i;
}

Value float_result(Interp& in, double r, const char* op, Value a, Value b) {
  if (std::isinf(r)) {
    bool finite_args =
        (!a.is_float() || std::isfinite(a.f)) && (!b.is_float() || std::isfinite(b.f));
    if (finite_args) overflow_error(in, op, a, b);
  }
  return Value::flt(r);
}

// ---- the generic operators ---------------------------------------------------------

Value add2(Interp& in, Value a, Value b, const char* op) {
  if (a.is_int() && b.is_int()) {
    int64_t r;
    if (__builtin_add_overflow(a.i, b.i, &r)) overflow_error(in, op, a, b);
    return Value::integer(r);
  }
  return float_result(in, to_double(in, a, op) + to_double(in, b, op), op, a, b);
}

Value sub2(Interp& in, Value a, Value b, const char* op) {
  if (a.is_int() && b.is_int()) {
    int64_t r;
    if (__builtin_sub_overflow(a.i, b.i, &r)) overflow_error(in, op, a, b);
    return Value::integer(r);
  }
  return float_result(in, to_double(in, a, op) - to_double(in, b, op), op, a, b);
}

Value mul2(Interp& in, Value a, Value b, const char* op) {
  if (a.is_int() && b.is_int()) {
    int64_t r;
    if (__builtin_mul_overflow(a.i, b.i, &r)) overflow_error(in, op, a, b);
    return Value::integer(r);
  }
  return float_result(in, to_double(in, a, op) * to_double(in, b, op), op, a, b);
}

Value div2(Interp& in, Value a, Value b, const char* op) {
  if (a.is_int() && b.is_int()) {
    if (b.i == 0) div_zero_error(in, op, a, b);
    if (b.i == -1) return negate(in, a, op);
    if (a.i % b.i == 0) return Value::integer(a.i / b.i);
    // Not exact: SBCL's ratio, as the nearest double. long double holds every
    // int64 exactly, so only the final rounding is inexact.
    return Value::flt(double((long double)a.i / (long double)b.i));
  }
  double x = to_double(in, a, op), y = to_double(in, b, op);
  if (y == 0) div_zero_error(in, op, a, b);
  return float_result(in, x / y, op, a, b);
}

Value negate(Interp& in, Value a, const char* op) {
  if (a.is_int()) {
    if (a.i == INT64_MIN) overflow_error(in, op, a);
    return Value::integer(-a.i);
  }
  return Value::flt(-to_double(in, a, op));
}

// ---- comparison ---------------------------------------------------------------------

static int sign_of(bool less, bool greater) {
  return less ? -1 : greater ? 1 : 0;
}

// i compared with d, exactly: split d into its integer and fractional parts.
static int compare_int_double(int64_t i, double d) {
  if (std::isnan(d)) return 2;
  if (d >= 9223372036854775808.0) return -1;  // 2^63: above every int64
  if (d < -9223372036854775808.0) return 1;
  double whole = std::trunc(d);
  int64_t w = int64_t(whole);
  if (i != w) return sign_of(i<w, i> w);
  double frac = d - whole;
  return sign_of(frac > 0, frac < 0);
}

int num_compare(Interp& in, Value a, Value b, const char* op) {
  if (a.is_int() && b.is_int()) return sign_of(a.i<b.i, a.i> b.i);
  check_number(in, a, op);
  check_number(in, b, op);
  if (a.is_int()) return compare_int_double(a.i, b.f);
  if (b.is_int()) {
    int c = compare_int_double(b.i, a.f);
    return c == 2 ? 2 : -c;
  }
  if (std::isnan(a.f) || std::isnan(b.f)) return 2;
  return sign_of((a.f < b.f), (a.f > b.f));
}

// (op a b c ...) holds when it holds for each adjacent pair; every argument
// is checked to be a number first, as SBCL does.
template <typename Holds>
static Value compare_chain(Interp& in, Value* args, int nargs, const char* op, Holds holds) {
  for (int i = 0; i < nargs; ++i) check_number(in, args[i], op);
  for (int i = 1; i < nargs; ++i)
    if (!holds(num_compare(in, args[i - 1], args[i], op))) return in.nil();
  return in.t();
}

// /= holds when no two arguments are equal, adjacent or not.
static Value all_different(Interp& in, Value* args, int nargs) {
  for (int i = 0; i < nargs; ++i) check_number(in, args[i], "/=");
  for (int i = 0; i < nargs; ++i)
    for (int j = i + 1; j < nargs; ++j)
      if (num_compare(in, args[i], args[j], "/=") == 0) return in.nil();
  return in.t();
}

// max/min return the winning argument itself (no contagion), the first of
// equal ones, as SBCL does: (max 1 1.0) is 1.
static Value extremum(Interp& in, Value* args, int nargs, const char* op, int want) {
  Value best = check_number(in, args[0], op);
  for (int i = 1; i < nargs; ++i)
    if (num_compare(in, args[i], best, op) == want) best = args[i];
  return best;
}

// ---- rounding -------------------------------------------------------------------------

enum class Rounding { Floor, Ceiling, Truncate, Round };

// Integer division rounded by `mode`; q and r exact.
static void divide_ints(Interp& in, Value a, Value b, Rounding mode, const char* op, int64_t* q,
                        int64_t* r) {
  int64_t n = a.i, d = b.i;
  if (d == 0) div_zero_error(in, op, a, b);
  if (n == INT64_MIN && d == -1) overflow_error(in, op, a, b);
  *q = n / d;
  *r = n % d;
  if (*r == 0) return;
  bool toward_positive = (*r > 0) == (d > 0);  // the exact quotient's fraction is positive
  bool up = false, down = false;
  switch (mode) {
    case Rounding::Floor: down = !toward_positive; break;
    case Rounding::Ceiling: up = toward_positive; break;
    case Rounding::Truncate: break;
    case Rounding::Round: {
      uint64_t twice_r = 2 * (*r < 0 ? uint64_t(0) - uint64_t(*r) : uint64_t(*r));
      uint64_t abs_d = d < 0 ? uint64_t(0) - uint64_t(d) : uint64_t(d);
      if (twice_r > abs_d || (twice_r == abs_d && (*q & 1))) (toward_positive ? up : down) = true;
      break;
    }
  }
  if (up) *q += 1, *r -= d;
  if (down) *q -= 1, *r += d;
}

// SBCL's float rounding: truncate x/y, remainder x - q*y, then adjust. With
// integer_quotient the quotient stands for an integer (so never -0.0 when
// the remainder is computed), as in SBCL's floor; otherwise (ffloor ...) it
// keeps its sign. fround, like SBCL's, rounds to an integer-valued quotient.
static void divide_floats(Interp& in, Value a, Value b, Rounding mode, bool integer_quotient,
                          const char* op, double* q, double* r) {
  double x = to_double(in, a, op), y = to_double(in, b, op);
  if (y == 0) div_zero_error(in, op, a, b);
  double ratio = x / y;
  if (std::isinf(ratio) && std::isfinite(x)) overflow_error(in, op, a, b);
  double t = std::trunc(ratio);
  if (integer_quotient || mode == Rounding::Round) t += 0.0;  // -0.0 -> 0.0
  double rem = x - t * y;
  switch (mode) {
    case Rounding::Floor:
      if (rem != 0 && (y < 0 ? x > 0 : x < 0)) t -= 1, rem += y;
      break;
    case Rounding::Ceiling:
      if (rem != 0 && (y < 0 ? x < 0 : x > 0)) t += 1, rem -= y;
      break;
    case Rounding::Truncate: break;
    case Rounding::Round: {
      if (rem == 0) break;
      double half = std::fabs(y) / 2;
      bool odd = std::fmod(t, 2.0) != 0;
      if (rem > half || (rem == half && odd)) {
        if (y < 0)
          t -= 1, rem += y;
        else
          t += 1, rem -= y;
      } else if (rem < -half || (rem == -half && odd)) {
        if (y < 0)
          t += 1, rem -= y;
        else
          t -= 1, rem += y;
      }
      break;
    }
  }
  *q = t;
  *r = rem;
}

// (floor n [d]) and its family: two values. float_quotient: the f-variants.
static Value round_values(Interp& in, Value* args, int nargs, Rounding mode, bool float_quotient,
                          const char* op) {
  Value a = check_number(in, args[0], op);
  Value b = nargs > 1 ? check_number(in, args[1], op) : Value::integer(1);
  if (a.is_int() && b.is_int()) {
    int64_t q, r;
    divide_ints(in, a, b, mode, op, &q, &r);
    return in.values2(float_quotient ? Value::flt(double(q)) : Value::integer(q),
                      Value::integer(r));
  }
  double q, r;
  divide_floats(in, a, b, mode, !float_quotient, op, &q, &r);
  if (float_quotient) return in.values2(Value::flt(q), Value::flt(r));
  if (!(q >= -9223372036854775808.0 && q < 9223372036854775808.0))
    in.fail("E-OVERFLOW",
            std::string(op) + ": the quotient of " + in.show(a) +
                (nargs > 1 ? " by " + in.show(b) : "") + " does not fit in a 64-bit integer",
            "integers are 64-bit (there are no bignums); use f" + std::string(op) +
                " for a float quotient");
  return in.values2(Value::integer(int64_t(q)), Value::flt(r));
}

// The remainder of a rounding division, as mod and rem give it. The quotient
// is not needed, so a float quotient beyond 64 bits is no error here.
static Value remainder_of(Interp& in, Value a, Value b, Rounding mode, const char* op) {
  check_number(in, a, op);
  check_number(in, b, op);
  if (a.is_int() && b.is_int()) {
    if (b.i == -1) return Value::integer(0);  // most-negative-fixnum by -1 has no remainder
    int64_t q, r;
    divide_ints(in, a, b, mode, op, &q, &r);
    return Value::integer(r);
  }
  double q, r;
  divide_floats(in, a, b, mode, true, op, &q, &r);
  return Value::flt(r);
}

// ---- integer helpers ---------------------------------------------------------------------

static uint64_t magnitude(int64_t x) {
  return x < 0 ? uint64_t(0) - uint64_t(x) : uint64_t(x);
}

static uint64_t gcd_u(uint64_t a, uint64_t b) {
  while (b != 0) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

static Value gcd_values(Interp& in, Value* args, int nargs) {
  uint64_t g = 0;
  for (int i = 0; i < nargs; ++i) g = gcd_u(g, magnitude(check_integer(in, args[i], "gcd")));
  if (g > uint64_t(INT64_MAX)) overflow_error(in, "gcd", args[0], nargs > 1 ? args[1] : Value());
  return Value::integer(int64_t(g));
}

static Value lcm_values(Interp& in, Value* args, int nargs) {
  uint64_t l = 1;
  for (int i = 0; i < nargs; ++i) {
    uint64_t m = magnitude(check_integer(in, args[i], "lcm"));
    if (m == 0 || l == 0) {
      l = 0;
      continue;
    }
    unsigned __int128 p = (unsigned __int128)(l / gcd_u(l, m)) * m;
    if (p > uint64_t(INT64_MAX)) overflow_error(in, "lcm", Value::integer(int64_t(l)), args[i]);
    l = uint64_t(p);
  }
  return Value::integer(int64_t(l));
}

static Value isqrt_value(Interp& in, Value v) {
  if (!v.is_int() || v.i < 0) in.type_error(v, "a non-negative integer", "isqrt");
  int64_t r = int64_t(std::sqrt((long double)v.i));
  while ((__int128)r * r > v.i) --r;
  while ((__int128)(r + 1) * (r + 1) <= v.i) ++r;
  return Value::integer(r);
}

static Value signum_value(Interp& in, Value v) {
  check_number(in, v, "signum");
  if (v.is_int()) return Value::integer(v.i > 0 ? 1 : v.i < 0 ? -1 : 0);
  if (v.f == 0 || std::isnan(v.f)) return v;  // keeps -0.0, as SBCL does
  return Value::flt(std::copysign(1.0, v.f));
}

static Value abs_value(Interp& in, Value v) {
  check_number(in, v, "abs");
  if (v.is_float()) return Value::flt(std::fabs(v.f));
  if (v.i == INT64_MIN) overflow_error(in, "abs", v);
  return Value::integer(v.i < 0 ? -v.i : v.i);
}

static Value float_value(Interp& in, Value* args, int nargs) {
  if (nargs > 1 && !args[1].is_float()) in.type_error(args[1], "a float", "float");
  return Value::flt(to_double(in, args[0], "float"));
}

// ---- registration --------------------------------------------------------------------------

static void register_arithmetic(Interp& in) {
  SG_BUILTIN(in, "+", 0, -1, "sum (0 with no arguments)", {
    if (nargs == 0) return Value::integer(0);
    Value acc = check_number(in, args[0], "+");
    for (int i = 1; i < nargs; ++i) acc = add2(in, acc, args[i]);
    return acc;
  });
  SG_BUILTIN(in, "-", 1, -1, "difference, or negation of one argument", {
    if (nargs == 1) return negate(in, args[0]);
    Value acc = args[0];
    for (int i = 1; i < nargs; ++i) acc = sub2(in, acc, args[i]);
    return acc;
  });
  SG_BUILTIN(in, "*", 0, -1, "product (1 with no arguments)", {
    if (nargs == 0) return Value::integer(1);
    Value acc = check_number(in, args[0], "*");
    for (int i = 1; i < nargs; ++i) acc = mul2(in, acc, args[i]);
    return acc;
  });
  SG_BUILTIN(in, "/", 1, -1, "quotient (a double unless integers divide exactly), or reciprocal", {
    if (nargs == 1) {
      if (args[0].is_number() && to_double(in, args[0], "/") == 0) div_zero_error(in, "/", args[0]);
      return div2(in, Value::integer(1), args[0]);
    }
    Value acc = args[0];
    for (int i = 1; i < nargs; ++i) acc = div2(in, acc, args[i]);
    return acc;
  });
  SG_BUILTIN(in, "1+", 1, 1, "the number plus one",
             { return add2(in, args[0], Value::integer(1), "1+"); });
  SG_BUILTIN(in, "1-", 1, 1, "the number minus one",
             { return sub2(in, args[0], Value::integer(1), "1-"); });
  SG_BUILTIN(in, "ABS", 1, 1, "absolute value", { return abs_value(in, args[0]); });
  SG_BUILTIN(in, "SIGNUM", 1, 1, "-1, 0 or 1 (as a float for floats)",
             { return signum_value(in, args[0]); });
  SG_BUILTIN(in, "MAX", 1, -1, "the largest argument (itself, no float contagion)",
             { return extremum(in, args, nargs, "max", 1); });
  SG_BUILTIN(in, "MIN", 1, -1, "the smallest argument (itself, no float contagion)",
             { return extremum(in, args, nargs, "min", -1); });
}

static void register_comparisons(Interp& in) {
  SG_BUILTIN(in, "=", 1, -1, "all numerically equal",
             { return compare_chain(in, args, nargs, "=", [](int c) { return c == 0; }); });
  SG_BUILTIN(in, "/=", 1, -1, "no two numerically equal",
             { return all_different(in, args, nargs); });
  SG_BUILTIN(in, "<", 1, -1, "strictly increasing",
             { return compare_chain(in, args, nargs, "<", [](int c) { return c == -1; }); });
  SG_BUILTIN(in, ">", 1, -1, "strictly decreasing",
             { return compare_chain(in, args, nargs, ">", [](int c) { return c == 1; }); });
  SG_BUILTIN(in, "<=", 1, -1, "not decreasing", {
    return compare_chain(in, args, nargs, "<=", [](int c) { return c == -1 || c == 0; });
  });
  SG_BUILTIN(in, ">=", 1, -1, "not increasing", {
    return compare_chain(in, args, nargs, ">=", [](int c) { return c == 1 || c == 0; });
  });
}

static void register_rounding(Interp& in) {
  SG_BUILTIN(in, "FLOOR", 1, 2, "quotient rounded toward -infinity, and remainder",
             { return round_values(in, args, nargs, Rounding::Floor, false, "floor"); });
  SG_BUILTIN(in, "CEILING", 1, 2, "quotient rounded toward +infinity, and remainder",
             { return round_values(in, args, nargs, Rounding::Ceiling, false, "ceiling"); });
  SG_BUILTIN(in, "TRUNCATE", 1, 2, "quotient rounded toward zero, and remainder",
             { return round_values(in, args, nargs, Rounding::Truncate, false, "truncate"); });
  SG_BUILTIN(in, "ROUND", 1, 2, "quotient rounded to nearest (ties to even), and remainder",
             { return round_values(in, args, nargs, Rounding::Round, false, "round"); });
  SG_BUILTIN(in, "FFLOOR", 1, 2, "as floor, the quotient a float",
             { return round_values(in, args, nargs, Rounding::Floor, true, "ffloor"); });
  SG_BUILTIN(in, "FCEILING", 1, 2, "as ceiling, the quotient a float",
             { return round_values(in, args, nargs, Rounding::Ceiling, true, "fceiling"); });
  SG_BUILTIN(in, "FTRUNCATE", 1, 2, "as truncate, the quotient a float",
             { return round_values(in, args, nargs, Rounding::Truncate, true, "ftruncate"); });
  SG_BUILTIN(in, "FROUND", 1, 2, "as round, the quotient a float",
             { return round_values(in, args, nargs, Rounding::Round, true, "fround"); });
  SG_BUILTIN(in, "MOD", 2, 2, "remainder of floor (sign of the divisor)",
             { return remainder_of(in, args[0], args[1], Rounding::Floor, "mod"); });
  SG_BUILTIN(in, "REM", 2, 2, "remainder of truncate (sign of the number)",
             { return remainder_of(in, args[0], args[1], Rounding::Truncate, "rem"); });
}

static void register_predicates(Interp& in) {
  SG_BUILTIN(in, "ZEROP", 1, 1, "is the number zero",
             { return in.boolean(to_double(in, args[0], "zerop") == 0); });
  SG_BUILTIN(in, "PLUSP", 1, 1, "is the number positive",
             { return in.boolean(to_double(in, args[0], "plusp") > 0); });
  SG_BUILTIN(in, "MINUSP", 1, 1, "is the number negative",
             { return in.boolean(to_double(in, args[0], "minusp") < 0); });
  SG_BUILTIN(in, "EVENP", 1, 1, "is the integer even",
             { return in.boolean((check_integer(in, args[0], "evenp") & 1) == 0); });
  SG_BUILTIN(in, "ODDP", 1, 1, "is the integer odd",
             { return in.boolean((check_integer(in, args[0], "oddp") & 1) != 0); });
  SG_BUILTIN(in, "NUMBERP", 1, 1, "is it a number", { return in.boolean(args[0].is_number()); });
  SG_BUILTIN(in, "REALP", 1, 1, "is it a real (every number here is)",
             { return in.boolean(args[0].is_number()); });
  SG_BUILTIN(in, "INTEGERP", 1, 1, "is it an integer", { return in.boolean(args[0].is_int()); });
  SG_BUILTIN(in, "RATIONALP", 1, 1, "is it a rational (an integer: there are no ratios)",
             { return in.boolean(args[0].is_int()); });
  SG_BUILTIN(in, "FLOATP", 1, 1, "is it a float", { return in.boolean(args[0].is_float()); });
  SG_BUILTIN(in, "COMPLEXP", 1, 1, "is it a complex number (never: there are none)",
             { return in.nil(); });
}

static void register_integer_functions(Interp& in) {
  SG_BUILTIN(in, "GCD", 0, -1, "greatest common divisor (0 with no arguments)",
             { return gcd_values(in, args, nargs); });
  SG_BUILTIN(in, "LCM", 0, -1, "least common multiple (1 with no arguments)",
             { return lcm_values(in, args, nargs); });
  SG_BUILTIN(in, "ISQRT", 1, 1, "the greatest integer whose square is at most n",
             { return isqrt_value(in, args[0]); });
  SG_BUILTIN(in, "FLOAT", 1, 2, "the number as a double (the prototype, if given, must be a float)",
             { return float_value(in, args, nargs); });
}

void register_number_builtins(Interp& in) {
  register_arithmetic(in);
  register_comparisons(in);
  register_rounding(in);
  register_predicates(in);
  register_integer_functions(in);
  register_math_builtins(in);
}

}  // namespace sexpgpu::lisp
