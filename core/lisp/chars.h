// Character classes and case mapping, exactly as SBCL's CL functions see
// them over all of Unicode (builtins_char.cpp, from tables generated from
// SBCL). A character has a case only where SBCL gives it one: #\ß and the
// final sigma have none.
#pragma once

#include <string>

#include "lisp/interp.h"

namespace sexpgpu::lisp {

char32_t char_upcase(char32_t c);
char32_t char_downcase(char32_t c);
bool upper_case_p(char32_t c);
bool lower_case_p(char32_t c);
// Title-case letters (Dž) are neither upper nor lower case, but both-case.
inline bool both_case_p(char32_t c) {
  return char_upcase(c) != c || char_downcase(c) != c;
}
// What char-equal and string-equal compare (SBCL folds to lower case, so
// #\[ is char-lessp #\a).
inline char32_t char_fold(char32_t c) {
  return c < 128 ? (c >= 'A' && c <= 'Z' ? c + 32 : c) : char_downcase(c);
}
bool alpha_char_p(char32_t c);
// The weight of c as a digit in radix (2..36), or -1. Unicode decimal digits
// count in any radix above their weight, as in SBCL.
int digit_weight(char32_t c, int radix);
inline bool alphanumeric_p(char32_t c) {
  return alpha_char_p(c) || digit_weight(c, 10) >= 0;
}
inline bool graphic_char_p(char32_t c) {
  return (c > 31 && c < 127) || c > 159;
}

// char-name and name-char: SBCL's names for codes 0..255 and its aliases;
// above 255 "U<hex>" (SBCL gives Unicode names there; it reads both).
std::string char_name_of(char32_t c);
bool char_from_lisp_name(std::u32string_view name, char32_t& out);

void register_char_builtins(Interp& in);

}  // namespace sexpgpu::lisp
