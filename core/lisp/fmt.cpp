// The formatter: a lossless reader into a small concrete syntax tree (atoms,
// lists, prefixes such as ' and #+, comments, each with the number of
// newlines before it), a pass that classifies every list by its head, and a
// printer that decides line breaks and indentation in one walk.
//
// Layout rules (docs/new.md repeats them):
//  1. Tokens are printed exactly as written, one space apart on a line. The
//     one rewrite: `#\` followed by a bare whitespace character becomes the
//     character's name (`#\Space`), so no line ends in whitespace.
//  2. Line breaks between the elements of a list are the author's: a break
//     in the input is kept (a run of blank lines becomes one), and elements
//     written on one line stay on one line, except that a break is added
//       - after a `;` comment, and after an element that spans lines;
//       - where the next element (a `:key value` pair counts as one) would
//         pass column 100: in data lists before any element, in calls from
//         the second argument on, in declarations (defknob, defloader, defrun
//         ...) after the name; it never separates a key from its value;
//       - in forms with a body (defun, let, when, dolist, lambda...): the body
//         forms go one to a line if any of them is broken, if the
//         distinguished arguments span lines, or if the body would pass
//         column 100.
//  3. Indentation depends only on the form: a body or declaration option goes
//     two columns in from the open parenthesis, a distinguished argument put
//     on its own line four; a call's arguments align under the first
//     argument (or under the function, when the first argument is on a line
//     of its own); data (quoted lists, vectors, lists whose head is not a
//     symbol, let bindings, lambda lists, cond and case clauses) align under
//     the first element. Closing parentheses follow the last element, except
//     after a comment on a line of its own, when they go on the next line.
//  4. Comments stay where they are. A comment on its own line keeps its line,
//     indented as the next element would be; a trailing comment stays at the
//     end of its line, in the column it was written in if the code leaves room
//     (else one space after the code), and after the closing parentheses that
//     follow its element.
//  5. Top level: each form starts a line in column 0; forms are separated by at
//     most one blank line, as written, except that a form with a body that
//     spans lines (a defun, a defmodel...) is always a paragraph of its own,
//     together with the comment lines directly above it. So one-line forms
//     and declarations written as a group (defknob lines, a defloader pair)
//     stay a group. Forms are never reordered: contract order is the author's.
// The output of each rule is a fixed point of the rules, which is what makes
// the formatter idempotent: every break it adds is a break it keeps.
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
  bool one_line = true;   // as laid out from the input's breaks
  int first_w = 0;        // width of its first line, likewise
  int col0 = 0;           // a comment's column in the input
  std::string text;       // atom or comment text, list opener, prefix
  std::vector<Node> items;
};

struct FormRule {
  std::string_view name;
  Style style;
  uint8_t n;
  const char* args;
  char rest;
};

