// The interpreter core: heap, symbols, eval/apply, lambda-list binding, macro
// expansion, cells and modules lookup, errors with positions, limits.
#include "lisp/interp.h"

#include <pthread.h>

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <iostream>

#include "lisp/modules.h"
#include "lisp/span_guard.h"

namespace sexpgpu::lisp {

// ---- strings ------------------------------------------------------------------

std::u32string utf8_to_u32(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    char32_t cp;
    int len;
    if (c < 0x80)
      cp = c, len = 1;
    else if ((c >> 5) == 6)
      cp = c & 0x1F, len = 2;
    else if ((c >> 4) == 14)
      cp = c & 0x0F, len = 3;
    else if ((c >> 3) == 30)
      cp = c & 0x07, len = 4;
    else
      cp = 0xFFFD, len = 1;
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
    if (cp < 0x80)
      out += char(cp);
    else if (cp < 0x800)
      out += char(0xC0 | (cp >> 6)), out += char(0x80 | (cp & 0x3F));
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
  S.go = intern("GO");
  S.if_ = intern("IF");

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
  auto prelude = std::make_unique<Module>();
  prelude->name = "prelude";
  prelude->loaded = true;
  prelude_module = prelude.get();
  modules.push_back(std::move(prelude));

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
    e.diag.message =
        "compile-time heap limit reached (" + std::to_string(limits.heap_bytes) + " bytes)";
    e.diag.fix = "raise it with --eval-heap BYTES if the file really needs more";
    e.catchable = false;
    throw e;
  }
}

