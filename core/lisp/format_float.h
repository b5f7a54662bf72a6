// The float directives of `format` (~F ~E ~G ~$), ported from SBCL's
// target-format.lisp and print.lisp so that every digit matches SBCL's: the
// same Burger-Dybvig digit generation with SBCL's rounding extension (exact,
// on big integers), and the same floating-point SCALE-EXPONENT that ~E uses
// (whose rounding SBCL's output shows, e.g. (format nil "~e" 1.5) is
// "1.4999999999999997e+0"). Used only by format.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sexpgpu::lisp::fmtfloat {

using Opt = std::optional<int64_t>;

// Parameters of one float directive, as FORMAT parsed them (nullopt: not
// given). `marker` is the ~E exponent character (0: the default `e`).
struct FloatParams {
  Opt w, d, e, k;
  std::optional<char32_t> ovf;
  char32_t pad = U' ';
  char32_t marker = 0;
  bool atsign = false;
};

// ~F. Returns true when the field overflowed (for ~G).
bool format_fixed(std::u32string& out, double x, const FloatParams& p);
// ~E (k defaults to 1 when absent).
void format_exp(std::u32string& out, double x, const FloatParams& p);
// ~G.
void format_general(std::u32string& out, double x, const FloatParams& p);
// ~$ with d (fraction digits), n (integer digits), w (width), colon (sign
// before the padding).
void format_dollars(std::u32string& out, double x, int64_t d, int64_t n, int64_t w, char32_t pad,
                    bool colon, bool atsign);

}  // namespace sexpgpu::lisp::fmtfloat
