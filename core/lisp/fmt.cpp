// The formatter: a lossless reader into a small concrete syntax tree (atoms,
// lists, prefixes such as ' and #+, comments, each with the number of newlines
// before it), a pass that classifies every list by its head, and a printer
// that decides line breaks and indentation in one walk.
//
// Layout rules (docs/new.md repeats them):
//  1. Tokens are printed as written, one space apart ('  `  ,  #' joined to
//     their form). The one rewrite: `#\` and a bare whitespace character
//     becomes the character's name (`#\Space`).
//  2. Line breaks between the elements of a list are the author's: a break is
//     kept (blank lines: at most one), elements on one line stay on one line,
//     except that a break is added
//       - after a `;` comment, and after an element that spans lines;
//       - where the next element (a `:key value` pair counts as one) would
//         pass column 100: in data before any element, in calls from the
//         second argument on, in declarations (defknob, defloader, defrun...)
//         after the name; never between a key and its value;
//       - in forms with a body (defun, let, when, dolist, lambda...): the body
//         forms go one to a line if one of them is broken, if the
//         distinguished arguments span lines, or if the body passes column 100.
//  3. Indentation depends only on the form: a body form or declaration option
//     goes two columns in from the open parenthesis, a distinguished argument
//     on a line of its own four; a call's arguments align under the first (or
//     under the function, when the first is on a line of its own); data
//     (quoted lists, vectors, lists whose head is not a symbol, bindings,
//     lambda lists, cond and case clauses) align under the first element; a
//     tagbody's tags go one column in, its statements three. Closing
//     parentheses follow the last element, except after a comment on a line
//     of its own, when they start the next line.
//  4. Comments stay in place. One on its own line keeps its line, indented as
//     the next element would be; a trailing one stays at the end of its line,
//     in the column it was written in if the code leaves room (else one space
//     after the code), after the closing parentheses that follow its element.
//  5. Top level: each form starts a line in column 0, forms are separated by
//     at most one blank line, as written, except that a form with a body that
//     spans lines (a defun, a defmodel...) is a paragraph of its own, with the
//     comment lines directly above it; so declarations and one-line forms
//     written as a group stay a group. Forms are never reordered.
// Every break the printer adds is one it keeps on the next run, which is what
// makes it idempotent.
#include "lisp/fmt.h"

#include <algorithm>
#include <vector>

