// `format`: the directive interpreter and the FORMAT builtin. Semantics
// follow SBCL's target-format.lisp directive by directive; the control string
// is parsed (format_parse.cpp) into a flat list of directives with each
// bracket's partner resolved, and the interpreter walks index ranges of that
// list. Float directives are in format_float.cpp, text helpers (padding,
// numerals, case conversion, justification) in format_text.cpp. ~^ is not an
// exception but a Flow result that each construct either stops at or passes
// up, as SBCL's catch tags do.
//
// ~A and ~S print symbols in upper case, as SBCL does. Differences from
// SBCL: integers given to ~F ~E ~G ~$ become doubles (all floats are doubles
// here; SBCL makes single-floats of them, so (format nil "~e" 100) is
// "1.0e+2", not "1.0f+2"); ~D ~B ~O ~X of a non-integer print it in decimal
// (SBCL prints integers inside a list in the radix); and as there are no
// streams, ~/function/, ~_, ~I, ~:T and logical blocks (~<...~:>) are
// E-UNSUPPORTED, as is any destination but nil, t and a string with a fill
// pointer. Errors in the control string are E-TYPE naming the position.
#include <algorithm>
#include <cmath>

#include "lisp/builtins.h"
#include "lisp/format_float.h"
#include "lisp/format_impl.h"

namespace sexpgpu::lisp {

using namespace fmt_impl;

namespace {

// Parameter values and padding counts above this are rejected: they could
// only be mistakes, and would allocate without bound.
constexpr int64_t kMaxParam = 1'000'000;

// The arguments a directive list consumes: the call's, a ~{ list's, or one
// ~:{ sublist's.
struct Args {
  const Value* v;
  int n;
  int pos = 0;
  bool empty() const { return pos >= n; }
};

enum class Flow { Normal, UpAndOut, UpUpAndOut };

class Formatter {
 public:
  Formatter(Interp& in, std::u32string& out, int64_t base_column)
      : in_(in), out_(&out), base_column_(base_column) {}

  // %FORMAT: run a whole control string. A ~^ ends it (and only it); ~:^
  // goes on to the enclosing ~:{.
  Flow run_control(const Parsed& p, Args& a) {
    const Parsed* saved = cur_;
    cur_ = &p;
    Flow f = run(0, int(p.d.size()), a);
    cur_ = saved;
    return f == Flow::UpUpAndOut ? f : Flow::Normal;
  }

 private:
  Interp& in_;
  std::u32string* out_;  // where output goes now (a ~< segment has its own)
  int64_t base_column_;  // column at the start of *out_
  const Parsed* cur_ = nullptr;
  bool up_up_allowed_ = false;
  const Args* outside_ = nullptr;  // the ~:{ sublists not yet begun, for ~:^

  [[noreturn]] void fail(const Directive& d, const std::string& msg) {
    control_error(in_, *cur_->control, d.pos, msg);
  }

  Value next_arg(const Directive& d, Args& a) {
    if (a.empty()) fail(d, std::string("no more arguments for ~") + char32_to_ascii(d.ch));
    return a.v[a.pos++];
  }
  static char char32_to_ascii(char32_t c) { return c < 128 ? char(c) : '?'; }

  // Column of the output position, as the stream's charpos would say.
  int64_t column() const {
    size_t nl = out_->rfind(U'\n');
    return nl == std::u32string::npos ? base_column_ + int64_t(out_->size())
                                      : int64_t(out_->size() - nl - 1);
  }

