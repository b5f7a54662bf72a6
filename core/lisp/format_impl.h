// Internals of `format` shared by format.cpp (the control-string parser and
// the directive interpreter) and format_text.cpp (the text-producing helpers:
// padding, integers in a radix, English and Roman numerals, character names,
// case conversion). Nothing outside these files includes this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lisp/interp.h"

namespace sexpgpu::lisp::fmt_impl {

// ---- parsed control strings (format_parse.cpp) ----------------------------------

struct Param {
  enum Kind : uint8_t { None, Int, Char, Arg, Count } kind = None;
  int64_t v = 0;
};

// One element of a parsed control string: literal text (ch == 0) or a
// directive.
struct Directive {
  char32_t ch = 0;  // upper-cased directive character; 0 for text
  bool colon = false, at = false;
  uint32_t pos = 0;  // index of the '~' (or the text start) in the control string
  uint32_t end = 0;  // index just after the directive character
  std::u32string text;
  std::vector<Param> params;
  int close = -1;         // ( [ { < : index of the matching closing directive
  std::vector<int> seps;  // [ < : indices of their ~; separators
};

struct Parsed {
  const std::u32string* control = nullptr;  // the text, for error messages
  std::vector<Directive> d;
};

// Parse a control string: E-TYPE (naming the position) when it is malformed
// (an unknown modifier use, an unclosed or unmatched bracket, a misplaced ~;).
Parsed parse(Interp& in, const std::u32string& control);
[[noreturn]] void control_error(Interp& in, const std::u32string& control, size_t pos,
                                const std::string& msg);

// ---- text helpers (format_text.cpp) --------------------------------------------

// mincol/colinc/minpad/padchar padding as SBCL's FORMAT-WRITE-FIELD does it.
void write_field(std::u32string& out, std::u32string_view s, int64_t mincol, int64_t colinc,
                 int64_t minpad, char32_t padchar, bool padleft);

// The digits of |v| in radix (2..36), upper-case letters, as princ prints.
std::u32string integer_digits(int64_t v, int radix);
// Insert commachar every `interval` digits from the right.
std::u32string add_commas(const std::u32string& digits, char32_t commachar, int64_t interval);

// ~R without a radix. Return false when the number is out of range (Roman).
void cardinal(std::u32string& out, int64_t n);
void ordinal(std::u32string& out, int64_t n);
bool roman(std::u32string& out, int64_t n, bool old_style);

// ~:C: the character itself if it prints, else its name capitalized.
void named_char(std::u32string& out, char32_t c);

// ~( ~): convert out[start..] in place.
enum class CaseMode { Downcase, Upcase, Capitalize, CapitalizeFirst };
void convert_case(std::u32string& out, size_t start, CaseMode mode);

// ~mincol,colinc,minpad,padchar<...~>: lay out the segment strings. With
// `newline_prefix` (the ~:; segment), it is output first when the laid-out
// text would pass line_len after `column` plus `extra`.
struct Justify {
  bool pad_left = false, pad_right = false;
  int64_t mincol = 0, colinc = 1, minpad = 0;
  char32_t padchar = U' ';
  const std::u32string* newline_prefix = nullptr;
  int64_t extra = 0, line_len = 72, column = 0;
};
void justify(std::u32string& out, const std::vector<std::u32string>& strings, const Justify& j);

void append_utf8(std::u32string& out, std::string_view s);

}  // namespace sexpgpu::lisp::fmt_impl
