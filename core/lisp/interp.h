// The compile-time Lisp interpreter: symbols, the heap, lexical environments,
// eval/apply, multiple values, non-local exits, limits, and the helpers that
// builtins use (argument checking, errors with positions, allocation).
//
// Errors are C++ exceptions (LispError) carrying a Diagnostic; non-local exits
// (return-from, go, throw) are exceptions of their own types. The evaluator
// never aborts: every limit (steps, call depth, native stack, heap) becomes a
// diagnostic.
#pragma once

#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lisp/extension.h"
#include "lisp/value.h"
#include "util/diagnostics.h"

namespace sexpgpu::lisp {

// ---- lexical environments ---------------------------------------------------

enum class NS : uint8_t { Var, SpecialVar, Fun, SetfFun, Macro, SymbolMacro, Block, Tag };

struct Binding {
  Symbol* sym;
  NS ns;
  Value val;
};

class Interp;

// The bindings of one frame: a few inline, more in the interpreter's arena.
// Frames are made on every call and let, so they avoid malloc entirely.
struct BindingList {
  Binding* data = inline_;
  uint32_t n = 0, cap = kInline;
  Interp* owner = nullptr;
  static constexpr uint32_t kInline = 4;
  Binding inline_[kInline];

  BindingList() = default;
  BindingList(const BindingList&) = delete;
  BindingList& operator=(const BindingList&) = delete;
  void push_back(const Binding& x) {
    if (n == cap) grow(cap * 2);
    data[n++] = x;
  }
  void reserve(size_t want) {
    if (want > cap) grow(uint32_t(want));
  }
  void grow(uint32_t new_cap);  // interp.cpp
  Binding* begin() { return data; }
  Binding* end() { return data + n; }
  std::reverse_iterator<Binding*> rbegin() { return std::reverse_iterator<Binding*>(end()); }
  std::reverse_iterator<Binding*> rend() { return std::reverse_iterator<Binding*>(begin()); }
  size_t size() const { return n; }
};

// A lexical frame. Allocated from the interpreter's arena (trivially
// destructible: nothing to free one by one).
struct Env {
  Env* parent = nullptr;
  BindingList b;
};

// A live block or tagbody: exits aimed at a dead one are errors, not jumps.
struct ExitPoint : Obj {
  bool alive = true;
  std::vector<std::pair<Value, Value>> tags;  // tagbody: (tag, body tail after it)
};

// A lexical environment as a Lisp value: what a macro's &environment
// variable holds, for macroexpand and get-setf-expansion.
struct EnvBox : Foreign {
  Env* env = nullptr;
  std::string print() const override { return "#<environment>"; }
  std::string type_name() const override { return "ENVIRONMENT"; }
};

// The Env* of an environment value (nil or anything else: the null environment).
inline Env* env_of(Value v) {
  if (v.kind != Kind::Foreign || v.p == nullptr) return nullptr;
  auto* box = dynamic_cast<EnvBox*>(v.foreign());
  return box ? box->env : nullptr;
}

// ---- parsed lambda lists (cached per lambda form) ---------------------------

struct LambdaInfo {
  struct Opt {
    Value var;  // symbol, or a destructuring pattern in macros
    Value init;
    Symbol* supplied = nullptr;
    bool has_init = false;
  };
  struct Key {
    Symbol* keyword;
    Value var;
    Value init;
    Symbol* supplied = nullptr;
    bool has_init = false;
  };
  std::vector<Value> required;  // symbols (or patterns in macros)
  std::vector<Opt> optional;
  Value rest;  // symbol, pattern or unset
  bool has_rest = false;
  bool has_key = false;
  bool allow_other_keys = false;
  std::vector<Key> keys;
  std::vector<Opt> aux;
  Symbol* whole = nullptr;
  Symbol* environment = nullptr;
  Value body;          // list of forms, after declarations and docstring
  Value declarations;  // list of declaration specifiers
  Value doc;           // string or nil
  std::vector<Symbol*> specials;  // (declare (special ...)) of the body
  std::vector<std::pair<Symbol*, Value>> type_decls;  // (declare (type ...)) of the body
  Value block_name;               // non-nil: body is wrapped in this block
  bool macro = false;
  int min_args = 0, max_args = 0;  // max -1: &rest/&key
};

// ---- exceptions -------------------------------------------------------------

struct LispError {
  Diagnostic diag;
  bool catchable = true;  // evaluation limits are not
  Value condition;        // a Condition value, made lazily
  // A consequence of an error already reported (a use of a name whose
  // definition or require failed): the top level does not report it again.
  bool consequence = false;
};

struct BlockExit {
  ExitPoint* target;
  Value value;
};
struct GoExit {
  ExitPoint* target;
  Value tag_tail;  // the tagbody body at the tag
};
struct ThrowExit {
  Value tag;
  Value value;
};

struct Module;

struct Limits {
  uint64_t steps = 20'000'000;
  uint32_t depth = 10'000;
  uint64_t heap_bytes = uint64_t(1) << 30;
  uint64_t ir_nodes = 100'000;  // per staged function (E-IR-LIMIT)
};

struct PrintOptions {
  bool escape = true;      // prin1 (true) or princ (false)
  bool upcase = false;     // symbols in upper case (as SBCL prints)
  bool readably = false;   // --readably
};

// The reader's features (`#+cuda`, `*features*`), upper-case: SEXPGPU, and
// CUDA or NCCL where this build has that device. Fixed when the binary is
// built, so a file reads the same on every machine the build runs on,
// whichever plugins load there (features.cpp).
std::vector<std::string> build_features();

class Interp {
 public:
  explicit Interp(SourceMap& sources, DiagnosticSink& sink);
  ~Interp();
  Interp(const Interp&) = delete;
  Interp& operator=(const Interp&) = delete;