  // INTERPRET-BIND-DEFAULTS: parameter `i` of d, or its default.
  struct Bound {
    bool given;
    int64_t v;
    bool is_char = false;
  };
  Bound param(const Directive& d, Args& a, size_t i) {
    if (i >= d.params.size()) return {false, 0};
    const Param& p = d.params[i];
    switch (p.kind) {
      case Param::None: return {false, 0};
      case Param::Int: return {true, p.v};
      case Param::Char: return {true, p.v, true};
      case Param::Count: return {true, int64_t(a.n - a.pos)};
      case Param::Arg: {
        Value v = next_arg(d, a);
        if (v.is_nil()) return {false, 0};
        if (v.is_int()) return {true, v.i};
        if (v.is_char()) return {true, int64_t(v.ch), true};
        fail(d, "a ~v parameter must be an integer or a character, not " + in_.show(v));
      }
    }
    return {false, 0};
  }
  void max_params(const Directive& d, size_t n) {
    if (d.params.size() > n)
      fail(d, "too many parameters for ~" + std::string(1, char32_to_ascii(d.ch)) + " (at most " +
                  std::to_string(n) + ")");
  }
  Bound number_param(const Directive& d, Args& a, size_t i) {
    Bound b = param(d, a, i);
    if (b.given && b.is_char) fail(d, "parameter " + std::to_string(i + 1) + " must be a number");
    return b;
  }
  Bound char_or_none(const Directive& d, Args& a, size_t i) {
    Bound b = param(d, a, i);
    if (b.given && !b.is_char)
      fail(d, "parameter " + std::to_string(i + 1) + " must be a character ('c)");
    return b;
  }
  int64_t int_param(const Directive& d, Args& a, size_t i, int64_t dflt, int64_t lo = 0) {
    Bound b = number_param(d, a, i);
    if (!b.given) return dflt;
    if (b.v < lo || b.v > kMaxParam)
      fail(d, "parameter " + std::to_string(i + 1) + " is " + std::to_string(b.v) +
                  (b.v < lo ? ", below " + std::to_string(lo) : ", too large"));
    return b.v;
  }
  std::optional<int64_t> opt_param(const Directive& d, Args& a, size_t i) {
    Bound b = number_param(d, a, i);
    if (!b.given) return std::nullopt;
    if (b.v < -kMaxParam || b.v > kMaxParam) fail(d, "parameter too large");
    return b.v;
  }
  char32_t char_param(const Directive& d, Args& a, size_t i, char32_t dflt) {
    Bound b = char_or_none(d, a, i);
    return b.given ? char32_t(b.v) : dflt;
  }
  std::optional<char32_t> opt_char(const Directive& d, Args& a, size_t i) {
    Bound b = char_or_none(d, a, i);
    return b.given ? std::optional<char32_t>(char32_t(b.v)) : std::nullopt;
  }
  void no_modifiers(const Directive& d, bool colon_ok, bool at_ok) {
    if (d.colon && !colon_ok) fail(d, "the colon modifier is not allowed here");
    if (d.at && !at_ok) fail(d, "the at-sign modifier is not allowed here");
  }

  std::string print(Value v, bool escape) {
    return in_.print(v, PrintOptions{escape, true, false});
  }

  Flow run(int b, int e, Args& a);
  Flow directive(int idx, Args& a, int& next);