constexpr Style B = Style::Body, O = Style::Options;
constexpr FormRule kForms[] = {
    {"block", B, 1, "c", 'c'},          {"case", B, 1, "c", 'd'},
    {"catch", B, 1, "c", 'c'},          {"defmacro", B, 2, "dd", 'c'},
    {"defmodel", B, 2, "dd", 'c'},      {"defoptimizer", B, 2, "dd", 'c'},
    {"defun", B, 2, "dd", 'c'},         {"destructuring-bind", B, 2, "dc", 'c'},
    {"do", B, 2, "bd", 'c'},            {"do*", B, 2, "bd", 'c'},
    {"dolist", B, 1, "p", 'c'},         {"dotimes", B, 1, "p", 'c'},
    {"ecase", B, 1, "c", 'd'},          {"etypecase", B, 1, "c", 'd'},
    {"eval-when", B, 1, "q", 'c'},      {"flet", B, 1, "f", 'c'},
    {"handler-case", B, 1, "c", 'F'},   {"ignore-errors", B, 0, "", 'c'},
    {"labels", B, 1, "f", 'c'},         {"lambda", B, 1, "d", 'c'},
    {"let", B, 1, "b", 'c'},            {"let*", B, 1, "b", 'c'},
    {"locally", B, 0, "", 'c'},         {"macrolet", B, 1, "f", 'c'},
    {"multiple-value-bind", B, 2, "dc", 'c'}, {"multiple-value-call", B, 1, "c", 'c'},
    {"multiple-value-prog1", B, 1, "c", 'c'}, {"handler-bind", B, 1, "b", 'c'},
    {"once-only", B, 1, "d", 'c'},      {"optimizer-update", B, 1, "d", 'c'},
    {"prog1", B, 1, "c", 'c'},          {"prog2", B, 2, "cc", 'c'},
    {"progn", B, 0, "", 'c'},           {"scope", B, 1, "c", 'c'},
    {"symbol-macrolet", B, 1, "b", 'c'}, {"tagbody", Style::Tags, 0, "", 'c'},
    {"typecase", B, 1, "c", 'd'},       {"unless", B, 1, "c", 'c'},
    {"unwind-protect", B, 1, "c", 'c'}, {"when", B, 1, "c", 'c'},
    // Declarations: options after the name, filled as written.
    {"defconstant", O, 1, "c", 'c'},    {"defcurriculum", O, 0, "", 'c'},
    {"defdiagnostic", O, 1, "c", 'c'},  {"defeval", O, 1, "c", 'c'},
    {"defknob", O, 2, "cc", 'c'},       {"defloader", O, 1, "c", 'c'},
    {"defmodule", O, 1, "c", 'c'},      {"defparam", O, 2, "cc", 'c'},
    {"defparameter", O, 1, "c", 'c'},   {"defrun", O, 0, "", 'c'},
    {"defstate", O, 1, "c", 'c'},       {"defsweep", O, 1, "c", 'c'},
    {"defvar", O, 1, "c", 'c'},         {"defvariant", O, 1, "c", 'c'},
    {"require", O, 1, "c", 'c'},        {"stage", O, 1, "c", 'c'},
    // A call whose arguments are clauses.
    {"cond", Style::Call, 0, "", 'd'},
};

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_term(char c) {
  return c == '(' || c == ')' || c == '\'' || c == '"' || c == ';' || c == '`' || c == ',';
}
bool is_comment(const Node& x) { return x.kind == K::LineComment || x.kind == K::BlockComment; }
bool is_key(const Node& x) {
  return x.kind == K::Atom && ((x.text.size() > 1 && x.text[0] == ':') || x.text == ".");
}

// A tagbody's tag: a symbol or integer, or in a template `,tag`.
bool is_tag(const Node& x) {
  return x.kind == K::Atom ||
         (x.kind == K::Prefix && x.text == "," && x.items.size() == 1 && x.items[0].kind == K::Atom);
}

