// Number builtins, part two: expt, sqrt, exp, log, trigonometric and
// hyperbolic functions, bitwise operations on integers, random, parse-integer,
// coerce, and the float constants. Part one (arithmetic, comparison,
// rounding) is builtins_number.cpp; numbers.h is what they share.
//
// A CL result that would be complex ((sqrt -1), (asin 2), (expt -8 0.5)) is
// E-UNSUPPORTED; a pole ((log 0), (atanh 1)) is E-DIV-ZERO, as SBCL signals
// division-by-zero there; a finite argument with an infinite result
// ((exp 1000)) is E-OVERFLOW, as SBCL signals floating-point-overflow.
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "lisp/bit_vector.h"
#include "lisp/builtins.h"
#include "lisp/chars.h"
#include "lisp/numbers.h"

namespace sexpgpu::lisp {

[[noreturn]] static void complex_result(Interp& in, const char* op, Value a, Value b = Value()) {
  std::string form = std::string("(") + op + " " + in.show(a);
  if (!(b.kind == Kind::Symbol && b.p == nullptr)) form += " " + in.show(b);
  in.fail("E-UNSUPPORTED", form + ") would be a complex number",
          "complex numbers are not supported; check the argument's sign or range");
}

// ---- expt ------------------------------------------------------------------------------

// b^p exactly, or false when it does not fit in 64 bits.
static bool int_power(int64_t b, int64_t p, int64_t* out) {
  int64_t r = 1;
  for (int64_t k = 0; k < p; ++k)
    if (__builtin_mul_overflow(r, b, &r)) return false;
  *out = r;
  return true;
}

static Value expt_ints(Interp& in, Value base, Value power) {
  int64_t b = base.i, p = power.i;
  if (b == 0 && p < 0) div_zero_error(in, "expt", base, power);
  if (b == 0) return Value::integer(p == 0 ? 1 : 0);
  if (b == 1) return Value::integer(1);
  if (b == -1) return Value::integer((p & 1) ? -1 : 1);
  int64_t m;
  // |b| >= 2, so |p| >= 64 cannot fit; the loop runs at most 63 times.
  bool fits = p > -64 && p < 64 && int_power(b, p < 0 ? -p : p, &m);
  if (p >= 0) {
    if (!fits) overflow_error(in, "expt", base, power);
    return Value::integer(m);
  }
  // A negative power of |b| >= 2 is a ratio in CL: the nearest double.
  if (fits) return Value::flt(double(1.0L / (long double)m));
  return Value::flt(std::pow(double(b), double(p)));
}

static Value expt_value(Interp& in, Value base, Value power) {
  check_number(in, base, "expt");
  check_number(in, power, "expt");
  if (power.is_int()) {
    if (base.is_int()) return expt_ints(in, base, power);
    if (power.i == 0) return Value::flt(1.0);
    if (base.f == 0 && power.i < 0) div_zero_error(in, "expt", base, power);
    return float_result(in, std::pow(base.f, double(power.i)), "expt", base, power);
  }
  double x = to_double(in, base, "expt"), y = power.f;
  if (x == 0 && y <= 0)  // SBCL: 0^0.0 is out of the domain, 0^-y divides by zero
    in.fail("E-DIV-ZERO", "(expt " + in.show(base) + " " + in.show(power) +
                              "): zero to a non-positive float power is undefined");
  if (y == 0) return Value::flt(1.0);
  if (x == 0) return Value::flt(0.0);
  if (x < 0 && y != std::trunc(y)) complex_result(in, "expt", base, power);
  return float_result(in, std::pow(x, y), "expt", base, power);
}

// ---- logarithms, roots, trigonometry ----------------------------------------------------

static Value unary_float(Interp& in, Value v, const char* op, double (*fn)(double)) {
  return float_result(in, fn(to_double(in, v, op)), op, v);
}

static Value sqrt_value(Interp& in, Value v) {
  double x = to_double(in, v, "sqrt");
  if (x < 0) complex_result(in, "sqrt", v);
  return Value::flt(std::sqrt(x));  // keeps -0.0, as SBCL does
}

static double natural_log(Interp& in, Value v, const char* op) {
  double x = to_double(in, v, op);
  if (x == 0) in.fail("E-DIV-ZERO", "(log " + in.show(v) + "): the logarithm of zero is -infinity");
  if (x < 0) complex_result(in, op, v);
  return std::log(x);
}

// (log n base) is (/ (log n) (log base)), as SBCL computes it; SBCL gives 0
// for a zero base, whatever the number.
static Value log_value(Interp& in, Value* args, int nargs) {
  if (nargs == 1) return Value::flt(natural_log(in, args[0], "log"));
  if (to_double(in, args[1], "log") == 0) {
    check_number(in, args[0], "log");
    return Value::flt(0.0);
  }
  double n = natural_log(in, args[0], "log"), b = natural_log(in, args[1], "log");
  if (b == 0) div_zero_error(in, "log", args[0], args[1]);  // base 1
  return Value::flt(n / b);
}

// Inverse functions defined only on [lo, hi] (otherwise complex).
static Value bounded(Interp& in, Value v, const char* op, double lo, double hi,
                     double (*fn)(double)) {
  double x = to_double(in, v, op);
  if (x < lo || x > hi) complex_result(in, op, v);
  return Value::flt(fn(x));
}

static Value atanh_value(Interp& in, Value v) {
  double x = to_double(in, v, "atanh");
  if (x == 1 || x == -1) div_zero_error(in, "atanh", v);
  return bounded(in, v, "atanh", -1, 1, [](double y) { return std::atanh(y); });
}

static Value atan_value(Interp& in, Value* args, int nargs) {
  if (nargs == 1) return Value::flt(std::atan(to_double(in, args[0], "atan")));
  return Value::flt(std::atan2(to_double(in, args[0], "atan"), to_double(in, args[1], "atan")));
}

// ---- bitwise operations ----------------------------------------------------------------------

template <typename Op>
static Value fold_bits(Interp& in, Value* args, int nargs, int64_t init, const char* op, Op f) {
  int64_t acc = init;
  for (int i = 0; i < nargs; ++i) acc = f(acc, check_integer(in, args[i], op));
  return Value::integer(acc);
}

template <typename Op>
static Value bits2(Interp& in, Value* args, const char* op, Op f) {
  return Value::integer(f(check_integer(in, args[0], op), check_integer(in, args[1], op)));
}

static Value ash_value(Interp& in, Value xv, Value cv) {
  int64_t x = check_integer(in, xv, "ash"), c = check_integer(in, cv, "ash");
  if (x == 0) return xv;
  if (c <= -64) return Value::integer(x < 0 ? -1 : 0);
  if (c < 0) return Value::integer(x >> -c);  // arithmetic shift: floor division
  if (c >= 64) overflow_error(in, "ash", xv, cv);
  __int128 r = (__int128)x << c;
  if (r > INT64_MAX || r < INT64_MIN) overflow_error(in, "ash", xv, cv);
  return Value::integer(int64_t(r));
}

static Value logbitp_value(Interp& in, Value iv, Value xv) {
  if (!iv.is_int() || iv.i < 0) in.type_error(iv, "a non-negative integer", "logbitp");
  int64_t x = check_integer(in, xv, "logbitp");
  if (iv.i >= 63) return in.boolean(x < 0);  // the sign extends forever
  return in.boolean((x >> iv.i) & 1);
}

static Value integer_length(Interp& in, Value v) {
  int64_t x = check_integer(in, v, "integer-length");
  uint64_t u = uint64_t(x < 0 ? ~x : x);
  return Value::integer(u == 0 ? 0 : 64 - __builtin_clzll(u));
}

static Value logcount(Interp& in, Value v) {
  int64_t x = check_integer(in, v, "logcount");
  return Value::integer(__builtin_popcountll(uint64_t(x < 0 ? ~x : x)));
}

// ---- random ----------------------------------------------------------------------------------

// splitmix64 (Steele, Lea, Flood 2014) over in.random_state: every session
// starts from the same state, so a run file's random numbers are the same
// on every compile. (SBCL's MT19937 sequence is not reproduced.)
static uint64_t next_random(Interp& in) {
  uint64_t z = (in.random_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static Value random_value(Interp& in, Value limit) {
  if (limit.is_int() && limit.i > 0) {
    uint64_t n = uint64_t(limit.i);
    uint64_t threshold = (0 - n) % n;  // reject the low values that would bias x % n
    for (;;) {
      uint64_t x = next_random(in);
      if (x >= threshold) return Value::integer(int64_t(x % n));
    }
  }
  if (limit.is_float() && limit.f > 0 && std::isfinite(limit.f)) {
    for (;;) {
      double u = double(next_random(in) >> 11) * 0x1p-53;  // [0, 1)
      double r = u * limit.f;
      if (r < limit.f) return Value::flt(r);  // rounding can reach the limit: draw again
    }
  }
  in.type_error(limit, "a positive integer or positive float", "random");
}

// ---- parse-integer ---------------------------------------------------------------------------

// A parse-error condition (not a type-error), reported as E-TYPE.
[[noreturn]] static void parse_error(Interp& in, std::string msg) {
  LispError e;
  e.diag.code = "E-TYPE";
  e.diag.severity = Severity::Error;
  e.diag.span = in.current_span();
  e.diag.message = msg;
  Condition* c = in.alloc<Condition>();
  c->type = in.sym("PARSE-ERROR");
  c->code = "E-TYPE";
  c->message = std::move(msg);
  c->format_control = in.nil();
  c->format_args = in.nil();
  c->span = e.diag.span;
  e.condition = Value::object(Kind::Condition, c);
  throw e;
}

// SBCL's whitespace[1]p.
static bool whitespace(char32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static size_t bound_index(Interp& in, Value v, size_t dflt, size_t len, const char* what) {
  if (v.is_nil()) return dflt;
  if (!v.is_int() || v.i < 0 || size_t(v.i) > len)
    in.type_error(v, "an index from 0 to " + std::to_string(len),
                  std::string("parse-integer ") + what);
  return size_t(v.i);
}

// Follows SBCL's parse-integer: optional whitespace, a sign, digits, optional
// whitespace; the second value is the index where parsing stopped.
static Value parse_integer(Interp& in, Value* args, int nargs) {
  String* s = in.arg_string(args[0], "parse-integer");
  Value k[4];
  in.parse_keys(args, nargs, 1, {"START", "END", "RADIX", "JUNK-ALLOWED"}, k);
  size_t len = s->size();
  size_t start = bound_index(in, k[0], 0, len, ":start"),
         end = bound_index(in, k[1], len, len, ":end");
  if (start > end) in.type_error(k[0], "at most :end", "parse-integer :start");
  Value radix_v = k[2].is_nil() ? Value::integer(10) : k[2];
  if (!radix_v.is_int() || radix_v.i < 2 || radix_v.i > 36)
    in.type_error(radix_v, "a radix from 2 to 36", "parse-integer");
  int radix = int(radix_v.i);
  bool junk = k[3].truthy();
  const std::u32string& str = s->chars;
  auto shown = [&] { return in.show(args[0]); };
  size_t i = start;
  while (i < end && whitespace(str[i])) ++i;
  if (i == end) {
    if (junk) return in.values2(in.nil(), Value::integer(int64_t(end)));
    parse_error(in, "parse-integer: no non-whitespace characters in " + shown());
  }
  bool negative = str[i] == '-';
  if (str[i] == '-' || str[i] == '+') ++i;
  bool found = false;
  int64_t acc = 0;  // accumulated with the sign, so most-negative-fixnum parses
  for (; i < end; ++i) {
    int w = digit_weight(str[i], radix);  // chars.h: Unicode decimal digits too, like SBCL
    if (w >= 0) {
      if (__builtin_mul_overflow(acc, int64_t(radix), &acc) ||
          __builtin_add_overflow(acc, negative ? -w : w, &acc))
        in.fail("E-OVERFLOW", "parse-integer: " + shown() + " does not fit in a 64-bit integer");
      found = true;
      continue;
    }
    if (junk) break;
    if (!whitespace(str[i])) parse_error(in, "parse-integer: junk in " + shown());
    for (; i < end; ++i)
      if (!whitespace(str[i])) parse_error(in, "parse-integer: junk in " + shown());
    break;
  }
  if (!found && !junk) parse_error(in, "parse-integer: no digits in " + shown());
  return in.values2(found ? Value::integer(acc) : in.nil(), Value::integer(int64_t(i)));
}

// ---- coerce ----------------------------------------------------------------------------------

static bool named(Value v, const char* name) {
  return v.is_symbol() && !v.sym()->keyword && v.sym()->name == name;
}

static bool is_any(Value v, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (named(v, n)) return true;
  return false;
}

// The elements of a sequence (E-TYPE for other objects).
static std::vector<Value> sequence_items(Interp& in, Value x, Value type) {
  if (x.is_list()) return in.list_items(x, "coerce");
  if (x.is_vector())
    return {x.vec()->items.begin(), x.vec()->items.begin() + long(x.vec()->size())};
  if (x.is_string()) {
    std::vector<Value> out;
    for (size_t i = 0; i < x.str()->size(); ++i) out.push_back(Value::character(x.str()->chars[i]));
    return out;
  }
  in.type_error(x, "coercible to " + in.show(type), "coerce");
}

static Value to_string(Interp& in, Value x, Value type) {
  if (x.is_string()) return x;
  std::u32string s;
  for (Value e : sequence_items(in, x, type)) {
    if (!e.is_char()) in.type_error(e, "a character (element of a string)", "coerce");
    s += e.ch;
  }
  return in.make_string(std::move(s));
}

// A vector of element type t. `simple`: no fill pointer.
static Value to_general_vector(Interp& in, Value x, Value type, bool simple) {
  if (x.is_vector() && !is_bit_vector(x) && (!simple || x.vec()->fill_pointer < 0)) return x;
  return in.make_vector(sequence_items(in, x, type));
}

static Value to_character(Interp& in, Value x, Value type) {
  if (x.is_char()) return x;
  std::u32string name;
  if (x.is_string()) name = std::u32string(x.str()->chars, 0, x.str()->size());
  if (x.is_symbol()) name = utf8_to_u32(x.sym()->name);
  if (name.size() != 1) in.type_error(x, "coercible to " + in.show(type), "coerce");
  return Value::character(name[0]);
}

static Value to_function(Interp& in, Value x) {
  if (x.is_cons() && named(x.cons()->car, "LAMBDA")) return in.eval(x, nullptr);
  return in.resolve_function(x);
}

static Value to_bit_vector(Interp& in, Value x, Value type) {
  if (is_bit_vector(x)) return x;
  return make_bit_vector(in, sequence_items(in, x, type), "coerce");
}

// A compound array type ((vector E), (simple-array E (*)), ...) by element type.
static Value to_array_type(Interp& in, Value x, Value type) {
  Value elem = car_of(cdr_of(type));
  bool simple = named(car_of(type), "SIMPLE-ARRAY");
  if (is_any(elem, {"CHARACTER", "BASE-CHAR", "STANDARD-CHAR"})) return to_string(in, x, type);
  if (named(elem, "*") || elem.p == nullptr || !cdr_of(type).is_cons()) {
    if (x.is_vector() || x.is_string()) return x;
    return in.make_vector(sequence_items(in, x, type));
  }
  if (named(elem, "T")) return to_general_vector(in, x, type, simple);
  if (named(elem, "BIT")) return to_bit_vector(in, x, type);
  in.fail("E-UNSUPPORTED", "coerce: arrays of element type " + in.show(elem) + " are not supported",
          "use element type t or character");
}

static Value coerce_value(Interp& in, Value x, Value type) {
  Value head = type.is_cons() ? type.cons()->car : type;
  if (named(type, "T")) return x;
  if (is_any(head, {"FLOAT", "DOUBLE-FLOAT", "SINGLE-FLOAT", "SHORT-FLOAT", "LONG-FLOAT"})) {
    if (!x.is_number()) in.type_error(x, "coercible to " + in.show(type), "coerce");
    return x.is_float() ? x : Value::flt(double(x.i));
  }
  if (named(type, "COMPLEX") && x.is_number()) {
    if (x.is_float()) complex_result(in, "coerce", x, type);
    return x;  // a rational stays itself, as in CL
  }
  if (is_any(type, {"CHARACTER", "BASE-CHAR"})) return to_character(in, x, type);
  if (named(type, "FUNCTION")) return to_function(in, x);
  if (named(type, "LIST")) return x.is_list() ? x : in.list_from(sequence_items(in, x, type));
  if (is_any(type, {"STRING", "SIMPLE-STRING", "BASE-STRING", "SIMPLE-BASE-STRING"}))
    return to_string(in, x, type);
  if (named(type, "SIMPLE-VECTOR")) return to_general_vector(in, x, type, true);
  if (is_any(type, {"BIT-VECTOR", "SIMPLE-BIT-VECTOR"})) return to_bit_vector(in, x, type);
  if (is_any(head, {"BIT-VECTOR", "SIMPLE-BIT-VECTOR"}) && type.is_cons()) {
    Value r = to_bit_vector(in, x, type);
    if (!typep(in, r, type)) in.type_error(x, "coercible to " + in.show(type), "coerce");
    return r;
  }
  if (named(type, "VECTOR")) {
    if (x.is_vector() || x.is_string()) return x;
    return in.make_vector(sequence_items(in, x, type));
  }
  if (is_any(head, {"VECTOR", "ARRAY", "SIMPLE-ARRAY"}) && type.is_cons()) {
    Value r = to_array_type(in, x, type);
    // A length the type names must be the sequence's ((vector * 2)).
    if (!typep(in, r, type)) in.type_error(x, "coercible to " + in.show(type), "coerce");
    return r;
  }
  // Everything else, including SBCL's refusal to make an 'array of a list:
  // the object must already be of the type.
  if (typep(in, x, type)) return x;
  in.type_error(x, "coercible to " + in.show(type), "coerce");
}

// ---- registration ------------------------------------------------------------------------------

static void register_powers(Interp& in) {
  SG_BUILTIN(in, "EXPT", 2, 2, "base to the power (exact for integers)",
             { return expt_value(in, args[0], args[1]); });
  SG_BUILTIN(in, "SQRT", 1, 1, "square root, a float", { return sqrt_value(in, args[0]); });
  SG_BUILTIN(in, "EXP", 1, 1, "e to the power",
             { return unary_float(in, args[0], "exp", [](double x) { return std::exp(x); }); });
  SG_BUILTIN(in, "LOG", 1, 2, "natural logarithm, or logarithm to a base",
             { return log_value(in, args, nargs); });
}

static void register_trigonometry(Interp& in) {
  SG_BUILTIN(in, "SIN", 1, 1, "sine (radians)",
             { return unary_float(in, args[0], "sin", [](double x) { return std::sin(x); }); });
  SG_BUILTIN(in, "COS", 1, 1, "cosine (radians)",
             { return unary_float(in, args[0], "cos", [](double x) { return std::cos(x); }); });
  SG_BUILTIN(in, "TAN", 1, 1, "tangent (radians)",
             { return unary_float(in, args[0], "tan", [](double x) { return std::tan(x); }); });
  SG_BUILTIN(in, "ASIN", 1, 1, "arc sine, for arguments in [-1, 1]", {
    return bounded(in, args[0], "asin", -1, 1, [](double x) { return std::asin(x); });
  });
  SG_BUILTIN(in, "ACOS", 1, 1, "arc cosine, for arguments in [-1, 1]", {
    return bounded(in, args[0], "acos", -1, 1, [](double x) { return std::acos(x); });
  });
  SG_BUILTIN(in, "ATAN", 1, 2, "arc tangent; (atan y x) gives the angle of the point (x, y)",
             { return atan_value(in, args, nargs); });
  SG_BUILTIN(in, "SINH", 1, 1, "hyperbolic sine",
             { return unary_float(in, args[0], "sinh", [](double x) { return std::sinh(x); }); });
  SG_BUILTIN(in, "COSH", 1, 1, "hyperbolic cosine",
             { return unary_float(in, args[0], "cosh", [](double x) { return std::cosh(x); }); });
  SG_BUILTIN(in, "TANH", 1, 1, "hyperbolic tangent",
             { return unary_float(in, args[0], "tanh", [](double x) { return std::tanh(x); }); });
  SG_BUILTIN(in, "ASINH", 1, 1, "inverse hyperbolic sine",
             { return unary_float(in, args[0], "asinh", [](double x) { return std::asinh(x); }); });
  SG_BUILTIN(in, "ACOSH", 1, 1, "inverse hyperbolic cosine, for arguments >= 1", {
    return bounded(in, args[0], "acosh", 1, INFINITY, [](double x) { return std::acosh(x); });
  });
  SG_BUILTIN(in, "ATANH", 1, 1, "inverse hyperbolic tangent, for arguments in (-1, 1)",
             { return atanh_value(in, args[0]); });
}

static void register_bits(Interp& in) {
  SG_BUILTIN(in, "LOGAND", 0, -1, "bitwise and (-1 with no arguments)", {
    return fold_bits(in, args, nargs, -1, "logand", [](int64_t a, int64_t b) { return a & b; });
  });
  SG_BUILTIN(in, "LOGIOR", 0, -1, "bitwise inclusive or (0 with no arguments)", {
    return fold_bits(in, args, nargs, 0, "logior", [](int64_t a, int64_t b) { return a | b; });
  });
  SG_BUILTIN(in, "LOGXOR", 0, -1, "bitwise exclusive or (0 with no arguments)", {
    return fold_bits(in, args, nargs, 0, "logxor", [](int64_t a, int64_t b) { return a ^ b; });
  });
  SG_BUILTIN(in, "LOGEQV", 0, -1, "bitwise equivalence (-1 with no arguments)", {
    return fold_bits(in, args, nargs, -1, "logeqv", [](int64_t a, int64_t b) { return ~(a ^ b); });
  });
  SG_BUILTIN(in, "LOGNAND", 2, 2, "bitwise not-and",
             { return bits2(in, args, "lognand", [](int64_t a, int64_t b) { return ~(a & b); }); });
  SG_BUILTIN(in, "LOGNOR", 2, 2, "bitwise not-or",
             { return bits2(in, args, "lognor", [](int64_t a, int64_t b) { return ~(a | b); }); });
  SG_BUILTIN(in, "LOGANDC1", 2, 2, "bitwise and of the complement of the first with the second",
             { return bits2(in, args, "logandc1", [](int64_t a, int64_t b) { return ~a & b; }); });
  SG_BUILTIN(in, "LOGANDC2", 2, 2, "bitwise and of the first with the complement of the second",
             { return bits2(in, args, "logandc2", [](int64_t a, int64_t b) { return a & ~b; }); });
  SG_BUILTIN(in, "LOGORC1", 2, 2, "bitwise or of the complement of the first with the second",
             { return bits2(in, args, "logorc1", [](int64_t a, int64_t b) { return ~a | b; }); });
  SG_BUILTIN(in, "LOGORC2", 2, 2, "bitwise or of the first with the complement of the second",
             { return bits2(in, args, "logorc2", [](int64_t a, int64_t b) { return a | ~b; }); });
  SG_BUILTIN(in, "LOGNOT", 1, 1, "bitwise complement",
             { return Value::integer(~check_integer(in, args[0], "lognot")); });
  SG_BUILTIN(in, "LOGTEST", 2, 2, "do the integers share a 1 bit", {
    return in.boolean(
        (check_integer(in, args[0], "logtest") & check_integer(in, args[1], "logtest")) != 0);
  });
  SG_BUILTIN(in, "ASH", 2, 2, "arithmetic shift left (negative count: right)",
             { return ash_value(in, args[0], args[1]); });
  SG_BUILTIN(in, "LOGBITP", 2, 2, "is bit INDEX of the integer set",
             { return logbitp_value(in, args[0], args[1]); });
  SG_BUILTIN(in, "LOGCOUNT", 1, 1, "number of 1 bits (of 0 bits if negative)",
             { return logcount(in, args[0]); });
  SG_BUILTIN(in, "INTEGER-LENGTH", 1, 1, "bits needed for the integer in two's complement",
             { return integer_length(in, args[0]); });
}

static void register_real_parts(Interp& in) {
  SG_BUILTIN(in, "NUMERATOR", 1, 1, "the integer itself (there are no ratios)",
             { return Value::integer(check_integer(in, args[0], "numerator")); });
  SG_BUILTIN(in, "DENOMINATOR", 1, 1, "1 for an integer (there are no ratios)", {
    check_integer(in, args[0], "denominator");
    return Value::integer(1);
  });
  SG_BUILTIN(in, "REALPART", 1, 1, "the number itself (there are no complex numbers)",
             { return check_number(in, args[0], "realpart"); });
  SG_BUILTIN(in, "IMAGPART", 1, 1, "zero of the number's type (there are no complex numbers)", {
    Value x = check_number(in, args[0], "imagpart");
    return x.is_int() ? Value::integer(0) : Value::flt(0.0 * x.f);  // (* 0 x): -0.0 for -x
  });
  SG_BUILTIN(in, "CONJUGATE", 1, 1, "the number itself (there are no complex numbers)",
             { return check_number(in, args[0], "conjugate"); });
  SG_BUILTIN(in, "PHASE", 1, 1, "the angle of a real: pi if negative, else 0.0", {
    Value x = check_number(in, args[0], "phase");
    return Value::flt((x.is_int() ? x.i < 0 : std::signbit(x.f)) ? M_PI : 0.0);
  });
  SG_BUILTIN(in, "FLOAT-SIGN", 1, 2, "1.0 or -1.0 by the float's sign, times |second argument|", {
    if (!args[0].is_float()) in.type_error(args[0], "a float", "float-sign");
    if (nargs > 1 && !args[1].is_float()) in.type_error(args[1], "a float", "float-sign");
    return Value::flt(std::copysign(nargs > 1 ? std::fabs(args[1].f) : 1.0, args[0].f));
  });
}

void register_math_builtins(Interp& in) {
  register_powers(in);
  register_trigonometry(in);
  register_bits(in);
  register_real_parts(in);
  SG_BUILTIN(in, "RANDOM", 1, 1, "uniform random integer in [0, n) or float in [0, x) (seeded)",
             { return random_value(in, args[0]); });
  SG_BUILTIN(in, "PARSE-INTEGER", 1, -1,
             "an integer read from a string (:start :end :radix :junk-allowed); and the end index",
             { return parse_integer(in, args, nargs); });
  SG_BUILTIN(in, "COERCE", 2, 2,
             "convert to a type: float, character, function, list, vector, string",
             { return coerce_value(in, args[0], args[1]); });
  in.defconstant("MOST-POSITIVE-DOUBLE-FLOAT", Value::flt(DBL_MAX));
  in.defconstant("MOST-NEGATIVE-DOUBLE-FLOAT", Value::flt(-DBL_MAX));
  in.defconstant("LEAST-POSITIVE-DOUBLE-FLOAT", Value::flt(DBL_TRUE_MIN));
  in.defconstant("LEAST-NEGATIVE-DOUBLE-FLOAT", Value::flt(-DBL_TRUE_MIN));
  in.defconstant("LEAST-POSITIVE-NORMALIZED-DOUBLE-FLOAT", Value::flt(DBL_MIN));
  in.defconstant("DOUBLE-FLOAT-EPSILON", Value::flt(0x1.0000000000001p-53));
  in.defconstant("DOUBLE-FLOAT-NEGATIVE-EPSILON", Value::flt(0x1.0000000000001p-54));
}

}  // namespace sexpgpu::lisp
