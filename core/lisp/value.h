// Lisp values. A Value is 16 bytes: a kind tag plus an immediate (integer,
// double, character) or a pointer to a heap object. NIL and T are symbols, as
// in CL. Heap objects are owned by the Heap of one Interp and live until it is
// destroyed: compile-time evaluation is short and bounded (the heap limit), so
// there is no collector.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "util/diagnostics.h"

namespace sexpgpu::lisp {

enum class Kind : uint8_t {
  Int,
  Float,
  Char,
  Symbol,
  Cons,
  String,
  Vector,
  Hash,
  Function,   // builtin or closure
  Condition,  // what handler-case binds
  Foreign,    // values owned by later stages (staged tensors)
};

struct Obj;
struct Symbol;
struct Cons;
struct String;
struct Vector;
struct HashTable;
struct Function;
struct Condition;
struct Foreign;

struct Value {
  Kind kind = Kind::Symbol;
  union {
    int64_t i;
    double f;
    char32_t ch;
    Obj* p;
  };
  Value() : p(nullptr) {}  // NB: a default Value is invalid; use nil()
  static Value integer(int64_t v) {
    Value x;
    x.kind = Kind::Int;
    x.i = v;
    return x;
  }
  static Value flt(double v) {
    Value x;
    x.kind = Kind::Float;
    x.f = v;
    return x;
  }
  static Value character(char32_t c) {
    Value x;
    x.kind = Kind::Char;
    x.i = 0;
    x.ch = c;
    return x;
  }
  static Value object(Kind k, Obj* o) {
    Value x;
    x.kind = k;
    x.p = o;
    return x;
  }

