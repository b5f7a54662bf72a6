// The reader (see reader.h). Follows CL's reader algorithm for the syntax in
// language.md: tokens are read whole, then parsed as numbers or symbols;
// '(' ')' '\'' '`' ',' '"' ';' '#' are macro characters.
#include "lisp/reader.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "lisp/bit_vector.h"
#include "lisp/chars.h"

namespace sexpgpu::lisp {

namespace {

bool is_whitespace(int c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_terminating(int c) {
  return c == '(' || c == ')' || c == '\'' || c == '"' || c == ';' || c == '`' || c == ',';
}

int digit_value(char c, int radix) {
  int d;
  if (c >= '0' && c <= '9') d = c - '0';
  else if (c >= 'a' && c <= 'z') d = c - 'a' + 10;
  else if (c >= 'A' && c <= 'Z') d = c - 'A' + 10;
  else return -1;
  return d < radix ? d : -1;
}

bool parse_integer_digits(std::string_view s, int radix, int64_t& out, bool* overflow) {
  bool neg = false;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (i >= s.size()) return false;
  // Accumulate as a negative number so INT64_MIN reads.
  int64_t acc = 0;
  bool ovf = false;
  for (; i < s.size(); ++i) {
    int d = digit_value(s[i], radix);
    if (d < 0) return false;
    if (__builtin_mul_overflow(acc, int64_t(radix), &acc) ||
        __builtin_sub_overflow(acc, int64_t(d), &acc))
      ovf = true;
  }
  if (!neg) {
    if (acc == INT64_MIN) ovf = true;
    acc = -acc;
  }
  if (ovf) {
    if (overflow) *overflow = true;
    return true;
  }
  out = acc;
  return true;
}

}  // namespace

bool parse_number(std::string_view tok, int radix, Value& out, bool* overflow) {
  if (tok.empty()) return false;
  if (radix != 10) {
    int64_t v = 0;
    bool ovf = false;
    if (!parse_integer_digits(tok, radix, v, &ovf)) return false;
    if (ovf) {
      if (overflow) *overflow = true;
      return true;
    }
    out = Value::integer(v);
    return true;
  }
  // Integer, with an optional trailing decimal point.
  std::string_view t = tok;
  if (t.size() > 1 && t.back() == '.' && t[t.size() - 2] != '+' && t[t.size() - 2] != '-')
    t.remove_suffix(1);
  {
    int64_t v = 0;
    bool ovf = false;
    if (t.find_first_not_of("+-0123456789") == std::string_view::npos &&
        parse_integer_digits(t, 10, v, &ovf)) {
      if (ovf) {
        if (overflow) *overflow = true;
        return true;
      }
      out = Value::integer(v);
      return true;
    }
  }
  // A ratio: we have none, so n/d reads as what (/ n d) gives.
  size_t slash = tok.find('/');
  if (slash != std::string_view::npos) {
    int64_t n = 0, d = 0;
    bool ovf = false;
    std::string_view a = tok.substr(0, slash), b = tok.substr(slash + 1);
    if (b.empty() || b[0] == '+' || b[0] == '-') return false;
    if (a.find_first_not_of("+-0123456789") != std::string_view::npos ||
        b.find_first_not_of("0123456789") != std::string_view::npos)
      return false;
    if (!parse_integer_digits(a, 10, n, &ovf) || !parse_integer_digits(b, 10, d, &ovf))
      return false;
    if (ovf) {
      if (overflow) *overflow = true;
      return true;
    }
    if (d == 0) return false;
    if (n % d == 0) out = Value::integer(n / d);
    else out = Value::flt(double(n) / double(d));
    return true;
  }
  // Float: [sign] digits* [. digits*] [exp-marker [sign] digits+], with at
  // least one digit and either a '.' followed by digits or an exponent.
  size_t i = 0;
  if (i < tok.size() && (tok[i] == '+' || tok[i] == '-')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < tok.size() && std::isdigit((unsigned char)tok[i])) ++i, ++int_digits;
  bool dot = false;
  if (i < tok.size() && tok[i] == '.') {
    dot = true;
    ++i;
    while (i < tok.size() && std::isdigit((unsigned char)tok[i])) ++i, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return false;
  bool exp = false;
  std::string mantissa(tok.substr(0, i));
  std::string exponent;
  if (i < tok.size() && std::strchr("eEsSfFdDlL", tok[i])) {
    exp = true;
    ++i;
    size_t es = i;
    if (i < tok.size() && (tok[i] == '+' || tok[i] == '-')) ++i;
    size_t ed = i;
    while (i < tok.size() && std::isdigit((unsigned char)tok[i])) ++i;
    if (i == ed) return false;
    exponent = std::string(tok.substr(es, i - es));
  }
  if (i != tok.size()) return false;
  if (!exp && (!dot || frac_digits == 0)) return false;
  std::string norm = mantissa + (exp ? "e" + exponent : "");
  double v = std::strtod(norm.c_str(), nullptr);
  if (std::isinf(v)) {  // too large for a double: an error, not an infinity
    if (overflow) *overflow = true;
    return true;
  }
  out = Value::flt(v);
  return true;
}

Reader::Reader(Interp& in, uint32_t file_id)
    : in_(in), file_(file_id), text_(in.sources.file(file_id).text) {}

Span Reader::make_span(size_t begin, size_t end) const {
  Span s;
  s.file = file_;
  in_.sources.locate(file_, begin, s.line, s.col);
  in_.sources.locate(file_, end, s.end_line, s.end_col);
  return s;
}

uint32_t Reader::span_id(size_t begin, size_t end) { return in_.add_span(make_span(begin, end)); }

void Reader::error(size_t at, const std::string& msg, const char* code) {
  LispError e;
  e.diag.code = code;
  e.diag.severity = Severity::Error;
  e.diag.span = make_span(at, std::min(at + 1, text_.size()));
  e.diag.message = msg;
  throw e;
}

void Reader::skip_block_comment(size_t start) {
  // pos_ is just past "#|"; comments nest.
  int level = 1;
  while (pos_ < text_.size()) {
    if (text_[pos_] == '|' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '#') {
      pos_ += 2;
      if (--level == 0) return;
    } else if (text_[pos_] == '#' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '|') {
      pos_ += 2;
      ++level;
    } else {
      ++pos_;
    }
  }
  error(start, "end of file inside a #| comment");
}

bool Reader::skip_ws_and_comments() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (is_whitespace(c)) {
      ++pos_;
    } else if (c == ';') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else if (c == '#' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '|') {
      size_t start = pos_;
      pos_ += 2;
      skip_block_comment(start);
    } else {
      return true;
    }
  }
  return false;
}

bool Reader::next(ReadForm& out) {
  depth_ = 0;
  labels_.clear();
  for (;;) {
    if (!skip_ws_and_comments()) return false;
    size_t start = pos_;
    if (text_[pos_] == ')') {
      ++pos_;
      error(start, "unbalanced ')': no list is open here");
    }
    uint32_t sid = 0;
    Value v = read(&sid);
    if (v.p == nullptr && v.kind == Kind::Symbol) continue;  // #+ skipped a form
    out.form = v;
    out.span = sid ? in_.span_of(sid) : make_span(start, pos_);
    return true;
  }
}

void Reader::recover() {
  depth_ = 0;
  // Skip at least one character so we never loop on the same error.
  if (pos_ < text_.size()) ++pos_;
  while (pos_ < text_.size()) {
    size_t nl = text_.find('\n', pos_);
    if (nl == std::string::npos) {
      pos_ = text_.size();
      return;
    }
    pos_ = nl + 1;
    if (pos_ < text_.size() && text_[pos_] == '(') return;
  }
}

Value Reader::wrap(Symbol* head, Value x, uint32_t x_span, size_t begin) {
  Value inner = in_.cons(x, in_.nil());
  inner.cons()->car_span = x_span;
  Value outer = in_.cons(Interp::symval(head), inner);
  uint32_t sid = span_id(begin, pos_);
  outer.cons()->span = sid;
  outer.cons()->car_span = sid;
  return outer;
}

// Returns the form; a Value with p == nullptr and kind Symbol means "nothing"
// (a form skipped by #+/#-), which only read_list and next() see.
Value Reader::read(uint32_t* span_out) {
  if (!skip_ws_and_comments()) error(text_.size() ? text_.size() - 1 : 0, "unexpected end of file");
  size_t start = pos_;
  char c = text_[pos_];
  Value result;
  switch (c) {
    case '(': {
      if (++depth_ > kMaxDepth)
        error(start, "lists nested deeper than " + std::to_string(kMaxDepth) + " levels");
      ++pos_;
      result = read_list(start, ')');
      --depth_;
      if (span_out) *span_out = result.is_cons() ? result.cons()->span : span_id(start, pos_);
      return result;
    }
    case ')':
      error(start, "unbalanced ')'");
    case '\'':
    case '`':
    case ',': {
      ++pos_;
      Symbol* head = in_.S.quote;
      if (c == '`') head = in_.S.quasiquote;
      if (c == ',') {
        head = in_.S.unquote;
        if (peek() == '@' || peek() == '.') {
          ++pos_;
          head = in_.S.unquote_splicing;
        }
      }
      if (++depth_ > kMaxDepth)
        error(start, "forms nested deeper than " + std::to_string(kMaxDepth) + " levels");
      uint32_t xs = 0;
      Value x;
      do {
        x = read(&xs);
      } while (x.p == nullptr && x.kind == Kind::Symbol);
      --depth_;
      result = wrap(head, x, xs, start);
      if (span_out) *span_out = result.cons()->span;
      return result;
    }
    case '"':
      ++pos_;
      result = read_string(start);
      break;
    case '#':
      return read_dispatch(start, span_out);
    default:
      result = read_token_or_number(start);
  }
  if (span_out) *span_out = span_id(start, pos_);
  return result;
}

Value Reader::read_list(size_t open, char close) {
  std::vector<Value> items;
  std::vector<uint32_t> spans;
  Value tail = in_.nil();
  for (;;) {
    if (!skip_ws_and_comments())
      error(open, std::string("end of file inside a list: '") + (close == ')' ? "(" : "#(") +
                      "' is never closed");
    char c = text_[pos_];
    if (c == close) {
      ++pos_;
      break;
    }
    // A lone dot: the dotted tail.
    if (c == '.' && pos_ + 1 < text_.size() &&
        (is_whitespace(text_[pos_ + 1]) || is_terminating(text_[pos_ + 1]))) {
      size_t dot = pos_;
      if (items.empty() || close != ')') error(dot, "a dot with nothing before it");
      ++pos_;
      uint32_t ts = 0;
      do {
        tail = read(&ts);
      } while (tail.p == nullptr && tail.kind == Kind::Symbol);
      if (!skip_ws_and_comments() || text_[pos_] != close)
        error(dot, "more than one form after a dot");
      ++pos_;
      break;
    }
    uint32_t sid = 0;
    Value v = read(&sid);
    if (v.p == nullptr && v.kind == Kind::Symbol) continue;
    items.push_back(v);
    spans.push_back(sid);
  }
  uint32_t whole = span_id(open, pos_);
  if (close != ')') return in_.make_vector(std::move(items));
  Value list = tail;
  for (size_t i = items.size(); i-- > 0;) {
    list = in_.cons(items[i], list);
    list.cons()->car_span = spans[i];
    list.cons()->span = whole;  // every tail of the list points at the list
  }
  return list;
}

Value Reader::read_string(size_t start) {
  std::string bytes;
  for (;;) {
    if (pos_ >= text_.size()) error(start, "end of file inside a string");
    char c = text_[pos_++];
    if (c == '"') break;
    if (c == '\\') {
      if (pos_ >= text_.size()) error(start, "end of file inside a string");
      c = text_[pos_++];
    }
    bytes += c;
  }
  return in_.make_string_utf8(bytes);
}

Value Reader::read_char_literal(size_t start) {
  // pos_ is just past "#\". One character, then any constituents make a name.
  if (pos_ >= text_.size()) error(start, "end of file after #\\");
  size_t first = pos_;
  // Take one whole UTF-8 character.
  ++pos_;
  while (pos_ < text_.size() && (static_cast<unsigned char>(text_[pos_]) & 0xC0) == 0x80) ++pos_;
  while (pos_ < text_.size() && !is_whitespace(text_[pos_]) && !is_terminating(text_[pos_]))
    ++pos_;
  std::string_view tok(text_.data() + first, pos_ - first);
  std::u32string u = utf8_to_u32(tok);
  if (u.size() == 1) return Value::character(u[0]);
  char32_t code;
  if (char_from_lisp_name(u, code)) return Value::character(code);
  error(start, "unknown character name #\\" + std::string(tok));
}

bool Reader::eval_feature(Value expr) {
  if (expr.is_symbol()) {
    for (const std::string& f : in_.features)
      if (expr.sym()->name == f) return true;
    return false;
  }
  if (expr.is_cons() && expr.cons()->car.is_symbol()) {
    const std::string& op = expr.cons()->car.sym()->name;
    Value rest = expr.cons()->cdr;
    if (op == "NOT") return !(rest.is_cons() && eval_feature(rest.cons()->car));
    if (op == "AND" || op == "OR") {
      bool is_and = op == "AND";
      for (; rest.is_cons(); rest = rest.cons()->cdr) {
        bool v = eval_feature(rest.cons()->car);
        if (is_and && !v) return false;
        if (!is_and && v) return true;
      }
      return is_and;
    }
  }
  return false;
}

Value Reader::read_dispatch(size_t start, uint32_t* span_out) {
  ++pos_;  // past '#'
  // Optional decimal argument: #36r...
  size_t argstart = pos_;
  while (pos_ < text_.size() && std::isdigit((unsigned char)text_[pos_])) ++pos_;
  std::string_view arg(text_.data() + argstart, pos_ - argstart);
  if (pos_ >= text_.size()) error(start, "end of file after '#'");
  char d = text_[pos_++];
  Value result;
  auto radix_number = [&](int radix) {
    size_t ts = pos_;
    while (pos_ < text_.size() && !is_whitespace(text_[pos_]) && !is_terminating(text_[pos_]))
      ++pos_;
    std::string_view tok(text_.data() + ts, pos_ - ts);
    Value v;
    bool ovf = false;
    if (tok.empty() || !parse_number(tok, radix, v, &ovf))
      error(start, "bad number in radix " + std::to_string(radix) + ": '" + std::string(tok) + "'");
    if (ovf) error(start, "integer does not fit in 64 bits", "E-OVERFLOW");
    return v;
  };
  switch (d) {
    case '\'': {
      uint32_t xs = 0;
      Value x;
      do {
        x = read(&xs);
      } while (x.p == nullptr && x.kind == Kind::Symbol);
      result = wrap(in_.S.function, x, xs, start);
      if (span_out) *span_out = result.cons()->span;
      return result;
    }
    case '(': {
      if (++depth_ > kMaxDepth) error(start, "forms nested too deeply");
      result = read_list(start, ')');
      --depth_;
      // read_list made a list; a vector holds its elements.
      std::vector<Value> items;
      for (Value x = result; x.is_cons(); x = x.cons()->cdr) items.push_back(x.cons()->car);
      Value tail = result;
      while (tail.is_cons()) tail = tail.cons()->cdr;
      if (!tail.is_nil()) error(start, "a dotted list inside #( )");
      result = in_.make_vector(std::move(items));
      break;
    }
    case '\\':
      result = read_char_literal(start);
      break;
    case 'x':
    case 'X':
      result = radix_number(16);
      break;
    case 'b':
    case 'B':
      result = radix_number(2);
      break;
    case 'o':
    case 'O':
      result = radix_number(8);
      break;
    case 'r':
    case 'R': {
      int radix = 0;
      std::from_chars(arg.data(), arg.data() + arg.size(), radix);
      if (radix < 2 || radix > 36) error(start, "#r needs a radix from 2 to 36");
      result = radix_number(radix);
      break;
    }
    case ':': {
      // The name reads as a symbol token does (escapes, |...|); the symbol
      // made is a fresh uninterned one of that name.
      size_t ts = pos_;
      if (pos_ >= text_.size() || is_whitespace(text_[pos_]) || is_terminating(text_[pos_]))
        error(start, "#: needs a symbol name");
      Value token = read_token_or_number(ts);
      std::string name = token.is_symbol() ? token.sym()->name
                                           : upcase_ascii(std::string_view(text_.data() + ts, pos_ - ts));
      result = Interp::symval(in_.make_symbol(name));
      break;
    }
    case '|':
      pos_ = start + 2;
      skip_block_comment(start);
      return Value();  // nothing
    case '+':
    case '-': {
      // The feature expression is read with keywords as plain names.
      uint32_t fs = 0;
      Value feat = read(&fs);
      bool on = eval_feature(feat);
      if (d == '-') on = !on;
      uint32_t xs = 0;
      Value x;
      do {
        x = read(&xs);
      } while (x.p == nullptr && x.kind == Kind::Symbol);
      if (on) {
        if (span_out) *span_out = xs;
        return x;
      }
      return Value();  // nothing
    }
    case '=': {
      // #n=object labels the object; a later #n# is that same object. A
      // reference from inside the object itself would make circular
      // structure, which every walker of code would follow for ever.
      int64_t n = label_number(start, arg, '=');
      if (labels_.count(n)) error(start, "the label #" + std::string(arg) + "= is defined twice");
      labels_[n] = Value();  // being read
      uint32_t xs = 0;
      Value x;
      do {
        x = read(&xs);
      } while (x.p == nullptr && x.kind == Kind::Symbol);
      labels_[n] = x;
      if (span_out) *span_out = xs;
      return x;
    }
    case '#': {
      int64_t n = label_number(start, arg, '#');
      auto it = labels_.find(n);
      if (it == labels_.end())
        error(start,
              "#" + std::string(arg) + "# refers to no label #" + std::string(arg) + "= before it");
      if (it->second.p == nullptr && it->second.kind == Kind::Symbol)
        error(start, "#" + std::string(arg) + "# inside its own #" + std::string(arg) +
                         "= would make circular structure, which is not supported");
      result = it->second;
      break;
    }
    case '*': result = read_bit_vector(start, arg); break;
    case '.':
      error(start, "#. (read-time evaluation) is not supported: run files cannot evaluate at read time");
    case 'c':
    case 'C':
      error(start, "#c (complex numbers) is not supported: there are no complex numbers",
            "E-UNSUPPORTED");
    case 'p':
    case 'P':
      error(start, "#p (pathnames) is not supported: run files name files with strings",
            "E-UNSUPPORTED");
    default:
      error(start, std::string("unknown # syntax '#") + d + "'");
  }
  if (span_out) *span_out = span_id(start, pos_);
  return result;
}

// #*0101 and #n*01 (the last bit repeated up to n), as CL reads them.
Value Reader::read_bit_vector(size_t start, std::string_view arg) {
  std::vector<Value> bits;
  while (pos_ < text_.size() && (text_[pos_] == '0' || text_[pos_] == '1'))
    bits.push_back(Value::integer(text_[pos_++] - '0'));
  if (pos_ < text_.size() && !is_whitespace(text_[pos_]) && !is_terminating(text_[pos_]))
    error(start, std::string("#* holds only 0 and 1, not '") + text_[pos_] + "'");
  if (!arg.empty()) {
    size_t n = 0;
    auto r = std::from_chars(arg.data(), arg.data() + arg.size(), n);
    if (r.ec != std::errc() || n > 1'000'000)
      error(start, "#" + std::string(arg) + "* is too long");
    if (bits.size() > n)
      error(start, "#" + std::string(arg) + "* has more bits than " + std::string(arg));
    if (bits.empty() && n > 0) error(start, "#" + std::string(arg) + "* needs at least one bit");
    while (bits.size() < n) bits.push_back(bits.back());
  }
  return make_bit_vector(in_, std::move(bits), "#*");
}

int64_t Reader::label_number(size_t start, std::string_view arg, char d) {
  if (arg.empty()) error(start, std::string("#") + d + " needs a label number, as in #1" + d);
  int64_t n = 0;
  auto r = std::from_chars(arg.data(), arg.data() + arg.size(), n);
  if (r.ec != std::errc()) error(start, "the label number " + std::string(arg) + " is too large");
  return n;
}

Value Reader::read_token_or_number(size_t start) {
  // Collect the token, noting escapes: escaped characters keep their case and
  // make the token a symbol.
  std::string tok;            // case-folded
  std::string raw;            // as written, for numbers
  bool escaped = false;
  std::vector<size_t> colons;  // positions of unescaped ':' in tok
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (is_whitespace(c) || is_terminating(c)) break;
    if (c == '\\') {
      ++pos_;
      if (pos_ >= text_.size()) error(start, "end of file after '\\' in a symbol");
      tok += text_[pos_++];
      escaped = true;
      continue;
    }
    if (c == '|') {
      size_t bar = pos_++;
      for (;;) {
        if (pos_ >= text_.size()) error(bar, "end of file inside |...| in a symbol");
        char e = text_[pos_++];
        if (e == '|') break;
        if (e == '\\') {
          if (pos_ >= text_.size()) error(bar, "end of file inside |...| in a symbol");
          e = text_[pos_++];
        }
        tok += e;
      }
      escaped = true;
      continue;
    }
    if (c == ':') colons.push_back(tok.size());
    raw += c;
    tok += (c >= 'a' && c <= 'z') ? char(c - 32) : c;
    ++pos_;
  }
  if (!escaped) {
    Value v;
    bool ovf = false;
    if (parse_number(raw, 10, v, &ovf)) {
      if (ovf)
        error(start, "the number '" + raw + "' does not fit (integers are 64-bit, floats double)",
              "E-OVERFLOW");
      return v;
    }
    if (!raw.empty() && raw.find_first_not_of('.') == std::string::npos)
      error(start, "a token of only dots ('" + raw + "') is not allowed");
  }
  if (colons.empty()) return in_.sym(tok);
  if (colons.size() == 1 && colons[0] == 0) return Interp::symval(in_.keyword(tok.substr(1)));
  size_t c0 = colons[0];
  bool dbl = colons.size() == 2 && colons[1] == c0 + 1;
  if (colons.size() > 2 || (colons.size() == 2 && !dbl))
    error(start, "too many colons in symbol '" + tok + "'");
  std::string prefix = tok.substr(0, c0);
  std::string name = tok.substr(c0 + (dbl ? 2 : 1));
  if (name.empty()) error(start, "symbol '" + tok + "' has nothing after its prefix");
  // CL's own packages name the one space of symbols.
  if (prefix == "CL" || prefix == "COMMON-LISP" || prefix == "CL-USER" ||
      prefix == "COMMON-LISP-USER" || prefix == "SEXPGPU")
    return in_.sym(name);
  if (prefix == "KEYWORD") return Interp::symval(in_.keyword(name));
  if (dbl)
    error(start,
          "'" + tok + "': internal references (prefix::name) are not supported; use the module's "
          "exports (prefix:name)",
          "E-UNSUPPORTED");
  return Interp::symval(in_.qualified(prefix, name));
}

std::vector<ReadForm> read_file_forms(Interp& in, uint32_t file_id) {
  Reader r(in, file_id);
  std::vector<ReadForm> forms;
  for (;;) {
    try {
      ReadForm f;
      if (!r.next(f)) break;
      forms.push_back(f);
    } catch (LispError& e) {
      in.sink.report(std::move(e.diag));
      r.recover();
    }
  }
  return forms;
}

std::vector<ReadForm> read_string_forms(Interp& in, const std::string& name,
                                        const std::string& text) {
  uint32_t id = in.sources.add(name, text);
  Reader r(in, id);
  std::vector<ReadForm> forms;
  ReadForm f;
  while (r.next(f)) forms.push_back(f);
  return forms;
}

}  // namespace sexpgpu::lisp