  SourceMap& sources;
  DiagnosticSink& sink;  // warnings (W-*) and print output notes go here
  Limits limits;
  std::vector<std::string> features = build_features();
  std::string* output = nullptr;  // where print/format t write (stderr if null)

  // ---- symbols --------------------------------------------------------------
  Symbol* intern(std::string_view upper_name);
  Symbol* keyword(std::string_view upper_name);
  Symbol* qualified(std::string_view qualifier, std::string_view upper_name);
  Symbol* make_symbol(std::string name);  // uninterned
  std::vector<Symbol*> all_symbols() const;  // interned, sorted by name
  bool has_symbol(const std::string& name) const { return symbols_.count(name) != 0; }
  bool has_keyword(const std::string& name) const { return keywords_.count(name) != 0; }
  Value sym_kw(std::string_view upper_name) { return symval(keyword(upper_name)); }
  Value sym(std::string_view upper_name) { return symval(intern(upper_name)); }
  static Value symval(Symbol* s) { return Value::object(Kind::Symbol, s); }

  Value nil() const { return nil_; }
  Value t() const { return t_; }
  Value boolean(bool b) const { return b ? t_ : nil_; }
  Symbol* NIL;
  Symbol* T;

  // ---- allocation -----------------------------------------------------------
  template <typename T, typename... Args>
  T* alloc(Args&&... args) {
    T* o = new T(std::forward<Args>(args)...);
    o->next_alloc = heap_;
    heap_ = o;
    note_alloc(sizeof(T));
    return o;
  }
  void note_alloc(size_t bytes);
  // Bump allocation for trivially destructible data (frames, bindings).
  void* arena_alloc(size_t bytes) {
    bytes = (bytes + 15) & ~size_t(15);
    if (bytes > arena_left_) new_arena_chunk(bytes);
    void* p = arena_next_;
    arena_next_ += bytes;
    arena_left_ -= bytes;
    return p;
  }
  Env* make_env(Env* parent) {
    Env* e = new (arena_alloc(sizeof(Env))) Env();
    e->parent = parent;
    e->b.owner = this;
    return e;
  }
  uint64_t heap_bytes() const { return heap_bytes_; }
  void reset_heap_accounting() { heap_bytes_ = 0; }
  // Before allocating `count` elements of `elem_bytes` for a size the user
  // chose: E-EVAL-LIMIT instead of touching gigabytes first.
  void check_alloc(uint64_t count, size_t elem_bytes, std::string_view what) {
    uint64_t left = limits.heap_bytes > heap_bytes_ ? limits.heap_bytes - heap_bytes_ : 0;
    if (count > left / elem_bytes)
      fail("E-EVAL-LIMIT", std::string(what) + ": " + std::to_string(count) +
                               " elements exceed the compile-time heap (" +
                               std::to_string(limits.heap_bytes) + " bytes)",
           "raise it with --eval-heap BYTES if the file really needs more");
  }

  // Conses are most of the heap: they come from a bump arena, without the
  // per-object list (their destructor is trivial but for the vtable).
  Value cons(Value a, Value b) {
    if (cons_left_ == 0) new_cons_chunk();
    Cons* c = new (cons_next_) Cons();
    ++cons_next_;
    --cons_left_;
    c->car = a;
    c->cdr = b;
    return Value::object(Kind::Cons, c);
  }
  Value list(std::initializer_list<Value> xs);
  Value list_from(const std::vector<Value>& xs, Value tail);
  Value list_from(const std::vector<Value>& xs) { return list_from(xs, nil_); }
  Value make_string(std::u32string s);
  Value make_string_utf8(std::string_view s);
  Value make_vector(std::vector<Value> items);
  Value make_function(BuiltinFn fn, int min_args, int max_args, Value name);

