// Lambda lists: parsing (once per lambda form, cached), binding arguments
// (required, &optional, &rest, &key, &aux; destructuring in macros), and
// applying a closure (its frame, block, depth limit and specials).
#include <algorithm>

#include "lisp/interp.h"
#include "lisp/modules.h"

namespace sexpgpu::lisp {

// ---- lambda lists ----------------------------------------------------------------------

static bool is_lambda_keyword(Interp& in, Value v) {
  if (!v.is_symbol()) return false;
  Symbol* s = v.sym();
  return s == in.S.optional || s == in.S.rest || s == in.S.key || s == in.S.aux || s == in.S.body ||
         s == in.S.whole || s == in.S.environment || s == in.S.allow_other_keys;
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
  LambdaKey key{ll.p, body.p, block_name.p, macro};
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
        if (macro && (x.is_cons() || x.is_nil()))  // a pattern; () matches an empty list
          li.required.push_back(x);
        else
          li.required.push_back(symval(var_symbol(*this, x, "required parameter")));
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
            k.supplied =
                var_symbol(*this, init_part.cons()->cdr.cons()->car, "supplied-p variable");
        }
        li.keys.push_back(k);
        break;
      }
      case Rest: break;
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
    if (pattern.is_nil()) {  // the empty pattern: no variables, and no elements
      if (!v.is_nil()) in.fail("E-ARITY", "cannot destructure " + in.show(v) + " against ()");
      return;
    }
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
      if (li.macro)
        bind_pattern(li.required[size_t(i)], args[i]);
      else
        bind(li.required[size_t(i)].sym(), args[i]);
    }
    for (const LambdaInfo::Opt& o : li.optional) {
      Value v;
      bool supplied = i < n;
      if (supplied)
        v = args[i++];
      else
        v = o.has_init ? in.eval(o.init, env) : in.nil();
      if (li.macro)
        bind_pattern(o.var, v);
      else
        bind(o.var.sym(), v);
      if (o.supplied) bind(o.supplied, in.boolean(supplied));
    }
    if (li.has_rest) {
      Value rest = dotted_tail;
      for (int k = n; k-- > i;) rest = in.cons(args[k], rest);
      if (li.macro)
        bind_pattern(li.rest, rest);
      else
        bind(li.rest.sym(), rest);
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
            in.fail(
                "E-ARITY",
                "unknown keyword argument " + in.show(args[k]) + " in a call to " + callee(whole),
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
        if (li.macro)
          bind_pattern(key.var, v);
        else
          bind(key.var.sym(), v);
        if (key.supplied) bind(key.supplied, in.boolean(supplied));
      }
    } else if (!li.has_rest && i < n) {
      too_many(li, n, whole);
    }
    for (const LambdaInfo::Opt& a : li.aux) {
      Value v = a.has_init ? in.eval(a.init, env) : in.nil();
      if (li.macro)
        bind_pattern(a.var, v);
      else
        bind(a.var.sym(), v);
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
      e.diag.notes.push_back({Span{}, "in " + describe_function(*this, *it)});
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
  // A special declaration of a name the lambda list does not bind makes the
  // body's references dynamic (the init forms above did not see it, as in SBCL).
  for (Symbol* s : li->specials) {
    bool bound = false;
    for (const Binding& b : env->b) bound = bound || b.sym == s;
    if (!bound) env->b.push_back({s, NS::SpecialVar, Value()});
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

}  // namespace sexpgpu::lisp