namespace sexpgpu::lisp {
namespace {

constexpr int kMaxDepth = 10'000;  // the reader's limit

enum class K : uint8_t { Atom, List, Prefix, LineComment, BlockComment };
// Data: elements under the first. Call: arguments under the first argument.
// Body / Options: after n distinguished arguments, two columns in; Body forms
// put their body one form a line or all on the head line. Tags: a tagbody,
// whose tags go one column in and statements three, as Emacs puts them.
enum class Style : uint8_t { Data, Call, Body, Options, Tags };

// Contexts, a char each: c code, q quoted data, d data whose elements are code,
// p a call whatever its head (a binding), b a binding list, f a list of local
// functions, F one local function (or handler-case clause).
struct Node {
  K kind = K::Atom;
  uint8_t gap = 0;  // newlines before this item in the input, at most 2
  Style style = Style::Data;
  uint8_t n = 0;          // distinguished arguments
  char rest = 'c';        // context of the elements after them
  const char* args = "";  // contexts of the distinguished arguments
  bool one_line = true;   // as laid out from the input's breaks...
  bool tail = false;      // ...and then ending in a trailing comment
  int first_w = 0;        // the width of its first line, likewise
  int col0 = 0;           // a comment's column in the input
  std::string text;       // atom or comment text, list opener, prefix
  std::vector<Node> items;
};

// One row per shape of form: how many distinguished arguments, their contexts,
// the context of the rest, and the heads that have it.
struct Shape {
  Style style;
  uint8_t n;
  const char* args;
  char rest;
  std::string_view heads;
};

constexpr Style B = Style::Body, O = Style::Options;
constexpr Shape kShapes[] = {
    {B, 0, "", 'c', "ignore-errors locally progn"},
    {B, 1, "c", 'c',
     "block catch multiple-value-call multiple-value-prog1 prog1 scope unless unwind-protect when"},
    {B, 1, "c", 'd', "case ecase etypecase typecase"},
    {B, 1, "c", 'F', "handler-case"},
    {B, 1, "d", 'c', "lambda once-only optimizer-update"},
    {B, 1, "b", 'c', "handler-bind let let* symbol-macrolet"},
    {B, 1, "f", 'c', "flet labels macrolet"},
    {B, 1, "p", 'c', "dolist dotimes"},
    {B, 1, "q", 'c', "eval-when"},
    {B, 2, "dd", 'c', "defmacro defmodel defoptimizer defun"},
    {B, 2, "dc", 'c', "destructuring-bind multiple-value-bind"},
    {B, 2, "bd", 'c', "do do*"},
    {B, 2, "cc", 'c', "prog2"},
    {Style::Tags, 0, "", 'c', "tagbody"},
    // Declarations: options after the name, as many to a line as written.
    {O, 0, "", 'c', "defcurriculum defrun"},
    {O, 1, "c", 'c',
     "defconstant defdiagnostic defeval defloader defmodule defparameter defstate defsweep defvar "
     "defvariant require stage"},
    {O, 2, "cc", 'c', "defknob defparam"},
    {Style::Call, 0, "", 'd', "cond"},  // a call whose arguments are clauses
};

bool is_ws(char c) {
  return std::string_view(" \t\n\r\f\v").find(c) != std::string_view::npos;
}
bool is_term(char c) {
  return std::string_view("()'\";`,").find(c) != std::string_view::npos;
}
bool is_comment(const Node& x) {
  return x.kind == K::LineComment || x.kind == K::BlockComment;
}
bool has_body(const Node& x) {
  return x.style == Style::Body || x.style == Style::Tags;
}
bool is_key(const Node& x) {
  return x.kind == K::Atom && ((x.text.size() > 1 && x.text[0] == ':') || x.text == ".");
}

// Whether a prefix and its first target need a space to read back as they
// did: `, @x` is not `,@x`, and `#1= x` is not the token `#1=x`.
bool spaced(const Node& prefix, const Node& target) {
  const std::string& p = prefix.text;
  const char c = target.text.empty() ? ' ' : target.text[0];
  if (p == ",") return c == '@' || c == '.';
  const bool generic = p[0] == '#' && std::string_view("'.+-").find(p.back()) == std::string::npos;
  return generic && c != '(' && c != '"';
}

// Characters up to the first newline: the width of a first line.
int width_of(std::string_view s) {
  s = s.substr(0, s.find('\n'));
  return int(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string rtrim_lines(std::string_view s) {
  std::string out;
  size_t keep = 0;  // out's length without the trailing blanks of the current line
  for (char c : s) {
    if (c == '\n') out.resize(keep);
    out += c;
    if (c == '\n' || !is_ws(c)) keep = out.size();
  }
  out.resize(keep);
  return out;
}

// Numbers start with a digit, or a sign or point and a digit; 1+ is a symbol.
bool is_number(std::string_view t) {
  auto digit = [&](size_t i) { return i < t.size() && t[i] >= '0' && t[i] <= '9'; };
  const bool sign = !t.empty() && (t[0] == '+' || t[0] == '-' || t[0] == '.');
  return t != "1+" && t != "1-" && (digit(0) || (sign && digit(1)));
}

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  bool top(std::vector<Node>& out, FmtError& err) {
    Node file;
    if (children(file, 0, 0, kToEnd)) return out = std::move(file.items), true;
    err.line = 1 + uint32_t(std::count(s_.begin(), s_.begin() + err_at_, '\n'));
    err.col = 1 + uint32_t(col_of(err_at_));
    err.message = err_msg_;
    return false;
  }

 private:
  static constexpr size_t kNone = std::string_view::npos;
  static constexpr int kToEnd = -2, kToCloser = -1;  // children() of the file, of a list
  std::string_view s_;
  size_t pos_ = 0;
  size_t err_at_ = kNone;
  std::string err_msg_;

  bool fail(size_t at, std::string msg) {
    if (err_at_ == kNone) err_at_ = at, err_msg_ = std::move(msg);
    return false;
  }
  int col_of(size_t at) const {  // 0-based, in characters
    const size_t nl = at == 0 ? kNone : s_.rfind('\n', at - 1);
    const size_t bol = nl == kNone ? 0 : nl + 1;
    return width_of(s_.substr(bol, at - bol));
  }
  // Skips whitespace; returns the newlines it saw, at most 2.
  int skip_ws() {
    int nl = 0;
    for (; pos_ < s_.size() && is_ws(s_[pos_]); ++pos_) nl += s_[pos_] == '\n';
    return std::min(nl, 2);
  }
  // Constituents, \ escapes and |...| escapes, as the reader takes a token.
  bool token(size_t start) {
    while (pos_ < s_.size() && !is_ws(s_[pos_]) && !is_term(s_[pos_])) {
      if (s_[pos_] == '\\') {
        if ((pos_ += 2) > s_.size()) return fail(start, "end of file after '\\' in a symbol");
      } else if (s_[pos_] == '|') {
        const size_t bar = pos_++;
        while (pos_ < s_.size() && s_[pos_] != '|') pos_ += s_[pos_] == '\\' ? 2 : 1;
        if (pos_++ >= s_.size()) return fail(bar, "end of file inside |...| in a symbol");
      } else {
        ++pos_;
      }
    }
    return true;
  }
  // The items of the file, of a list up to its ')', or of a prefix: comments
  // and as many forms as it takes (one, or a feature and a form for #+, #-).
  bool children(Node& x, size_t open, int depth, int targets) {
    while (targets != 0) {
      const int gap = skip_ws();
      const bool closer = pos_ < s_.size() && s_[pos_] == ')';
      if (targets == kToEnd && (closer || pos_ >= s_.size()))
        return closer ? fail(pos_, "unbalanced ')': no list is open here") : true;
      if (targets == kToCloser && closer) return ++pos_, true;
      if (pos_ >= s_.size() || closer)
        return fail(open, targets < 0
                              ? "end of file inside a list: '" + x.text + "' is never closed"
                              : "nothing after '" + x.text + "'");
      Node& t = x.items.emplace_back();
      t.gap = uint8_t(gap);
      if (!item(t, depth + 1)) return false;
      targets -= targets > 0 && !is_comment(t);
    }
    return true;
  }
  bool item(Node& x, int depth) {
    const size_t start = pos_;
    if (depth > kMaxDepth) return fail(start, "forms nested deeper than 10000 levels");
    const char c = s_[pos_];
    if (c == ';') {
      size_t end = std::min(s_.find('\n', pos_), s_.size());
      x.kind = K::LineComment;
      x.text = rtrim_lines(s_.substr(pos_, end - pos_));
      x.col0 = col_of(start);
      pos_ = end;
      return true;
    }
    if (c == '(' || c == '\'' || c == '`' || c == ',') {
      x.kind = c == '(' ? K::List : K::Prefix;
      x.text = s_.substr(pos_++, 1);
      if (c == ',' && pos_ < s_.size() && (s_[pos_] == '@' || s_[pos_] == '.'))
        x.text += s_[pos_++];
      return children(x, start, depth, c == '(' ? kToCloser : 1);
    }
    if (c == '#') return dispatch(x, depth);
    if (c == '"') {
      for (++pos_; pos_ < s_.size() && s_[pos_] != '"';) pos_ += s_[pos_] == '\\' ? 2 : 1;
      if (pos_++ >= s_.size()) return fail(start, "end of file inside a string");
    } else if (!token(start)) {
      return false;
    }
    x.text = s_.substr(start, pos_ - start);
    return true;
  }
  bool dispatch(Node& x, int depth) {
    const size_t start = pos_;
    size_t p = pos_ + 1;
    while (p < s_.size() && s_[p] >= '0' && s_[p] <= '9') ++p;
    if (p >= s_.size()) return fail(start, "end of file after '#'");
    const char d = s_[p];
    pos_ = p + 1;
    if (d == '|') {
      for (int level = 1; level > 0;) {
        if (pos_ + 1 >= s_.size()) return fail(start, "end of file inside a #| comment");
        const std::string_view two = s_.substr(pos_, 2);
        level += two == "#|" ? 1 : two == "|#" ? -1 : 0;
        pos_ += (two == "#|" || two == "|#") ? 2 : 1;
      }
      x.kind = K::BlockComment;
      x.text = rtrim_lines(s_.substr(start, pos_ - start));
      x.col0 = col_of(start);
      return true;
    }
    if (d == '\\') {
      if (pos_ >= s_.size()) return fail(start, "end of file after #\\");
      const char ch = s_[pos_++];
      const size_t first_end = pos_;
      while (pos_ < s_.size() && (static_cast<unsigned char>(s_[pos_]) & 0xC0) == 0x80) ++pos_;
      while (pos_ < s_.size() && !is_ws(s_[pos_]) && !is_term(s_[pos_])) ++pos_;
      x.text = s_.substr(start, pos_ - start);
      static constexpr std::string_view kNames[] = {"Space", "Tab", "Newline", "Return", "Page"};
      const size_t w = std::string_view(" \t\n\r\f").find(ch);
      if (pos_ == first_end && w != std::string_view::npos)
        x.text = std::string(s_.substr(start, p + 1 - start)) + std::string(kNames[w]);
      return true;
    }
    x.text = s_.substr(start, pos_ - start);
    x.kind = d == '(' ? K::List : K::Prefix;
    if (d == '(' || d == '\'' || d == '.' || d == '+' || d == '-')
      return children(x, start, depth, d == '(' ? kToCloser : d == '+' || d == '-' ? 2 : 1);
    if (is_ws(d) || is_term(d)) return fail(start, "bad # syntax");
    if (!token(start)) return false;
    x.text = s_.substr(start, pos_ - start);
    // #2A(...), #p"...", #1=...: a dispatch that reads the next form.
    const bool reads_next = pos_ < s_.size() && (s_[pos_] == '(' || s_[pos_] == '"');
    x.kind = x.text.back() == '=' || reads_next ? K::Prefix : K::Atom;
    return x.kind == K::Atom || children(x, start, depth, 1);
  }
};

bool symbol_head(const Node& list, std::string& name) {
  auto it = std::find_if(list.items.begin(), list.items.end(),
                         [](const Node& x) { return !is_comment(x); });
  if (it == list.items.end() || it->kind != K::Atom || it->text.empty()) return false;
  const std::string& t = it->text;
  if (t[0] == '"' || t[0] == '#' || t[0] == ':' || t == "." || is_number(t)) return false;
  const size_t colon = t.rfind(':');  // nn:linear is laid out as linear would be
  name = t.substr(colon == std::string::npos ? 0 : colon + 1);
  for (char& ch : name) ch = (ch >= 'A' && ch <= 'Z') ? char(ch + 32) : ch;
  return true;
}

void classify(Node& list, char ctx) {
  auto set = [&](Style s, uint8_t n, const char* args, char rest) {
    list.style = s, list.n = n, list.args = args, list.rest = rest;
  };
  std::string name;
  if (list.text != "(") return set(Style::Data, 0, "", 'q');  // vectors, #2A(...)
  if (ctx == 'q' || ctx == 'b' || ctx == 'f' || ctx == 'd')
    return set(Style::Data, 0, "", ctx == 'b' ? 'p' : ctx == 'f' ? 'F' : ctx == 'q' ? 'q' : 'c');
  if (ctx == 'F') return set(B, 1, "d", 'c');
  if (!symbol_head(list, name)) return set(Style::Data, 0, "", 'c');
  set(Style::Call, 0, "", 'c');
  if (ctx == 'p') return;
  for (const Shape& r : kShapes)
    for (size_t at = 0, end; at < r.heads.size(); at = end + 1)
      if (end = std::min(r.heads.find(' ', at), r.heads.size());
          r.heads.substr(at, end - at) == name)
        return set(r.style, r.n, r.args, r.rest);
  if (name.rfind("with-", 0) == 0) return set(B, 1, "d", 'c');
  if (name.rfind("def", 0) == 0 && name.rfind("default", 0) != 0) return set(B, 2, "dd", 'c');
}

char child_ctx(const Node& list, int k) {
  if (k == 0) return list.style == Style::Data ? list.rest : 'c';
  return k <= list.n ? list.args[k - 1] : list.rest;
}

char prefix_ctx(const Node& x, int target, char ctx) {
  const std::string& p = x.text;
  if (p[0] == '#' && (p.back() == '+' || p.back() == '-')) return target == 0 ? 'q' : ctx;
  if (p == "'" || (p[0] == '#' && p.back() != '\'' && p.back() != '.')) return 'q';
  return 'c';
}

// A trailing comment ends its line, but the closing parentheses that follow
// go before it: a list whose last item is one is still one line (with a tail).
void measure(Node& x) {
  int w = width_of(x.text);
  bool one = x.text.find('\n') == std::string::npos, tail = false;
  for (size_t i = 0; i < x.items.size() && one; ++i) {
    const Node& it = x.items[i];
    if (it.gap > 0 || tail) {
      one = false;
    } else if (it.kind == K::LineComment) {
      tail = true;
    } else {
      const bool glued = x.kind == K::Prefix && i == 0 && !spaced(x, it);
      w += (glued || (x.kind == K::List && i == 0) ? 0 : 1) + it.first_w;
      one = it.one_line, tail = it.tail;
    }
  }
  x.first_w = w + (one && x.kind == K::List ? 1 : 0);
  x.one_line = one;
  x.tail = one && tail;
}

void prepare(Node& x, char ctx) {
  if (x.kind == K::LineComment) return;
  if (x.kind == K::List) classify(x, ctx);
  int k = 0;
  bool body_broken = false;
  for (Node& it : x.items) {
    const bool child = !is_comment(it);
    prepare(it, !child ? ctx : x.kind == K::List ? child_ctx(x, k) : prefix_ctx(x, k, ctx));
    body_broken |= child && has_body(x) && k > x.n && it.gap > 0;
    k += child;
  }
  if (x.kind == K::Prefix && !x.items.empty() && !is_comment(x.items[0])) x.items[0].gap = 0;
  if (x.kind == K::List && body_broken) {  // one body form broken: all of them
    k = 0;
    for (Node& it : x.items)
      if (!is_comment(it) && k++ > x.n) it.gap = std::max<uint8_t>(it.gap, 1);
  }
  measure(x);
}

class Printer {
 public:
  std::string out;

  void text(std::string_view t) {
    out += t;
    for (unsigned char c : t) {
      line_ += c == '\n';
      col_ = c == '\n' ? 0 : col_ + ((c & 0xC0) != 0x80);
    }
  }
  void newline(int indent, bool blank) {
    flush();
    out += blank ? "\n\n" : "\n";
    line_ += blank ? 2 : 1;
    out.append(size_t(indent), ' ');
    col_ = indent;
    comment_ended_ = false;
  }
  // Separates an item from what precedes it and prints it if it is a comment;
  // returns false for a form, which the caller prints.
  bool lead(const Node& it, bool brk, int indent, bool blank, bool space) {
    if (brk || must_break()) {
      newline(indent, blank);
    } else if (out.empty()) {  // the first line of the file: nothing to trail
    } else if (it.kind == K::LineComment) {
      pending_ = &it;
      return true;
    } else if (space) {
      text(" ");
    }
    if (it.kind == K::LineComment) comment_ended_ = true;
    if (is_comment(it)) text(it.text);
    return is_comment(it);
  }
  void item(const Node& x, int trail) {
    if (x.kind == K::List) return list(x, trail);
    if (x.kind == K::Prefix) return prefix(x, trail);
    text(x.text);
  }
  // The rendering of a top-level form, appended in column 0.
  void splice(const Printer& form) {
    text(form.out);
    pending_ = form.pending_, comment_ended_ = form.comment_ended_;
  }
  bool must_break() const { return pending_ || comment_ended_; }

 private:
  int col_ = 0, line_ = 0;
  const Node* pending_ = nullptr;  // a trailing comment, written when the line ends
  bool comment_ended_ = false;     // the line holds a comment of its own

  void flush() {
    if (!pending_) return;
    out.append(size_t(std::max(1, pending_->col0 - col_)), ' ');
    text(pending_->text);
    pending_ = nullptr;
  }

  enum Role : uint8_t { kPlain, kKey, kValue };

  static size_t last_child(const Node& l) {
    for (size_t i = l.items.size(); i-- > 0;)
      if (!is_comment(l.items[i])) return i;
    return l.items.size();
  }
  // Whether the closing parentheses follow item i on its line.
  static bool closers_follow(const Node& l, size_t i) {
    if (i != last_child(l)) return false;
    return i + 1 == l.items.size() ||
           (i + 2 == l.items.size() && !l.items[i].tail && l.items[i + 1].kind == K::LineComment &&
            l.items[i + 1].gap == 0);
  }
  static int indent_for(const Node& l, const Node& it, int k, int open, int content, int align) {
    if (l.style == Style::Tags)  // a tag: a symbol or integer, or `,tag` in a template
      return open + (it.kind == K::Atom || (it.text == "," && it.items[0].kind == K::Atom) ? 1 : 3);
    if (l.style == Style::Data) return content;
    if (l.style == Style::Call) return k <= 1 ? content : align;
    return k == 0 ? content : open + (k <= l.n ? 4 : 2);
  }
  // Width that item i (with its value, for a key) would take on this line.
  static int width_at(const Node& l, size_t i, Role role, int trail) {
    int w = l.items[i].first_w;
    size_t last = i;
    if (role == kKey && l.items[i].one_line && i + 1 < l.items.size() &&
        !is_comment(l.items[i + 1]) && l.items[i + 1].gap == 0)
      w += 1 + l.items[++last].first_w;
    if (l.items[last].one_line && closers_follow(l, last)) w += trail + 1;
    return w;
  }
  // Whether a body starting at item i must go one form a line.
  bool body_breaks(const Node& l, size_t i, int trail) const {
    const size_t last = last_child(l);  // comments after it break no body form
    int w = 0;
    for (size_t j = i; j <= last; ++j) {
      const Node& it = l.items[j];
      if (j > i && it.gap > 0) return true;
      if (it.kind == K::LineComment) return true;  // before a later body form
      w += 1 + it.first_w;
      if ((!it.one_line || it.tail) && j != last) return true;
    }
    if (l.items[last].one_line && closers_follow(l, last)) w += trail + 1;
    return col_ + w > kFmtWidth;
  }

  void list(const Node& l, int trail) {
    const int open = col_, line0 = line_;
    text(l.text);
    const int content = col_;
    int align = content;
    // Keys and their values, after the distinguished arguments: a pair is
    // never split by a break the printer adds.
    const int first = l.style == Style::Data ? 0 : l.style == Style::Call ? 1 : l.n + 1;
    Role role = kPlain;  // of the last child
    int k = -1;          // the last child printed
    bool prev_multi = false;
    int body = -1;  // undecided, on the head line, or one form a line
    for (size_t i = 0; i < l.items.size(); ++i) {
      const Node& it = l.items[i];
      const bool child = !is_comment(it);
      const int kk = k + 1;
      const int ind = indent_for(l, it, kk, open, content, align);
      if (child) role = role == kKey ? kValue : kk >= first && is_key(it) ? kKey : kPlain;
      bool brk = it.gap > 0 || must_break() || (child && prev_multi);
      if (child && has_body(l) && kk > l.n) {
        if (body < 0) body = (brk || line_ != line0 || body_breaks(l, i, trail)) ? 1 : 0;
        brk = brk || body == 1;
      } else if (child && !brk && i > 0 && role != kValue && ind < col_ + 1) {
        const bool breakable = l.style == Style::Data   ? kk >= 1
                               : l.style == Style::Call ? kk >= 2
                                                        : kk > l.n;
        brk = breakable && col_ + 1 + width_at(l, i, role, trail) > kFmtWidth;
      }
      if (lead(it, brk, ind, brk && it.gap > 1 && i > 0, i > 0)) continue;
      const int line_before = line_, col_before = col_;
      item(it, closers_follow(l, i) ? trail + 1 : 0);
      k = kk;
      prev_multi = line_ != line_before;
      if (k == 1 && line_before == line0) align = col_before;
    }
    if (comment_ended_) newline(indent_for(l, l, k + 1, open, content, align), false);
    text(")");
  }

  void prefix(const Node& x, int trail) {
    const int open = col_;
    text(x.text);
    const size_t last = last_child(x);
    for (size_t i = 0; i < x.items.size(); ++i) {
      const Node& it = x.items[i];
      if (!lead(it, it.gap > 0, open, false, i > 0 || is_comment(it) || spaced(x, it)))
        item(it, i == last ? trail : 0);
    }
  }
};

// A form with a body that spans lines is a paragraph of its own; declarations
// (and one-line forms) may stand in a group.
bool standalone(const Node& form, const std::string& rendered) {
  if (rendered.find('\n') == std::string::npos) return false;
  const Node* x = &form;
  while (x->kind == K::Prefix && (x->text == "#+" || x->text == "#-")) x = &x->items.back();
  return !(x->kind == K::List && x->style == Style::Options);
}

}  // namespace

bool format_source(std::string_view text, std::string& out, FmtError& err) {
  std::vector<Node> top;
  if (!Parser(text).top(top, err)) return false;
  const size_t n = top.size();
  std::vector<Printer> forms(n);
  std::vector<bool> alone(n, false), blank(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (is_comment(top[i])) continue;
    prepare(top[i], 'c');
    forms[i].item(top[i], 0);
    alone[i] = standalone(top[i], forms[i].out);
  }
  // A comment on the line of the form before it, unless that line already
  // ends in a comment the form carried out past its closing parentheses.
  auto trailing = [&](size_t i) {
    return i > 0 && is_comment(top[i]) && top[i].gap == 0 && !forms[i - 1].must_break();
  };
  for (size_t i = 1, prev = 0; i < n; ++i) {
    if (trailing(i)) continue;
    blank[i] = top[i].gap > 1 || alone[prev];
    prev = i;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!alone[i]) continue;
    size_t j = i;  // the comment lines directly above go with the form
    while (j > 0 && top[j].gap == 1 && is_comment(top[j - 1]) && !trailing(j - 1)) --j;
    if (j > 0) blank[j] = true;
  }
  Printer p;
  for (size_t i = 0; i < n; ++i)
    if (!p.lead(top[i], i > 0 && !trailing(i), 0, blank[i], i > 0)) p.splice(forms[i]);
  if (n > 0) p.newline(0, false);  // the final newline, after any trailing comment
  out = std::move(p.out);
  return true;
}

}  // namespace sexpgpu::lisp