  bool is_int() const { return kind == Kind::Int; }
  bool is_float() const { return kind == Kind::Float; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  bool is_char() const { return kind == Kind::Char; }
  bool is_symbol() const { return kind == Kind::Symbol; }
  bool is_cons() const { return kind == Kind::Cons; }
  bool is_string() const { return kind == Kind::String; }
  bool is_vector() const { return kind == Kind::Vector; }
  bool is_hash() const { return kind == Kind::Hash; }
  bool is_function() const { return kind == Kind::Function; }
  inline bool is_nil() const;
  inline bool truthy() const { return !is_nil(); }
  bool is_list() const { return is_cons() || is_nil(); }

  Symbol* sym() const { return reinterpret_cast<Symbol*>(p); }
  Cons* cons() const { return reinterpret_cast<Cons*>(p); }
  String* str() const { return reinterpret_cast<String*>(p); }
  Vector* vec() const { return reinterpret_cast<Vector*>(p); }
  HashTable* hash() const { return reinterpret_cast<HashTable*>(p); }
  Function* fn() const { return reinterpret_cast<Function*>(p); }
  Condition* cond() const { return reinterpret_cast<Condition*>(p); }
  Foreign* foreign() const { return reinterpret_cast<Foreign*>(p); }

  // Identity (eq), which is also eql here: same kind and same bits. Numbers
  // and characters are eq when eql, as SBCL's fixnums and characters are;
  // 0.0 and -0.0 differ, as eql says.
  bool operator==(const Value& o) const {
    return kind == o.kind && i == o.i;
  }
  bool operator!=(const Value& o) const { return !(*this == o); }
};

struct Obj {
  Obj* next_alloc = nullptr;  // the heap's intrusive list
  virtual ~Obj() = default;
};

struct Module;

// What a name means in one scope: its global value, its function (or macro
// expander), its (setf NAME) function. The global cells live in the Symbol;
// module-private definitions in the module's table (see modules.cpp).
struct Cell {
  Value value;
  Value function;       // Kind::Function, or p == nullptr when unbound
  Value setf_function;  // (setf NAME) function, or p == nullptr
  bool has_value = false;
  bool special = false;  // proclaimed special (defvar/defparameter)
  bool constant = false;
  bool macro = false;  // `function` is a macro expander
  uint8_t origin = 0;  // who defined the function: 0 user, 1 builtin, 2 prelude
  uint8_t value_origin = 0;
  bool has_function() const { return function.p != nullptr; }
};

enum Origin : uint8_t { kUser = 0, kBuiltin = 1, kPrelude = 2 };

// Symbols are interned by name (one space of symbols, see language.md);
// keywords and module-qualified symbols (nn:linear) in their own tables.
struct Symbol : Obj {
  std::string name;       // as read (upper-cased), without package prefix
  std::string qualifier;  // "NN" for nn:linear; empty otherwise
  bool keyword = false;
  bool interned = true;       // false for make-symbol / gensym / #:foo
  int16_t special_form = -1;  // index into the special-form table, or -1
  Cell cell;                  // the global definitions
  Value plist;                // property list
  const char* doc = nullptr;  // builtin's doc line
};

// NIL is one statically allocated symbol shared by every interpreter, so
// `is_nil` is a pointer comparison.
extern Symbol g_nil_symbol;
inline bool Value::is_nil() const {
  return kind == Kind::Symbol && p == static_cast<Obj*>(&g_nil_symbol);
}

struct Cons : Obj {
  Value car, cdr;
  // Reader positions: the span of the list that starts at this cons, and the
  // span of its car (so an atom in a list can be pointed at). 0 = none.
  uint32_t span = 0;
  uint32_t car_span : 30 = 0;
  // Made by a macro defined in another scope than the one it expanded in
  // (its own forms, not the caller's spliced in): as a CL package keeps the
  // symbols a macro was written with, its operator does not see the
  // evaluating scope's own definitions (Interp::mark_foreign_expansion).
  uint32_t foreign : 1 = 0;
  uint32_t marking : 1 = 0;  // scratch of mark_foreign_expansion
};

struct String : Obj {
  std::u32string chars;
  int64_t fill_pointer = -1;  // -1: none
  bool adjustable = false;
  size_t size() const { return fill_pointer >= 0 ? size_t(fill_pointer) : chars.size(); }
};

struct Vector : Obj {
  std::vector<Value> items;
  int64_t fill_pointer = -1;
  bool adjustable = false;
  size_t size() const { return fill_pointer >= 0 ? size_t(fill_pointer) : items.size(); }
};

enum class HashTest : uint8_t { Eq, Eql, Equal, Equalp };

struct ValueHasher {
  HashTest test;
  size_t operator()(const Value& v) const;
};
struct ValueKeyEq {
  HashTest test;
  bool operator()(const Value& a, const Value& b) const;
};

// Insertion-ordered, as SBCL's tables iterate (maphash, loop being the
// hash-keys), so printed results match.
struct HashTable : Obj {
  HashTest test = HashTest::Eql;
  std::vector<std::pair<Value, Value>> entries;  // removed ones have dead=1
  std::vector<uint8_t> dead;
  std::unordered_map<Value, size_t, ValueHasher, ValueKeyEq> index;
  size_t live = 0;
  explicit HashTable(HashTest t)
      : test(t), index(8, ValueHasher{t}, ValueKeyEq{t}) {}
  Value* find(const Value& k);
  void put(const Value& k, const Value& v);
  bool remove(const Value& k);
  void clear();
};

class Interp;
struct Env;
struct LambdaInfo;

using BuiltinFn = Value (*)(Interp&, Value* args, int nargs);

struct Function : Obj {
  // Builtin: fn != nullptr. Closure: info != nullptr.
  BuiltinFn builtin = nullptr;
  // A builtin that also takes staged tensors (+, max, exp, ...): called
  // instead of `builtin` when any argument is a Foreign value.
  BuiltinFn tensor_builtin = nullptr;
  int min_args = 0, max_args = -1;  // -1: no maximum
  LambdaInfo* info = nullptr;
  Env* env = nullptr;
  Module* module = nullptr;  // the module the closure was made in
  Value name;                // symbol or (setf sym), or nil for anonymous
};

// A condition object, as handler-case binds it.
struct Condition : Obj {
  Value type;  // symbol: simple-error, type-error, division-by-zero, ...
  std::string code;
  std::string message;
  Value format_control, format_args;  // for simple conditions
  Span span;
};

// Values owned by later stages (staged tensors). They print themselves.
struct Foreign : Obj {
  virtual std::string print() const = 0;
  virtual std::string type_name() const = 0;
  // Why this value cannot be a truth value (if, when, and, not...), or
  // nullptr when it can (staged :bool tensors: E-STAGED-BRANCH).
  virtual const char* refuses_truth() const { return nullptr; }
};

}  // namespace sexpgpu::lisp
