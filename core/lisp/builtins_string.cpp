// Strings: string designators, comparison (string=, string<, string-lessp ...
// with :start1 :end1 :start2 :end2, returning the mismatch index as CL does),
// case conversion (string-upcase ..., nstring-upcase ...), trimming, char and
// schar, make-string. The character builtins are in builtins_char.cpp.
#include <string_view>

#include "lisp/builtins.h"
#include "lisp/chars.h"

namespace sexpgpu::lisp {

namespace {

// The characters a string designator names: a view into a string (its active
// part, up to the fill pointer), or a copy for symbols and characters.
class Designated {
 public:
  Designated(Interp& in, Value v, const char* where) {
    if (v.is_string()) {
      view_ = std::u32string_view(v.str()->chars.data(), v.str()->size());
    } else {
      own_ = in.string_designator(v, op_name(where));
      view_ = own_;
    }
  }
  Designated(const Designated&) = delete;
  Designated& operator=(const Designated&) = delete;
  std::u32string_view view() const { return view_; }

 private:
  std::u32string own_;
  std::u32string_view view_;
};

struct Bounds {
  size_t start, end;
};

// :start/:end against a length, as CL's bounding indices: 0 <= start <= end
// <= length, end nil meaning the length.
Bounds bounds(Interp& in, Value start, bool start_given, Value end, size_t len, const char* where) {
  int64_t s = 0, e = int64_t(len);
  if (start_given) {
    if (!start.is_int()) in.type_error(start, "an index", op_name(where));
    s = start.i;
  }
  if (!end.is_nil()) {
    if (!end.is_int()) in.type_error(end, "an index or nil", op_name(where));
    e = end.i;
  }
  if (s < 0 || e < 0 || e > int64_t(len) || s > e)
    in.fail("E-TYPE",
            op_name(where) + ": bounding indices :start " + std::to_string(s) + " :end " +
                std::to_string(e) + " are bad for a string of length " + std::to_string(len),
            "use 0 <= start <= end <= length");
  return {size_t(s), size_t(e)};
}

// ---- comparison ---------------------------------------------------------------

struct Mismatch {
  size_t index;  // in the first string, counting from its start (not start1)
  int order;     // <0: first is less, 0: equal, >0: first is greater
};

Mismatch compare(std::u32string_view a, Bounds ba, std::u32string_view b, Bounds bb, bool fold) {
  size_t i = ba.start, j = bb.start;
  for (; i < ba.end && j < bb.end; ++i, ++j) {
    char32_t x = fold ? char_fold(a[i]) : a[i], y = fold ? char_fold(b[j]) : b[j];
    if (x != y) return {i, x < y ? -1 : 1};
  }
  if (i == ba.end) return {i, j == bb.end ? 0 : -1};
  return {i, 1};
}

// (op string1 string2 &key start1 end1 start2 end2)
Mismatch compare_args(Interp& in, Value* args, int nargs, const char* where, bool fold) {
  Designated a(in, args[0], where), b(in, args[1], where);
  Value k[4];
  bool given[4];
  in.parse_keys(args, nargs, 2, {"START1", "END1", "START2", "END2"}, k, given);
  Bounds ba = bounds(in, k[0], given[0], k[1], a.view().size(), where);
  Bounds bb = bounds(in, k[2], given[2], k[3], b.view().size(), where);
  return compare(a.view(), ba, b.view(), bb, fold);
}

void register_comparisons(Interp& in) {
  // EQUALITY: the result is t rather than the mismatch index.
#define SG_STRING_CMP(NAME, FOLD, TEST, EQUALITY, DOC)           \
  SG_BUILTIN(in, NAME, 2, -1, DOC, {                             \
    Mismatch m = compare_args(in, args, nargs, NAME, FOLD);      \
    if (!(m.order TEST 0)) return in.nil();                      \
    return EQUALITY ? in.t() : Value::integer(int64_t(m.index)); \
  })
  SG_STRING_CMP("STRING=", false, ==, true, "are the strings equal (case-sensitive)");
  SG_STRING_CMP("STRING/=", false, !=, false, "the mismatch index if the strings differ");
  SG_STRING_CMP("STRING<", false, <, false, "the mismatch index if string1 is less");
  SG_STRING_CMP("STRING>", false, >, false, "the mismatch index if string1 is greater");
  SG_STRING_CMP("STRING<=", false, <=, false, "the mismatch index if string1 is not greater");
  SG_STRING_CMP("STRING>=", false, >=, false, "the mismatch index if string1 is not less");
  SG_STRING_CMP("STRING-EQUAL", true, ==, true, "are the strings equal, ignoring case");
  SG_STRING_CMP("STRING-NOT-EQUAL", true, !=, false, "string/= ignoring case");
  SG_STRING_CMP("STRING-LESSP", true, <, false, "string< ignoring case");
  SG_STRING_CMP("STRING-GREATERP", true, >, false, "string> ignoring case");
  SG_STRING_CMP("STRING-NOT-GREATERP", true, <=, false, "string<= ignoring case");
  SG_STRING_CMP("STRING-NOT-LESSP", true, >=, false, "string>= ignoring case");
#undef SG_STRING_CMP
}

// ---- case conversion ------------------------------------------------------------

enum class CaseOp { Up, Down, Capitalize };

// SBCL's rule for capitalize: a word is a run of alphanumeric characters;
// its first character is upcased, the rest downcased. Words restart at start.
void convert_case(char32_t* s, Bounds b, CaseOp op) {
  bool new_word = true;
  for (size_t i = b.start; i < b.end; ++i) {
    char32_t c = s[i];
    switch (op) {
      case CaseOp::Up: s[i] = char_upcase(c); break;
      case CaseOp::Down: s[i] = char_downcase(c); break;
      case CaseOp::Capitalize:
        if (!alphanumeric_p(c)) {
          new_word = true;
        } else {
          s[i] = new_word ? char_upcase(c) : char_downcase(c);
          new_word = false;
        }
        break;
    }
  }
}

Bounds case_bounds(Interp& in, Value* args, int nargs, size_t len, const char* where) {
  Value k[2];
  bool given[2];
  in.parse_keys(args, nargs, 1, {"START", "END"}, k, given);
  return bounds(in, k[0], given[0], k[1], len, where);
}

// string-upcase and friends: a fresh string.
Value case_copy(Interp& in, Value* args, int nargs, const char* where, CaseOp op) {
  std::u32string s(Designated(in, args[0], where).view());
  Bounds b = case_bounds(in, args, nargs, s.size(), where);
  convert_case(s.data(), b, op);
  return in.make_string(std::move(s));
}

// nstring-upcase and friends: the string itself, changed.
Value case_in_place(Interp& in, Value* args, int nargs, const char* where, CaseOp op) {
  if (!args[0].is_string()) in.type_error(args[0], "a string", op_name(where));
  String* s = args[0].str();
  Bounds b = case_bounds(in, args, nargs, s->size(), where);
  convert_case(s->chars.data(), b, op);
  return args[0];
}

void register_case(Interp& in) {
  SG_BUILTIN(in, "STRING-UPCASE", 1, -1, "a copy in upper case (:start :end)",
             { return case_copy(in, args, nargs, "STRING-UPCASE", CaseOp::Up); });
  SG_BUILTIN(in, "STRING-DOWNCASE", 1, -1, "a copy in lower case (:start :end)",
             { return case_copy(in, args, nargs, "STRING-DOWNCASE", CaseOp::Down); });
  SG_BUILTIN(in, "STRING-CAPITALIZE", 1, -1, "a copy with each word capitalized (:start :end)",
             { return case_copy(in, args, nargs, "STRING-CAPITALIZE", CaseOp::Capitalize); });
  SG_BUILTIN(in, "NSTRING-UPCASE", 1, -1, "upcase the string in place (:start :end)",
             { return case_in_place(in, args, nargs, "NSTRING-UPCASE", CaseOp::Up); });
  SG_BUILTIN(in, "NSTRING-DOWNCASE", 1, -1, "downcase the string in place (:start :end)",
             { return case_in_place(in, args, nargs, "NSTRING-DOWNCASE", CaseOp::Down); });
  SG_BUILTIN(in, "NSTRING-CAPITALIZE", 1, -1, "capitalize the string's words in place",
             { return case_in_place(in, args, nargs, "NSTRING-CAPITALIZE", CaseOp::Capitalize); });
}

// ---- trimming --------------------------------------------------------------------

// A character bag: any sequence. Like SBCL's (find c bag :test #'char=), a
// non-character element is a type error only when the search reaches it.
class CharBag {
 public:
  CharBag(Interp& in, Value bag, const char* where) : in_(in), where_(where) {
    if (bag.is_string()) {
      chars_ = std::u32string(Designated(in, bag, where).view());
      all_chars_ = true;
    } else if (bag.is_vector()) {
      const Vector* v = bag.vec();
      items_.assign(v->items.begin(), v->items.begin() + long(v->size()));
    } else if (bag.is_list()) {
      items_ = in.list_items(bag, op_name(where));
    } else {
      in.type_error(bag, "a sequence of characters", op_name(where));
    }
  }
  bool contains(char32_t c) const {
    if (all_chars_) return chars_.find(c) != std::u32string::npos;
    for (Value x : items_) {
      if (!x.is_char()) in_.type_error(x, "a character", op_name(where_));
      if (x.ch == c) return true;
    }
    return false;
  }

