// Macro expansion: one step (with the expansion cache and E-MACRO wrapping)
// and to a fixed point.
#include "lisp/interp.h"
#include "lisp/span_guard.h"

namespace sexpgpu::lisp {

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
  Value fn = lookup_function(s, env, &is_macro, form.cons());
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
    outer.consequence = e.consequence;
    throw outer;
  }
  // Expansions made by a macro inherit the call's position where they have none.
  if (expansion.is_cons() && expansion.cons()->span == 0) expansion.cons()->span = key->span;
  nvals = 1;
  *expanded = true;
  if (!lexical && fn.fn()->module != current_module) mark_foreign_expansion(expansion, form);
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

}  // namespace sexpgpu::lisp
