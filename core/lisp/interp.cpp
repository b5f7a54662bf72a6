// The interpreter core: heap, symbols, eval/apply, lambda-list binding, macro
// expansion, cells and modules lookup, errors with positions, limits.
#include "lisp/interp.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "lisp/modules.h"

namespace sexpgpu::lisp {

// ---- strings ------------------------------------------------------------------

std::u32string utf8_to_u32(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    char32_t cp;
    int len;
    if (c < 0x80) cp = c, len = 1;
    else if ((c >> 5) == 6) cp = c & 0x1F, len = 2;
    else if ((c >> 4) == 14) cp = c & 0x0F, len = 3;
    else if ((c >> 3) == 30) cp = c & 0x07, len = 4;
    else cp = 0xFFFD, len = 1;
    if (i + len > s.size()) {
      out += char32_t(0xFFFD);
      break;
    }
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out += cp;
    i += len;
  }
  return out;
}

std::string u32_to_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) {
    if (cp < 0x80) out += char(cp);
    else if (cp < 0x800) out += char(0xC0 | (cp >> 6)), out += char(0x80 | (cp & 0x3F));
    else if (cp < 0x10000)
      out += char(0xE0 | (cp >> 12)), out += char(0x80 | ((cp >> 6) & 0x3F)),
          out += char(0x80 | (cp & 0x3F));
    else
      out += char(0xF0 | (cp >> 18)), out += char(0x80 | ((cp >> 12) & 0x3F)),
          out += char(0x80 | ((cp >> 6) & 0x3F)), out += char(0x80 | (cp & 0x3F));
  }
  return out;
}

std::string upcase_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = char(c - 32);
  return out;
}

Symbol g_nil_symbol;

// ---- construction ---------------------------------------------------------------

Interp::Interp(SourceMap& src, DiagnosticSink& snk) : sources(src), sink(snk) {
  spans_.push_back(Span{});  // id 0: no span
  // NIL must exist before anything else can make a list.
  NIL = &g_nil_symbol;
  NIL->name = "NIL";
  symbols_["NIL"] = NIL;
  nil_ = symval(NIL);
  NIL->plist = nil_;
  NIL->cell.value = nil_;
  NIL->cell.has_value = true;
  NIL->cell.constant = true;
  T = intern("T");
  t_ = symval(T);
  T->cell.value = t_;
  T->cell.has_value = true;
  T->cell.constant = true;

  S.quote = intern("QUOTE");
  S.function = intern("FUNCTION");
  S.lambda = intern("LAMBDA");
  S.setf = intern("SETF");
  S.declare = intern("DECLARE");
  S.special = intern("SPECIAL");
  S.ignore = intern("IGNORE");
  S.ignorable = intern("IGNORABLE");
  S.type = intern("TYPE");
  S.optional = intern("&OPTIONAL");
  S.rest = intern("&REST");
  S.key = intern("&KEY");
  S.aux = intern("&AUX");
  S.body = intern("&BODY");
  S.whole = intern("&WHOLE");
  S.environment = intern("&ENVIRONMENT");
  S.allow_other_keys = intern("&ALLOW-OTHER-KEYS");
  S.kw_allow_other_keys = keyword("ALLOW-OTHER-KEYS");
  S.quasiquote = intern("QUASIQUOTE");
  S.unquote = intern("UNQUOTE");
  S.unquote_splicing = intern("UNQUOTE-SPLICING");
  S.block = intern("BLOCK");
  S.error = intern("ERROR");
  S.otherwise = intern("OTHERWISE");
  S.named_lambda = intern("%NAMED-LAMBDA");

  // The native stack: leave a margin for the error path itself.
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    size_t size = 0;
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    stack_base_ = static_cast<char*>(addr) + std::min<size_t>(size / 4, 512 * 1024);
  }

  auto main = std::make_unique<Module>();
  main->name = "main";
  main->loaded = true;
  current_module = main.get();
  modules.push_back(std::move(main));

  register_special_forms(*this);
  register_core_builtins(*this);
  register_number_builtins(*this);
  register_list_builtins(*this);
  register_sequence_builtins(*this);
  register_string_builtins(*this);
  register_hash_builtins(*this);
  register_format_builtins(*this);
  register_module_builtins(*this);
  register_place_builtins(*this);
}

Interp::~Interp() {
  for (Obj* o = heap_; o;) {
    Obj* next = o->next_alloc;
    delete o;
    o = next;
  }
}

void Interp::new_arena_chunk(size_t at_least) {
  size_t size = std::max<size_t>(at_least, 256 * 1024);
  arena_chunks_.emplace_back(new unsigned char[size]);
  arena_next_ = arena_chunks_.back().get();
  arena_left_ = size;
  note_alloc(size);
}

void BindingList::grow(uint32_t new_cap) {
  auto* bigger = static_cast<Binding*>(owner->arena_alloc(sizeof(Binding) * new_cap));
  for (uint32_t i = 0; i < n; ++i) bigger[i] = data[i];
  data = bigger;
  cap = new_cap;
}

void Interp::new_cons_chunk() {
  constexpr size_t kConses = 4096;
  cons_chunks_.emplace_back(new unsigned char[kConses * sizeof(Cons)]);
  cons_next_ = reinterpret_cast<Cons*>(cons_chunks_.back().get());
  cons_left_ = kConses;
  note_alloc(kConses * sizeof(Cons));
}

void Interp::note_alloc(size_t bytes) {
  heap_bytes_ += bytes;
  if (heap_bytes_ > limits.heap_bytes) {
    heap_bytes_ = 0;  // let the error path allocate
    LispError e;
    e.diag.code = "E-EVAL-LIMIT";
    e.diag.span = current_span();
    e.diag.message = "compile-time heap limit reached (" + std::to_string(limits.heap_bytes) +
                     " bytes)";
    e.diag.fix = "raise it with --eval-heap BYTES if the file really needs more";
    e.catchable = false;
    throw e;
  }
}

void Interp::limit_reached_steps() {
  LispError e;
  e.diag.code = "E-EVAL-LIMIT";
  e.diag.span = current_span();
  e.diag.message =
      "evaluation step limit reached (" + std::to_string(limits.steps) + " steps): an endless loop?";
  e.diag.fix = "raise it with --eval-steps N if the file really needs more";
  e.catchable = false;
  throw e;
}

void Interp::check_native_stack() {
  char probe;
  if (stack_base_ && &probe < stack_base_) {
    LispError e;
    e.diag.code = "E-STACK";
    e.diag.span = current_span();
    e.diag.message = "native stack exhausted (nesting too deep)";
    e.catchable = false;
    throw e;
  }
}

// ---- symbols -------------------------------------------------------------------

