// Selector expressions (selector.h): the expansion of `selector`, the
// Selector values it builds, and matching them against parameters.
//
// The expansion is done here rather than in a Lisp macro so that a leaf's
// arguments are checked where they are literal and the shape of the
// expression (and/or/not nesting) is fixed at expansion time; only leaf
// arguments and "any other form" are evaluated, in the caller's scope.
#include "runfile/selector.h"

#include <algorithm>
#include <cctype>

#include "lisp/builtins.h"

namespace sexpgpu::runfile {

using lisp::Interp;
using lisp::Value;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t dot; (dot = path.find('.', start)) != std::string_view::npos; start = dot + 1)
    out.push_back(path.substr(start, dot - start));
  out.push_back(path.substr(start));
  return out;
}

// One segment against a pattern where '*' is any run of characters.
bool segment_matches(std::string_view pat, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pat.size() && pat[p] == '*') {
      star = p++;
      resume = t;
    } else if (p < pat.size() && pat[p] == text[t]) {
      ++p, ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

bool segments_match(std::span<const std::string_view> pat, std::span<const std::string_view> text) {
  if (pat.empty()) return text.empty();
  if (pat[0] == "**") {
    for (size_t skip = 0; skip <= text.size(); ++skip)
      if (segments_match(pat.subspan(1), text.subspan(skip))) return true;
    return false;
  }
  return !text.empty() && segment_matches(pat[0], text[0]) &&
         segments_match(pat.subspan(1), text.subspan(1));
}

std::string quoted(const std::string& s) {
  return "\"" + s + "\"";
}

bool has_tag(const ParamView& p, const std::string& tag) {
  return std::any_of(p.tags.begin(), p.tags.end(), [&](const std::string& t) {
    return lower(t.size() && t[0] == ':' ? t.substr(1) : t) == tag;
  });
}

// ---- building Selector values (what the expansion calls) -----------------------------

Selector* new_selector(Interp& in, Selector::Kind kind) {
  Selector* s = in.alloc<Selector>();
  s->kind = kind;
  return s;
}

Value wrap(Selector* s) {
  return Value::object(lisp::Kind::Foreign, s);
}

std::string text_of(Interp& in, Value v, const char* what) {
  if (!v.is_string()) in.type_error(v, "a string", what);
  return lisp::u32_to_utf8(v.str()->chars.substr(0, v.str()->size()));
}

int64_t non_negative(Interp& in, Value v, const char* what) {
  if (!v.is_int() || v.i < 0) in.type_error(v, "a non-negative integer", what);
  return v.i;
}

// A leaf selector of KIND ("PATH", "NDIM", ...) from its evaluated arguments;
// nullptr for a kind that is not a leaf.
Selector* leaf_selector(Interp& in, const std::string& kind, Value* args, int n) {
  using K = Selector::Kind;
  const std::string what = lower(kind);
  if (kind == "PATH" || kind == "NAME") {
    if (n == 0) in.fail("E-ARITY", "(" + what + " ...) needs at least one pattern");
    Selector* s = new_selector(in, kind == "PATH" ? K::Path : K::Name);
    for (int i = 0; i < n; ++i) s->texts.push_back(text_of(in, args[i], what.c_str()));
    return s;
  }
  if (kind != "NDIM" && kind != "SHAPE-IS" && kind != "TAG") return nullptr;
  if (n != 1) in.fail("E-ARITY", "(" + what + " ...) takes one argument");
  if (kind == "NDIM") {
    Selector* s = new_selector(in, K::Ndim);
    s->ndim = non_negative(in, args[0], "ndim");
    return s;
  }
  if (kind == "SHAPE-IS") {
    Selector* s = new_selector(in, K::ShapeIs);
    for (Value d : in.list_items(args[0], "shape-is"))
      s->shape.push_back(non_negative(in, d, "shape-is"));
    return s;
  }
  Selector* s = new_selector(in, K::Tag);
  bool keyword = args[0].is_symbol() && args[0].sym()->keyword;
  s->texts.push_back(lower(keyword ? args[0].sym()->name : text_of(in, args[0], "tag")));
  return s;
}

// (%make-selector KIND ARG...): what the selector macro expands to.
Value make_selector(Interp& in, Value* args, int nargs) {
  if (!args[0].is_symbol() || !args[0].sym()->keyword)
    in.type_error(args[0], "a selector kind", "%make-selector");
  const std::string kind = args[0].sym()->name;
  using K = Selector::Kind;
  if (kind == "ALL") return wrap(new_selector(in, K::All));
  if (Selector* leaf = leaf_selector(in, kind, args + 1, nargs - 1)) return wrap(leaf);
  if (kind != "AND" && kind != "OR" && kind != "NOT")
    in.type_error(args[0], "a selector kind", "%make-selector");
  if (kind == "NOT" && nargs != 2) in.fail("E-ARITY", "(not ...) takes one selector");
  Selector* s = new_selector(in, kind == "AND" ? K::And : kind == "OR" ? K::Or : K::Not);
  for (int i = 1; i < nargs; ++i) {
    if (!as_selector(args[i])) in.type_error(args[i], "a selector", lower(kind));
    s->children.push_back(args[i]);
  }
  return wrap(s);
}

// "Any other form": a selector, or a predicate of the parameter's plist.
Value selector_of(Interp& in, Value v) {
  if (as_selector(v)) return v;
  if (v.kind == lisp::Kind::Function) {
    Selector* s = new_selector(in, Selector::Kind::Predicate);
    s->children.push_back(v);
    return wrap(s);
  }
  in.type_error(v, "a selector or a predicate function of the parameter's plist", "selector");
}

// ---- the expansion -------------------------------------------------------------------

Value expand(Interp& in, Value expr);

// A leaf's argument: evaluated, but a list that starts with a number is
// data (shape-is's (4 3)), as option values are read (run-file.md).
Value leaf_argument(Interp& in, Value arg) {
  if (arg.is_cons() && arg.cons()->car.is_number()) {
    std::vector<Value> items = in.list_items(arg, "selector");
    items.insert(items.begin(), in.sym("LIST"));
    return in.list_from(items);
  }
  return arg;
}

Value expand_call(Interp& in, const std::string& head, Value args) {
  std::vector<Value> items = in.list_items(args, "selector");
  std::vector<Value> call{in.sym("%MAKE-SELECTOR"), in.sym_kw(head)};
  bool combinator = head == "AND" || head == "OR" || head == "NOT";
  if ((head == "NOT" || head == "NDIM" || head == "TAG" || head == "SHAPE-IS") && items.size() != 1)
    in.fail("E-ARITY", "(" + lower(head) + " ...) in a selector takes one argument, not " +
                           std::to_string(items.size()));
  for (Value item : items) call.push_back(combinator ? expand(in, item) : leaf_argument(in, item));
  return in.list_from(call);
}

Value expand(Interp& in, Value expr) {
  static const char* const kinds[] = {"PATH", "NAME", "NDIM", "SHAPE-IS",
                                      "TAG",  "AND",  "OR",   "NOT"};
  if (expr.is_symbol() && expr.sym() == in.T)
    return in.list({in.sym("%MAKE-SELECTOR"), in.sym_kw("ALL")});
  if (expr.is_string()) return in.list({in.sym("%MAKE-SELECTOR"), in.sym_kw("PATH"), expr});
  if (expr.is_cons() && expr.cons()->car.is_symbol()) {
    lisp::Symbol* head = expr.cons()->car.sym();
    if (head->qualifier.empty())
      for (const char* k : kinds)
        if (head->name == k) return expand_call(in, k, expr.cons()->cdr);
  }
  return in.list({in.sym("%SELECTOR-OF"), expr});
}

}  // namespace

