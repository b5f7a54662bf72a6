// The printer: prin1/princ as SBCL prints with *read-default-float-format*
// double-float (so no exponent markers), symbols in upper case for
// --readably and in lower case for messages. Cycles in cdr chains print as
// "..." instead of looping; depth is bounded by the native stack guard.
#include <charconv>
#include <cmath>
#include <iostream>

#include "lisp/bit_vector.h"
#include "lisp/chars.h"
#include "lisp/interp.h"

namespace sexpgpu::lisp {

std::string format_float(double x) {
  if (std::isnan(x)) return "#<DOUBLE-FLOAT quiet NaN>";
  if (std::isinf(x)) return x > 0 ? "#.SB-EXT:DOUBLE-FLOAT-POSITIVE-INFINITY"
                                  : "#.SB-EXT:DOUBLE-FLOAT-NEGATIVE-INFINITY";
  if (x == 0) return std::signbit(x) ? "-0.0" : "0.0";
  // Shortest digits that read back to x, in scientific form: d.ddde±N.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  bool neg = s[0] == '-';
  if (neg) s.erase(0, 1);
  size_t e = s.find('e');
  std::string mant = s.substr(0, e);
  int exp10 = std::stoi(s.substr(e + 1));
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = neg ? "-" : "";
  double ax = std::fabs(x);
  if (ax >= 1e-3 && ax < 1e7) {
    int point = exp10 + 1;  // digits before the decimal point
    if (point <= 0) {
      out += "0." + std::string(size_t(-point), '0') + digits;
    } else if (size_t(point) >= digits.size()) {
      out += digits + std::string(size_t(point) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, size_t(point)) + "." + digits.substr(size_t(point));
    }
  } else {
    out += digits.substr(0, 1) + "." + (digits.size() > 1 ? digits.substr(1) : "0") + "e" +
           std::to_string(exp10);
  }
  return out;
}

bool parse_number(std::string_view tok, int radix, Value& out, bool* overflow);  // reader.cpp

namespace {

const char* char_name(char32_t c) {
  switch (c) {
    case '\n': return "Newline";
    case '\t': return "Tab";
    case '\r': return "Return";
    case '\f': return "Page";
    case 8: return "Backspace";
    case 127: return "Rubout";
    case 0: return "Nul";
    case 27: return "Esc";
    case 7: return "Bel";
    default: return nullptr;
  }
}

// Would reading the name back give this symbol? Otherwise print |...|.
bool needs_bars(const std::string& name) {
  if (name.empty()) return true;
  Value v;
  bool ovf = false;
  if (parse_number(name, 10, v, &ovf) || ovf) return true;
  if (name.find_first_not_of('.') == std::string::npos) return true;
  if (name[0] == '#') return true;  // '#' dispatches only at the start of a token
  for (unsigned char c : name) {
    if (c >= 'a' && c <= 'z') return true;
    if (c == ' ' || c == '(' || c == ')' || c == '"' || c == ';' || c == '\'' || c == '`' ||
        c == ',' || c == '|' || c == '\\' || c == ':' || c == '\t' || c == '\n')
      return true;
  }
  return false;
}

struct Printer {
  Interp& in;
  PrintOptions o;
  std::string out;

  void symbol_name(const std::string& name) {
    if (!o.escape) {
      if (o.upcase) out += name;
      else
        for (char c : name) out += char(std::tolower((unsigned char)c));
      return;
    }
    if (needs_bars(name)) {
      out += '|';
      for (char c : name) {
        if (c == '|' || c == '\\') out += '\\';
        out += c;
      }
      out += '|';
      return;
    }
    if (o.upcase) out += name;
    else
      for (char c : name) out += char(std::tolower((unsigned char)c));
  }

  void symbol(Symbol* s) {
    if (s->keyword) {
      if (o.escape) out += ':';
    } else if (!s->qualifier.empty()) {
      symbol_name(s->qualifier);
      out += ':';
    } else if (!s->interned && o.escape) {
      out += "#:";
    }
    symbol_name(s->name);
  }