Symbol* Interp::intern(std::string_view name) {
  auto it = symbols_.find(std::string(name));
  if (it != symbols_.end()) return it->second;
  Symbol* s = alloc<Symbol>();
  s->name = std::string(name);
  s->plist = nil_;
  symbols_.emplace(s->name, s);
  return s;
}

Symbol* Interp::keyword(std::string_view name) {
  auto it = keywords_.find(std::string(name));
  if (it != keywords_.end()) return it->second;
  Symbol* s = alloc<Symbol>();
  s->name = std::string(name);
  s->keyword = true;
  s->plist = nil_;
  s->cell.value = symval(s);
  s->cell.has_value = true;
  s->cell.constant = true;
  keywords_.emplace(s->name, s);
  return s;
}

Symbol* Interp::qualified(std::string_view q, std::string_view name) {
  std::string key = std::string(q) + ":" + std::string(name);
  auto it = qualified_.find(key);
  if (it != qualified_.end()) return it->second;
  Symbol* s = alloc<Symbol>();
  s->name = std::string(name);
  s->qualifier = std::string(q);
  s->plist = nil_;
  qualified_.emplace(key, s);
  return s;
}

std::vector<Symbol*> Interp::all_symbols() const {
  std::vector<Symbol*> out;
  for (auto& [name, s] : symbols_) out.push_back(s);
  std::sort(out.begin(), out.end(), [](Symbol* a, Symbol* b) { return a->name < b->name; });
  return out;
}

Symbol* Interp::make_symbol(std::string name) {
  Symbol* s = alloc<Symbol>();
  s->name = std::move(name);
  s->interned = false;
  s->plist = nil_;
  return s;
}

// ---- constructors ----------------------------------------------------------------

Value Interp::list(std::initializer_list<Value> xs) {
  Value r = nil_;
  for (auto it = xs.end(); it != xs.begin();) r = cons(*--it, r);
  return r;
}

Value Interp::list_from(const std::vector<Value>& xs, Value tail) {
  Value r = tail;
  for (size_t i = xs.size(); i-- > 0;) r = cons(xs[i], r);
  return r;
}

Value Interp::make_string(std::u32string s) {
  String* o = alloc<String>();
  note_alloc(s.size() * 4);
  o->chars = std::move(s);
  return Value::object(Kind::String, o);
}

Value Interp::make_string_utf8(std::string_view s) { return make_string(utf8_to_u32(s)); }

Value Interp::make_vector(std::vector<Value> items) {
  Vector* v = alloc<Vector>();
  note_alloc(items.size() * sizeof(Value));
  v->items = std::move(items);
  return Value::object(Kind::Vector, v);
}

Value Interp::make_function(BuiltinFn fn, int min_args, int max_args, Value name) {
  Function* f = alloc<Function>();
  f->builtin = fn;
  f->min_args = min_args;
  f->max_args = max_args;
  f->name = name;
  return Value::object(Kind::Function, f);
}

void Interp::defbuiltin(const char* name, int min_args, int max_args, BuiltinFn fn,
                        const char* doc) {
  Symbol* s = intern(name);
  s->cell.function = make_function(fn, min_args, max_args, symval(s));
  s->cell.origin = kBuiltin;
  s->cell.macro = false;
  s->doc = doc;
}

void Interp::defconstant(const char* name, Value v) {
  Symbol* s = intern(name);
  s->cell.value = v;
  s->cell.has_value = true;
  s->cell.constant = true;
  s->cell.value_origin = kBuiltin;
}

uint32_t find_atom_span(Value list, Value atom, int depth);

Span Interp::span_of_atom(Value atom) {
  if (atom_span && atom_form == atom && spans_[atom_span].file > last_prelude_file)
    return spans_[atom_span];
  if (cur_cons)
    if (uint32_t s = find_atom_span(Value::object(Kind::Cons, cur_cons), atom, 0))
      if (spans_[s].file > last_prelude_file) return spans_[s];
  return current_span();
}

// ---- errors --------------------------------------------------------------------

Span Interp::current_span() const {
  const Span& s = spans_[cur_span];
  if (s.file != 0 && s.file <= last_prelude_file && user_span) return spans_[user_span];
  return s;
}

void Interp::fail_at(Span span, const char* code, std::string message, std::string fix) {
  LispError e;
  e.diag.code = code;
  e.diag.severity = Severity::Error;
  e.diag.span = span;
  e.diag.message = std::move(message);
  e.diag.fix = std::move(fix);
  throw e;
}

void Interp::fail(const char* code, std::string message, std::string fix) {
  fail_at(current_span(), code, std::move(message), std::move(fix));
}

void Interp::type_error(Value v, std::string_view expected, std::string_view where) {
  std::string shown = show(v);
  if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
  std::string msg = std::string(where) + ": " + shown + " is not " + std::string(expected);
  LispError e;
  e.diag.code = "E-TYPE";
  e.diag.span = current_span();
  e.diag.message = msg;
  Condition* c = alloc<Condition>();
  c->type = sym("TYPE-ERROR");
  c->code = "E-TYPE";
  c->message = msg;
  c->format_control = nil_;
  c->format_args = nil_;
  c->span = e.diag.span;
  e.condition = Value::object(Kind::Condition, c);
  throw e;
}

void Interp::program_error(std::string message) {
  LispError e;
  e.diag.code = "E-TYPE";
  e.diag.span = current_span();
  e.diag.message = message;
  Condition* c = alloc<Condition>();
  c->type = sym("PROGRAM-ERROR");
  c->code = "E-TYPE";
  c->message = std::move(message);
  c->format_control = nil_;
  c->format_args = nil_;
  c->span = e.diag.span;
  e.condition = Value::object(Kind::Condition, c);
  throw e;
}

void Interp::warn(const char* code, std::string message, std::string fix) {
  Diagnostic d;
  d.code = code;
  d.severity = Severity::Warning;
  d.span = current_span();
  d.message = std::move(message);
  d.fix = std::move(fix);
  sink.report(std::move(d));
}

// The CL condition type a diagnostic code signals as, for handler-case.
static const char* condition_type_for(const std::string& code) {
  if (code == "E-TYPE") return "TYPE-ERROR";
  if (code == "E-DIV-ZERO") return "DIVISION-BY-ZERO";
  if (code == "E-OVERFLOW") return "ARITHMETIC-ERROR";
  if (code == "E-UNBOUND") return "UNBOUND-VARIABLE";
  if (code == "E-ARITY") return "PROGRAM-ERROR";
  if (code == "E-USER") return "SIMPLE-ERROR";
  if (code == "E-CONTROL") return "CONTROL-ERROR";
  return "ERROR";
}