  void simple_print(const Directive& d, Args& a, bool escape);
  void integer(const Directive& d, Args& a, int radix, size_t first_param);
  void radix(const Directive& d, Args& a);
  void character(const Directive& d, Args& a);
  void plural(const Directive& d, Args& a);
  void floating(const Directive& d, Args& a);
  void tab(const Directive& d, Args& a);
  void goto_arg(const Directive& d, Args& a);
  Flow indirect(const Directive& d, Args& a);
  Flow case_conversion(int idx, Args& a);
  Flow conditional(int idx, Args& a);
  Flow iteration(int idx, Args& a);
  Flow justification(int idx, Args& a);
  Flow up_and_out(const Directive& d, Args& a);
};

Flow Formatter::run(int b, int e, Args& a) {
  const auto& ds = cur_->d;
  for (int i = b; i < e;) {
    in_.count_step();
    const Directive& d = ds[size_t(i)];
    if (d.ch == 0) {
      *out_ += d.text;
      ++i;
      continue;
    }
    int next = i + 1;
    Flow f = directive(i, a, next);
    if (f != Flow::Normal) return f;
    i = next;
  }
  return Flow::Normal;
}

Flow Formatter::directive(int idx, Args& a, int& next) {
  const Directive& d = cur_->d[size_t(idx)];
  switch (d.ch) {
    case U'A': simple_print(d, a, false); break;
    case U'S': simple_print(d, a, true); break;
    case U'W':
      max_params(d, 0);
      *out_ += utf8_to_u32(print(next_arg(d, a), true));
      break;
    case U'D': integer(d, a, 10, 0); break;
    case U'B': integer(d, a, 2, 0); break;
    case U'O': integer(d, a, 8, 0); break;
    case U'X': integer(d, a, 16, 0); break;
    case U'R': radix(d, a); break;
    case U'C': character(d, a); break;
    case U'P': plural(d, a); break;
    case U'F':
    case U'E':
    case U'G':
    case U'$': floating(d, a); break;
    case U'%':
    case U'&':
    case U'|':
    case U'~': {
      no_modifiers(d, false, false);
      max_params(d, 1);
      int64_t count = int_param(d, a, 0, 1);
      char32_t c = d.ch == U'~' ? U'~' : d.ch == U'|' ? U'\f' : U'\n';
      if (d.ch == U'&' && count > 0) {
        if (column() == 0) --count;
      }
      out_->append(size_t(count), c);
      break;
    }
    case U'T': tab(d, a); break;
    case U'*': goto_arg(d, a); break;
    case U'?': return indirect(d, a);
    case U'(': next = d.close + 1; return case_conversion(idx, a);
    case U'[': next = d.close + 1; return conditional(idx, a);
    case U'{': next = d.close + 1; return iteration(idx, a);
    case U'<': next = d.close + 1; return justification(idx, a);
    case U'^': return up_and_out(d, a);
    case U')':
    case U']':
    case U'}':
    case U'>':
    case U';': fail(d, "misplaced ~" + std::string(1, char(d.ch)));
    case U'/':
    case U'_':
    case U'I':
      in_.fail("E-UNSUPPORTED",
               "format: ~" + std::string(1, char(d.ch)) +
                   " (pretty printing and ~/function/) is not supported",
               "use ~a, ~s and explicit newlines");
    default: fail(d, "unknown directive ~" + u32_to_utf8(std::u32string(1, d.ch)));
  }
  return Flow::Normal;
}

// ~A ~S: princ / prin1 with mincol,colinc,minpad,padchar.
void Formatter::simple_print(const Directive& d, Args& a, bool escape) {
  max_params(d, 4);
  if (d.params.empty()) {
    Value v = next_arg(d, a);
    if (d.colon && v.is_nil())
      *out_ += U"()";
    else
      append_utf8(*out_, print(v, escape));
    return;
  }
  int64_t mincol = int_param(d, a, 0, 0), colinc = int_param(d, a, 1, 1, 1);
  int64_t minpad = int_param(d, a, 2, 0, -kMaxParam);
  char32_t padchar = char_param(d, a, 3, U' ');
  Value v = next_arg(d, a);
  std::u32string s = d.colon && v.is_nil() ? U"()" : utf8_to_u32(print(v, escape));
  write_field(*out_, s, mincol, colinc, minpad, padchar, d.at);
}

// ~D ~B ~O ~X (and ~R with a radix): mincol,padchar,commachar,interval.
void Formatter::integer(const Directive& d, Args& a, int radix, size_t first) {
  max_params(d, first + 4);
  int64_t mincol = int_param(d, a, first, 0);
  char32_t padchar = char_param(d, a, first + 1, U' ');
  char32_t commachar = char_param(d, a, first + 2, U',');
  // The interval only spaces the commas, so any size is harmless (SBCL
  // takes 10^18).
  Bound ib = number_param(d, a, first + 3);
  int64_t interval = ib.given ? ib.v : 3;
  if (interval < 1)
    fail(d, "parameter " + std::to_string(first + 4) + " is " + std::to_string(interval) +
                ", below 1");
  Value v = next_arg(d, a);
  if (!v.is_int()) {  // SBCL princs anything else, unpadded
    append_utf8(*out_, print(v, false));
    return;
  }
  std::u32string s = integer_digits(v.i, radix);
  if (d.colon) s = add_commas(s, commachar, interval);
  if (v.i < 0)
    s.insert(s.begin(), U'-');
  else if (d.at)
    s.insert(s.begin(), U'+');
  write_field(*out_, s, mincol, 1, 0, padchar, true);
}

// ~R: with a radix as ~D in that radix; else English (~R, ~:R ordinal) or
// Roman numerals (~@R, ~:@R old style).
void Formatter::radix(const Directive& d, Args& a) {
  max_params(d, 5);
  Bound base = number_param(d, a, 0);
  if (base.given) {
    if (base.v < 2 || base.v > 36) fail(d, "the radix of ~r must be between 2 and 36");
    integer(d, a, int(base.v), 1);
    return;
  }
  for (size_t i = 1; i < d.params.size(); ++i) param(d, a, i);  // bound (and unused) as in SBCL
  Value v = next_arg(d, a);
  if (!v.is_int()) in_.type_error(v, "an integer", "format ~r");
  if (d.at) {
    if (!roman(*out_, v.i, d.colon))
      fail(d, "~@r prints numbers from 1 to " + std::string(d.colon ? "4999" : "3999") + ", not " +
                  std::to_string(v.i));
  } else if (d.colon) {
    ordinal(*out_, v.i);
  } else {
    cardinal(*out_, v.i);
  }
}

void Formatter::character(const Directive& d, Args& a) {
  max_params(d, 0);
  Value v = next_arg(d, a);
  if (!v.is_char()) in_.type_error(v, "a character", "format ~c");
  if (d.colon)
    named_char(*out_, v.ch);
  else if (d.at)
    append_utf8(*out_, print(v, true));
  else
    *out_ += v.ch;
}

// ~P: "s" unless the argument is 1; ~:P reuses the previous argument; ~@P
// gives "y"/"ies".
void Formatter::plural(const Directive& d, Args& a) {
  max_params(d, 0);
  Value v;
  if (d.colon) {
    if (a.pos == 0) fail(d, "~:p has no previous argument");
    v = a.v[a.pos - 1];
  } else {
    v = next_arg(d, a);
  }
  bool one = v.is_int() && v.i == 1;
  if (d.at)
    *out_ += one ? U"y" : U"ies";
  else if (!one)
    *out_ += U's';
}

// ~F ~E ~G ~$. Integers print as doubles; other objects are princ'd in a
// field of width w, as SBCL does.
void Formatter::floating(const Directive& d, Args& a) {
  fmtfloat::FloatParams fp;
  fp.atsign = d.at;
  int64_t dd = 2, nn = 1, ww = 0;
  if (d.ch == U'$') {
    max_params(d, 4);
    dd = int_param(d, a, 0, 2);
    nn = int_param(d, a, 1, 1);
    ww = int_param(d, a, 2, 0);
    fp.pad = char_param(d, a, 3, U' ');
  } else {
    no_modifiers(d, false, true);
    auto nonneg = [&](size_t i) {
      auto v = opt_param(d, a, i);
      if (v && *v < 0) fail(d, "parameter " + std::to_string(i + 1) + " must not be negative");
      return v;
    };
    max_params(d, d.ch == U'F' ? 5 : 7);
    fp.w = nonneg(0);
    fp.d = nonneg(1);
    if (d.ch != U'F') fp.e = nonneg(2);
    size_t i = d.ch == U'F' ? 2 : 3;
    fp.k = opt_param(d, a, i);
    fp.ovf = opt_char(d, a, i + 1);
    fp.pad = char_param(d, a, i + 2, U' ');
    if (d.ch != U'F') fp.marker = char_param(d, a, i + 3, 0);
  }
  Value v = next_arg(d, a);
  if (!v.is_number()) {
    std::u32string s = utf8_to_u32(print(v, false));
    if (d.ch == U'$')
      write_field(*out_, s, ww, 1, 0, U' ', true);
    else
      write_field(*out_, s, fp.w.value_or(0), 1, 0, fp.pad, false);
    return;
  }
  double x = v.is_int() ? double(v.i) : v.f;
  switch (d.ch) {
    case U'F': fmtfloat::format_fixed(*out_, x, fp); break;
    case U'E': fmtfloat::format_exp(*out_, x, fp); break;
    case U'G': fmtfloat::format_general(*out_, x, fp); break;
    default: fmtfloat::format_dollars(*out_, x, dd, nn, ww, fp.pad, d.colon, d.at); break;
  }
}

// ~colnum,colincT and ~colrel,colinc@T.
void Formatter::tab(const Directive& d, Args& a) {
  if (d.colon)
    in_.fail("E-UNSUPPORTED", "format: ~:t (pretty-printer tabbing) is not supported",
             "use ~t or ~@t");
  max_params(d, 2);
  int64_t first = int_param(d, a, 0, 1), colinc = int_param(d, a, 1, 1);
  int64_t cur = column(), spaces;
  if (d.at) {
    spaces = colinc > 0 ? (cur + first + colinc - 1) / colinc * colinc - cur : first;
  } else if (cur < first) {
    spaces = first - cur;
  } else {
    spaces = colinc > 0 ? colinc - (cur - first) % colinc : 0;
  }
  out_->append(size_t(spaces), U' ');
}

// ~n* skips, ~n:* backs up, ~n@* goes to argument n.
void Formatter::goto_arg(const Directive& d, Args& a) {
  if (d.colon && d.at) fail(d, "~:@* is not allowed");
  max_params(d, 1);
  if (d.at) {
    int64_t posn = int_param(d, a, 0, 0);
    if (posn > a.n)
      fail(d, "~@* goes to argument " + std::to_string(posn) + " of " + std::to_string(a.n));
    a.pos = int(posn);
  } else if (d.colon) {
    int64_t n = int_param(d, a, 0, 1);
    if (n > a.pos) fail(d, "~:* backs up before the first argument");
    a.pos -= int(n);
  } else {
    int64_t n = int_param(d, a, 0, 1);
    for (int64_t i = 0; i < n; ++i) next_arg(d, a);
  }
}

// ~? (a control string and a list of its arguments) and ~@? (a control
// string that takes the arguments that follow).
Flow Formatter::indirect(const Directive& d, Args& a) {
  no_modifiers(d, false, true);
  max_params(d, 0);
  Value ctl = next_arg(d, a);
  if (!ctl.is_string()) in_.type_error(ctl, "a format control string", "format ~?");
  std::u32string control = ctl.str()->chars.substr(0, ctl.str()->size());
  Parsed p = parse(in_, control);
  if (d.at) return run_control(p, a);
  Value list = next_arg(d, a);
  if (!list.is_list()) in_.type_error(list, "a list of format arguments", "format ~?");
  std::vector<Value> items = in_.list_items(list, "format ~?");
  Args sub{items.data(), int(items.size())};
  return run_control(p, sub);
}

Flow Formatter::case_conversion(int idx, Args& a) {
  const Directive& d = cur_->d[size_t(idx)];
  max_params(d, 0);
  CaseMode mode = d.colon ? (d.at ? CaseMode::Upcase : CaseMode::Capitalize)
                          : (d.at ? CaseMode::CapitalizeFirst : CaseMode::Downcase);
  size_t start = out_->size();
  Flow f = run(idx + 1, d.close, a);
  convert_case(*out_, start, mode);
  return f;
}

// ~[...~;...~] by index (~:; marks a default clause), ~:[false~;true~] and
// ~@[shown if the argument is true~].
Flow Formatter::conditional(int idx, Args& a) {
  const Directive& d = cur_->d[size_t(idx)];
  std::vector<std::pair<int, int>> clauses;
  int from = idx + 1;
  for (int sep : d.seps) {
    clauses.push_back({from, sep});
    from = sep + 1;
  }
  clauses.push_back({from, d.close});
  auto run_clause = [&](size_t i) { return run(clauses[i].first, clauses[i].second, a); };
  if (d.at) {
    if (d.colon) fail(d, "~:@[ is not allowed");
    if (clauses.size() != 1) fail(d, "~@[ takes exactly one clause");
    max_params(d, 0);
    int before = a.pos;
    if (next_arg(d, a).is_nil()) return Flow::Normal;
    a.pos = before;  // the clause sees the argument again
    return run_clause(0);
  }
  if (d.colon) {
    if (clauses.size() != 2) fail(d, "~:[ takes exactly two clauses");
    max_params(d, 0);
    return run_clause(next_arg(d, a).is_nil() ? 0 : 1);  // ~:[false~;true~]
  }
  max_params(d, 1);
  Bound b = number_param(d, a, 0);
  int64_t index;
  if (b.given) {
    index = b.v;
  } else {
    Value v = next_arg(d, a);
    if (!v.is_int()) fail(d, "the argument to ~[ must be an integer, not " + in_.show(v));
    index = v.i;
  }
  bool has_default = !d.seps.empty() && cur_->d[size_t(d.seps.back())].colon;
  int64_t plain = int64_t(clauses.size()) - (has_default ? 1 : 0);
  if (index >= 0 && index < plain) return run_clause(size_t(index));
  if (has_default) return run_clause(clauses.size() - 1);
  return Flow::Normal;
}

// ~{...~} over a list, ~:{ over a list of sublists, ~@{ over the remaining
// arguments, ~:@{ over the remaining arguments as sublists; ~n{ at most n
// times; ~:} at least once; an empty body takes its control string as an
// argument.
Flow Formatter::iteration(int idx, Args& a) {
  const Directive& d = cur_->d[size_t(idx)];
  max_params(d, 1);
  std::optional<int64_t> max_count;
  if (Bound b = number_param(d, a, 0); b.given) max_count = b.v;
  bool at_least_once = cur_->d[size_t(d.close)].colon;
  std::u32string body_text;  // outlives body_control, which points to it
  Parsed body_control;
  // Only a body with no text at all (not even a ~newline) is indirect.
  bool indirect_body = d.close == idx + 1 && cur_->d[size_t(d.close)].pos == d.end;
  if (indirect_body) {
    Value ctl = next_arg(d, a);
    if (!ctl.is_string()) in_.type_error(ctl, "a format control string", "format ~{~}");
    body_text = ctl.str()->chars.substr(0, ctl.str()->size());
    body_control = parse(in_, body_text);
  }
  auto do_guts = [&](Args& args) {
    if (indirect_body) return run_control(body_control, args);
    return run(idx + 1, d.close, args);
  };
  auto bind_args = [&](Args& outer) {
    if (!d.colon) return do_guts(outer);
    Value sub = next_arg(d, outer);
    if (!sub.is_list()) in_.type_error(sub, "a list (~:{ iterates over sublists)", "format");
    std::vector<Value> items = in_.list_items(sub, "format ~:{");
    Args inner{items.data(), int(items.size())};
    const Args* saved = outside_;
    outside_ = &outer;
    Flow f = do_guts(inner);
    outside_ = saved;
    return f == Flow::UpAndOut ? Flow::Normal : f;  // ~^ ends this sublist only
  };
  auto do_loop = [&](Args& la) {
    bool saved_allowed = up_up_allowed_;
    up_up_allowed_ = d.colon;
    Flow result = Flow::Normal;
    for (int64_t count = max_count.value_or(0);;) {
      if (!at_least_once && la.empty()) break;
      if (max_count && --count < 0) break;
      Flow f = bind_args(la);
      if (f != Flow::Normal) {
        // ~{ stops at ~^, ~:{ at ~:^; anything else goes further out.
        if ((f == Flow::UpAndOut) != d.colon) break;
        result = f;
        break;
      }
      if (at_least_once && la.empty()) break;
      in_.count_step();
    }
    up_up_allowed_ = saved_allowed;
    return result;
  };
  if (d.at) return do_loop(a);
  Value list = next_arg(d, a);
  if (!list.is_list()) in_.type_error(list, "a list (~{ iterates over a list)", "format");
  std::vector<Value> items = in_.list_items(list, "format ~{");
  Args la{items.data(), int(items.size())};
  return do_loop(la);
}

// ~mincol,colinc,minpad,padchar<seg~;seg~> justification (~:< pads before
// the first segment, ~@< after the last; a first separator ~extra,len:;
// gives a line prefix).
Flow Formatter::justification(int idx, Args& a) {
  const Directive& d = cur_->d[size_t(idx)];
  const Directive& close = cur_->d[size_t(d.close)];
  if (close.colon)
    in_.fail("E-UNSUPPORTED", "format: logical blocks (~<...~:>) are not supported",
             "use ~{...~} to print lists");
  if (close.at) fail(close, "~@> is not allowed");
  max_params(d, 4);
  Justify j;
  j.pad_left = d.colon;
  j.pad_right = d.at;
  j.mincol = int_param(d, a, 0, 0);
  j.colinc = int_param(d, a, 1, 1, 1);
  j.minpad = int_param(d, a, 2, 0);
  j.padchar = char_param(d, a, 3, U' ');
  std::vector<std::pair<int, int>> segs;
  int from = idx + 1;
  for (int sep : d.seps) {
    segs.push_back({from, sep});
    from = sep + 1;
  }
  segs.push_back({from, d.close});
  std::u32string prefix;
  bool has_prefix = !d.seps.empty() && cur_->d[size_t(d.seps[0])].colon;
  if (has_prefix) {
    const Directive& semi = cur_->d[size_t(d.seps[0])];
    max_params(semi, 2);
    j.extra = int_param(semi, a, 0, 0);
    j.line_len = int_param(semi, a, 1, 72);
  }
  std::vector<std::u32string> strings;
  std::u32string* saved_out = out_;
  int64_t saved_base = base_column_;
  Flow result = Flow::Normal;
  for (size_t i = 0; i < segs.size(); ++i) {
    std::u32string seg;
    out_ = &seg;  // each segment is written to a string of its own
    base_column_ = 0;
    Flow f = run(segs[i].first, segs[i].second, a);
    out_ = saved_out;
    base_column_ = saved_base;
    if (f == Flow::UpUpAndOut) return f;  // the whole block is abandoned
    if (f == Flow::UpAndOut) break;
    if (has_prefix && i == 0)
      prefix = std::move(seg);
    else
      strings.push_back(std::move(seg));
  }
  if (has_prefix) j.newline_prefix = &prefix;
  j.column = column();
  justify(*out_, strings, j);
  return result;
}

// ~^: leave the enclosing iteration (or the whole control string) when no
// arguments remain, or when its parameters say so; ~:^ leaves ~:{ entirely
// when no sublists remain.
Flow Formatter::up_and_out(const Directive& d, Args& a) {
  no_modifiers(d, true, false);
  if (d.colon && !up_up_allowed_) fail(d, "~:^ is only allowed inside ~:{...~}");
  max_params(d, 3);
  Bound p1 = param(d, a, 0), p2 = param(d, a, 1), p3 = param(d, a, 2);
  bool stop;
  if (p3.given) {
    if (!p1.given || !p2.given) fail(d, "~^ with three parameters needs all three");
    stop = p1.v <= p2.v && p2.v <= p3.v;
  } else if (p2.given) {
    stop = p1.given && p1.v == p2.v;
  } else if (p1.given) {
    stop = p1.v == 0;
  } else {
    stop = d.colon ? (outside_ == nullptr || outside_->empty()) : a.empty();
  }
  if (!stop) return Flow::Normal;
  return d.colon ? Flow::UpUpAndOut : Flow::UpAndOut;
}

// The column where output to `format t` starts.
int64_t output_column(Interp& in) {
  if (in.output) {
    const std::string& s = *in.output;
    size_t nl = s.rfind('\n');
    size_t from = nl == std::string::npos ? 0 : nl + 1;
    int64_t col = 0;
    for (size_t i = from; i < s.size(); ++i)
      if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) ++col;
    return col;
  }
  return in.at_line_start ? 0 : 1;  // stderr: only whether a line is begun is known
}

int64_t string_column(const String* s) {
  size_t n = s->size();
  size_t nl = s->chars.rfind(U'\n', n == 0 ? 0 : n - 1);
  if (n == 0) return 0;
  return nl == std::u32string::npos ? int64_t(n) : int64_t(n - nl - 1);
}

}  // namespace