// Characters up to the first newline: the width of a first line.
int width_of(std::string_view s) {
  int w = 0;
  for (unsigned char c : s) {
    if (c == '\n') break;
    if ((c & 0xC0) != 0x80) ++w;
  }
  return w;
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

bool is_number(std::string_view t) {
  size_t i = (!t.empty() && (t[0] == '+' || t[0] == '-')) ? 1 : 0;
  size_t digits = 0;
  bool dot = false;
  for (; i < t.size(); ++i) {
    if (t[i] >= '0' && t[i] <= '9') ++digits;
    else if (t[i] == '.' && !dot) dot = true;
    else break;
  }
  if (digits == 0) return false;
  if (i == t.size()) return true;
  if (std::string_view("eEdDfFsSlL").find(t[i]) == std::string_view::npos) return false;
  if (++i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
  size_t exp = i;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
  return i == t.size() && i > exp;
}

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  bool top(std::vector<Node>& out, FmtError& err) {
    for (;;) {
      const int gap = skip_ws();
      if (pos_ >= s_.size()) return true;
      if (s_[pos_] == ')') fail(pos_, "unbalanced ')': no list is open here");
      Node x;
      x.gap = uint8_t(gap);
      if (err_at_ == kNone && item(x, 1)) out.push_back(std::move(x));
      if (err_at_ != kNone) {
        locate(err_at_, err.line, err.col);
        err.message = err_msg_;
        return false;
      }
    }
  }

 private:
  static constexpr size_t kNone = std::string_view::npos;
  std::string_view s_;
  size_t pos_ = 0;
  size_t err_at_ = kNone;
  std::string err_msg_;

  bool fail(size_t at, std::string msg) {
    if (err_at_ == kNone) err_at_ = at, err_msg_ = std::move(msg);
    return false;
  }
  void locate(size_t at, uint32_t& line, uint32_t& col) const {
    line = 1 + uint32_t(std::count(s_.begin(), s_.begin() + at, '\n'));
    size_t bol = s_.rfind('\n', at == 0 ? 0 : at - 1);
    bol = (bol == kNone || at == 0) ? 0 : bol + 1;
    col = 1 + uint32_t(width_of(s_.substr(bol, at - bol)));
  }
  int col_of(size_t at) const {
    uint32_t line, col;
    locate(at, line, col);
    return int(col) - 1;
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
  bool items(Node& list, size_t open, int depth) {
    for (;;) {
      const int gap = skip_ws();
      if (pos_ >= s_.size())
        return fail(open, "end of file inside a list: '" + list.text + "' is never closed");
      if (s_[pos_] == ')') return ++pos_, true;
      Node& x = list.items.emplace_back();
      x.gap = uint8_t(gap);
      if (!item(x, depth + 1)) return false;
    }
  }
  // A prefix and its targets (one, or a feature and a form for #+ and #-),
  // with any comments between them.
  bool prefix(Node& x, size_t start, int targets, int depth) {
    x.kind = K::Prefix;
    while (targets > 0) {
      const int gap = skip_ws();
      if (pos_ >= s_.size() || s_[pos_] == ')')
        return fail(start, "nothing after '" + x.text + "'");
      Node& t = x.items.emplace_back();
      t.gap = uint8_t(gap);
      if (!item(t, depth + 1)) return false;
      targets -= !is_comment(t);
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
    if (c == '(') {
      x.kind = K::List;
      x.text = "(";
      return ++pos_, items(x, start, depth);
    }
    if (c == '\'' || c == '`' || c == ',') {
      x.text = s_.substr(pos_++, 1);
      if (c == ',' && pos_ < s_.size() && (s_[pos_] == '@' || s_[pos_] == '.')) x.text += s_[pos_++];
      return prefix(x, start, 1, depth);
    }
    if (c == '"') {
      for (++pos_; pos_ < s_.size() && s_[pos_] != '"';) pos_ += s_[pos_] == '\\' ? 2 : 1;
      if (pos_++ >= s_.size()) return fail(start, "end of file inside a string");
      x.text = s_.substr(start, pos_ - start);
      return true;
    }
    if (c == '#') return dispatch(x, depth);
    if (!token(start)) return false;
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
      while (pos_ < s_.size() && (static_cast<unsigned char>(s_[pos_]) & 0xC0) == 0x80) ++pos_;
      const size_t first_end = pos_;
      while (pos_ < s_.size() && !is_ws(s_[pos_]) && !is_term(s_[pos_])) ++pos_;
      x.text = s_.substr(start, pos_ - start);
      static constexpr std::string_view kNames[] = {"Space", "Tab", "Newline", "Return", "Page"};
      const size_t w = std::string_view(" \t\n\r\f").find(ch);
      if (pos_ == first_end && w != std::string_view::npos)
        x.text = std::string(s_.substr(start, p + 1 - start)) + std::string(kNames[w]);
      return true;
    }
    x.text = s_.substr(start, pos_ - start);
    if (d == '(') {
      x.kind = K::List;
      return items(x, start, depth);
    }
    if (d == '\'' || d == '.') return prefix(x, start, 1, depth);
    if (d == '+' || d == '-') return prefix(x, start, 2, depth);
    if (is_ws(d) || is_term(d)) return fail(start, "bad # syntax");
    if (!token(start)) return false;
    x.text = s_.substr(start, pos_ - start);
    // #2A(...), #p"...", #1=...: a dispatch that reads the next form.
    if (x.text.back() == '=' || (pos_ < s_.size() && (s_[pos_] == '(' || s_[pos_] == '"')))
      return prefix(x, start, 1, depth);
    return true;
  }
};

// ---- Classification and first-line widths, from the input's breaks.

bool symbol_head(const Node& list, std::string& name) {
  auto it = std::find_if(list.items.begin(), list.items.end(), [](const Node& x) { return !is_comment(x); });
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
  for (const FormRule& r : kForms)
    if (r.name == name) return set(r.style, r.n, r.args, r.rest);
  if (name.rfind("with-", 0) == 0) return set(B, 1, "d", 'c');
  if (name.rfind("def", 0) == 0 && name.rfind("default", 0) != 0) return set(B, 2, "dd", 'c');
}

char child_ctx(const Node& list, int k) {
  if (k == 0) return list.style == Style::Data ? list.rest : 'c';
  return k <= list.n ? list.args[k - 1] : list.rest;
}

char prefix_ctx(const Node& x, int target, char ctx) {
  const std::string& p = x.text;
  if (p == "#+" || p == "#-") return target == 0 ? 'q' : ctx;
  if (p == "'" || (p[0] == '#' && p != "#'" && p != "#.")) return 'q';
  return 'c';
}

void measure(Node& x) {
  int w = width_of(x.text);
  bool one = true;
  for (size_t i = 0; i < x.items.size() && one; ++i) {
    const Node& it = x.items[i];
    if (it.gap > 0 || it.kind == K::LineComment) {
      one = false;
      break;
    }
    const bool glued = x.kind == K::Prefix && i == 0;
    w += (glued || (x.kind == K::List && i == 0) ? 0 : 1) + it.first_w;
    one = it.one_line;
  }
  x.first_w = w + (one && x.kind == K::List ? 1 : 0);
  x.one_line = one;
}

void prepare(Node& x, char ctx) {
  if (x.kind == K::LineComment) return void(x.one_line = false);
  if (x.kind == K::Atom || x.kind == K::BlockComment) {
    x.first_w = width_of(x.text);
    x.one_line = x.text.find('\n') == std::string::npos;
    return;
  }
  if (x.kind == K::List) classify(x, ctx);
  int k = 0;
  bool body_broken = false;
  for (Node& it : x.items) {
    if (is_comment(it)) continue;
    prepare(it, x.kind == K::List ? child_ctx(x, k) : prefix_ctx(x, k, ctx));
    body_broken |= (x.style == B || x.style == Style::Tags) && k > x.n && it.gap > 0;
    ++k;
  }
  if (x.kind == K::Prefix && !x.items.empty() && !is_comment(x.items[0])) x.items[0].gap = 0;
  if (x.kind == K::List && body_broken) {  // one body form broken: all of them
    k = 0;
    for (Node& it : x.items)
      if (!is_comment(it) && k++ > x.n) it.gap = std::max<uint8_t>(it.gap, 1);
  }
  measure(x);
}

// ---- Printing.

class Printer {
 public:
  std::string out;

  void text(std::string_view t) {
    out += t;
    for (unsigned char c : t) {
      if (c == '\n') ++line_, col_ = 0;
      else if ((c & 0xC0) != 0x80) ++col_;
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
  void finish() {
    flush();
    if (!out.empty()) out += '\n';
  }
  // Separates an item from what precedes it and prints it if it is a comment;
  // returns false for a form, which the caller prints.
  bool lead(const Node& it, bool brk, int indent, bool blank, bool space) {
    if (brk || must_break()) {
      newline(indent, blank);
    } else if (out.empty()) {  // the first line of the file: nothing to trail
    } else if (it.kind == K::LineComment) {
      pending_ = true, pending_text_ = it.text, pending_col_ = it.col0;
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
    pending_ = form.pending_, pending_text_ = form.pending_text_, pending_col_ = form.pending_col_;
    comment_ended_ = form.comment_ended_;
  }
  bool must_break() const { return pending_ || comment_ended_; }

 private:
  int col_ = 0, line_ = 0;
  bool pending_ = false;  // a trailing comment, written when the line ends
  std::string pending_text_;
  int pending_col_ = 0;
  bool comment_ended_ = false;  // the line holds a comment of its own

  void flush() {
    if (!pending_) return;
    out.append(size_t(std::max(1, pending_col_ - col_)), ' ');
    text(pending_text_);
    pending_ = false;
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
           (i + 2 == l.items.size() && l.items[i + 1].kind == K::LineComment && l.items[i + 1].gap == 0);
  }
  static int indent_for(const Node& l, const Node& it, int k, int open, int content, int align) {
    if (l.style == Style::Tags) return open + (is_tag(it) ? 1 : 3);
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
    const size_t last = last_child(l);
    int w = 0;
    for (size_t j = i; j < l.items.size(); ++j) {
      const Node& it = l.items[j];
      if (j > i && it.gap > 0) return true;
      if (it.kind == K::LineComment) {
        if (j < last) return true;
        continue;
      }
      w += 1 + it.first_w;
      if (!it.one_line && j != last) return true;
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
    std::vector<const Node*> kids;
    for (const Node& it : l.items)
      if (!is_comment(it)) kids.push_back(&it);
    std::vector<Role> roles(kids.size(), kPlain);
    const size_t first = l.style == Style::Data ? 0 : l.style == Style::Call ? 1 : l.n + 1u;
    for (size_t k = first; k + 1 < kids.size(); ++k)
      if (is_key(*kids[k])) roles[k] = kKey, roles[++k] = kValue;
    int k = -1;  // the last child printed
    bool prev_multi = false;
    int body = -1;  // undecided, on the head line, or one form a line
    for (size_t i = 0; i < l.items.size(); ++i) {
      const Node& it = l.items[i];
      const bool child = !is_comment(it);
      const int kk = k + 1;
      const int ind = indent_for(l, it, kk, open, content, align);
      bool brk = it.gap > 0 || must_break() || (child && prev_multi);
      if (child && (l.style == B || l.style == Style::Tags) && kk > l.n) {
        if (body < 0) body = (brk || line_ != line0 || body_breaks(l, i, trail)) ? 1 : 0;
        brk = brk || body == 1;
      } else if (child && !brk && i > 0 && roles[kk] != kValue && ind < col_ + 1) {
        const bool breakable = l.style == Style::Data   ? kk >= 1
                               : l.style == Style::Call ? kk >= 2
                                                        : kk > l.n;
        brk = breakable && col_ + 1 + width_at(l, i, roles[kk], trail) > kFmtWidth;
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
      if (!lead(it, it.gap > 0, open, false, i > 0 || is_comment(it)))
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
  auto trailing = [&](size_t i) { return i > 0 && is_comment(top[i]) && top[i].gap == 0; };
  for (size_t i = 0; i < n; ++i) {
    if (is_comment(top[i])) continue;
    prepare(top[i], 'c');
    forms[i].item(top[i], 0);
    alone[i] = standalone(top[i], forms[i].out);
  }
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
  for (size_t i = 0; i < n; ++i) {
    if (is_comment(top[i])) {
      p.lead(top[i], i > 0 && !trailing(i), 0, blank[i], i > 0);
      continue;
    }
    if (i > 0) p.newline(0, blank[i]);
    p.splice(forms[i]);
  }
  p.finish();
  out = std::move(p.out);
  return true;
}

}  // namespace sexpgpu::lisp