Value Interp::make_condition(const LispError& e) {
  if (e.condition.p != nullptr && e.condition.kind == Kind::Condition) return e.condition;
  Condition* c = alloc<Condition>();
  c->type = sym(condition_type_for(e.diag.code));
  if (e.diag.code == "E-UNBOUND" && e.diag.message.rfind("undefined function", 0) == 0)
    c->type = sym("UNDEFINED-FUNCTION");
  c->code = e.diag.code;
  c->message = e.diag.message;
  c->format_control = nil_;
  c->format_args = nil_;
  c->span = e.diag.span;
  return Value::object(Kind::Condition, c);
}

bool Interp::is_poisoned(Symbol* s) const {
  return std::find(poisoned.begin(), poisoned.end(), s) != poisoned.end();
}

// ---- multiple values ---------------------------------------------------------------

Value Interp::values(const std::vector<Value>& vs) {
  if (vs.size() == 1) {
    nvals = 1;
    return vs[0];
  }
  nvals = int(vs.size());
  mvals = vs;
  return vs.empty() ? nil_ : vs[0];
}

Value Interp::values2(Value a, Value b) {
  nvals = 2;
  mvals.assign({a, b});
  return a;
}

std::vector<Value> Interp::last_values(Value primary) const {
  if (nvals == 1) return {primary};
  return std::vector<Value>(mvals.begin(), mvals.begin() + nvals);
}

// ---- cells and lookup ----------------------------------------------------------------

Module* Interp::find_module_by_prefix(std::string_view prefix) {
  auto it = current_module->prefixes.find(std::string(prefix));
  return it == current_module->prefixes.end() ? nullptr : it->second;
}

static Cell* module_cell(Module* m, Symbol* s) {
  auto it = m->cells.find(s);
  return it == m->cells.end() ? nullptr : &it->second;
}

// A qualified symbol (nn:linear) names an export of the module required with
// that prefix; anything else is an error naming what is there.
static Cell* qualified_cell(Interp& in, Symbol* s) {
  Module* m = in.find_module_by_prefix(s->qualifier);
  std::string lname = s->qualifier + ":" + s->name;
  for (char& c : lname) c = char(std::tolower((unsigned char)c));
  if (!m)
    in.fail("E-UNBOUND", "'" + lname + "': no module is required with the prefix '" +
                             std::string(lname.substr(0, s->qualifier.size())) + "'",
            "add (require \"...\" :as " +
                std::string(lname.substr(0, s->qualifier.size())) + ") before this form");
  if (!m->exports.count(s->name))
    in.fail("E-UNBOUND", "'" + lname + "': module '" + m->name + "' does not export '" +
                             lname.substr(s->qualifier.size() + 1) + "'");
  Cell* c = module_cell(m, s->qualifier.empty() ? s : in.intern(s->name));
  if (!c) c = &in.intern(s->name)->cell;  // exported but defined globally
  return c;
}

Cell* Interp::fcell(Symbol* s) {
  if (!s->qualifier.empty()) return qualified_cell(*this, s);
  Module* m = current_module;
  if (!m->cells.empty()) {
    if (Cell* c = module_cell(m, s); c && (c->has_function() || c->has_value)) return c;
  }
  if (!m->imported.empty()) {
    auto it = m->imported.find(s);
    if (it != m->imported.end())
      if (Cell* c = module_cell(it->second, s)) return c;
  }
  return &s->cell;
}

Cell* Interp::vcell(Symbol* s) { return fcell(s); }

Cell* Interp::define_cell(Symbol* s) {
  if (!s->qualifier.empty())
    fail("E-UNSUPPORTED", "cannot define '" + show(symval(s)) + "': a module's exports are defined in the module");
  if (current_module == modules[0].get()) return &s->cell;
  return &current_module->cells[s];
}

Value Interp::symbol_value(Symbol* s) {
  Cell* c = vcell(s);
  if (!c->has_value) {
    std::string name = show(symval(s));
    fail("E-UNBOUND", "the variable '" + name + "' is unbound");
  }
  return c->value;
}

void Interp::set_symbol_value(Symbol* s, Value v) {
  Cell* c = vcell(s);
  if (c->constant) fail("E-TYPE", "cannot assign to the constant '" + show(symval(s)) + "'");
  c->value = v;
  c->has_value = true;
}

Value Interp::setf_function(Symbol* s) {
  Cell* c = fcell(s);
  return c->setf_function.p ? c->setf_function : nil_;
}

Value Interp::lookup_function(Symbol* s, Env* env, bool* is_macro) {
  for (Env* e = env; e; e = e->parent)
    for (auto it = e->b.rbegin(); it != e->b.rend(); ++it)
      if (it->sym == s && (it->ns == NS::Fun || it->ns == NS::Macro)) {
        *is_macro = it->ns == NS::Macro;
        return it->val;
      }
  Cell* c = fcell(s);
  *is_macro = c->macro;
  return c->has_function() ? c->function : Value();
}

// ---- "did you mean" ------------------------------------------------------------

namespace {

const char* const kClSymbols[] = {
#include "lisp/cl_symbols.inc"
};

bool is_cl_symbol(const std::string& name) {
  return std::binary_search(std::begin(kClSymbols), std::end(kClSymbols), name,
                            [](const auto& a, const auto& b) { return std::string_view(a) < std::string_view(b); });
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
      prev = cur;
    }
  }
  return row[b.size()];
}

}  // namespace

// The nearest names in scope to `s` (functions or variables), for the fix line.
std::string Interp::suggest_names(Symbol* s, Env* env, bool function) {
  std::vector<std::pair<size_t, std::string>> best;
  size_t limit = std::max<size_t>(1, s->name.size() / 3);
  auto consider = [&](const std::string& name) {
    if (name == s->name || name.empty() || name[0] == '%') return;
    size_t d = edit_distance(name, s->name);
    if (d <= limit) best.emplace_back(d, name);
  };
  for (Env* e = env; e; e = e->parent)
    for (auto& b : e->b)
      if (b.sym && ((function && b.ns == NS::Fun) || (!function && (b.ns == NS::Var || b.ns == NS::SpecialVar))))
        consider(b.sym->name);
  for (auto& [name, sym] : symbols_)
    if (function ? (sym->cell.has_function() || sym->special_form >= 0) : sym->cell.has_value) consider(name);
  for (auto& [sym, cell] : current_module->cells)
    if (function ? cell.has_function() : cell.has_value) consider(sym->name);
  std::sort(best.begin(), best.end());
  best.erase(std::unique(best.begin(), best.end()), best.end());
  std::string out;
  for (size_t i = 0; i < best.size() && i < 3; ++i) {
    std::string lower = best[i].second;
    for (char& c : lower) c = char(std::tolower((unsigned char)c));
    out += (out.empty() ? "did you mean " : " or ") + std::string("'") + lower + "'";
  }
  return out.empty() ? out : out + "?";
}

bool Interp::is_common_lisp_name(Symbol* s) const { return s->qualifier.empty() && is_cl_symbol(s->name); }