  // ---- evaluation -----------------------------------------------------------
  Value eval(Value form, Env* env);
  Value eval_body(Value body, Env* env);  // implicit progn
  Value apply(Value fn, Value* args, int nargs);
  Value call(Value fn, std::initializer_list<Value> args);
  Value funcall_designator(Value f, Value* args, int nargs);  // symbol or function
  Value resolve_function(Value designator);  // #'f semantics, or E-UNBOUND

  // Evaluate one top-level form from a file, reporting its error (if any) to
  // the sink. Returns false when the form failed.
  bool eval_toplevel(Value form, Value* result = nullptr, const Span* where = nullptr);

  // ---- multiple values ------------------------------------------------------
  // The primary value is what eval returns; nvals/mvals describe all of them.
  int nvals = 1;
  std::vector<Value> mvals;  // valid when nvals != 1
  Value values(const std::vector<Value>& vs);
  Value values2(Value a, Value b);
  void single() { nvals = 1; }
  // All values of the last evaluation, given its primary value.
  std::vector<Value> last_values(Value primary) const;

  // ---- macros ---------------------------------------------------------------
  Value macroexpand_1(Value form, Env* env, bool* expanded);
  Value macro_env_arg = Value();  // the &environment of the expander being called
  Value macroexpand(Value form, Env* env, bool* expanded);
  Value macro_function(Symbol* s, Env* env);  // nil if not a macro

  // ---- names and cells ------------------------------------------------------
  // The scope evaluating now: the main file's (modules[0]), the prelude's
  // (prelude_module) or a required module's. The main file's and the
  // prelude's definitions are global, but for the main file's definitions
  // that replace a builtin or prelude one (W-SHADOW): those are the main
  // file's own, so the prelude's and modules' code keeps the original.
  Module* current_module = nullptr;
  Module* prelude_module = nullptr;
  Cell* fcell(Symbol* s);            // the cell a function name resolves to
  Cell* vcell(Symbol* s);            // the cell a global variable resolves to
  Cell* define_cell(Symbol* s);      // where a definition goes now
  // `form`, when given, is the call whose operator `s` is: a form a macro of
  // another scope made does not see the current scope's own definitions.
  Value lookup_function(Symbol* s, Env* env, bool* is_macro, const Cons* form = nullptr);
  // Marks the conses of `expansion` that are not the `call`'s own as
  // Cons::foreign: made by a macro of another scope, they resolve past the
  // current scope's own definitions, so the prelude's dolist still means
  // CL's car in a file that defines its own car.
  void mark_foreign_expansion(Value expansion, Value call);
  Value symbol_value(Symbol* s);
  void set_symbol_value(Symbol* s, Value v);
  Value setf_function(Symbol* s);  // nil if none

  // ---- builtin registration -------------------------------------------------
  void defbuiltin(const char* name, int min_args, int max_args, BuiltinFn fn, const char* doc);
  void defconstant(const char* name, Value v);
  // Gives the builtin NAME a second body for calls where any argument is a
  // staged tensor (tensors.md: generic + - * / = < max ... stage).
  void overload_for_tensors(const char* name, BuiltinFn fn);
  // The test of if (and so when, unless, cond, and, or): a staged :bool
  // tensor has no truth value at compile time (E-STAGED-BRANCH).
  bool test(Value v) {
    if (v.kind == Kind::Foreign) [[unlikely]]
      check_truth_value(v);
    return v.truthy();
  }
  void check_truth_value(Value v);
  // The state the layers above keep per interpreter (the stager, the
  // selection, the run file's registries), each found by its own type.
  Extensions extensions;

  // ---- errors ---------------------------------------------------------------
  [[noreturn]] void fail(const char* code, std::string message, std::string fix = "");
  [[noreturn]] void fail_at(Span span, const char* code, std::string message,
                            std::string fix = "");
  [[noreturn]] void type_error(Value v, std::string_view expected, std::string_view where);
  // A malformed program (a variable bound twice, ...): E-TYPE at the form,
  // signalled as CL's program-error.
  [[noreturn]] void program_error(std::string message);
  void warn(const char* code, std::string message, std::string fix = "");
  Span current_span() const;
  Span span_of(uint32_t id) const { return id < spans_.size() ? spans_[id] : Span{}; }
  uint32_t add_span(Span s) {
    spans_.push_back(s);
    return uint32_t(spans_.size() - 1);
  }
  Value make_condition(const LispError& e);
  const char* current_operator = nullptr;  // name of the builtin being applied

