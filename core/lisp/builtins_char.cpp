// Characters: case mapping and classes from tables generated from SBCL
// (builtins_char_tables.inc), char-name/name-char, and the character
// builtins (char=, char-lessp, alpha-char-p, digit-char-p, code-char ...).
#include <algorithm>
#include <charconv>

#include "lisp/builtins.h"
#include "lisp/chars.h"

namespace sexpgpu::lisp {

namespace {

struct CaseRun {
  char32_t first, last;
  int32_t stride, delta;
};
struct CodeRange {
  char32_t first, last;
};

#include "lisp/builtins_char_tables.inc"

char32_t map_case(const CaseRun* runs, size_t n, char32_t c) {
  // The last run starting at or before c.
  const CaseRun* end = runs + n;
  const CaseRun* it =
      std::upper_bound(runs, end, c, [](char32_t x, const CaseRun& r) { return x < r.first; });
  if (it == runs) return c;
  const CaseRun& r = *(it - 1);
  if (c > r.last || (c - r.first) % char32_t(r.stride) != 0) return c;
  return char32_t(int64_t(c) + r.delta);
}

// The four title-case letters (Dž Lj Nj Dz) change under both mappings but
// are neither upper nor lower case in SBCL.
bool title_case(char32_t c) {
  return c == 0x1C5 || c == 0x1C8 || c == 0x1CB || c == 0x1F2;
}

}  // namespace

char32_t char_upcase(char32_t c) {
  if (c < 128) return c >= 'a' && c <= 'z' ? c - 32 : c;
  return map_case(kUpcaseRuns, std::size(kUpcaseRuns), c);
}

char32_t char_downcase(char32_t c) {
  if (c < 128) return c >= 'A' && c <= 'Z' ? c + 32 : c;
  return map_case(kDowncaseRuns, std::size(kDowncaseRuns), c);
}

bool upper_case_p(char32_t c) {
  return char_downcase(c) != c && !title_case(c);
}
bool lower_case_p(char32_t c) {
  return char_upcase(c) != c && !title_case(c);
}

bool alpha_char_p(char32_t c) {
  if (c < 128) return (c | 32) >= 'a' && (c | 32) <= 'z';
  auto end = std::end(kAlphaRanges);
  auto it = std::upper_bound(std::begin(kAlphaRanges), end, c,
                             [](char32_t x, const CodeRange& r) { return x < r.first; });
  return it != std::begin(kAlphaRanges) && c <= (it - 1)->last;
}

int digit_weight(char32_t c, int radix) {
  int w = -1;
  if (c >= '0' && c <= '9')
    w = int(c - '0');
  else if ((c | 32) >= 'a' && (c | 32) <= 'z')
    w = int((c | 32) - 'a') + 10;
  else if (c >= 128) {
    auto it = std::upper_bound(std::begin(kDigitZeros), std::end(kDigitZeros), c);
    if (it != std::begin(kDigitZeros) && c - *(it - 1) < 10) w = int(c - *(it - 1));
  }
  return w < radix ? w : -1;
}

std::string char_name_of(char32_t c) {
  if (c < 256) return kCharNames[c];
  char buf[16];
  auto r = std::to_chars(buf, buf + sizeof buf, uint32_t(c), 16);
  std::string hex(buf, r.ptr);
  for (char& ch : hex) ch = char(std::toupper((unsigned char)ch));
  return "U" + hex;
}

namespace {

// name-char's extra names (SBCL's aliases), upper case.
const struct {
  const char* name;
  char32_t code;
} kAliases[] = {
    {"NULL", 0},      {"^@", 0},  {"^G", 7},       {"BS", 8},      {"HT", 9},
    {"LINEFEED", 10}, {"LF", 10}, {"NL", 10},      {"FORM", 12},   {"FORMFEED", 12},
    {"FF", 12},       {"NP", 12}, {"CR", 13},      {"ESCAPE", 27}, {"ALTMODE", 27},
    {"ALT", 27},      {"SP", 32}, {"DELETE", 127}, {"DEL", 127},   {"BELL", 0x1F514},
};

bool parse_hex_code(std::string_view hex, char32_t& out) {
  if (hex.empty()) return false;
  uint32_t v = 0;
  auto r = std::from_chars(hex.data(), hex.data() + hex.size(), v, 16);
  if (r.ec != std::errc() || r.ptr != hex.data() + hex.size() || v > 0x10FFFF) return false;
  out = v;
  return true;
}

}  // namespace

bool char_from_lisp_name(std::u32string_view name, char32_t& out) {
  std::string up;
  for (char32_t c : name) {
    if (c >= 128) return false;  // every name we know is ASCII
    up += char(std::toupper(int(c)));
  }
  for (int i = 0; i < 256; ++i)
    if (up == upcase_ascii(kCharNames[i])) {
      out = char32_t(i);
      return true;
    }
  for (const auto& a : kAliases)
    if (up == a.name) {
      out = a.code;
      return true;
    }
  // ^A .. ^_ : control characters.
  if (up.size() == 2 && up[0] == '^' && up[1] >= 'A' && up[1] <= '_') {
    out = char32_t(up[1] - 64);
    return true;
  }
  if (up.size() > 1 && up[0] == 'U') {
    std::string_view hex(up);
    hex.remove_prefix(hex.size() > 2 && hex[1] == '+' ? 2 : 1);
    return parse_hex_code(hex, out);
  }
  return false;
}

namespace {

// A character argument; `where` is the builtin's (upper-case) name.
char32_t char_arg(Interp& in, Value v, const char* where) {
  if (!v.is_char()) in.type_error(v, "a character", op_name(where));
  return v.ch;
}

// The n-ary comparisons: every adjacent pair satisfies `ok` (char/= and
// char-not-equal: every pair is distinct).
template <typename Key, typename Cmp>
Value compare_chars(Interp& in, Value* args, int nargs, const char* where, Key key, Cmp ok) {
  for (int i = 0; i < nargs; ++i) char_arg(in, args[i], where);
  for (int i = 0; i + 1 < nargs; ++i)
    if (!ok(key(args[i].ch), key(args[i + 1].ch))) return in.nil();
  return in.t();
}

template <typename Key>
Value all_distinct(Interp& in, Value* args, int nargs, const char* where, Key key) {
  for (int i = 0; i < nargs; ++i) char_arg(in, args[i], where);
  for (int i = 0; i < nargs; ++i)
    for (int j = i + 1; j < nargs; ++j)
      if (key(args[i].ch) == key(args[j].ch)) return in.nil();
  return in.t();
}

char32_t same(char32_t c) {
  return c;
}

int radix_arg(Interp& in, Value* args, int nargs, int i, const char* where) {
  if (nargs <= i) return 10;
  if (!args[i].is_int() || args[i].i < 2 || args[i].i > 36)
    in.type_error(args[i], "a radix (an integer from 2 to 36)", where);
  return int(args[i].i);
}

void register_comparisons(Interp& in) {
  // Case-sensitive, then case-insensitive (folded as char-equal does).
#define SG_CHAR_CMP(NAME, KEY, OP, DOC)                                  \
  SG_BUILTIN(in, NAME, 1, -1, DOC, {                                     \
    return compare_chars(in, args, nargs, NAME, KEY,                     \
                         [](char32_t a, char32_t b) { return a OP b; }); \
  })
  SG_CHAR_CMP("CHAR=", same, ==, "are the characters all the same");
  SG_CHAR_CMP("CHAR<", same, <, "are the characters strictly increasing");
  SG_CHAR_CMP("CHAR>", same, >, "are the characters strictly decreasing");
  SG_CHAR_CMP("CHAR<=", same, <=, "are the characters non-decreasing");
  SG_CHAR_CMP("CHAR>=", same, >=, "are the characters non-increasing");
  SG_CHAR_CMP("CHAR-EQUAL", char_fold, ==, "are the characters the same, ignoring case");
  SG_CHAR_CMP("CHAR-LESSP", char_fold, <, "strictly increasing, ignoring case");
  SG_CHAR_CMP("CHAR-GREATERP", char_fold, >, "strictly decreasing, ignoring case");
  SG_CHAR_CMP("CHAR-NOT-GREATERP", char_fold, <=, "non-decreasing, ignoring case");
  SG_CHAR_CMP("CHAR-NOT-LESSP", char_fold, >=, "non-increasing, ignoring case");
#undef SG_CHAR_CMP
  SG_BUILTIN(in, "CHAR/=", 1, -1, "are the characters all different",
             { return all_distinct(in, args, nargs, "CHAR/=", same); });
  SG_BUILTIN(in, "CHAR-NOT-EQUAL", 1, -1, "are the characters all different, ignoring case",
             { return all_distinct(in, args, nargs, "CHAR-NOT-EQUAL", char_fold); });
}

void register_classes(Interp& in) {
#define SG_CHAR_PRED(NAME, FN, DOC) \
  SG_BUILTIN(in, NAME, 1, 1, DOC, { return in.boolean(FN(char_arg(in, args[0], NAME))); })
  SG_CHAR_PRED("ALPHA-CHAR-P", alpha_char_p, "is the character a letter");
  SG_CHAR_PRED("ALPHANUMERICP", alphanumeric_p, "is the character a letter or a digit");
  SG_CHAR_PRED("UPPER-CASE-P", upper_case_p, "is the character an upper-case letter");
  SG_CHAR_PRED("LOWER-CASE-P", lower_case_p, "is the character a lower-case letter");
  SG_CHAR_PRED("BOTH-CASE-P", both_case_p, "does the character have an upper and a lower case");
  SG_CHAR_PRED("GRAPHIC-CHAR-P", graphic_char_p, "is the character printable (not a control)");
#undef SG_CHAR_PRED
  SG_BUILTIN(in, "STANDARD-CHAR-P", 1, 1, "is it one of CL's 96 standard characters", {
    char32_t c = in.arg_char(args[0], "standard-char-p");
    return in.boolean((c >= 32 && c < 127) || c == '\n');
  });
  SG_BUILTIN(in, "CHARACTERP", 1, 1, "is it a character",
             { return in.boolean(args[0].is_char()); });
  SG_BUILTIN(in, "DIGIT-CHAR-P", 1, 2, "the character's weight as a digit (radix 10), or nil", {
    char32_t c = in.arg_char(args[0], "digit-char-p");
    int w = digit_weight(c, radix_arg(in, args, nargs, 1, "digit-char-p"));
    return w < 0 ? in.nil() : Value::integer(w);
  });
  SG_BUILTIN(in, "DIGIT-CHAR", 1, 2, "the (upper-case) character of a digit weight, or nil", {
    if (!args[0].is_int() || args[0].i < 0)
      in.type_error(args[0], "a non-negative integer", "digit-char");
    int radix = radix_arg(in, args, nargs, 1, "digit-char");
    int64_t w = args[0].i;
    if (w >= radix) return in.nil();
    return Value::character(char32_t(w < 10 ? '0' + w : 'A' + w - 10));
  });
}

void register_conversions(Interp& in) {
  SG_BUILTIN(in, "CHAR-CODE", 1, 1, "the character's code point",
             { return Value::integer(in.arg_char(args[0], "char-code")); });
  SG_BUILTIN(in, "CHAR-INT", 1, 1, "the character's code point",
             { return Value::integer(in.arg_char(args[0], "char-int")); });
  SG_BUILTIN(in, "CODE-CHAR", 1, 1, "the character with this code point", {
    if (!args[0].is_int() || args[0].i < 0 || args[0].i > 0x10FFFF)
      in.type_error(args[0], "a character code (0 to 1114111)", "code-char");
    return Value::character(char32_t(args[0].i));
  });
  SG_BUILTIN(in, "CHAR-UPCASE", 1, 1, "the upper-case of a character",
             { return Value::character(char_upcase(in.arg_char(args[0], "char-upcase"))); });
  SG_BUILTIN(in, "CHAR-DOWNCASE", 1, 1, "the lower-case of a character",
             { return Value::character(char_downcase(in.arg_char(args[0], "char-downcase"))); });
  SG_BUILTIN(in, "CHARACTER", 1, 1, "the character a designator (character, 1-char string) names", {
    if (args[0].is_char()) return args[0];
    if (args[0].is_string() || args[0].is_symbol()) {
      std::u32string s = in.string_designator(args[0], "character");
      if (s.size() == 1) return Value::character(s[0]);
    }
    in.type_error(args[0], "a character designator", "character");
  });
  SG_BUILTIN(in, "CHAR-NAME", 1, 1, "the name of a character (SBCL's names)",
             { return in.make_string_utf8(char_name_of(in.arg_char(args[0], "char-name"))); });
  SG_BUILTIN(in, "NAME-CHAR", 1, 1, "the character with this name, or nil", {
    std::u32string name = in.string_designator(args[0], "name-char");
    char32_t c;
    return char_from_lisp_name(name, c) ? Value::character(c) : in.nil();
  });
}

}  // namespace

void register_char_builtins(Interp& in) {
  // The codes code-char accepts: 0 to #x10FFFF, every Unicode code point (SBCL's).
  in.defconstant("CHAR-CODE-LIMIT", Value::integer(0x110000));
  register_comparisons(in);
  register_classes(in);
  register_conversions(in);
}

}  // namespace sexpgpu::lisp