void Interp::unbind_specials(size_t to) {
  while (special_stack.size() > to) {
    SpecialBinding& b = special_stack.back();
    b.cell->value = b.old;
    b.cell->has_value = b.had_value;
    special_stack.pop_back();
  }
}

// ---- eval ----------------------------------------------------------------------------

namespace {
struct SpanGuard {
  Interp& in;
  uint32_t saved_cur, saved_atom, saved_user;
  Cons* saved_cons;
  SpanGuard(Interp& i, uint32_t s, Cons* c = nullptr)
      : in(i),
        saved_cur(i.cur_span),
        saved_atom(i.atom_span),
        saved_user(i.user_span),
        saved_cons(i.cur_cons) {
    if (s) {
      in.cur_span = s;
      in.cur_cons = c;
      if (in.span_of(s).file > in.last_prelude_file) in.user_span = s;
    }
    in.atom_span = 0;
  }
  ~SpanGuard() {
    in.cur_span = saved_cur;
    in.atom_span = saved_atom;
    in.user_span = saved_user;
    in.cur_cons = saved_cons;
  }
};


}  // namespace

// Where `atom` appears in `list` (depth-first, a few levels): its car span.
uint32_t find_atom_span(Value list, Value atom, int depth) {
  if (depth > 4) return 0;
  for (Value x = list; x.is_cons(); x = x.cons()->cdr) {
    Cons* c = x.cons();
    if (c->car == atom && c->car_span) return c->car_span;
    if (c->car.is_cons())
      if (uint32_t s = find_atom_span(c->car, atom, depth + 1)) return s;
  }
  return 0;
}

Value Interp::eval(Value form, Env* env) {
  count_step();
  if (form.kind == Kind::Symbol) {
    nvals = 1;
    Symbol* s = form.sym();
    if (s == NIL || s == T || s->keyword) return form;
    if (!(atom_form == form)) atom_span = 0;
    for (Env* e = env; e; e = e->parent)
      for (auto it = e->b.rbegin(); it != e->b.rend(); ++it) {
        if (it->sym != s) continue;
        if (it->ns == NS::Var) return it->val;
        if (it->ns == NS::SymbolMacro) return eval(it->val, env);
        if (it->ns == NS::SpecialVar) goto dynamic;
      }
  dynamic:
    Cell* c = vcell(s);
    if (c->has_value) return c->value;
    std::string name = show(form);
    LispError err;
    err.diag.code = "E-UNBOUND";
    err.diag.span = span_of_atom(form);
    err.diag.message = "the variable '" + name + "' is unbound";
    err.diag.fix = suggest_names(s, env, false);
    if (c->has_function())
      err.diag.fix = "'" + name + "' is a function; to use it as a value write #'" + name;
    if (is_poisoned(s)) err.diag.notes.push_back({Span{}, "(suppressed: its definition failed)"});
    throw err;
  }
  if (form.kind == Kind::Cons) return eval_cons(form, env);
  nvals = 1;
  return form;
}

Value Interp::eval_body(Value body, Env* env) {
  Value r = nil_;
  nvals = 1;
  for (; body.is_cons(); body = body.cons()->cdr) {
    note_atom(body.cons()->car, body.cons()->car_span);
    r = eval(body.cons()->car, env);
  }
  return r;
}

Value Interp::eval_cons(Value form, Env* env) {
  Cons* c = form.cons();
  SpanGuard guard(*this, c->span, c);
  check_native_stack();
  Value head = c->car;
  if (head.kind == Kind::Symbol) {
    Symbol* s = head.sym();
    if (s->special_form >= 0) {
      extern Value dispatch_special_form(Interp & in, int index, Value form, Env* env);
      return dispatch_special_form(*this, s->special_form, form, env);
    }
    bool is_macro = false;
    Value fn = lookup_function(s, env, &is_macro);
    if (is_macro) {
      bool expanded = false;
      Value expansion = macroexpand_1(form, env, &expanded);
      return eval(expansion, env);
    }
    if (fn.p == nullptr) {
      std::string name = show(head);
      LispError err;
      err.diag.code = "E-UNBOUND";
      err.diag.span = c->car_span ? span_of(c->car_span) : current_span();
      err.diag.message = "undefined function '" + name + "'";
      if (is_common_lisp_name(s)) {
        err.diag.code = "E-UNSUPPORTED";
        err.diag.message = "'" + name + "' is a Common Lisp operator outside the implemented subset";
        err.diag.fix = "docs/lisp.md lists what is implemented";
        throw err;
      }
      err.diag.fix = suggest_names(s, env, true);
      if (fcell(s)->has_value) err.diag.fix = "'" + name + "' is a variable, not a function";
      if (is_poisoned(s))
        err.diag.notes.push_back({Span{}, "(suppressed: its definition failed)"});
      throw err;
    }
    Value argbuf[8];
    std::vector<Value> big;
    Value* args = argbuf;
    int n = 0;
    for (Value a = c->cdr; a.is_cons(); a = a.cons()->cdr) {
      if (n == 8) {
        big.assign(argbuf, argbuf + 8);
      }
      note_atom(a.cons()->car, a.cons()->car_span);
      Value v = eval(a.cons()->car, env);
      atom_span = 0;
      if (n < 8) argbuf[n] = v;
      else big.push_back(v);
      ++n;
    }
    if (n > 8) args = big.data();
    return apply(fn, args, n);
  }
  if (head.is_cons() && head.cons()->car.is_symbol() && head.cons()->car.sym() == S.lambda) {
    Value fn = eval(head, env);
    std::vector<Value> args;
    for (Value a = c->cdr; a.is_cons(); a = a.cons()->cdr) args.push_back(eval(a.cons()->car, env));
    return apply(fn, args.data(), int(args.size()));
  }
  fail("E-TYPE", "'" + show(head) + "' is not a function name",
       "the first element of a call must name a function, or be a (lambda ...) form");
}

// ---- apply ---------------------------------------------------------------------------

static std::string function_name(Interp& in, Function* f) {
  if (f->name.p == nullptr || f->name.is_nil()) return "an anonymous function";
  return "'" + in.show(f->name) + "'";
}

Value Interp::resolve_function(Value d) {
  if (d.is_function()) return d;
  if (d.is_symbol() && !d.is_nil()) {
    Cell* c = fcell(d.sym());
    if (c->has_function() && !c->macro) return c->function;
    if (c->macro)
      fail("E-TYPE", "'" + show(d) + "' is a macro, not a function",
           "macros cannot be passed as functions; wrap the call in a lambda");
    if (d.sym()->special_form >= 0)
      fail("E-TYPE", "'" + show(d) + "' is a special form, not a function");
    fail("E-UNBOUND", "undefined function '" + show(d) + "'");
  }
  type_error(d, "a function designator", "funcall");
}

Value Interp::funcall_designator(Value f, Value* args, int nargs) {
  return apply(resolve_function(f), args, nargs);
}

