// The parser of `format` control strings: text and directives (parameters
// `n`, `'c`, `v`, `#`; modifiers `:` `@`), ~newline folded into the text, and
// each bracket (~( ~[ ~{ ~<) linked to its closer and its ~; separators, so
// that the interpreter (format.cpp) never searches.
#include "lisp/format_impl.h"

namespace sexpgpu::lisp::fmt_impl {

namespace {

bool whitespace(char32_t c) {
  return c == U' ' || c == U'\t' || c == U'\n' || c == U'\r' || c == U'\f';
}

}  // namespace

[[noreturn]] void control_error(Interp& in, const std::u32string& control, size_t pos,
                                const std::string& msg) {
  in.fail("E-TYPE",
          "format: " + msg + " at position " + std::to_string(pos) + " of the control string " +
              in.show(in.make_string(control)),
          "see the format directives in docs/language.md");
}

namespace {

char32_t closer_of(char32_t open) {
  switch (open) {
    case U'(': return U')';
    case U'[': return U']';
    case U'{': return U'}';
    default: return U'>';
  }
}

// Parse "~params modifiers char" starting at control[i] == '~'.
void parse_directive(Interp& in, const std::u32string& c, size_t& i, Directive& d) {
  const size_t n = c.size();
  d.pos = uint32_t(i);
  ++i;
  auto fail = [&](const std::string& m) { control_error(in, c, d.pos, m); };
  for (;;) {
    Param p;
    if (i < n && (c[i] == U'+' || c[i] == U'-' || (c[i] >= U'0' && c[i] <= U'9'))) {
      bool neg = c[i] == U'-';
      if (c[i] == U'+' || c[i] == U'-') ++i;
      if (i >= n || c[i] < U'0' || c[i] > U'9') fail("a sign must be followed by digits");
      // Past 64 bits a parameter saturates: a clause index past every
      // clause selects none, as in SBCL; sizes are range-checked where used.
      int64_t v = 0;
      for (; i < n && c[i] >= U'0' && c[i] <= U'9'; ++i) {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, int64_t(c[i] - U'0'), &v))
          v = INT64_MAX;
      }
      p = {Param::Int, neg ? -v : v};
    } else if (i < n && c[i] == U'\'') {
      if (i + 1 >= n) fail("the control string ends after '");
      p = {Param::Char, int64_t(c[i + 1])};
      i += 2;
    } else if (i < n && (c[i] == U'v' || c[i] == U'V')) {
      p.kind = Param::Arg;
      ++i;
    } else if (i < n && c[i] == U'#') {
      p.kind = Param::Count;
      ++i;
    }
    bool comma = i < n && c[i] == U',';
    if (p.kind != Param::None || comma) d.params.push_back(p);
    if (!comma) break;
    ++i;
  }
  for (; i < n && (c[i] == U':' || c[i] == U'@'); ++i) {
    bool& flag = c[i] == U':' ? d.colon : d.at;
    if (flag) fail(c[i] == U':' ? "too many colons" : "too many at-signs");
    flag = true;
  }
  if (i >= n) fail("the control string ends inside a directive");
  d.ch = c[i] < 128 ? char32_t(std::toupper(int(c[i]))) : c[i];
  ++i;
  d.end = uint32_t(i);
}

}  // namespace

Parsed parse(Interp& in, const std::u32string& c) {
  Parsed out{&c, {}};
  std::vector<int> open;  // indices of unclosed ( [ { <
  const size_t n = c.size();
  size_t i = 0;
  auto add_text = [&](std::u32string_view t, size_t pos) {
    if (t.empty()) return;
    if (!out.d.empty() && out.d.back().ch == 0) {
      out.d.back().text += t;
      return;
    }
    Directive d;
    d.pos = uint32_t(pos);
    d.text = t;
    out.d.push_back(std::move(d));
  };
  while (i < n) {
    size_t tilde = c.find(U'~', i);
    if (tilde == std::u32string::npos) tilde = n;
    add_text(std::u32string_view(c).substr(i, tilde - i), i);
    i = tilde;
    if (i >= n) break;
    Directive d;
    parse_directive(in, c, i, d);
    if (d.ch == U'\n') {  // ~newline: drop it and (unless ~:) the whitespace after
      if (d.colon && d.at) control_error(in, c, d.pos, "~:@newline is not allowed");
      if (d.at) add_text(U"\n", d.pos);
      if (!d.colon)
        while (i < n && whitespace(c[i])) ++i;
      continue;
    }
    int idx = int(out.d.size());
    switch (d.ch) {
      case U'(':
      case U'[':
      case U'{':
      case U'<': open.push_back(idx); break;
      case U')':
      case U']':
      case U'}':
      case U'>': {
        if (open.empty() || closer_of(out.d[size_t(open.back())].ch) != d.ch)
          control_error(in, c, d.pos,
                        std::string("no matching opening directive for ~") + char(d.ch));
        out.d[size_t(open.back())].close = idx;
        open.pop_back();
        break;
      }
      case U';': {
        if (open.empty() ||
            (out.d[size_t(open.back())].ch != U'[' && out.d[size_t(open.back())].ch != U'<'))
          control_error(in, c, d.pos, "~; outside ~[...~] and ~<...~>");
        out.d[size_t(open.back())].seps.push_back(idx);
        break;
      }
      default: break;
    }
    out.d.push_back(std::move(d));
  }
  if (!open.empty()) {
    const Directive& d = out.d[size_t(open.back())];
    control_error(in, c, d.pos,
                  std::string("~") + char(d.ch) + " is never closed (~" + char(closer_of(d.ch)) +
                      " missing)");
  }
  // Justification (~<...~>) and the pretty printer's directives do not mix
  // (CLHS 22.3.5.2, as SBCL refuses): none inside a justification, and none
  // anywhere in a control string that has ~<...~:;...~>.
  auto pretty = [](const Directive& d) {
    return d.ch == U'W' || d.ch == U'_' || d.ch == U'I' || (d.ch == U'T' && d.colon);
  };
  for (size_t k = 0; k < out.d.size(); ++k) {
    const Directive& d = out.d[k];
    if (d.ch != U'<' || out.d[size_t(d.close)].colon) continue;
    for (int m = int(k) + 1; m < d.close; ++m)
      if (pretty(out.d[size_t(m)]))
        control_error(in, c, out.d[size_t(m)].pos,
                      "~W, ~_, ~I and ~:T are not allowed inside a justification ~<...~>");
    if (!d.seps.empty() && out.d[size_t(d.seps[0])].colon)
      for (const Directive& x : out.d)
        if (pretty(x))
          control_error(in, c, x.pos,
                        "~W, ~_, ~I and ~:T cannot be used with a justification that has ~:;");
  }
  return out;
}

}  // namespace sexpgpu::lisp::fmt_impl