  // ---- printing -------------------------------------------------------------
  std::string print(Value v, PrintOptions o = {});
  // princ and prin1 as CL's: symbols in upper case (what values compare with).
  std::string princ(Value v) { return print(v, PrintOptions{false, true, false}); }
  std::string prin1(Value v) { return print(v, PrintOptions{true, true, false}); }
  // How messages name things: lower-case symbols, strings quoted.
  std::string show(Value v) { return print(v, PrintOptions{true, false, false}); }
  void write_output(std::string_view s);
  bool at_line_start = true;  // for ~& and fresh-line

  // ---- argument helpers for builtins ---------------------------------------
  int64_t arg_int(Value v, std::string_view where);
  double arg_number(Value v, std::string_view where);  // int or float, as double
  Symbol* arg_symbol(Value v, std::string_view where);
  String* arg_string(Value v, std::string_view where);
  std::u32string string_designator(Value v, std::string_view where);
  char32_t arg_char(Value v, std::string_view where);
  // A proper list's elements; E-TYPE for dotted or circular lists.
  std::vector<Value> list_items(Value list, std::string_view where);
  size_t list_length(Value list, std::string_view where);
  // Keyword arguments: fills `out` (same order as `names`) from args[start..n);
  // E-ARITY for an odd count or an unknown key (unless :allow-other-keys t).
  void parse_keys(Value* args, int n, int start, std::initializer_list<const char*> names,
                  Value* out, bool* present = nullptr);

  // ---- accounting -----------------------------------------------------------
  uint64_t steps = 0;        // of the current top-level form (the limit applies to each)
  uint64_t total_steps = 0;  // of every finished top-level form, for --stats
  uint32_t depth = 0;
  void count_step() {
    if (++steps > limits.steps) limit_reached_steps();
  }
  void check_native_stack();
  uint64_t gensym_counter = 1;  // gentemp's; gensym's is *gensym-counter*
  // The next value of *gensym-counter* (a special variable, as in CL).
  int64_t next_gensym_number();
  uint64_t random_state = 0x853c49e6748fea9bULL;

  // Per-module state, see modules.cpp.
  std::vector<std::unique_ptr<Module>> modules;
  std::vector<Module*> loading;  // the require stack, for cycles
  std::vector<std::string> module_path;
  std::string current_file;  // path of the file being evaluated
  std::string main_file;     // the main file's canonical path, once a require needs it
  Module* find_module_by_prefix(std::string_view prefix);

  std::string suggest_names(Symbol* s, Env* env, bool function);
  bool is_common_lisp_name(Symbol* s) const;

  // Expansion cache: a macro call form's expansion, valid until a macro is
  // (re)defined.
  std::unordered_map<Cons*, Value> expansion_cache;

  // Parsed lambda lists, keyed by the lambda form's cons.
  LambdaInfo* lambda_info(Value lambda_list, Value body, bool macro, Value block_name);

  // Dynamic state.
  struct SpecialBinding {
    Cell* cell;
    Value old;
    bool had_value;
  };
  std::vector<SpecialBinding> special_stack;
  void unbind_specials(size_t to);
  std::vector<Value> catch_tags;  // active catch tags, innermost last

  // Names whose defining top-level form failed, or that a failed require
  // would have imported: unbound errors on them are consequences, not new
  // problems, and are not reported again.
  std::vector<Symbol*> poisoned;
  bool is_poisoned(Symbol* s) const;

  // Well-known symbols, interned once.
  struct Syms {
    Symbol *quote, *function, *lambda, *setf, *declare, *special, *ignore, *ignorable, *type,
        *optional, *rest, *key, *aux, *body, *whole, *environment, *allow_other_keys,
        *kw_allow_other_keys, *quasiquote, *unquote, *unquote_splicing, *block, *error, *otherwise,
        *named_lambda, *go, *if_;
  } S;

  // Span bookkeeping of the form being evaluated (an index into spans_).
  uint32_t cur_span = 0;
  // Innermost span in a user's file: errors raised inside prelude code point
  // at the user's form that called it, not at the prelude.
  uint32_t user_span = 0;
  uint32_t last_prelude_file = 0;  // files 1..this are the prelude
  // Files of standard modules ("sexpgpu/nn"): library code as the prelude is,
  // so an error inside nn:linear points at the user's (nn:linear ...) form.
  std::vector<uint32_t> library_files;
  bool is_user_file(uint32_t file) const {
    if (file <= last_prelude_file) return false;
    for (uint32_t f : library_files)
      if (f == file) return false;
    return true;
  }
  Cons* cur_cons = nullptr;  // the form being evaluated (to find atoms' spans on errors)
  Span span_of_atom(Value atom);
  uint32_t atom_span = 0;  // span of the atom being evaluated, when known
  Value atom_form;         // the atom atom_span belongs to (stale spans are ignored)
  void note_atom(Value form, uint32_t span) {
    atom_form = form;
    atom_span = span;
  }