Value Interp::call(Value fn, std::initializer_list<Value> args) {
  std::vector<Value> a(args);
  return apply(fn, a.data(), int(a.size()));
}

Value Interp::apply(Value fnv, Value* args, int nargs) {
  if (!fnv.is_function()) fnv = resolve_function(fnv);
  Function* f = fnv.fn();
  if (f->builtin) {
    if (nargs < f->min_args || (f->max_args >= 0 && nargs > f->max_args)) {
      std::string want = f->max_args < 0 ? "at least " + std::to_string(f->min_args)
                         : f->min_args == f->max_args
                             ? std::to_string(f->min_args)
                             : std::to_string(f->min_args) + " to " + std::to_string(f->max_args);
      fail("E-ARITY", function_name(*this, f) + " takes " + want + " argument" +
                          (want == "1" ? "" : "s") + ", given " + std::to_string(nargs));
    }
    nvals = 1;
    return f->builtin(*this, args, nargs);
  }
  return apply_closure(f, args, nargs);
}

// ---- lambda lists ----------------------------------------------------------------------

static bool is_lambda_keyword(Interp& in, Value v) {
  if (!v.is_symbol()) return false;
  Symbol* s = v.sym();
  return s == in.S.optional || s == in.S.rest || s == in.S.key || s == in.S.aux ||
         s == in.S.body || s == in.S.whole || s == in.S.environment ||
         s == in.S.allow_other_keys;
}

static Symbol* var_symbol(Interp& in, Value v, const char* what) {
  if (!v.is_symbol() || v.is_nil() || v.sym() == in.T || v.sym()->keyword)
    in.fail("E-TYPE", std::string("bad ") + what + " in a lambda list: " + in.show(v),
            "lambda-list variables must be symbols (not nil, t or keywords)");
  return v.sym();
}

LambdaInfo* Interp::lambda_info(Value ll, Value body, bool macro, Value block_name) {
  // Cache per (lambda list cons, body cons): a lambda form evaluated many times
  // is parsed once.
  uintptr_t key = reinterpret_cast<uintptr_t>(ll.p) * 31 + reinterpret_cast<uintptr_t>(body.p) +
                  (macro ? 1 : 0) + reinterpret_cast<uintptr_t>(block_name.p) * 7;
  if (ll.is_cons() || body.is_cons()) {
    auto it = lambda_cache_.find(key);
    if (it != lambda_cache_.end()) return it->second;
  }
  auto info = std::make_unique<LambdaInfo>();
  LambdaInfo& li = *info;
  li.macro = macro;
  li.rest = Value();
  li.doc = nil_;
  li.declarations = nil_;
  li.block_name = block_name;
  enum { Req, Opt, Rest, Key, Aux } state = Req;
  Value p = ll;
  if (macro && p.is_cons() && p.cons()->car.is_symbol() && p.cons()->car.sym() == S.whole) {
    p = p.cons()->cdr;
    if (!p.is_cons()) fail("E-TYPE", "&whole needs a variable");
    li.whole = var_symbol(*this, p.cons()->car, "&whole variable");
    p = p.cons()->cdr;
  }
  bool after_rest = false;
  for (; p.is_cons(); p = p.cons()->cdr) {
    Value x = p.cons()->car;
    if (is_lambda_keyword(*this, x)) {
      Symbol* k = x.sym();
      if (k == S.optional) {
        if (state >= Opt) fail("E-TYPE", "misplaced &optional in lambda list " + show(ll));
        state = Opt;
      } else if (k == S.rest || k == S.body) {
        if (state >= Rest || (k == S.body && !macro))
          fail("E-TYPE", "misplaced " + show(x) + " in lambda list " + show(ll));
        p = p.cons()->cdr;
        if (!p.is_cons()) fail("E-TYPE", show(x) + " needs a variable in lambda list " + show(ll));
        li.rest = p.cons()->car;
        if (!macro || li.rest.is_symbol()) var_symbol(*this, li.rest, "&rest variable");
        li.has_rest = true;
        state = Rest;
        after_rest = true;
        continue;
      } else if (k == S.key) {
        if (state >= Key) fail("E-TYPE", "misplaced &key in lambda list " + show(ll));
        state = Key;
        li.has_key = true;
      } else if (k == S.allow_other_keys) {
        if (state != Key) fail("E-TYPE", "&allow-other-keys outside &key in " + show(ll));
        li.allow_other_keys = true;
      } else if (k == S.aux) {
        state = Aux;
      } else if (k == S.environment) {
        if (!macro) fail("E-TYPE", "&environment is only allowed in macro lambda lists");
        p = p.cons()->cdr;
        if (!p.is_cons()) fail("E-TYPE", "&environment needs a variable");
        li.environment = var_symbol(*this, p.cons()->car, "&environment variable");
      } else if (k == S.whole) {
        fail("E-TYPE", "&whole must come first in a macro lambda list");
      }
      continue;
    }
    if (after_rest && state == Rest) fail("E-TYPE", "a variable after &rest's in " + show(ll));
    switch (state) {
      case Req:
        if (macro && x.is_cons()) li.required.push_back(x);
        else li.required.push_back(symval(var_symbol(*this, x, "required parameter")));
        break;
      case Opt:
      case Aux: {
        LambdaInfo::Opt o;
        o.init = nil_;
        if (x.is_cons()) {
          o.var = x.cons()->car;
          if (!(macro && o.var.is_cons())) var_symbol(*this, o.var, "parameter");
          Value r = x.cons()->cdr;
          if (r.is_cons()) {
            o.init = r.cons()->car;
            o.has_init = true;
            if (r.cons()->cdr.is_cons())
              o.supplied = var_symbol(*this, r.cons()->cdr.cons()->car, "supplied-p variable");
          }
        } else {
          o.var = symval(var_symbol(*this, x, "parameter"));
        }
        (state == Opt ? li.optional : li.aux).push_back(o);
        break;
      }
      case Key: {
        LambdaInfo::Key k;
        k.init = nil_;
        Value spec = x;
        Value init_part = nil_;
        if (x.is_cons()) {
          spec = x.cons()->car;
          init_part = x.cons()->cdr;
        }
        if (spec.is_cons()) {  // ((:keyword var) init)
          Value kw = spec.cons()->car;
          if (!kw.is_symbol()) fail("E-TYPE", "bad &key name " + show(spec));
          k.keyword = kw.sym();
          k.var = spec.cons()->cdr.is_cons() ? spec.cons()->cdr.cons()->car : nil_;
          if (!(macro && k.var.is_cons())) var_symbol(*this, k.var, "&key variable");
        } else {
          Symbol* v = var_symbol(*this, spec, "&key variable");
          k.var = symval(v);
          k.keyword = keyword(v->name);
        }
        if (init_part.is_cons()) {
          k.init = init_part.cons()->car;
          k.has_init = true;
          if (init_part.cons()->cdr.is_cons())
            k.supplied = var_symbol(*this, init_part.cons()->cdr.cons()->car, "supplied-p variable");
        }
        li.keys.push_back(k);
        break;
      }
      case Rest:
        break;
    }
  }
  if (!p.is_nil()) {  // dotted: (a b . rest)
    if (!macro) fail("E-TYPE", "a dotted lambda list is only allowed in macros: " + show(ll));
    li.rest = p;
    var_symbol(*this, p, "rest variable");
    li.has_rest = true;
  }
  li.min_args = int(li.required.size());
  li.max_args = (li.has_rest || li.has_key) ? -1 : int(li.required.size() + li.optional.size());

  // Body: docstring (only if more forms follow) and declarations.
  Value b = body;
  std::vector<Value> decls;
  for (;;) {
    if (!b.is_cons()) break;
    Value f = b.cons()->car;
    if (f.is_string() && b.cons()->cdr.is_cons() && li.doc.is_nil()) {
      li.doc = f;
      b = b.cons()->cdr;
      continue;
    }
    if (f.is_cons() && f.cons()->car.is_symbol() && f.cons()->car.sym() == S.declare) {
      for (Value d = f.cons()->cdr; d.is_cons(); d = d.cons()->cdr) {
        Value spec = d.cons()->car;
        decls.push_back(spec);
        if (spec.is_cons() && spec.cons()->car.is_symbol() && spec.cons()->car.sym() == S.special)
          for (Value v = spec.cons()->cdr; v.is_cons(); v = v.cons()->cdr)
            if (v.cons()->car.is_symbol()) li.specials.push_back(v.cons()->car.sym());
        collect_type_declarations(*this, spec, li.type_decls);
      }
      b = b.cons()->cdr;
      continue;
    }
    break;
  }
  li.body = b;
  li.declarations = list_from(decls);
  LambdaInfo* raw = info.get();
  lambda_infos_.push_back(std::move(info));
  if (ll.is_cons() || body.is_cons()) lambda_cache_[key] = raw;
  return raw;
}