void Interp::limit_reached_steps() {
  LispError e;
  e.diag.code = "E-EVAL-LIMIT";
  e.diag.span = current_span();
  e.diag.message = "evaluation step limit reached (" + std::to_string(limits.steps) +
                   " steps): an endless loop?";
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

int64_t Interp::next_gensym_number() {
  Cell* c = vcell(intern("*GENSYM-COUNTER*"));
  if (!c->has_value || !c->value.is_int() || c->value.i < 0)
    type_error(c->has_value ? c->value : nil_, "a non-negative integer", "*gensym-counter*");
  int64_t n = c->value.i;
  c->value = Value::integer(n + 1);
  return n;
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

Value Interp::make_string_utf8(std::string_view s) {
  return make_string(utf8_to_u32(s));
}

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

void Interp::overload_for_tensors(const char* name, BuiltinFn fn) {
  Symbol* s = intern(name);
  assert(s->cell.function.is_function() && s->cell.function.fn()->builtin);
  s->cell.function.fn()->tensor_builtin = fn;
}

void Interp::check_truth_value(Value v) {
  if (v.p == nullptr) return;
  if (const char* why = v.foreign()->refuses_truth())
    fail("E-STAGED-BRANCH", why, "choose between tensors with (where cond a b)");
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
  if (atom_span && atom_form == atom && is_user_file(spans_[atom_span].file))
    return spans_[atom_span];
  if (cur_cons)
    if (uint32_t s = find_atom_span(Value::object(Kind::Cons, cur_cons), atom, 0))
      if (is_user_file(spans_[s].file)) return spans_[s];
  return current_span();
}

// ---- errors --------------------------------------------------------------------

Span Interp::current_span() const {
  const Span& s = spans_[cur_span];
  if (s.file != 0 && !is_user_file(s.file) && user_span) return spans_[user_span];
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

// Throws `code` at the current span with a condition of CL type `ctype`, so
// handler-case clauses for that type catch it.
[[noreturn]] static void raise_with_condition(Interp& in, const char* code, const char* ctype,
                                              std::string message) {
  LispError e;
  e.diag.code = code;
  e.diag.span = in.current_span();
  e.diag.message = message;
  Condition* c = in.alloc<Condition>();
  c->type = in.sym(ctype);
  c->code = code;
  c->message = std::move(message);
  c->format_control = in.nil();
  c->format_args = in.nil();
  c->span = e.diag.span;
  e.condition = Value::object(Kind::Condition, c);
  throw e;
}

void Interp::type_error(Value v, std::string_view expected, std::string_view where) {
  std::string shown = show(v);
  if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
  raise_with_condition(*this, "E-TYPE", "TYPE-ERROR",
                       std::string(where) + ": " + shown + " is not " + std::string(expected));
}

void Interp::program_error(std::string message) {
  raise_with_condition(*this, "E-TYPE", "PROGRAM-ERROR", std::move(message));
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
  if (s->qualifier.empty()) return std::find(poisoned.begin(), poisoned.end(), s) != poisoned.end();
  // prefix:name names the module's definition of name, which the module's
  // failed defun poisoned unqualified.
  return std::any_of(poisoned.begin(), poisoned.end(),
                     [&](Symbol* p) { return p->name == s->name; });
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
    in.fail("E-UNBOUND",
            "'" + lname + "': no module is required with the prefix '" +
                std::string(lname.substr(0, s->qualifier.size())) + "'",
            "add (require \"...\" :as " + std::string(lname.substr(0, s->qualifier.size())) +
                ") before this form");
  if (m->failed) {
    // Its require failed and was reported: this use is a consequence.
    LispError e;
    e.diag.code = "E-UNBOUND";
    e.diag.span = in.current_span();
    e.diag.message = "'" + lname + "': module '" + m->name + "' could not be loaded";
    e.consequence = true;
    throw e;
  }
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

Cell* Interp::vcell(Symbol* s) {
  return fcell(s);
}

Cell* Interp::define_cell(Symbol* s) {
  if (!s->qualifier.empty())
    fail("E-UNSUPPORTED",
         "cannot define '" + show(symval(s)) + "': a module's exports are defined in the module");
  if (current_module == modules[0].get() || current_module == prelude_module) return &s->cell;
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

Value Interp::lookup_function(Symbol* s, Env* env, bool* is_macro, const Cons* form) {
  for (Env* e = env; e; e = e->parent)
    for (auto it = e->b.rbegin(); it != e->b.rend(); ++it)
      if (it->sym == s && (it->ns == NS::Fun || it->ns == NS::Macro)) {
        *is_macro = it->ns == NS::Macro;
        return it->val;
      }
  Cell* c = fcell(s);
  // The scope's own definition, asked for by a form another scope's macro
  // made: that form means what its macro's code saw, an import or the global.
  if (c != &s->cell && form && form->foreign && s->qualifier.empty()) {
    auto own = current_module->cells.find(s);
    if (own != current_module->cells.end() && &own->second == c) {
      auto it = current_module->imported.find(s);
      Cell* imported = it == current_module->imported.end() ? nullptr : module_cell(it->second, s);
      c = imported ? imported : &s->cell;
    }
  }
  *is_macro = c->macro;
  return c->has_function() ? c->function : Value();
}

void Interp::mark_foreign_expansion(Value expansion, Value call) {
  // Three walks, no allocation: flag the call's conses, mark the
  // expansion's others (a cons already foreign was marked with its own
  // subtree), then clear the call's flags.
  auto walk = [&](Value from, auto&& visit) {
    if (from.is_cons()) mark_stack_.push_back(from.cons());
    while (!mark_stack_.empty()) {
      Cons* x = mark_stack_.back();
      mark_stack_.pop_back();
      if (!visit(x)) continue;
      if (x->car.is_cons()) mark_stack_.push_back(x->car.cons());
      if (x->cdr.is_cons()) mark_stack_.push_back(x->cdr.cons());
    }
  };
  walk(call, [](Cons* x) { return !x->marking && (x->marking = 1); });
  walk(expansion, [](Cons* x) { return !x->marking && !x->foreign && (x->foreign = 1); });
  walk(call, [](Cons* x) { return x->marking && !(x->marking = 0); });
}

void Interp::unbind_specials(size_t to) {
  while (special_stack.size() > to) {
    SpecialBinding& b = special_stack.back();
    b.cell->value = b.old;
    b.cell->has_value = b.had_value;
    special_stack.pop_back();
  }
}

// ---- eval ----------------------------------------------------------------------------

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
    err.consequence = is_poisoned(s);
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
    Value fn = lookup_function(s, env, &is_macro, c);
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
        err.diag.message =
            "'" + name + "' is a Common Lisp operator outside the implemented subset";
        err.diag.fix = "docs/lisp.md lists what is implemented";
        throw err;
      }
      err.diag.fix = suggest_names(s, env, true);
      if (fcell(s)->has_value) err.diag.fix = "'" + name + "' is a variable, not a function";
      err.consequence = is_poisoned(s);
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
      if (n < 8)
        argbuf[n] = v;
      else
        big.push_back(v);
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

std::string describe_function(Interp& in, Function* f) {
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
      fail("E-ARITY", describe_function(*this, f) + " takes " + want + " argument" +
                          (want == "1" ? "" : "s") + ", given " + std::to_string(nargs));
    }
    nvals = 1;
    if (f->tensor_builtin) [[unlikely]]
      for (int i = 0; i < nargs; ++i)
        if (args[i].kind == Kind::Foreign) return f->tensor_builtin(*this, args, nargs);
    return f->builtin(*this, args, nargs);
  }
  return apply_closure(f, args, nargs);
}

// ---- top level ------------------------------------------------------------------------

void Interp::report_out_of_memory() {
  Diagnostic d;
  d.code = "E-EVAL-LIMIT";
  d.span = current_span();
  d.message = "compile-time evaluation ran out of memory";
  d.fix = "a size computed by the file is too large";
  sink.report(d);
}

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
    // A failed definition poisons its name so its uses are not new errors.
    if (form.is_cons() && form.cons()->cdr.is_cons()) {
      Value head = form.cons()->car;
      Value name = form.cons()->cdr.cons()->car;
      if (head.is_symbol() && head.sym()->name.rfind("DEF", 0) == 0 && name.is_symbol())
        poisoned.push_back(name.sym());
    }
    if (!e.consequence) sink.report(std::move(e.diag));
    return false;
  } catch (const std::bad_alloc&) {
    // A size the file chose that no check caught: still a diagnostic.
    unbind_specials(mark);
    report_out_of_memory();
    return false;
  } catch (const std::length_error&) {
    unbind_specials(mark);
    report_out_of_memory();
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

}  // namespace sexpgpu::lisp
