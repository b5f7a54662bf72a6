// Special forms: one sorted table, name -> handler (as Janet's specials.c).
// Everything else in the language is a function or a macro of the prelude.
#include <algorithm>
#include <cstring>

#include "lisp/interp.h"

namespace sexpgpu::lisp {

bool typep(Interp& in, Value v, Value type);  // builtins_core.cpp
bool condition_typep(Interp& in, Value cond, Value type);
void destructure_into(Interp& in, Env* env, LambdaInfo* li, Value whole, Value list);
void define_function(Interp& in, Symbol* s, Value fn, bool macro);  // builtins_core.cpp
Value sf_require(Interp& in, Value form, Env* env);    // modules.cpp
Value sf_defmodule(Interp& in, Value form, Env* env);  // modules.cpp

namespace {

using Handler = Value (*)(Interp&, Value form, Env* env);

Value car(Value v) { return v.is_cons() ? v.cons()->car : v; }
Value cdr(Value v) { return v.is_cons() ? v.cons()->cdr : v; }

// Shape errors in special forms are E-TYPE at the form ("bad let binding").
[[noreturn]] void bad_form(Interp& in, const char* op, const std::string& what) {
  in.fail("E-TYPE", std::string("malformed ") + op + ": " + what);
}

Value nth_arg(Interp& in, Value form, int n, const char* op) {
  Value x = cdr(form);
  for (int i = 0; i < n; ++i) {
    if (!x.is_cons()) bad_form(in, op, "missing argument " + std::to_string(n + 1));
    x = x.cons()->cdr;
  }
  if (!x.is_cons()) bad_form(in, op, "missing argument " + std::to_string(n + 1));
  return x.cons()->car;
}

bool is_declare(Interp& in, Value f) {
  return f.is_cons() && f.cons()->car.is_symbol() && f.cons()->car.sym() == in.S.declare;
}

// Splits leading declarations from a body; collects (special ...) names.
Value body_after_declarations(Interp& in, Value body, std::vector<Symbol*>* specials,
                              TypeDecls* types = nullptr) {
  while (body.is_cons() && is_declare(in, body.cons()->car)) {
    for (Value d = cdr(body.cons()->car); d.is_cons(); d = d.cons()->cdr) {
      Value spec = d.cons()->car;
      if (specials && spec.is_cons() && car(spec).is_symbol() && car(spec).sym() == in.S.special)
        for (Value v = cdr(spec); v.is_cons(); v = v.cons()->cdr)
          if (v.cons()->car.is_symbol()) specials->push_back(v.cons()->car.sym());
      if (types) collect_type_declarations(in, spec, *types);
    }
    body = body.cons()->cdr;
  }
  return body;
}

Env* new_env(Interp& in, Env* parent) {
  return in.make_env(parent);
}

// Free special declarations (names not bound here) make references dynamic.
void add_special_markers(Env* env, const std::vector<Symbol*>& specials) {
  for (Symbol* s : specials) {
    bool bound = false;
    for (auto& b : env->b)
      if (b.sym == s) bound = true;
    if (!bound) env->b.push_back({s, NS::SpecialVar, Value()});
  }
}

Value sf_quote(Interp& in, Value form, Env*) {
  in.nvals = 1;
  return nth_arg(in, form, 0, "quote");
}

Value make_closure(Interp& in, Value name, Value ll, Value body, Env* env, Value block_name,
                   bool macro = false) {
  if (!ll.is_list()) bad_form(in, "lambda", "the lambda list " + in.show(ll) + " is not a list");
  LambdaInfo* li = in.lambda_info(ll, body, macro, block_name);
  Function* f = in.alloc<Function>();
  f->info = li;
  f->env = env;
  f->module = in.current_module;
  f->name = name;
  f->min_args = li->min_args;
  f->max_args = li->max_args;
  in.nvals = 1;
  return Value::object(Kind::Function, f);
}

Value block_name_of(Interp& in, Value name) {
  // (setf foo) functions have the block foo.
  if (name.is_cons() && car(name).is_symbol() && car(name).sym() == in.S.setf)
    return car(cdr(name));
  return name;
}

Value sf_lambda(Interp& in, Value form, Env* env) {
  if (!cdr(form).is_cons()) bad_form(in, "lambda", "missing lambda list");
  return make_closure(in, in.nil(), nth_arg(in, form, 0, "lambda"), cdr(cdr(form)), env, in.nil());
}

Value sf_named_lambda(Interp& in, Value form, Env* env) {
  Value name = nth_arg(in, form, 0, "%named-lambda");
  Value ll = nth_arg(in, form, 1, "%named-lambda");
  return make_closure(in, name, ll, cdr(cdr(cdr(form))), env, block_name_of(in, name));
}

Value sf_function(Interp& in, Value form, Env* env) {
  Value x = nth_arg(in, form, 0, "function");
  in.nvals = 1;
  if (x.is_symbol()) {
    bool is_macro = false;
    Value fn = in.lookup_function(x.sym(), env, &is_macro, form.cons());
    if (fn.p && !is_macro) return fn;
    if (is_macro) in.fail("E-TYPE", "'" + in.show(x) + "' is a macro, not a function");
    if (x.sym()->special_form >= 0)
      in.fail("E-TYPE", "'" + in.show(x) + "' is a special form, not a function");
    in.fail("E-UNBOUND", "undefined function '" + in.show(x) + "'");
  }
  if (x.is_cons() && car(x).is_symbol()) {
    Symbol* h = car(x).sym();
    if (h == in.S.lambda) return make_closure(in, in.nil(), car(cdr(x)), cdr(cdr(x)), env, in.nil());
    if (h == in.S.named_lambda) return sf_named_lambda(in, x, env);
    if (h == in.S.setf && car(cdr(x)).is_symbol()) {
      Symbol* target = car(cdr(x)).sym();
      for (Env* e = env; e; e = e->parent)
        for (auto it = e->b.rbegin(); it != e->b.rend(); ++it)
          if (it->sym == target && it->ns == NS::SetfFun) return it->val;
      Value f = in.setf_function(target);
      if (f.is_nil()) in.fail("E-UNBOUND", "undefined function '" + in.show(x) + "'");
      return f;
    }
  }
  bad_form(in, "function", in.show(x) + " is not a function name");
}

Value sf_if(Interp& in, Value form, Env* env) {
  Value test = in.eval(nth_arg(in, form, 0, "if"), env);
  Value rest = cdr(cdr(form));
  if (!rest.is_cons()) bad_form(in, "if", "missing then branch");
  if (cdr(rest).is_cons() && cdr(cdr(rest)).is_cons())
    bad_form(in, "if", "too many forms (use progn or cond)");
  if (in.test(test)) return in.eval(car(rest), env);
  if (cdr(rest).is_cons()) return in.eval(car(cdr(rest)), env);
  in.nvals = 1;
  return in.nil();
}

Value sf_progn(Interp& in, Value form, Env* env) { return in.eval_body(cdr(form), env); }

Value let_common(Interp& in, Value form, Env* env, bool sequential) {
  const char* op = sequential ? "let*" : "let";
  if (!cdr(form).is_cons()) bad_form(in, op, "missing binding list");
  Value bindings = car(cdr(form));
  if (!bindings.is_list()) bad_form(in, op, "the bindings " + in.show(bindings) + " are not a list");
  std::vector<Symbol*> specials;
  TypeDecls types;
  Value body = body_after_declarations(in, cdr(cdr(form)), &specials, &types);
  Env* e = new_env(in, env);
  SpecialScope scope(in);
  std::vector<std::pair<Symbol*, Value>> pending;
  // In let*, a local (declare (special x)) applies to the last binding of x only.
  std::vector<Symbol*> names;
  if (sequential && !specials.empty())
    for (Value b = bindings; b.is_cons(); b = b.cons()->cdr) {
      Value n = car(b).is_cons() ? car(car(b)) : car(b);
      names.push_back(n.is_symbol() ? n.sym() : nullptr);  // nullptr: malformed, reported when reached
    }
  const std::vector<Symbol*> no_specials;
  size_t index = 0;
  for (Value b = bindings; b.is_cons(); b = b.cons()->cdr, ++index) {
    Value spec = b.cons()->car;
    Symbol* s;
    Value v = in.nil();
    if (spec.is_symbol()) {
      s = spec.sym();
    } else if (spec.is_cons() && car(spec).is_symbol()) {
      s = car(spec).sym();
      if (cdr(spec).is_cons()) {
        if (cdr(cdr(spec)).is_cons()) bad_form(in, op, "the binding " + in.show(spec) + " has more than one value form");
        Value init = car(cdr(spec));
        if (cdr(spec).is_cons()) in.note_atom(init, cdr(spec).cons()->car_span);
        v = in.eval(init, sequential ? e : env);
      }
    } else {
      bad_form(in, op, "the binding " + in.show(spec) + " is not a symbol or (symbol value)");
    }
    bool rebound_later =
        std::find(names.begin() + long(std::min(index + 1, names.size())), names.end(), s) != names.end();
    if (sequential) bind_variable(in, e, s, v, rebound_later ? no_specials : specials);
    else pending.emplace_back(s, v);
  }
  for (size_t i = 0; i < pending.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (pending[i].first == pending[j].first)
        in.program_error("let: the variable '" + in.show(Interp::symval(pending[i].first)) +
                         "' is bound twice");
  for (auto& [s, v] : pending) bind_variable(in, e, s, v, specials);
  if (!types.empty()) check_declared_types(in, e, types);
  add_special_markers(e, specials);
  return in.eval_body(body, e);
}

Value sf_let(Interp& in, Value form, Env* env) { return let_common(in, form, env, false); }
Value sf_let_star(Interp& in, Value form, Env* env) { return let_common(in, form, env, true); }

Value sf_locally(Interp& in, Value form, Env* env) {
  std::vector<Symbol*> specials;
  Value body = body_after_declarations(in, cdr(form), &specials);
  if (specials.empty()) return in.eval_body(body, env);
  Env* e = new_env(in, env);
  add_special_markers(e, specials);
  return in.eval_body(body, e);
}

Value set_variable(Interp& in, Symbol* s, Value v, Env* env) {
  for (Env* e = env; e; e = e->parent)
    for (auto it = e->b.rbegin(); it != e->b.rend(); ++it) {
      if (it->sym != s) continue;
      if (it->ns == NS::Var) {
        it->val = v;
        return v;
      }
      if (it->ns == NS::SpecialVar) goto global;
      if (it->ns == NS::SymbolMacro) {
        Value setf_form = in.list({Interp::symval(in.S.setf), it->val,
                                   in.list({Interp::symval(in.S.quote), v})});
        return in.eval(setf_form, env);
      }
    }
global:
  if (s == in.NIL || s == in.T || s->keyword)
    in.fail("E-TYPE", "cannot assign to the constant '" + in.show(Interp::symval(s)) + "'");
  in.set_symbol_value(s, v);
  return v;
}

Value sf_setq(Interp& in, Value form, Env* env) {
  Value r = in.nil();
  Value x = cdr(form);
  while (x.is_cons()) {
    Value var = x.cons()->car;
    if (!var.is_symbol()) bad_form(in, "setq", in.show(var) + " is not a variable");
    if (!cdr(x).is_cons()) bad_form(in, "setq", "odd number of arguments");
    Value v = in.eval(car(cdr(x)), env);
    r = set_variable(in, var.sym(), v, env);
    x = cdr(cdr(x));
  }
  in.nvals = 1;
  return r;
}

// flet and labels: (flet ((name lambda-list . body)...) . body)
Value function_bindings(Interp& in, Value form, Env* env, bool recursive, bool macros) {
  const char* op = macros ? "macrolet" : recursive ? "labels" : "flet";
  if (!cdr(form).is_cons()) bad_form(in, op, "missing bindings");
  Env* e = new_env(in, env);
  Env* closure_env = recursive ? e : env;
  for (Value b = car(cdr(form)); b.is_cons(); b = b.cons()->cdr) {
    Value def = b.cons()->car;
    Value fname = car(def);
    // (flet (((setf name) (new obj) ...)) ...) defines a local setf function.
    bool setf_name = !macros && fname.is_cons() && car(fname).is_symbol() &&
                     car(fname).sym() == in.S.setf && car(cdr(fname)).is_symbol();
    if (!def.is_cons() || !(fname.is_symbol() || setf_name) || !cdr(def).is_cons())
      bad_form(in, op, in.show(def) + " is not (name lambda-list . body)");
    Symbol* name = setf_name ? car(cdr(fname)).sym() : fname.sym();
    Value fn = make_closure(in, fname, car(cdr(def)), cdr(cdr(def)), closure_env,
                            block_name_of(in, fname), macros);
    e->b.push_back({name, macros ? NS::Macro : setf_name ? NS::SetfFun : NS::Fun, fn});
  }
  std::vector<Symbol*> specials;
  Value body = body_after_declarations(in, cdr(cdr(form)), &specials);
  if (!specials.empty()) {
    // The declarations concern the body, not the functions' own bodies
    // (which labels closes over e): they go in an environment of their own.
    e = new_env(in, e);
    add_special_markers(e, specials);
  }
  return in.eval_body(body, e);
}

Value sf_flet(Interp& in, Value form, Env* env) { return function_bindings(in, form, env, false, false); }
Value sf_labels(Interp& in, Value form, Env* env) { return function_bindings(in, form, env, true, false); }
Value sf_macrolet(Interp& in, Value form, Env* env) { return function_bindings(in, form, env, false, true); }

Value sf_symbol_macrolet(Interp& in, Value form, Env* env) {
  if (!cdr(form).is_cons()) bad_form(in, "symbol-macrolet", "missing bindings");
  Env* e = new_env(in, env);
  for (Value b = car(cdr(form)); b.is_cons(); b = b.cons()->cdr) {
    Value def = b.cons()->car;
    if (!def.is_cons() || !car(def).is_symbol())
      bad_form(in, "symbol-macrolet", in.show(def) + " is not (symbol expansion)");
    e->b.push_back({car(def).sym(), NS::SymbolMacro, car(cdr(def))});
  }
  std::vector<Symbol*> specials;
  Value body = body_after_declarations(in, cdr(cdr(form)), &specials);
  for (Symbol* s : specials)
    for (auto& b : e->b)
      if (b.sym == s)
        bad_form(in, "symbol-macrolet",
                 "'" + in.show(Interp::symval(s)) +
                     "' is a symbol macro here and cannot be declared special");
  add_special_markers(e, specials);
  return in.eval_body(body, e);
}

Value sf_block(Interp& in, Value form, Env* env) {
  Value name = nth_arg(in, form, 0, "block");
  if (!name.is_symbol()) bad_form(in, "block", "the name " + in.show(name) + " is not a symbol");
  Env* e = new_env(in, env);
  ExitPoint* ep = in.alloc<ExitPoint>();
  e->b.push_back({name.sym(), NS::Block, Value::object(Kind::Foreign, ep)});
  try {
    Value r = in.eval_body(cdr(cdr(form)), e);
    ep->alive = false;
    return r;
  } catch (BlockExit& x) {
    ep->alive = false;
    if (x.target != ep) throw;
    return x.value;
  }
}

Value sf_return_from(Interp& in, Value form, Env* env) {
  Value name = nth_arg(in, form, 0, "return-from");
  for (Env* e = env; e; e = e->parent)
    for (auto it = e->b.rbegin(); it != e->b.rend(); ++it)
      if (it->ns == NS::Block && it->sym == name.sym()) {
        auto* ep = reinterpret_cast<ExitPoint*>(it->val.p);
        Value v = cdr(cdr(form)).is_cons() ? in.eval(car(cdr(cdr(form))), env) : in.nil();
        if (!cdr(cdr(form)).is_cons()) in.nvals = 1;
        if (!ep->alive)
          in.fail("E-CONTROL", "return-from '" + in.show(name) + "': the block has already exited");
        throw BlockExit{ep, v};
      }
  in.fail("E-CONTROL", "return-from '" + in.show(name) + "': no block of that name is visible here");
}

bool is_tag(Value v) { return v.is_symbol() || v.is_int(); }

// Keeps error positions right for the (if ...) a tagbody runs itself.
struct SpanGuardLite {
  Interp& in;
  uint32_t saved;
  SpanGuardLite(Interp& i, Value stmt) : in(i), saved(i.cur_span) {
    if (stmt.cons()->span) in.cur_span = stmt.cons()->span;
  }
  ~SpanGuardLite() { in.cur_span = saved; }
};

// `(go TAG)` aimed at this very tagbody: jumps without throwing.
bool local_go(Interp& in, Value stmt, ExitPoint* ep, Value* tail) {
  // Symbols compared by identity: interning "GO" here, once per statement,
  // was most of the time of a tight loop.
  if (!stmt.is_cons() || !(car(stmt) == Interp::symval(in.S.go))) return false;
  Value tag = car(cdr(stmt));
  for (auto& [t, rest] : ep->tags)
    if (t == tag) {
      *tail = rest;
      return true;
    }
  return false;
}

// Runs one statement of a tagbody. Loops expand into statements of the shapes
// (go T) and (if C (go T) [E]) / (if C E (go T)); those jump here directly, as
// a C++ exception per iteration would dominate the cost of every loop.
bool run_statement(Interp& in, Value stmt, Env* e, ExitPoint* ep, Value* tail) {
  if (local_go(in, stmt, ep, tail)) {
    in.count_step();
    return true;
  }
  if (stmt.is_cons() && car(stmt) == Interp::symval(in.S.if_)) {
    Value rest = cdr(stmt);
    Value then_form = car(cdr(rest));
    Value else_tail = cdr(cdr(rest));
    Value else_form = else_tail.is_cons() ? car(else_tail) : in.nil();
    Value dummy;
    if (rest.is_cons() && cdr(rest).is_cons() && (!else_tail.is_cons() || cdr(else_tail).is_nil()) &&
        (local_go(in, then_form, ep, &dummy) || local_go(in, else_form, ep, &dummy))) {
      in.count_step();
      SpanGuardLite guard(in, stmt);
      Value branch = in.test(in.eval(car(rest), e)) ? then_form : else_form;
      if (local_go(in, branch, ep, tail)) {
        in.count_step();
        return true;
      }
      if (branch.is_cons() || !branch.is_nil()) in.eval(branch, e);
      return false;
    }
  }
  in.eval(stmt, e);
  return false;
}

Value sf_tagbody(Interp& in, Value form, Env* env) {
  Env* e = new_env(in, env);
  ExitPoint* ep = in.alloc<ExitPoint>();
  for (Value x = cdr(form); x.is_cons(); x = x.cons()->cdr)
    if (is_tag(x.cons()->car)) ep->tags.emplace_back(x.cons()->car, x.cons()->cdr);
  e->b.push_back({nullptr, NS::Tag, Value::object(Kind::Foreign, ep)});
  Value pc = cdr(form);
  for (;;) {
    try {
      while (pc.is_cons()) {
        Value stmt = pc.cons()->car;
        Value tail;
        if (!is_tag(stmt) && run_statement(in, stmt, e, ep, &tail)) {
          pc = tail;
          continue;
        }
        pc = pc.cons()->cdr;
      }
      break;
    } catch (GoExit& g) {
      if (g.target != ep) {
        ep->alive = false;
        throw;
      }
      pc = g.tag_tail;
    }
  }
  ep->alive = false;
  in.nvals = 1;
  return in.nil();
}

Value sf_go(Interp& in, Value form, Env* env) {
  Value tag = nth_arg(in, form, 0, "go");
  for (Env* e = env; e; e = e->parent)
    for (auto& b : e->b)
      if (b.ns == NS::Tag) {
        auto* ep = reinterpret_cast<ExitPoint*>(b.val.p);
        for (auto& [t, tail] : ep->tags)
          if (t == tag) {
            if (!ep->alive) in.fail("E-CONTROL", "go " + in.show(tag) + ": the tagbody has exited");
            throw GoExit{ep, tail};
          }
      }
  in.fail("E-CONTROL", "go: no tag " + in.show(tag) + " is visible here");
}

Value sf_catch(Interp& in, Value form, Env* env) {
  Value tag = in.eval(nth_arg(in, form, 0, "catch"), env);
  size_t mark = in.catch_tags.size();
  in.catch_tags.push_back(tag);
  try {
    Value r = in.eval_body(cdr(cdr(form)), env);
    in.catch_tags.resize(mark);
    return r;
  } catch (ThrowExit& t) {
    in.catch_tags.resize(mark);
    if (!(t.tag == tag)) throw;
    return t.value;
  } catch (...) {
    in.catch_tags.resize(mark);
    throw;
  }
}

Value sf_throw(Interp& in, Value form, Env* env) {
  Value tag = in.eval(nth_arg(in, form, 0, "throw"), env);
  bool found = false;
  for (Value t : in.catch_tags)
    if (t == tag) found = true;
  if (!found) in.fail("E-CONTROL", "throw: no catch for the tag " + in.show(tag) + " is active");
  Value v = in.eval(nth_arg(in, form, 1, "throw"), env);
  throw ThrowExit{tag, v};
}

struct SavedValues {
  int n;
  std::vector<Value> mv;
};

Value sf_unwind_protect(Interp& in, Value form, Env* env) {
  Value protected_form = nth_arg(in, form, 0, "unwind-protect");
  Value cleanup = cdr(cdr(form));
  Value r;
  try {
    r = in.eval(protected_form, env);
  } catch (LispError& e) {
    if (!e.catchable) throw;  // limits stop everything, cleanups included
    SavedValues s{in.nvals, in.mvals};
    in.eval_body(cleanup, env);
    in.nvals = s.n;
    in.mvals = s.mv;
    throw;
  } catch (BlockExit&) {
    SavedValues s{in.nvals, in.mvals};
    in.eval_body(cleanup, env);
    in.nvals = s.n;
    in.mvals = s.mv;
    throw;
  } catch (GoExit&) {
    in.eval_body(cleanup, env);
    throw;
  } catch (ThrowExit&) {
    SavedValues s{in.nvals, in.mvals};
    in.eval_body(cleanup, env);
    in.nvals = s.n;
    in.mvals = s.mv;
    throw;
  }
  SavedValues s{in.nvals, in.mvals};
  in.eval_body(cleanup, env);
  in.nvals = s.n;
  in.mvals = s.mv;
  return r;
}

Value sf_multiple_value_call(Interp& in, Value form, Env* env) {
  Value fn = in.eval(nth_arg(in, form, 0, "multiple-value-call"), env);
  std::vector<Value> args;
  for (Value x = cdr(cdr(form)); x.is_cons(); x = x.cons()->cdr) {
    Value v = in.eval(x.cons()->car, env);
    if (in.nvals == 1) args.push_back(v);
    else args.insert(args.end(), in.mvals.begin(), in.mvals.begin() + in.nvals);
  }
  return in.apply(fn, args.data(), int(args.size()));
}

Value sf_multiple_value_prog1(Interp& in, Value form, Env* env) {
  Value r = in.eval(nth_arg(in, form, 0, "multiple-value-prog1"), env);
  SavedValues s{in.nvals, in.mvals};
  in.eval_body(cdr(cdr(form)), env);
  in.nvals = s.n;
  in.mvals = s.mv;
  return r;
}

Value sf_the(Interp& in, Value form, Env* env) {
  Value type = nth_arg(in, form, 0, "the");
  Value v = in.eval(nth_arg(in, form, 1, "the"), env);
  if (type.is_cons() && car(type).is_symbol() && car(type).sym()->name == "VALUES") return v;
  SavedValues s{in.nvals, in.mvals};
  if (!typep(in, v, type))
    in.fail("E-TYPE", "the: " + in.show(v) + " is not of type " + in.show(type));
  in.nvals = s.n;
  in.mvals = s.mv;
  return v;
}

// A run file is evaluated as a loaded source file is: the body runs when
// the situations include :execute (or the old name eval), as in SBCL; the
// compile and load situations name times that a file never has.
Value sf_eval_when(Interp& in, Value form, Env* env) {
  if (!cdr(form).is_cons() || !car(cdr(form)).is_list())
    bad_form(in, "eval-when", "the situations must be a list");
  bool execute = false;
  for (Value s = car(cdr(form)); s.is_cons(); s = s.cons()->cdr) {
    Value x = s.cons()->car;
    if (!x.is_symbol()) bad_form(in, "eval-when", in.show(x) + " is not a situation");
    const std::string& n = x.sym()->name;
    if (n == "EXECUTE" || n == "EVAL")
      execute = true;
    else if (n != "COMPILE-TOPLEVEL" && n != "LOAD-TOPLEVEL" && n != "COMPILE" && n != "LOAD")
      bad_form(in, "eval-when",
               in.show(x) + " is not a situation (:compile-toplevel, :load-toplevel, :execute)");
  }
  if (!execute) {
    in.nvals = 1;
    return in.nil();
  }
  return in.eval_body(cdr(cdr(form)), env);
}

Value sf_declare(Interp& in, Value, Env*) {
  in.fail("E-TYPE", "declare is only allowed at the start of a body (let, defun, lambda, ...)");
}

Value sf_destructuring_bind(Interp& in, Value form, Env* env) {
  Value ll = nth_arg(in, form, 0, "destructuring-bind");
  Value v = in.eval(nth_arg(in, form, 1, "destructuring-bind"), env);
  Value body = cdr(cdr(cdr(form)));
  LambdaInfo* li = in.lambda_info(ll, body, true, in.nil());
  Env* e = new_env(in, env);
  SpecialScope scope(in);
  destructure_into(in, e, li, v, v);
  add_special_markers(e, li->specials);
  return in.eval_body(li->body, e);
}

// Backquote, evaluated directly: `depth` counts nested quasiquotes.
Value quasi(Interp& in, Value x, Env* env, int depth) {
  if (x.is_vector()) {
    Value as_list = in.list_from(x.vec()->items);
    Value r = quasi(in, as_list, env, depth);
    return in.make_vector(in.list_items(r, "backquote"));
  }
  if (!x.is_cons()) return x;
  Value head = car(x);
  if (head.is_symbol()) {
    Symbol* h = head.sym();
    if (h == in.S.unquote) {
      if (depth == 1) return in.eval(car(cdr(x)), env);
      return in.list({head, quasi(in, car(cdr(x)), env, depth - 1)});
    }
    if (h == in.S.quasiquote) return in.list({head, quasi(in, car(cdr(x)), env, depth + 1)});
    if (h == in.S.unquote_splicing && depth == 1)
      in.fail("E-TYPE", ",@ is only allowed inside a list");
  }
  std::vector<Value> items;
  Value tail = in.nil();
  Value p = x;
  while (p.is_cons()) {
    Value e = p.cons()->car;
    // `(a . ,b) reads as (a unquote b): the tail is an unquote form.
    if (e.is_symbol() && (e.sym() == in.S.unquote || e.sym() == in.S.unquote_splicing) &&
        p.p != x.p && cdr(p).is_cons() && cdr(cdr(p)).is_nil()) {
      if (depth == 1) tail = in.eval(car(cdr(p)), env);
      else tail = in.list({e, quasi(in, car(cdr(p)), env, depth - 1)});
      p = in.nil();
      break;
    }
    if (e.is_cons() && car(e).is_symbol() && car(e).sym() == in.S.unquote_splicing) {
      if (depth == 1) {
        Value spliced = in.eval(car(cdr(e)), env);
        bool last = !cdr(p).is_cons() && cdr(p).is_nil();
        if (last) {
          // The last splice shares structure, as CL's append does.
          Value r = spliced;
          for (size_t i = items.size(); i-- > 0;) r = in.cons(items[i], r);
          return r;
        }
        for (Value s = spliced; s.is_cons(); s = s.cons()->cdr) items.push_back(s.cons()->car);
      } else {
        items.push_back(in.list({car(e), quasi(in, car(cdr(e)), env, depth - 1)}));
      }
    } else {
      items.push_back(quasi(in, e, env, depth));
    }
    p = p.cons()->cdr;
  }
  if (!p.is_nil()) tail = quasi(in, p, env, depth);
  return in.list_from(items, tail);
}

Value sf_quasiquote(Interp& in, Value form, Env* env) {
  Value r = quasi(in, nth_arg(in, form, 0, "backquote"), env, 1);
  in.nvals = 1;
  return r;
}

Value sf_unquote(Interp& in, Value, Env*) {
  in.fail("E-READ", "a comma outside a backquote");
}

// (defmacro name lambda-list . body): special here so the prelude can use it.
Value sf_defmacro(Interp& in, Value form, Env* env) {
  Value name = nth_arg(in, form, 0, "defmacro");
  if (!name.is_symbol() || name.is_nil()) bad_form(in, "defmacro", in.show(name) + " is not a name");
  if (name.sym()->special_form >= 0)
    in.fail("E-TYPE", "cannot define the macro '" + in.show(name) + "': it is a special form");
  Value ll = nth_arg(in, form, 1, "defmacro");
  Value fn = make_closure(in, name, ll, cdr(cdr(cdr(form))), env, name, true);
  define_function(in, name.sym(), fn, true);
  in.nvals = 1;
  return name;
}

Value sf_handler_case(Interp& in, Value form, Env* env) {
  Value expr = nth_arg(in, form, 0, "handler-case");
  Value clauses = cdr(cdr(form));
  Value no_error = in.nil();
  for (Value c = clauses; c.is_cons(); c = c.cons()->cdr) {
    Value cl = c.cons()->car;
    if (!cl.is_cons()) bad_form(in, "handler-case", in.show(cl) + " is not a clause");
    if (car(cl).is_symbol() && car(cl).sym()->keyword && car(cl).sym()->name == "NO-ERROR")
      no_error = cl;
  }
  size_t catch_mark = in.catch_tags.size();
  Value r;
  try {
    r = in.eval(expr, env);
  } catch (LispError& e) {
    if (!e.catchable) throw;
    in.catch_tags.resize(catch_mark);
    Value cond = in.make_condition(e);
    for (Value c = clauses; c.is_cons(); c = c.cons()->cdr) {
      Value cl = c.cons()->car;
      if (cl.p == no_error.p) continue;
      if (!condition_typep(in, cond, car(cl))) continue;
      Value vars = car(cdr(cl));
      Env* he = new_env(in, env);
      if (vars.is_cons() && car(vars).is_symbol()) he->b.push_back({car(vars).sym(), NS::Var, cond});
      Value body = body_after_declarations(in, cdr(cdr(cl)), nullptr);
      return in.eval_body(body, he);
    }
    throw;
  }
  if (no_error.is_cons()) {
    std::vector<Value> vs = in.last_values(r);
    Value fn = make_closure(in, in.nil(), car(cdr(no_error)), cdr(cdr(no_error)), env, in.nil());
    return in.apply(fn, vs.data(), int(vs.size()));
  }
  return r;
}

Value sf_unsupported(Interp& in, Value form, Env*) {
  std::string op = in.show(car(form));
  in.fail("E-UNSUPPORTED", "'" + op + "' is not supported: SexpGPU has one namespace of modules, not CL packages",
          "use (require \"./file.lisp\" :as prefix) to share definitions");
}

struct SpecialForm {
  const char* name;
  Handler handler;
};

// Sorted by name; checked at registration.
const SpecialForm kSpecialForms[] = {
    {"%NAMED-LAMBDA", sf_named_lambda},
    {"BLOCK", sf_block},
    {"CATCH", sf_catch},
    {"DECLARE", sf_declare},
    {"DEFMACRO", sf_defmacro},
    {"DEFMODULE", sf_defmodule},
    {"DEFPACKAGE", sf_unsupported},
    {"DESTRUCTURING-BIND", sf_destructuring_bind},
    {"EVAL-WHEN", sf_eval_when},
    {"FLET", sf_flet},
    {"FUNCTION", sf_function},
    {"GO", sf_go},
    {"HANDLER-CASE", sf_handler_case},
    {"IF", sf_if},
    {"IN-PACKAGE", sf_unsupported},
    {"LABELS", sf_labels},
    {"LAMBDA", sf_lambda},
    {"LET", sf_let},
    {"LET*", sf_let_star},
    {"LOCALLY", sf_locally},
    {"MACROLET", sf_macrolet},
    {"MULTIPLE-VALUE-CALL", sf_multiple_value_call},
    {"MULTIPLE-VALUE-PROG1", sf_multiple_value_prog1},
    {"PROGN", sf_progn},
    {"QUASIQUOTE", sf_quasiquote},
    {"QUOTE", sf_quote},
    {"REQUIRE", sf_require},
    {"RETURN-FROM", sf_return_from},
    {"SETQ", sf_setq},
    {"SYMBOL-MACROLET", sf_symbol_macrolet},
    {"TAGBODY", sf_tagbody},
    {"THE", sf_the},
    {"THROW", sf_throw},
    {"UNQUOTE", sf_unquote},
    {"UNQUOTE-SPLICING", sf_unquote},
    {"UNWIND-PROTECT", sf_unwind_protect},
};

}  // namespace

Value dispatch_special_form(Interp& in, int index, Value form, Env* env) {
  return kSpecialForms[index].handler(in, form, env);
}

void register_special_forms(Interp& in) {
  int n = int(sizeof(kSpecialForms) / sizeof(kSpecialForms[0]));
  for (int i = 0; i < n; ++i) {
    if (i > 0 && std::strcmp(kSpecialForms[i - 1].name, kSpecialForms[i].name) >= 0)
      throw std::logic_error("special form table is not sorted");
    in.intern(kSpecialForms[i].name)->special_form = int16_t(i);
  }
}

std::vector<std::string> special_form_names() {
  std::vector<std::string> out;
  for (const auto& sf : kSpecialForms) out.push_back(sf.name);
  return out;
}

}  // namespace sexpgpu::lisp