void bind_variable(Interp& in, Env* env, Symbol* s, Value v, const std::vector<Symbol*>& specials) {
  Cell* c = in.vcell(s);
  if (s == in.NIL || s == in.T || s->keyword || c->constant)
    in.fail("E-TYPE", "cannot bind the constant '" + in.show(Interp::symval(s)) + "'");
  if (c->special || std::find(specials.begin(), specials.end(), s) != specials.end()) {
    in.special_stack.push_back({c, c->value, c->has_value});
    c->value = v;
    c->has_value = true;
    env->b.push_back({s, NS::SpecialVar, v});
  } else {
    env->b.push_back({s, NS::Var, v});
  }
}

namespace {

// Binds variables of a lambda list into `env`, dynamically where special.
struct Binder {
  Interp& in;
  Env* env;
  const std::vector<Symbol*>& specials;

  void bind(Symbol* s, Value v) { bind_variable(in, env, s, v, specials); }

  // Macro lambda lists destructure: a pattern in place of a variable.
  void bind_pattern(Value pattern, Value v) {
    if (pattern.is_symbol()) {
      bind(pattern.sym(), v);
      return;
    }
    LambdaInfo* li = in.lambda_info(pattern, in.nil(), true, in.nil());
    std::vector<Value> items;
    Value x = v;
    for (; x.is_cons(); x = x.cons()->cdr) items.push_back(x.cons()->car);
    if (!x.is_nil() && !li->has_rest)
      in.fail("E-ARITY", "cannot destructure " + in.show(v) + " against " + in.show(pattern));
    bind_list(*li, items.data(), int(items.size()), v, x);
  }

  // `whole` is the list the args came from (for &rest sharing and &whole),
  // `dotted_tail` a non-nil tail of a dotted argument list (macros only).
  void bind_list(const LambdaInfo& li, Value* args, int n, Value whole, Value dotted_tail) {
    if (li.whole) bind(li.whole, whole);
    if (li.environment) bind(li.environment, in.macro_env_arg.p ? in.macro_env_arg : in.nil());
    int nreq = int(li.required.size());
    if (n < nreq) too_few(li, n, whole);
    if (li.max_args >= 0 && n > li.max_args) too_many(li, n, whole);
    int i = 0;
    for (; i < nreq; ++i) {
      if (li.macro) bind_pattern(li.required[size_t(i)], args[i]);
      else bind(li.required[size_t(i)].sym(), args[i]);
    }
    for (const LambdaInfo::Opt& o : li.optional) {
      Value v;
      bool supplied = i < n;
      if (supplied) v = args[i++];
      else v = o.has_init ? in.eval(o.init, env) : in.nil();
      if (li.macro) bind_pattern(o.var, v);
      else bind(o.var.sym(), v);
      if (o.supplied) bind(o.supplied, in.boolean(supplied));
    }
    if (li.has_rest) {
      Value rest = dotted_tail;
      for (int k = n; k-- > i;) rest = in.cons(args[k], rest);
      if (li.macro) bind_pattern(li.rest, rest);
      else bind(li.rest.sym(), rest);
    }
    if (li.has_key) {
      int nk = n - i;
      if (nk % 2 != 0)
        in.fail("E-ARITY", "odd number of keyword arguments in a call to " + callee(whole),
                "keyword arguments come in pairs: :name value");
      bool allow = li.allow_other_keys;
      for (int k = i; k < n; k += 2)
        if (args[k].is_symbol() && args[k].sym() == in.S.kw_allow_other_keys) {
          allow = allow || args[k + 1].truthy();  // the leftmost occurrence decides
          break;
        }
      if (!allow) {
        for (int k = i; k < n; k += 2) {
          bool known = args[k].is_symbol() && args[k].sym() == in.S.kw_allow_other_keys;
          for (const LambdaInfo::Key& key : li.keys)
            if (args[k].is_symbol() && args[k].sym() == key.keyword) known = true;
          if (!known) {
            std::string names;
            for (const LambdaInfo::Key& key : li.keys)
              names += (names.empty() ? ":" : ", :") + lower(key.keyword->name);
            in.fail("E-ARITY", "unknown keyword argument " + in.show(args[k]) + " in a call to " +
                                   callee(whole),
                    names.empty() ? "it takes no keyword arguments" : "it takes " + names);
          }
        }
      }
      for (const LambdaInfo::Key& key : li.keys) {
        Value v;
        bool supplied = false;
        for (int k = i; k < n; k += 2)
          if (args[k].is_symbol() && args[k].sym() == key.keyword) {
            v = args[k + 1];
            supplied = true;
            break;
          }
        if (!supplied) v = key.has_init ? in.eval(key.init, env) : in.nil();
        if (li.macro) bind_pattern(key.var, v);
        else bind(key.var.sym(), v);
        if (key.supplied) bind(key.supplied, in.boolean(supplied));
      }
    } else if (!li.has_rest && i < n) {
      too_many(li, n, whole);
    }
    for (const LambdaInfo::Opt& a : li.aux) {
      Value v = a.has_init ? in.eval(a.init, env) : in.nil();
      if (li.macro) bind_pattern(a.var, v);
      else bind(a.var.sym(), v);
    }
  }