  void string(String* s) {
    std::string u = u32_to_utf8(std::u32string_view(s->chars).substr(0, s->size()));
    if (!o.escape) {
      out += u;
      return;
    }
    out += '"';
    for (char c : u) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }

  void character(char32_t c) {
    if (!o.escape) {
      out += u32_to_utf8(std::u32string(1, c));
      return;
    }
    out += "#\\";
    if (const char* n = char_name(c)) out += n;
    else if (c < 32 || (c >= 127 && c < 160)) out += char_name_of(c);  // SBCL's names (Soh, ...)
    else out += u32_to_utf8(std::u32string(1, c));
  }

  bool quote_form(Cons* c, const char* prefix, Symbol* head) {
    if (!(c->car.is_symbol() && c->car.sym() == head)) return false;
    if (!c->cdr.is_cons() || !c->cdr.cons()->cdr.is_nil()) return false;
    out += prefix;
    print(c->cdr.cons()->car);
    return true;
  }

  void list(Value v) {
    Cons* c = v.cons();
    if (quote_form(c, "'", in.S.quote) || quote_form(c, "#'", in.S.function) ||
        quote_form(c, "`", in.S.quasiquote) || quote_form(c, ",", in.S.unquote) ||
        quote_form(c, ",@", in.S.unquote_splicing))
      return;
    out += '(';
    Value x = v;
    Value slow = v;
    size_t n = 0;
    for (;;) {
      print(x.cons()->car);
      x = x.cons()->cdr;
      ++n;
      if ((n & 1) == 0) slow = slow.cons()->cdr;
      if (!x.is_cons()) break;
      if (x.p == slow.p) {
        out += " ...";
        x = in.nil();
        break;
      }
      out += ' ';
    }
    if (!x.is_nil()) {
      out += " . ";
      print(x);
    }
    out += ')';
  }

  void print(Value v) {
    in.check_native_stack();
    switch (v.kind) {
      case Kind::Int: out += std::to_string(v.i); return;
      case Kind::Float: out += format_float(v.f); return;
      case Kind::Char: character(v.ch); return;
      case Kind::Symbol: symbol(v.sym()); return;
      case Kind::Cons: list(v); return;
      case Kind::String: string(v.str()); return;
      case Kind::Vector: {
        Vector* vec = v.vec();
        if (is_bit_vector(v)) {  // #*0101, by prin1 and princ alike
          out += "#*";
          for (size_t i = 0; i < vec->size(); ++i) out += vec->items[i].i ? '1' : '0';
          return;
        }
        out += "#(";
        for (size_t i = 0; i < vec->size(); ++i) {
          if (i) out += ' ';
          print(vec->items[i]);
        }
        out += ')';
        return;
      }
      case Kind::Hash: {
        static const char* tests[] = {"EQ", "EQL", "EQUAL", "EQUALP"};
        std::string t = tests[int(v.hash()->test)];
        if (!o.upcase)
          for (char& ch : t) ch = char(std::tolower((unsigned char)ch));
        out += "#<hash-table :test " + t + " :count " + std::to_string(v.hash()->live) + ">";
        return;
      }
      case Kind::Function: {
        Function* f = v.fn();
        out += f->builtin ? "#<function " : "#<function ";
        if (f->name.p && !f->name.is_nil()) print(f->name);
        else out += "(lambda)";
        out += '>';
        return;
      }
      case Kind::Condition: {
        Condition* c = v.cond();
        if (!o.escape) {
          out += c->message;
          return;
        }
        out += "#<";
        print(c->type);
        out += " \"" + c->message + "\">";
        return;
      }
      case Kind::Foreign: out += v.foreign()->print(); return;
    }
  }
};

}  // namespace

std::string Interp::print(Value v, PrintOptions o) {
  Printer p{*this, o, {}};
  p.print(v);
  return std::move(p.out);
}

void Interp::write_output(std::string_view s) {
  if (s.empty()) return;
  if (output) *output += s;
  else std::cerr << s;
  at_line_start = s.back() == '\n';
}

}  // namespace sexpgpu::lisp