 private:
  Interp& in_;
  const char* where_;
  bool all_chars_ = false;
  std::u32string chars_;
  std::vector<Value> items_;
};

Value trim(Interp& in, Value* args, const char* where, bool left, bool right) {
  CharBag bag(in, args[0], where);
  Designated d(in, args[1], where);
  std::u32string_view s = d.view();
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && bag.contains(s[b])) ++b;
  if (right)
    while (e > b && bag.contains(s[e - 1])) --e;
  return in.make_string(std::u32string(s.substr(b, e - b)));
}

void register_trim(Interp& in) {
  SG_BUILTIN(in, "STRING-TRIM", 2, 2, "the string without the bag's characters at both ends",
             { return trim(in, args, "STRING-TRIM", true, true); });
  SG_BUILTIN(in, "STRING-LEFT-TRIM", 2, 2, "the string without the bag's characters at its start",
             { return trim(in, args, "STRING-LEFT-TRIM", true, false); });
  SG_BUILTIN(in, "STRING-RIGHT-TRIM", 2, 2, "the string without the bag's characters at its end",
             { return trim(in, args, "STRING-RIGHT-TRIM", false, true); });
}

// ---- access and construction -------------------------------------------------------

// char and schar read like aref: the whole storage, ignoring a fill pointer.
Value char_at(Interp& in, Value* args, const char* where) {
  if (!args[0].is_string()) in.type_error(args[0], "a string", op_name(where));
  if (!args[1].is_int()) in.type_error(args[1], "an index", op_name(where));
  String* s = args[0].str();
  int64_t i = args[1].i;
  if (i < 0 || size_t(i) >= s->chars.size())
    in.fail("E-TYPE", op_name(where) + ": index " + std::to_string(i) +
                          " is out of bounds for a string of length " +
                          std::to_string(s->chars.size()));
  return Value::character(s->chars[size_t(i)]);
}

void register_access(Interp& in) {
  SG_BUILTIN(in, "STRING", 1, 1, "the string a designator names (a string is returned itself)", {
    if (args[0].is_string()) return args[0];
    return in.make_string(in.string_designator(args[0], "string"));
  });
  SG_BUILTIN(in, "STRINGP", 1, 1, "is it a string", { return in.boolean(args[0].is_string()); });
  SG_BUILTIN(in, "SIMPLE-STRING-P", 1, 1, "is it a string without a fill pointer", {
    return in.boolean(args[0].is_string() && args[0].str()->fill_pointer < 0 &&
                      !args[0].str()->adjustable);
  });
  SG_BUILTIN(in, "CHAR", 2, 2, "the character at an index of a string",
             { return char_at(in, args, "CHAR"); });
  SG_BUILTIN(in, "SCHAR", 2, 2, "the character at an index of a simple string", {
    // Like SBCL: a string with a fill pointer or adjustable is not a simple-string.
    if (args[0].is_string() && (args[0].str()->fill_pointer >= 0 || args[0].str()->adjustable))
      in.type_error(args[0], "a simple string", "schar");
    return char_at(in, args, "SCHAR");
  });
  SG_BUILTIN(in, "MAKE-STRING", 1, -1, "a string of a length (:initial-element, :element-type)", {
    if (!args[0].is_int() || args[0].i < 0)
      in.type_error(args[0], "a non-negative integer", "make-string");
    Value k[2];
    bool given[2];
    in.parse_keys(args, nargs, 1, {"INITIAL-ELEMENT", "ELEMENT-TYPE"}, k, given);
    // SBCL fills with code 0 when no initial element is given.
    char32_t fill = given[0] ? in.arg_char(k[0], "make-string") : U'\0';
    in.check_alloc(uint64_t(args[0].i), sizeof(char32_t), "make-string");
    return in.make_string(std::u32string(size_t(args[0].i), fill));
  });
}

}  // namespace

void register_string_builtins(Interp& in) {
  register_comparisons(in);
  register_case(in);
  register_trim(in);
  register_access(in);
  register_char_builtins(in);
}

}  // namespace sexpgpu::lisp