  static std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower((unsigned char)c));
    return s;
  }
  std::string callee(Value whole) {
    if (whole.p && whole.is_symbol() && !whole.is_nil()) return "'" + in.show(whole) + "'";
    return "this function";
  }
  [[noreturn]] void too_few(const LambdaInfo& li, int n, Value whole) {
    in.fail("E-ARITY", callee(whole) + " needs " + want(li) + " argument" +
                           (want(li) == "1" ? "" : "s") + ", given " + std::to_string(n));
  }
  [[noreturn]] void too_many(const LambdaInfo& li, int n, Value whole) {
    in.fail("E-ARITY", callee(whole) + " takes " + want(li) + " argument" +
                           (want(li) == "1" ? "" : "s") + ", given " + std::to_string(n));
  }
  static std::string want(const LambdaInfo& li) {
    if (li.max_args < 0) return "at least " + std::to_string(li.min_args);
    if (li.max_args == li.min_args) return std::to_string(li.min_args);
    return std::to_string(li.min_args) + " to " + std::to_string(li.max_args);
  }
};

struct DepthGuard {
  Interp& in;
  Module* saved_module;
  explicit DepthGuard(Interp& i, Module* m) : in(i), saved_module(i.current_module) {
    ++in.depth;
    if (m) in.current_module = m;
  }
  ~DepthGuard() {
    --in.depth;
    in.current_module = saved_module;
  }
};

}  // namespace

void destructure_into(Interp& in, Env* env, LambdaInfo* li, Value whole, Value list);

// Names of the functions being applied, innermost last, for E-STACK's notes.
static thread_local std::vector<Function*> g_call_stack;

Value Interp::apply_closure(Function* f, Value* args, int nargs) {
  if (depth >= limits.depth) {
    LispError e;
    e.diag.code = "E-STACK";
    e.diag.span = current_span();
    e.diag.message = "call depth limit reached (" + std::to_string(limits.depth) +
                     " nested calls): unbounded recursion?";
    e.diag.fix = "raise it with --eval-depth N if the recursion is meant to be this deep";
    size_t shown = 0;
    for (auto it = g_call_stack.rbegin(); it != g_call_stack.rend() && shown < 5; ++it, ++shown)
      e.diag.notes.push_back({Span{}, "in " + function_name(*this, *it)});
    e.catchable = false;
    throw e;
  }
  DepthGuard dg(*this, f->module);
  g_call_stack.push_back(f);
  struct Pop {
    ~Pop() { g_call_stack.pop_back(); }
  } pop;
  LambdaInfo* li = f->info;
  Env* env = make_env(f->env);
  env->b.reserve(li->required.size() + li->optional.size() + li->keys.size() + 1);
  SpecialScope scope(*this);
  if (li->macro) {
    // An expander is called with (form env): the lambda list destructures
    // the form's arguments, &whole gets the whole form.
    Value form = nargs > 0 ? args[0] : nil_;
    macro_env_arg = nargs > 1 ? args[1] : nil_;
    destructure_into(*this, env, li, form, form.is_cons() ? form.cons()->cdr : nil_);
    macro_env_arg = Value();
  } else {
    Binder binder{*this, env, li->specials};
    binder.bind_list(*li, args, nargs, f->name.p ? f->name : nil_, nil_);
  }
  if (!li->type_decls.empty()) check_declared_types(*this, env, li->type_decls);
  if (li->block_name.p && !li->block_name.is_nil()) {
    ExitPoint* ep = alloc<ExitPoint>();
    env->b.push_back({li->block_name.sym(), NS::Block, Value::object(Kind::Foreign, ep)});
    try {
      Value r = eval_body(li->body, env);
      ep->alive = false;
      return r;
    } catch (BlockExit& x) {
      ep->alive = false;
      if (x.target != ep) throw;
      return x.value;
    }
  }
  return eval_body(li->body, env);
}

// Bind a macro-style lambda list (destructuring-bind, macro expanders).
void destructure_into(Interp& in, Env* env, LambdaInfo* li, Value whole, Value list) {
  std::vector<Value> items;
  Value x = list;
  for (; x.is_cons(); x = x.cons()->cdr) items.push_back(x.cons()->car);
  if (!x.is_nil() && !li->has_rest)
    in.fail("E-ARITY", "cannot destructure the dotted list " + in.show(list));
  Binder b{in, env, li->specials};
  b.bind_list(*li, items.data(), int(items.size()), whole, x);
}

// ---- macros ---------------------------------------------------------------------------

Value Interp::macro_function(Symbol* s, Env* env) {
  bool is_macro = false;
  Value fn = lookup_function(s, env, &is_macro);
  return is_macro ? fn : nil_;
}

Value Interp::macroexpand_1(Value form, Env* env, bool* expanded) {
  *expanded = false;
  if (form.is_symbol()) {
    for (Env* e = env; e; e = e->parent)
      for (auto it = e->b.rbegin(); it != e->b.rend(); ++it)
        if (it->sym == form.sym()) {
          if (it->ns == NS::SymbolMacro) {
            *expanded = true;
            return it->val;
          }
          if (it->ns == NS::Var || it->ns == NS::SpecialVar) return form;
        }
    return form;
  }
  if (!form.is_cons() || !form.cons()->car.is_symbol()) return form;
  Symbol* s = form.cons()->car.sym();
  if (s->special_form >= 0) return form;
  bool is_macro = false;
  bool lexical = false;
  for (Env* e = env; e && !lexical; e = e->parent)
    for (auto& b : e->b)
      if (b.sym == s && (b.ns == NS::Fun || b.ns == NS::Macro)) lexical = true;
  Value fn = lookup_function(s, env, &is_macro);
  if (!is_macro) return form;
  Cons* key = form.cons();
  if (!lexical) {
    auto it = expansion_cache.find(key);
    if (it != expansion_cache.end()) {
      *expanded = true;
      return it->second;
    }
  }
  SpanGuard guard(*this, key->span);
  Value expansion;
  try {
    // Expanders take (form env): the lexical environment, boxed, so that
    // &environment reaches macroexpand and get-setf-expansion.
    Value envv = nil_;
    if (env) {
      EnvBox* box = alloc<EnvBox>();
      box->env = env;
      envv = Value::object(Kind::Foreign, box);
    }
    expansion = call(fn, {form, envv});
  } catch (LispError& e) {
    if (!e.catchable) throw;
    if (e.diag.code == "E-MACRO") throw;
    LispError outer;
    outer.diag.code = "E-MACRO";
    outer.diag.span = key->span ? span_of(key->span) : current_span();
    outer.diag.message = "error while expanding the macro '" + show(symval(s)) + "': " +
                         e.diag.code + " " + e.diag.message;
    outer.diag.notes.push_back({e.diag.span, e.diag.code + " " + e.diag.message});
    for (auto& n : e.diag.notes) outer.diag.notes.push_back(n);
    outer.condition = e.condition;
    throw outer;
  }
  // Expansions made by a macro inherit the call's position where they have none.
  if (expansion.is_cons() && expansion.cons()->span == 0) expansion.cons()->span = key->span;
  nvals = 1;
  *expanded = true;
  if (!lexical) expansion_cache[key] = expansion;
  return expansion;
}