std::string lisp_format(Interp& in, const std::u32string& control, Value* args, int nargs) {
  std::u32string out;
  Formatter f(in, out, 0);
  Args a{args, nargs};
  Parsed p = parse(in, control);
  f.run_control(p, a);
  return u32_to_utf8(out);
}

void register_format_builtins(Interp& in) {
  SG_BUILTIN(in, "FORMAT", 2, -1,
             "format args by a control string: to a new string (nil), the output (t) or a "
             "string with a fill pointer",
             {
               Value dest = args[0], ctl = args[1];
               if (!ctl.is_string()) in.type_error(ctl, "a format control string", "format");
               std::u32string control = ctl.str()->chars.substr(0, ctl.str()->size());
               int64_t column = 0;
               String* target = nullptr;
               if (dest == in.t()) {
                 column = output_column(in);
               } else if (dest.is_string() && dest.str()->fill_pointer >= 0) {
                 target = dest.str();
                 column = string_column(target);
               } else if (!dest.is_nil()) {
                 in.fail("E-UNSUPPORTED",
                         "format: the destination " + in.show(dest) +
                             " is not supported (there are no streams)",
                         "use (format nil ...) for a string or (format t ...) for output");
               }
               std::u32string out;
               Formatter f(in, out, column);
               Args a{args + 2, nargs - 2};
               Parsed p = parse(in, control);
               f.run_control(p, a);
               if (dest.is_nil()) return in.make_string(std::move(out));
               if (target) {
                 size_t fp = size_t(target->fill_pointer);
                 target->chars.resize(std::max(target->chars.size(), fp + out.size()));
                 std::copy(out.begin(), out.end(), target->chars.begin() + long(fp));
                 target->fill_pointer = int64_t(fp + out.size());
               } else {
                 in.write_output(u32_to_utf8(out));
               }
               return in.nil();
             });
}

}  // namespace sexpgpu::lisp