 private:
  Value nil_, t_;
  Obj* heap_ = nullptr;
  Cons* cons_next_ = nullptr;
  size_t cons_left_ = 0;
  std::vector<std::unique_ptr<unsigned char[]>> cons_chunks_;
  void new_cons_chunk();
  unsigned char* arena_next_ = nullptr;
  size_t arena_left_ = 0;
  std::vector<std::unique_ptr<unsigned char[]>> arena_chunks_;
  void new_arena_chunk(size_t at_least);
  uint64_t heap_bytes_ = 0;
  std::unordered_map<std::string, Symbol*> symbols_, keywords_, qualified_;
  // The lambda-list cache's key: the exact forms, compared in full (a hash
  // of them alone can collide, and a collision would run the wrong body).
  struct LambdaKey {
    const void* ll;
    const void* body;
    const void* block_name;
    bool macro;
    friend bool operator==(const LambdaKey&, const LambdaKey&) = default;
  };
  struct LambdaKeyHash {
    size_t operator()(const LambdaKey& k) const {
      size_t h = std::hash<const void*>()(k.ll);
      h = h * 1000003u ^ std::hash<const void*>()(k.body);
      h = h * 1000003u ^ std::hash<const void*>()(k.block_name);
      return h * 2 + (k.macro ? 1 : 0);
    }
  };
  std::unordered_map<LambdaKey, LambdaInfo*, LambdaKeyHash> lambda_cache_;
  std::vector<std::unique_ptr<LambdaInfo>> lambda_infos_;
  std::vector<Span> spans_;
  std::vector<Cons*> mark_stack_;  // mark_foreign_expansion's, kept to spare allocations
  char* stack_base_ = nullptr;
  [[noreturn]] void limit_reached_steps();
  void report_out_of_memory();

  Value eval_cons(Value form, Env* env);
  Value apply_closure(Function* f, Value* args, int nargs);
  friend struct SpecialForms;
};

// Type declarations, honoured: (declare (type T x ...)) and (declare (T x ...))
// for a type T that typep knows. Collected from one declaration specifier;
// checked against the values bound in a frame (E-TYPE naming the variable).
using TypeDecls = std::vector<std::pair<Symbol*, Value>>;
void collect_type_declarations(Interp& in, Value spec, TypeDecls& out);
void check_declared_types(Interp& in, Env* frame, const TypeDecls& decls);

// Binds `s` to `v` in `env`: dynamically when it is special (proclaimed, or
// declared in `specials`), lexically otherwise. Constants cannot be bound.
void bind_variable(Interp& in, Env* env, Symbol* s, Value v, const std::vector<Symbol*>& specials);

// RAII: dynamic bindings made in a scope are undone when it exits.
struct SpecialScope {
  Interp& in;
  size_t mark;
  explicit SpecialScope(Interp& i) : in(i), mark(i.special_stack.size()) {}
  ~SpecialScope() { in.unbind_specials(mark); }
};

// UTF-8 <-> UTF-32 for strings.
std::u32string utf8_to_u32(std::string_view s);
std::string u32_to_utf8(std::u32string_view s);
// Levenshtein distance, for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);
std::string upcase_ascii(std::string_view s);

// How messages name a function: "'name'" or "an anonymous function".
std::string describe_function(Interp& in, Function* f);

// Register every builtin family (each builtins_*.cpp has one of these).
void register_special_forms(Interp& in);
void register_core_builtins(Interp& in);
void register_number_builtins(Interp& in);
void register_list_builtins(Interp& in);
void register_sequence_builtins(Interp& in);
void register_string_builtins(Interp& in);
void register_hash_builtins(Interp& in);
void register_format_builtins(Interp& in);
void register_module_builtins(Interp& in);
void register_place_builtins(Interp& in);

// Structural equality (equal / equalp) and hashing (hash tables).
bool eql(Value a, Value b);
bool equal(Value a, Value b);
bool equalp(Value a, Value b);

// Load the prelude into `in` (reads, evaluates; its errors are fatal bugs and
// reported as such).
void load_prelude(Interp& in);

}  // namespace sexpgpu::lisp