Value Interp::macroexpand(Value form, Env* env, bool* expanded) {
  *expanded = false;
  for (int guard = 0; guard < 100000; ++guard) {
    count_step();
    bool e = false;
    form = macroexpand_1(form, env, &e);
    if (!e) return form;
    *expanded = true;
  }
  fail("E-MACRO", "macro expansion does not terminate");
}

// ---- top level ------------------------------------------------------------------------

bool Interp::eval_toplevel(Value form, Value* result, const Span* where) {
  size_t mark = special_stack.size();
  // An atom at top level has no cons to carry its position: give it one.
  cur_span = where && where->valid() ? add_span(*where) : 0;
  user_span = cur_span;
  cur_cons = nullptr;
  atom_span = 0;
  try {
    steps = 0;
    depth = 0;
    struct Count {
      Interp& in;
      ~Count() { in.total_steps += in.steps; }
    } count{*this};
    Value r = eval(form, nullptr);
    if (result) *result = r;
    return true;
  } catch (LispError& e) {
    unbind_specials(mark);
    bool suppressed = false;
    for (auto& n : e.diag.notes)
      if (n.message == "(suppressed: its definition failed)") suppressed = true;
    // A failed definition poisons its name so its uses are not new errors.
    if (form.is_cons() && form.cons()->cdr.is_cons()) {
      Value head = form.cons()->car;
      Value name = form.cons()->cdr.cons()->car;
      if (head.is_symbol() && head.sym()->name.rfind("DEF", 0) == 0 && name.is_symbol())
        poisoned.push_back(name.sym());
    }
    if (!suppressed) sink.report(std::move(e.diag));
    return false;
  } catch (BlockExit&) {
  } catch (GoExit&) {
  } catch (ThrowExit&) {
  }
  // Only reachable through a non-local exit that left its extent.
  unbind_specials(mark);
  Diagnostic d;
  d.code = "E-CONTROL";
  d.span = current_span();
  d.message = "a non-local exit (return-from, go or throw) left its extent";
  sink.report(d);
  return false;
}

// ---- argument helpers ----------------------------------------------------------------

int64_t Interp::arg_int(Value v, std::string_view where) {
  if (!v.is_int()) type_error(v, "an integer", where);
  return v.i;
}

double Interp::arg_number(Value v, std::string_view where) {
  if (v.is_int()) return double(v.i);
  if (v.is_float()) return v.f;
  type_error(v, "a number", where);
}

Symbol* Interp::arg_symbol(Value v, std::string_view where) {
  if (!v.is_symbol()) type_error(v, "a symbol", where);
  return v.sym();
}

String* Interp::arg_string(Value v, std::string_view where) {
  if (!v.is_string()) type_error(v, "a string", where);
  return v.str();
}

std::u32string Interp::string_designator(Value v, std::string_view where) {
  if (v.is_string()) return v.str()->chars.substr(0, v.str()->size());
  if (v.is_symbol()) return utf8_to_u32(v.sym()->name);
  if (v.is_char()) return std::u32string(1, v.ch);
  type_error(v, "a string designator", where);
}

char32_t Interp::arg_char(Value v, std::string_view where) {
  if (!v.is_char()) type_error(v, "a character", where);
  return v.ch;
}

std::vector<Value> Interp::list_items(Value list, std::string_view where) {
  std::vector<Value> out;
  Value slow = list;
  Value x = list;
  while (x.is_cons()) {
    out.push_back(x.cons()->car);
    x = x.cons()->cdr;
    if ((out.size() & 1) == 0) {
      slow = slow.cons()->cdr;
      if (x.is_cons() && x.p == slow.p) type_error(list, "a proper list (it is circular)", where);
    }
  }
  if (!x.is_nil()) type_error(list, "a proper list", where);
  return out;
}

size_t Interp::list_length(Value list, std::string_view where) {
  size_t n = 0;
  Value slow = list;
  Value x = list;
  while (x.is_cons()) {
    ++n;
    x = x.cons()->cdr;
    if ((n & 1) == 0) {
      slow = slow.cons()->cdr;
      if (x.is_cons() && x.p == slow.p) type_error(list, "a proper list (it is circular)", where);
    }
  }
  if (!x.is_nil()) type_error(list, "a proper list", where);
  return n;
}

void Interp::parse_keys(Value* args, int n, int start, std::initializer_list<const char*> names,
                        Value* out, bool* present) {
  size_t count = names.size();
  bool seen_local[32] = {};
  if (!present) present = seen_local;
  for (size_t k = 0; k < count; ++k) {
    out[k] = nil_;
    present[k] = false;
  }
  if ((n - start) % 2 != 0)
    fail("E-ARITY", "odd number of keyword arguments to '" +
                        std::string(current_operator ? current_operator : "function") + "'");
  bool allow = false;
  for (int i = start; i < n; i += 2)
    if (args[i].is_symbol() && args[i].sym() == S.kw_allow_other_keys) {
      allow = args[i + 1].truthy();  // the leftmost occurrence decides
      break;
    }
  for (int i = start; i < n; i += 2) {
    Value k = args[i];
    bool found = false;
    size_t idx = 0;
    for (const char* name : names) {
      if (k.is_symbol() && k.sym()->keyword && k.sym()->name == name) {
        if (!present[idx]) {  // the leftmost occurrence wins, as in CL
          out[idx] = args[i + 1];
          present[idx] = true;
        }
        found = true;
        break;
      }
      ++idx;
    }
    if (!found && !allow && !(k.is_symbol() && k.sym() == S.kw_allow_other_keys)) {
      std::string known;
      for (const char* name : names) {
        std::string l(name);
        for (char& c : l) c = char(std::tolower((unsigned char)c));
        known += (known.empty() ? ":" : ", :") + l;
      }
      fail("E-ARITY", "unknown keyword argument " + show(k), "known keywords: " + known);
    }
  }
}

}  // namespace sexpgpu::lisp