// ---- describing and matching ------------------------------------------------------------

std::string Selector::describe() const {
  auto join_texts = [&](const char* head, bool quote) {
    std::string out = std::string("(") + head;
    for (const std::string& t : texts) out += " " + (quote ? quoted(t) : ":" + t);
    return out + ")";
  };
  auto join_children = [&](const char* head) {
    std::string out = std::string("(") + head;
    for (Value c : children) out += " " + as_selector(c)->describe();
    return out + ")";
  };
  switch (kind) {
    case Kind::All: return "t";
    case Kind::Path: return join_texts("path", true);
    case Kind::Name: return join_texts("name", true);
    case Kind::Tag: return join_texts("tag", false);
    case Kind::Ndim: return "(ndim " + std::to_string(ndim) + ")";
    case Kind::ShapeIs: {
      std::string out = "(shape-is (";
      for (size_t i = 0; i < shape.size(); ++i) out += (i ? " " : "") + std::to_string(shape[i]);
      return out + "))";
    }
    case Kind::And: return join_children("and");
    case Kind::Or: return join_children("or");
    case Kind::Not: return join_children("not");
    case Kind::Predicate: return "predicate";
  }
  return "?";
}

Value selector_from_form(Interp& in, Value expression) {
  Value v = in.eval(expand(in, expression), nullptr);
  in.single();
  return v;
}

Selector* as_selector(Value v) {
  if (v.kind != lisp::Kind::Foreign || v.p == nullptr) return nullptr;
  return dynamic_cast<Selector*>(v.foreign());
}

