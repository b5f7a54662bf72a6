// The source formatter behind `sexpgpu fmt`: text in, text in the one layout
// out. It reads with its own lossless concrete syntax tree (every token and
// comment kept), so it depends on nothing in the evaluator and can format a
// file that does not yet compile. The layout rules are listed at the top of
// fmt.cpp (and in docs/new.md).
//
// Invariants, for every input that reads:
//   - format_source(format_source(x)) == format_source(x);
//   - the token sequence is unchanged (tokens are kept exactly as written,
//     but for a character written as `#\` followed by a bare whitespace
//     character, which becomes its name, e.g. `#\Space`: the same character);
//   - every comment is kept with its text and in its place (trailing
//     whitespace dropped);
//   - the output ends with exactly one newline (empty input gives empty
//     output) and no line ends in whitespace outside string literals and
//     escaped symbols.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sexpgpu::lisp {

struct FmtError {
  uint32_t line = 0, col = 0;  // 1-based; col counts UTF-8 characters, as the reader's spans do
  std::string message;
};

// Returns true and sets `out` to the formatted text; false with `err` set at
// the opening token when the text does not read (unbalanced parentheses,
// unterminated string, |symbol| or #| comment, a quote with nothing after it,
// nesting deeper than the reader allows).
bool format_source(std::string_view text, std::string& out, FmtError& err);

// The widest line the formatter aims for, in characters. Longer lines remain
// only where no break is allowed (a long atom, a distinguished argument).
constexpr int kFmtWidth = 100;

}  // namespace sexpgpu::lisp