bool glob_matches(std::string_view glob, std::string_view path) {
  std::vector<std::string_view> g = segments(glob), p = segments(path);
  return segments_match(g, p);
}

Value param_plist(Interp& in, const ParamView& p) {
  std::vector<Value> dims, tags;
  for (int64_t d : p.shape.dims()) dims.push_back(Value::integer(d));
  for (const std::string& t : p.tags)
    tags.push_back(in.sym_kw(lisp::upcase_ascii(t.size() && t[0] == ':' ? t.substr(1) : t)));
  std::string dtype(ir::lisp_keyword(p.dtype).substr(1));
  return in.list({in.sym_kw("PATH"), in.make_string_utf8(p.path), in.sym_kw("SHAPE"),
                  in.list_from(dims), in.sym_kw("DTYPE"), in.sym_kw(lisp::upcase_ascii(dtype)),
                  in.sym_kw("TAGS"), in.list_from(tags)});
}

bool selector_matches(Interp& in, Value selector, const ParamView& p) {
  Selector* s = as_selector(selector);
  if (!s) return selector_matches(in, selector_of(in, selector), p);
  using K = Selector::Kind;
  auto any_text = [&](auto&& pred) { return std::any_of(s->texts.begin(), s->texts.end(), pred); };
  switch (s->kind) {
    case K::All: return true;
    case K::Path: return any_text([&](const std::string& g) { return glob_matches(g, p.path); });
    case K::Name: {
      std::string_view last = segments(p.path).back();
      return any_text([&](const std::string& g) { return segment_matches(g, last); });
    }
    case K::Ndim: return p.shape.rank() == s->ndim;
    case K::ShapeIs:
      return std::equal(s->shape.begin(), s->shape.end(), p.shape.begin(), p.shape.end());
    case K::Tag: return has_tag(p, s->texts[0]);
    case K::And:
      return std::all_of(s->children.begin(), s->children.end(),
                         [&](Value c) { return selector_matches(in, c, p); });
    case K::Or:
      return std::any_of(s->children.begin(), s->children.end(),
                         [&](Value c) { return selector_matches(in, c, p); });
    case K::Not: return !selector_matches(in, s->children[0], p);
    case K::Predicate: return in.test(lisp::call1(in, s->children[0], param_plist(in, p)));
  }
  return false;
}

namespace {

// A parameter plist, as selector-matches-p takes it, read back.
ParamView view_of_plist(Interp& in, Value plist) {
  ParamView p;
  std::vector<Value> items = in.list_items(plist, "selector-matches-p");
  if (items.size() % 2 != 0)
    in.type_error(plist, "a plist (:path :shape :dtype :tags)", "selector-matches-p");
  for (size_t i = 0; i < items.size(); i += 2) {
    std::string key = items[i].is_symbol() ? items[i].sym()->name : "";
    Value v = items[i + 1];
    if (key == "PATH") {
      p.path = text_of(in, v, "selector-matches-p :path");
    } else if (key == "SHAPE") {
      for (Value x : in.list_items(v, "selector-matches-p :shape"))
        p.shape.push_back(non_negative(in, x, "selector-matches-p :shape"));
    } else if (key == "DTYPE") {
      std::optional<ir::DType> d = v.is_symbol() ? ir::parse_dtype(v.sym()->name) : std::nullopt;
      if (!d) in.type_error(v, "a dtype keyword", "selector-matches-p :dtype");
      p.dtype = *d;
    } else if (key == "TAGS") {
      for (Value t : in.list_items(v, "selector-matches-p :tags")) {
        if (!t.is_symbol()) in.type_error(t, "a tag keyword", "selector-matches-p :tags");
        p.tags.push_back(lower(t.sym()->name));
      }
    } else {
      in.type_error(items[i], "one of :path :shape :dtype :tags", "selector-matches-p");
    }
  }
  return p;
}

}  // namespace

void register_selectors(Interp& in) {
  SG_BUILTIN(in, "%SELECTOR-FORM", 1, 1, "the expansion of (selector EXPR): a form that makes it",
             { return expand(in, args[0]); });
  SG_BUILTIN(in, "%MAKE-SELECTOR", 1, -1, "a selector of one kind (what selector expands to)",
             { return make_selector(in, args, nargs); });
  SG_BUILTIN(in, "%SELECTOR-OF", 1, 1, "a selector, or a predicate made one",
             { return selector_of(in, args[0]); });
  SG_BUILTIN(in, "SELECTOR-MATCHES-P", 2, 2,
             "(selector-matches-p SELECTOR '(:path P :shape S :dtype D :tags TS)): does it take it",
             { return in.boolean(selector_matches(in, args[0], view_of_plist(in, args[1]))); });
}

}  // namespace sexpgpu::runfile
