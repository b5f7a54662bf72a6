// Core builtins: equality, types, function calling, multiple values, symbols,
// definitions (%defun, %defvar), errors and conditions, printing, eval.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "lisp/bit_vector.h"
#include "lisp/builtins.h"
#include "lisp/chars.h"
#include "lisp/modules.h"

namespace sexpgpu::lisp {

std::string op_name(const char* upper) {
  std::string s(upper);
  for (char& c : s) c = char(std::tolower((unsigned char)c));
  return s;
}

// ---- equality ------------------------------------------------------------------

bool eql(Value a, Value b) { return a == b; }

bool equal(Value a, Value b) {
  for (;;) {
    if (a == b) return true;
    if (a.kind != b.kind) return false;
    switch (a.kind) {
      case Kind::Cons:
        if (!equal(a.cons()->car, b.cons()->car)) return false;
        a = a.cons()->cdr;
        b = b.cons()->cdr;
        continue;
      case Kind::String: {
        String *x = a.str(), *y = b.str();
        return x->size() == y->size() && std::equal(x->chars.begin(), x->chars.begin() + long(x->size()), y->chars.begin());
      }
      case Kind::Vector: {  // equal compares bit vectors by their bits, as strings
        if (!is_bit_vector(a) || !is_bit_vector(b)) return false;
        Vector *x = a.vec(), *y = b.vec();
        if (x->size() != y->size()) return false;
        for (size_t i = 0; i < x->size(); ++i)
          if (x->items[i].i != y->items[i].i) return false;
        return true;
      }
      default:
        return false;
    }
  }
}

static char32_t fold(char32_t c) { return char_fold(c); }

bool equalp(Value a, Value b) {
  if (a.is_number() && b.is_number()) {
    double x = a.is_int() ? double(a.i) : a.f, y = b.is_int() ? double(b.i) : b.f;
    if (a.is_int() && b.is_int()) return a.i == b.i;
    return x == y;
  }
  if (a.is_char() && b.is_char()) return fold(a.ch) == fold(b.ch);
  if (a == b) return true;
  // Strings and vectors compare element-wise, across the two kinds.
  auto seq_len = [](Value v) -> long {
    if (v.is_string()) return long(v.str()->size());
    if (v.is_vector()) return long(v.vec()->size());
    return -1;
  };
  long la = seq_len(a), lb = seq_len(b);
  if (la >= 0 && lb >= 0) {
    if (la != lb) return false;
    for (long i = 0; i < la; ++i) {
      Value x = a.is_string() ? Value::character(a.str()->chars[size_t(i)]) : a.vec()->items[size_t(i)];
      Value y = b.is_string() ? Value::character(b.str()->chars[size_t(i)]) : b.vec()->items[size_t(i)];
      if (!equalp(x, y)) return false;
    }
    return true;
  }
  if (a.kind != b.kind) return false;
  if (a.is_cons()) {
    for (;;) {
      if (!equalp(a.cons()->car, b.cons()->car)) return false;
      a = a.cons()->cdr;
      b = b.cons()->cdr;
      if (!a.is_cons() || !b.is_cons()) return equalp(a, b);
    }
  }
  if (a.is_hash()) {
    HashTable *x = a.hash(), *y = b.hash();
    if (x->live != y->live || x->test != y->test) return false;
    for (size_t i = 0; i < x->entries.size(); ++i) {
      if (x->dead[i]) continue;
      Value* other = y->find(x->entries[i].first);
      if (!other || !equalp(*other, x->entries[i].second)) return false;
    }
    return true;
  }
  return false;
}

// ---- types --------------------------------------------------------------------------

static bool is_sym(Value v, const char* name) {
  return v.is_symbol() && !v.sym()->keyword && v.sym()->qualifier.empty() && v.sym()->name == name;
}

static bool in_range(Interp& in, Value v, Value spec, const char* what) {
  Value lo = car_of(spec), hi = car_of(cdr_of(spec));
  double x = in.arg_number(v, what);
  auto check = [&](Value bound, bool lower) {
    if (!spec.is_cons() || bound.p == nullptr) return true;
    if (is_sym(bound, "*")) return true;
    bool exclusive = bound.is_cons();
    Value b = exclusive ? car_of(bound) : bound;
    if (!b.is_number()) in.fail("E-TYPE", "bad bound " + in.show(bound) + " in the type specifier");
    double bv = b.is_int() ? double(b.i) : b.f;
    if (lower) return exclusive ? x > bv : x >= bv;
    return exclusive ? x < bv : x <= bv;
  };
  (void)lo;
  (void)hi;
  bool ok = check(car_of(spec), true);
  if (spec.is_cons() && cdr_of(spec).is_cons()) ok = ok && check(car_of(cdr_of(spec)), false);
  return ok;
}

static const char* kConditionParents[][2] = {
    {"SIMPLE-ERROR", "ERROR"},       {"TYPE-ERROR", "ERROR"},
    {"SIMPLE-TYPE-ERROR", "TYPE-ERROR"},
    {"ARITHMETIC-ERROR", "ERROR"},   {"DIVISION-BY-ZERO", "ARITHMETIC-ERROR"},
    {"FLOATING-POINT-OVERFLOW", "ARITHMETIC-ERROR"},
    {"CELL-ERROR", "ERROR"},         {"UNBOUND-VARIABLE", "CELL-ERROR"},
    {"UNDEFINED-FUNCTION", "CELL-ERROR"}, {"PROGRAM-ERROR", "ERROR"},
    {"CONTROL-ERROR", "ERROR"},      {"PARSE-ERROR", "ERROR"},
    {"ERROR", "SERIOUS-CONDITION"},  {"SERIOUS-CONDITION", "CONDITION"},
    {"WARNING", "CONDITION"},        {"SIMPLE-WARNING", "WARNING"},
    {"STYLE-WARNING", "WARNING"},    {"SIMPLE-CONDITION", "CONDITION"},
};

static bool condition_subtype(const std::string& type, const std::string& ancestor) {
  std::string t = type;
  for (int guard = 0; guard < 16; ++guard) {
    if (t == ancestor) return true;
    if (t == "SIMPLE-ERROR" && ancestor == "SIMPLE-CONDITION") return true;
    const char* parent = nullptr;
    for (auto& p : kConditionParents)
      if (t == p[0]) parent = p[1];
    if (!parent) return false;
    t = parent;
  }
  return false;
}

bool condition_typep(Interp& in, Value cond, Value type) {
  if (is_sym(type, "T")) return true;
  if (type.is_cons() && car_of(type).is_symbol()) {
    const std::string& op = car_of(type).sym()->name;
    if (op == "OR") {
      for (Value t = cdr_of(type); t.is_cons(); t = t.cons()->cdr)
        if (condition_typep(in, cond, t.cons()->car)) return true;
      return false;
    }
    if (op == "AND") {
      for (Value t = cdr_of(type); t.is_cons(); t = t.cons()->cdr)
        if (!condition_typep(in, cond, t.cons()->car)) return false;
      return true;
    }
    if (op == "NOT") return !condition_typep(in, cond, car_of(cdr_of(type)));
  }
  if (!type.is_symbol() || (!cond.is_symbol() && cond.kind != Kind::Condition)) return false;
  std::string ctype = cond.kind == Kind::Condition ? cond.cond()->type.sym()->name : "";
  return condition_subtype(ctype, type.sym()->name);
}

// Whether an array element type upgrades to bit (a bit vector's).
static bool bit_element_type(Value elem) {
  if (is_sym(elem, "BIT")) return true;
  if (!elem.is_cons() || !car_of(elem).is_symbol()) return false;
  const std::string& n = car_of(elem).sym()->name;
  Value a = car_of(cdr_of(elem)), b = car_of(cdr_of(cdr_of(elem)));
  return (n == "UNSIGNED-BYTE" && a.is_int() && a.i == 1) ||
         (n == "MOD" && a.is_int() && a.i == 2) ||
         (n == "INTEGER" && a.is_int() && a.i == 0 && b.is_int() && b.i == 1);
}

// Whether an array element type upgrades to character (a string's).
static bool character_type(Value elem) {
  if (elem.is_symbol()) {
    const std::string& n = elem.sym()->name;
    return n == "CHARACTER" || n == "BASE-CHAR" || n == "STANDARD-CHAR" || n == "EXTENDED-CHAR";
  }
  if (elem.is_cons() && car_of(elem).is_symbol() &&
      (car_of(elem).sym()->name == "MEMBER" || car_of(elem).sym()->name == "EQL")) {
    for (Value m = cdr_of(elem); m.is_cons(); m = m.cons()->cdr)
      if (!m.cons()->car.is_char()) return false;
    return cdr_of(elem).is_cons();
  }
  return false;
}

bool typep(Interp& in, Value v, Value type) {
  if (type.is_symbol()) {
    Symbol* s = type.sym();
    const std::string& n = s->name;
    if (n == "T") return true;
    if (n == "NIL") return false;
    if (v.kind == Kind::Condition) return condition_typep(in, v, type);
    switch (n[0]) {
      case 'A':
        if (n == "ATOM") return !v.is_cons();
        if (n == "ARRAY") return v.is_vector() || v.is_string();
        break;
      case 'B':
        if (n == "BOOLEAN") return v.is_symbol() && (v.sym() == in.NIL || v.sym() == in.T);
        if (n == "BIT") return v.is_int() && (v.i == 0 || v.i == 1);
        if (n == "BIT-VECTOR") return is_bit_vector(v);
        if (n == "BASE-CHAR") return v.is_char() && v.ch < 128;
        if (n == "BASE-STRING") return v.is_string();
        break;
      case 'C':
        if (n == "CONS") return v.is_cons();
        if (n == "CHARACTER") return v.is_char();
        if (n == "COMPILED-FUNCTION") return v.is_function();
        if (n == "COMPLEX") return false;
        break;
      case 'D':
        if (n == "DOUBLE-FLOAT") return v.is_float();
        break;
      case 'E':
        if (n == "EXTENDED-CHAR") return v.is_char() && v.ch >= 128;
        break;
      case 'F':
        if (n == "FIXNUM") return v.is_int();
        if (n == "FLOAT") return v.is_float();
        if (n == "FUNCTION") return v.is_function();
        break;
      case 'H':
        if (n == "HASH-TABLE") return v.is_hash();
        break;
      case 'I':
        if (n == "INTEGER") return v.is_int();
        break;
      case 'K':
        if (n == "KEYWORD") return v.is_symbol() && v.sym()->keyword;
        break;
      case 'L':
        if (n == "LIST") return v.is_list();
        if (n == "LONG-FLOAT") return v.is_float();
        break;
      case 'N':
        if (n == "NULL") return v.is_nil();
        if (n == "NUMBER") return v.is_number();
        break;
      case 'R':
        if (n == "REAL") return v.is_number();
        if (n == "RATIONAL") return v.is_int();
        if (n == "RATIO") return false;
        break;
      case 'S':
        if (n == "SYMBOL") return v.is_symbol();
        if (n == "STRING") return v.is_string();
        if (n == "SIMPLE-ARRAY")
          return v.is_string() ? v.str()->fill_pointer < 0 && !v.str()->adjustable
                               : v.is_vector() && v.vec()->fill_pointer < 0 && !v.vec()->adjustable;
        if (n == "SIMPLE-STRING" || n == "SIMPLE-BASE-STRING")
          return v.is_string() && v.str()->fill_pointer < 0 && !v.str()->adjustable;
        if (n == "SEQUENCE") return v.is_list() || v.is_vector() || v.is_string();
        if (n == "SIMPLE-VECTOR")
          return v.is_vector() && v.vec()->fill_pointer < 0 && !v.vec()->adjustable &&
                 !is_bit_vector(v);
        if (n == "SIMPLE-BIT-VECTOR")
          return is_bit_vector(v) && v.vec()->fill_pointer < 0 && !v.vec()->adjustable;
        if (n == "SINGLE-FLOAT" || n == "SHORT-FLOAT") return v.is_float();
        if (n == "STANDARD-CHAR")
          return v.is_char() && ((v.ch >= 32 && v.ch < 127) || v.ch == '\n');
        if (n == "SIGNED-BYTE") return v.is_int();
        if (n == "SERIOUS-CONDITION") return false;
        break;
      case 'T':
        if (n == "TENSOR") return v.kind == Kind::Foreign && v.foreign()->type_name() == "TENSOR";
        break;
      case 'U':
        if (n == "UNSIGNED-BYTE") return v.is_int() && v.i >= 0;
        break;
      case 'V':
        if (n == "VECTOR") return v.is_vector() || v.is_string();
        break;
    }
    if (condition_subtype(n, "CONDITION") || n == "CONDITION") return false;
    // An object without printed syntax is of the type type-of names (an
    // environment, for one).
    if (v.kind == Kind::Foreign && n == v.foreign()->type_name()) return true;
    in.fail("E-TYPE", "unknown type specifier " + in.show(type));
  }
  if (type.is_cons() && car_of(type).is_symbol()) {
    const std::string& op = car_of(type).sym()->name;
    Value args = cdr_of(type);
    if (op == "OR") {
      for (Value t = args; t.is_cons(); t = t.cons()->cdr)
        if (typep(in, v, t.cons()->car)) return true;
      return false;
    }
    if (op == "AND") {
      for (Value t = args; t.is_cons(); t = t.cons()->cdr)
        if (!typep(in, v, t.cons()->car)) return false;
      return true;
    }
    if (op == "NOT") return !typep(in, v, car_of(args));
    if (op == "MEMBER") {
      for (Value t = args; t.is_cons(); t = t.cons()->cdr)
        if (eql(v, t.cons()->car)) return true;
      return false;
    }
    if (op == "EQL") return eql(v, car_of(args));
    if (op == "SATISFIES") return in.funcall_designator(car_of(args), &v, 1).truthy();
    if (op == "INTEGER") return v.is_int() && in_range(in, v, args, "typep");
    if (op == "FLOAT" || op == "DOUBLE-FLOAT" || op == "SINGLE-FLOAT")
      return v.is_float() && in_range(in, v, args, "typep");
    if (op == "REAL") return v.is_number() && in_range(in, v, args, "typep");
    if (op == "MOD") return v.is_int() && v.i >= 0 && car_of(args).is_int() && v.i < car_of(args).i;
    if (op == "UNSIGNED-BYTE") {
      if (!v.is_int() || v.i < 0) return false;
      Value bits = car_of(args);
      return !bits.is_int() || bits.i >= 63 || v.i < (int64_t(1) << bits.i);
    }
    if (op == "SIGNED-BYTE") {
      if (!v.is_int()) return false;
      Value bits = car_of(args);
      if (!bits.is_int() || bits.i >= 64) return true;
      int64_t lim = int64_t(1) << (bits.i - 1);
      return v.i >= -lim && v.i < lim;
    }
    if (op == "CONS") {
      if (!v.is_cons()) return false;
      Value a = car_of(args), d = car_of(cdr_of(args));
      if (args.is_cons() && !is_sym(a, "*") && !typep(in, v.cons()->car, a)) return false;
      if (cdr_of(args).is_cons() && !is_sym(d, "*") && !typep(in, v.cons()->cdr, d)) return false;
      return true;
    }
    if (op == "STRING" || op == "SIMPLE-STRING" || op == "BASE-STRING" ||
        op == "SIMPLE-BASE-STRING" || op == "VECTOR" || op == "SIMPLE-VECTOR" || op == "ARRAY" ||
        op == "SIMPLE-ARRAY" || op == "BIT-VECTOR" || op == "SIMPLE-BIT-VECTOR") {
      bool simple = op.compare(0, 7, "SIMPLE-") == 0;
      if (!v.is_vector() && !v.is_string()) return false;
      if (simple && (v.is_string() ? v.str()->fill_pointer >= 0 || v.str()->adjustable
                                   : v.vec()->fill_pointer >= 0 || v.vec()->adjustable))
        return false;
      bool bits = op.find("BIT-VECTOR") != std::string::npos;
      bool size_first = op.find("STRING") != std::string::npos || op == "SIMPLE-VECTOR" || bits;
      if (bits ? !is_bit_vector(v) : size_first && op != "SIMPLE-VECTOR" && !v.is_string())
        return false;
      if (op == "SIMPLE-VECTOR" && (!v.is_vector() || is_bit_vector(v))) return false;
      if (!size_first && args.is_cons() && !is_sym(car_of(args), "*")) {
        // The element type, as arrays upgrade it: strings hold characters,
        // other vectors hold anything (t); no array here specialises more.
        Value elem = car_of(args);
        if (character_type(elem)     ? !v.is_string()
            : bit_element_type(elem) ? !is_bit_vector(v)
                                     : !is_sym(elem, "T") || !v.is_vector() || is_bit_vector(v))
          return false;
      }
      // The size: (string n), (simple-vector n), (vector type n); an array's
      // dimensions (array type (n)) or rank (array type 1).
      Value dims = size_first ? args : cdr_of(args);
      if (!dims.is_cons() || is_sym(car_of(dims), "*")) return true;
      Value size = car_of(dims);
      size_t length = v.is_string() ? v.str()->size() : v.vec()->size();
      if (op == "ARRAY" || op == "SIMPLE-ARRAY") {
        if (size.is_int()) return size.i == 1;
        if (!size.is_cons() || !cdr_of(size).is_nil()) return false;
        size = car_of(size);
        if (is_sym(size, "*")) return true;
      }
      return size.is_int() && int64_t(length) == size.i;
    }
    if (op == "VALUES")
      in.fail("E-TYPE", "typep: " + in.show(type) +
                            ": a values type describes the values of a form (the), not an object");
  }

  in.fail("E-TYPE", "unknown type specifier " + in.show(type));
}

// The standard atomic types of language.md as a DAG (child, parent).
static const char* kTypeParents[][2] = {
    {"BIT", "FIXNUM"},
    {"BIT", "UNSIGNED-BYTE"},
    {"FIXNUM", "INTEGER"},
    {"UNSIGNED-BYTE", "INTEGER"},
    {"SIGNED-BYTE", "INTEGER"},
    {"INTEGER", "RATIONAL"},
    {"RATIONAL", "REAL"},
    {"DOUBLE-FLOAT", "FLOAT"},
    {"SINGLE-FLOAT", "FLOAT"},
    {"FLOAT", "REAL"},
    {"REAL", "NUMBER"},
    {"NUMBER", "ATOM"},
    {"NULL", "SYMBOL"},
    {"NULL", "LIST"},
    {"BOOLEAN", "SYMBOL"},
    {"NULL", "BOOLEAN"},
    {"KEYWORD", "SYMBOL"},
    {"SYMBOL", "ATOM"},
    {"CONS", "LIST"},
    {"LIST", "SEQUENCE"},
    {"SIMPLE-STRING", "STRING"},
    {"BASE-STRING", "STRING"},
    {"SIMPLE-BASE-STRING", "BASE-STRING"},
    {"SIMPLE-BASE-STRING", "SIMPLE-STRING"},
    {"SIMPLE-STRING", "SIMPLE-ARRAY"},
    {"SIMPLE-VECTOR", "SIMPLE-ARRAY"},
    {"SIMPLE-ARRAY", "ARRAY"},
    {"BIT-VECTOR", "VECTOR"},
    {"SIMPLE-BIT-VECTOR", "BIT-VECTOR"},
    {"SIMPLE-BIT-VECTOR", "SIMPLE-ARRAY"},
    {"STRING", "VECTOR"},
    {"SIMPLE-VECTOR", "VECTOR"},
    {"VECTOR", "ARRAY"},
    {"VECTOR", "SEQUENCE"},
    {"ARRAY", "ATOM"},
    {"STANDARD-CHAR", "BASE-CHAR"},
    {"BASE-CHAR", "CHARACTER"},
    {"EXTENDED-CHAR", "CHARACTER"},
    {"CHARACTER", "ATOM"},
    {"HASH-TABLE", "ATOM"},
    {"COMPILED-FUNCTION", "FUNCTION"},
    {"FUNCTION", "ATOM"},
    {"SEQUENCE", "T"},
    {"ATOM", "T"},
};

// 1: a is a subtype of b; 0: it is not; -1: a type this table does not know.
static int atomic_subtype(const std::string& a, const std::string& b) {
  auto known = [](const std::string& n) {
    for (auto& p : kTypeParents)
      if (n == p[0] || n == p[1]) return true;
    return false;
  };
  if (!known(a) || !known(b)) return -1;
  std::vector<std::string> todo = {a};
  for (size_t i = 0; i < todo.size() && i < 64; ++i) {
    if (todo[i] == b) return 1;
    for (auto& p : kTypeParents)
      if (todo[i] == p[0]) todo.push_back(p[1]);
  }
  return 0;
}

static Value type_of(Interp& in, Value v) {
  switch (v.kind) {
    case Kind::Int:
      if (v.i == 0 || v.i == 1) return in.sym("BIT");
      return in.sym("FIXNUM");
    case Kind::Float: return in.sym("DOUBLE-FLOAT");
    case Kind::Char:
      if ((v.ch >= 32 && v.ch < 127) || v.ch == '\n') return in.sym("STANDARD-CHAR");
      return in.sym(v.ch < 128 ? "BASE-CHAR" : "EXTENDED-CHAR");
    case Kind::Symbol:
      if (v.is_nil()) return in.sym("NULL");
      if (v.sym() == in.T) return in.sym("BOOLEAN");
      if (v.sym()->keyword) return in.sym("KEYWORD");
      return in.sym("SYMBOL");
    case Kind::Cons: return in.sym("CONS");
    case Kind::String:
      if (v.str()->fill_pointer >= 0 || v.str()->adjustable)
        return in.list({in.sym("VECTOR"), in.sym("CHARACTER"), Value::integer(int64_t(v.str()->chars.size()))});
      return in.list({in.sym("SIMPLE-ARRAY"), in.sym("CHARACTER"),
                      in.list({Value::integer(int64_t(v.str()->size()))})});
    case Kind::Vector:
      if (is_bit_vector(v)) {
        if (v.vec()->fill_pointer >= 0 || v.vec()->adjustable)
          return in.list(
              {in.sym("VECTOR"), in.sym("BIT"), Value::integer(int64_t(v.vec()->items.size()))});
        return in.list({in.sym("SIMPLE-BIT-VECTOR"), Value::integer(int64_t(v.vec()->size()))});
      }
      if (v.vec()->fill_pointer >= 0 || v.vec()->adjustable)
        return in.list({in.sym("VECTOR"), in.sym("T"), Value::integer(int64_t(v.vec()->items.size()))});
      return in.list({in.sym("SIMPLE-VECTOR"), Value::integer(int64_t(v.vec()->size()))});
    case Kind::Hash: return in.sym("HASH-TABLE");
    case Kind::Function: return in.sym("COMPILED-FUNCTION");
    case Kind::Condition: return v.cond()->type;
    case Kind::Foreign: return in.sym(v.foreign()->type_name());
  }
  return in.sym("T");
}

// ---- declarations -------------------------------------------------------------------

void collect_type_declarations(Interp& in, Value spec, TypeDecls& out) {
  if (!spec.is_cons() || !car_of(spec).is_symbol()) return;
  Symbol* head = car_of(spec).sym();
  Value type, vars;
  if (head->name == "TYPE") {
    type = car_of(cdr_of(spec));
    vars = cdr_of(cdr_of(spec));
  } else if (atomic_subtype(head->name, "T") == 1 || head->name == "T") {
    type = car_of(spec);  // (declare (fixnum x)): the shorthand for a known type
    vars = cdr_of(spec);
  } else {
    return;  // ignore, ignorable, special, optimize, inline, ...
  }
  for (Value v = vars; v.is_cons(); v = v.cons()->cdr)
    if (car_of(v).is_symbol()) out.emplace_back(car_of(v).sym(), type);
  (void)in;
}

void check_declared_types(Interp& in, Env* frame, const TypeDecls& decls) {
  for (auto [s, type] : decls) {
    // (function (args) values) declares a function; typep takes no such type.
    if (type.is_cons() && is_sym(car_of(type), "FUNCTION")) type = car_of(type);
    for (const Binding& b : frame->b)
      if (b.sym == s && (b.ns == NS::Var || b.ns == NS::SpecialVar) && !typep(in, b.val, type))
        in.fail("E-TYPE", "'" + in.show(Interp::symval(s)) + "' is declared " + in.show(type) +
                              " but is " + in.show(b.val));
  }
}

// ---- definitions -------------------------------------------------------------------

static bool in_user_file(Interp& in) { return in.current_file.size() && in.current_file != "<prelude>"; }

void define_function(Interp& in, Symbol* s, Value fn, bool macro) {
  if (s->special_form >= 0 && !macro)
    in.fail("E-TYPE", "cannot define '" + in.show(Interp::symval(s)) + "': it is a special form");
  auto imported = in.current_module->imported.find(s);
  if (imported != in.current_module->imported.end()) {
    in.warn("W-SHADOW", "'" + in.show(Interp::symval(s)) + "' redefines the name imported from module '" +
                            imported->second->name + "' with :only",
            "choose another name, or drop it from :only");
    in.current_module->imported.erase(imported);
  }
  Cell* c = in.define_cell(s);
  bool from_prelude = in.current_file == "<prelude>";
  Module* main = in.modules[0].get();
  if (in_user_file(in) && in.current_module == main) {
    // A replacement of a builtin or prelude definition is the main file's own
    // (language.md): the prelude's and the modules' code keeps the original.
    auto own = main->cells.find(s);
    if (own != main->cells.end()) {
      c = &own->second;
    } else if (s->cell.origin != kUser && s->cell.has_function()) {
      in.warn("W-SHADOW",
              "'" + in.show(Interp::symval(s)) + "' redefines a " +
                  (s->cell.origin == kBuiltin ? "builtin" : "prelude") + " definition",
              "choose another name; this file uses the new one from here on, while the "
              "prelude and modules keep the original");
      c = &main->cells[s];
    }
  }
  c->function = fn;
  c->macro = macro;
  c->origin = from_prelude ? kPrelude : kUser;
  if (macro) in.expansion_cache.clear();
}

// ---- errors ----------------------------------------------------------------------------

static std::string format_message(Interp& in, Value* args, int nargs) {
  if (nargs == 0) return "";
  if (args[0].is_string())
    return lisp_format(in, args[0].str()->chars.substr(0, args[0].str()->size()), args + 1, nargs - 1);
  return in.princ(args[0]);
}

[[noreturn]] static void signal_error(Interp& in, Value* args, int nargs) {
  LispError e;
  e.diag.span = in.current_span();
  Condition* c = in.alloc<Condition>();
  c->format_control = in.nil();
  c->format_args = in.nil();
  c->span = e.diag.span;
  if (nargs > 0 && args[0].kind == Kind::Condition) {
    Condition* orig = args[0].cond();
    e.diag.code = orig->code.empty() ? "E-USER" : orig->code;
    e.diag.message = orig->message;
    e.condition = args[0];
    throw e;
  }
  if (nargs > 0 && args[0].is_symbol() && !args[0].is_nil()) {
    // (error 'type-error :datum x :expected-type y) and friends.
    c->type = args[0];
    const std::string& t = args[0].sym()->name;
    e.diag.code = t == "TYPE-ERROR" || t == "SIMPLE-TYPE-ERROR" ? "E-TYPE"
                  : t == "DIVISION-BY-ZERO"                     ? "E-DIV-ZERO"
                                                                 : "E-USER";
    std::string msg = op_name(t.c_str());
    for (int i = 1; i + 1 < nargs; i += 2)
      if (args[i].is_symbol() && args[i].sym()->name == "FORMAT-CONTROL" && args[i + 1].is_string()) {
        std::vector<Value> fargs;
        for (int j = 1; j + 1 < nargs; j += 2)
          if (args[j].is_symbol() && args[j].sym()->name == "FORMAT-ARGUMENTS")
            fargs = in.list_items(args[j + 1], "error");
        String* control = args[i + 1].str();
        msg = lisp_format(in, control->chars.substr(0, control->size()), fargs.data(), int(fargs.size()));
        c->format_control = args[i + 1];
        c->format_args = in.list_from(fargs);
      }
    c->message = msg;
    c->code = e.diag.code;
    e.diag.message = msg;
    e.condition = Value::object(Kind::Condition, c);
    throw e;
  }
  c->type = in.sym("SIMPLE-ERROR");
  c->code = "E-USER";
  c->message = format_message(in, args, nargs);
  if (nargs > 0 && args[0].is_string()) {
    c->format_control = args[0];
    std::vector<Value> rest(args + 1, args + nargs);
    c->format_args = in.list_from(rest);
  }
  e.diag.code = "E-USER";
  e.diag.message = c->message;
  e.condition = Value::object(Kind::Condition, c);
  throw e;
}

// ---- registration ------------------------------------------------------------------------

void define_features_variable(Interp& in);  // features.cpp: *features*

void register_core_builtins(Interp& in) {
  in.defconstant("MOST-POSITIVE-FIXNUM", Value::integer(INT64_MAX));
  in.defconstant("MOST-NEGATIVE-FIXNUM", Value::integer(INT64_MIN));
  in.defconstant("PI", Value::flt(M_PI));
  in.defconstant("LAMBDA-LIST-KEYWORDS",
                 in.list({in.sym("&OPTIONAL"), in.sym("&REST"), in.sym("&KEY"), in.sym("&AUX"),
                          in.sym("&BODY"), in.sym("&WHOLE"), in.sym("&ENVIRONMENT"),
                          in.sym("&ALLOW-OTHER-KEYS")}));
  in.defconstant("CALL-ARGUMENTS-LIMIT", Value::integer(4611686018427387903LL));
  in.defconstant("LAMBDA-PARAMETERS-LIMIT", Value::integer(4611686018427387903LL));
  in.defconstant("MULTIPLE-VALUES-LIMIT", Value::integer(1073741824));

  SG_BUILTIN(in, "EQ", 2, 2, "identical objects", { return in.boolean(args[0] == args[1]); });
  SG_BUILTIN(in, "EQL", 2, 2, "eq, or same number or character",
             { return in.boolean(eql(args[0], args[1])); });
  SG_BUILTIN(in, "EQUAL", 2, 2, "structural equality (conses, strings)",
             { return in.boolean(equal(args[0], args[1])); });
  SG_BUILTIN(in, "EQUALP", 2, 2, "equal ignoring case and number type, into vectors and tables",
             { return in.boolean(equalp(args[0], args[1])); });
  SG_BUILTIN(in, "NOT", 1, 1, "t if the argument is nil", { return in.boolean(!in.test(args[0])); });
  SG_BUILTIN(in, "NULL", 1, 1, "t if the argument is nil", { return in.boolean(args[0].is_nil()); });
  SG_BUILTIN(in, "IDENTITY", 1, 1, "its argument", { return args[0]; });
  SG_BUILTIN(in, "VALUES", 0, -1, "return several values", {
    return in.values(std::vector<Value>(args, args + nargs));
  });
  SG_BUILTIN(in, "VALUES-LIST", 1, 1, "the elements of a list as values",
             { return in.values(in.list_items(args[0], "values-list")); });
  SG_BUILTIN(in, "FUNCALL", 1, -1, "call a function with arguments", {
    Value f = args[0];
    return in.funcall_designator(f, args + 1, nargs - 1);
  });
  SG_BUILTIN(in, "APPLY", 2, -1, "call a function with arguments, the last a list", {
    std::vector<Value> a(args + 1, args + nargs - 1);
    for (Value x : in.list_items(args[nargs - 1], "apply")) a.push_back(x);
    return in.funcall_designator(args[0], a.data(), int(a.size()));
  });
  SG_BUILTIN(in, "EVAL", 1, 1, "evaluate a form (not a string) in the null environment",
             { return in.eval(args[0], nullptr); });
  SG_BUILTIN(in, "TYPEP", 2, 3, "is the object of the type", {
    return in.boolean(typep(in, args[0], args[1]));
  });
  SG_BUILTIN(in, "TYPE-OF", 1, 1, "a type the object belongs to", { return type_of(in, args[0]); });
  SG_BUILTIN(in, "SUBTYPEP", 2, 3, "is the first type a subtype of the second; second value: is that known", {
    Value a = args[0], b = args[1];
    if (equal(a, b) || is_sym(b, "T") || is_sym(a, "NIL")) return in.values2(in.t(), in.t());
    if (a.is_symbol() && b.is_symbol()) {
      if (condition_subtype(a.sym()->name, b.sym()->name)) return in.values2(in.t(), in.t());
      int known = atomic_subtype(a.sym()->name, b.sym()->name);
      if (known >= 0) return in.values2(in.boolean(known == 1), in.t());
    }
    return in.values2(in.nil(), in.nil());
  });
  SG_BUILTIN(in, "FUNCTIONP", 1, 1, "is it a function", { return in.boolean(args[0].is_function()); });
  SG_BUILTIN(in, "SYMBOLP", 1, 1, "is it a symbol", { return in.boolean(args[0].is_symbol()); });
  SG_BUILTIN(in, "KEYWORDP", 1, 1, "is it a keyword",
             { return in.boolean(args[0].is_symbol() && args[0].sym()->keyword); });
  SG_BUILTIN(in, "ATOM", 1, 1, "not a cons", { return in.boolean(!args[0].is_cons()); });
  SG_BUILTIN(in, "CONSP", 1, 1, "is it a cons", { return in.boolean(args[0].is_cons()); });
  SG_BUILTIN(in, "LISTP", 1, 1, "a cons or nil", { return in.boolean(args[0].is_list()); });

  // Symbols.
  SG_BUILTIN(in, "SYMBOL-NAME", 1, 1, "the name of a symbol",
             { return in.make_string_utf8(in.arg_symbol(args[0], "symbol-name")->name); });
  SG_BUILTIN(in, "SYMBOL-VALUE", 1, 1, "the global (dynamic) value of a symbol",
             { return in.symbol_value(in.arg_symbol(args[0], "symbol-value")); });
  SG_BUILTIN(in, "SYMBOL-FUNCTION", 1, 1, "the global function of a symbol", {
    Symbol* s = in.arg_symbol(args[0], "symbol-function");
    Cell* c = in.fcell(s);
    if (!c->has_function()) in.fail("E-UNBOUND", "undefined function '" + in.show(args[0]) + "'");
    return c->function;
  });
  SG_BUILTIN(in, "FDEFINITION", 1, 1, "the global function named", {
    if (args[0].is_cons()) {
      Value f = in.setf_function(in.arg_symbol(car_of(cdr_of(args[0])), "fdefinition"));
      if (f.is_nil()) in.fail("E-UNBOUND", "undefined function '" + in.show(args[0]) + "'");
      return f;
    }
    Cell* c = in.fcell(in.arg_symbol(args[0], "fdefinition"));
    if (!c->has_function()) in.fail("E-UNBOUND", "undefined function '" + in.show(args[0]) + "'");
    return c->function;
  });
  SG_BUILTIN(in, "SYMBOL-PLIST", 1, 1, "the property list of a symbol",
             { return in.arg_symbol(args[0], "symbol-plist")->plist; });
  SG_BUILTIN(in, "GET", 2, 3, "a symbol's property", {
    Symbol* s = in.arg_symbol(args[0], "get");
    for (Value p = s->plist; p.is_cons() && cdr_of(p).is_cons(); p = cdr_of(cdr_of(p)))
      if (car_of(p) == args[1]) return car_of(cdr_of(p));
    return nargs > 2 ? args[2] : in.nil();
  });
  SG_BUILTIN(in, "REMPROP", 2, 2, "remove a symbol's property", {
    Symbol* s = in.arg_symbol(args[0], "remprop");
    Value prev = in.nil();
    for (Value p = s->plist; p.is_cons() && cdr_of(p).is_cons(); p = cdr_of(cdr_of(p))) {
      if (car_of(p) == args[1]) {
        if (prev.is_nil()) s->plist = cdr_of(cdr_of(p));
        else cdr_of(prev).cons()->cdr = cdr_of(cdr_of(p));
        return p;  // the plist tail from the removed indicator, as SBCL returns
      }
      prev = p;
    }
    return in.nil();
  });
  SG_BUILTIN(in, "BOUNDP", 1, 1, "does the symbol have a global value",
             { return in.boolean(in.vcell(in.arg_symbol(args[0], "boundp"))->has_value); });
  SG_BUILTIN(in, "FBOUNDP", 1, 1, "does the name have a function, macro or special form", {
    if (args[0].is_cons()) {  // exactly (setf symbol)
      Value x = args[0];
      if (!is_sym(car_of(x), "SETF") || !cdr_of(x).is_cons() || !car_of(cdr_of(x)).is_symbol() ||
          !cdr_of(cdr_of(x)).is_nil())
        in.type_error(x, "a function name (a symbol or (setf symbol))", "fboundp");
      return in.boolean(!in.setf_function(car_of(cdr_of(x)).sym()).is_nil());
    }
    Symbol* s = in.arg_symbol(args[0], "fboundp");
    return in.boolean(in.fcell(s)->has_function() || s->special_form >= 0);
  });
  SG_BUILTIN(in, "MAKUNBOUND", 1, 1, "remove a symbol's global value", {
    Cell* c = in.vcell(in.arg_symbol(args[0], "makunbound"));
    if (c->constant) in.fail("E-TYPE", "cannot unbind the constant " + in.show(args[0]));
    c->has_value = false;
    return args[0];
  });
  SG_BUILTIN(in, "FMAKUNBOUND", 1, 1, "remove a global function", {
    Cell* c = in.fcell(in.arg_symbol(args[0], "fmakunbound"));
    c->function = Value();
    c->macro = false;
    in.expansion_cache.clear();
    return args[0];
  });
  SG_BUILTIN(in, "SPECIAL-OPERATOR-P", 1, 1, "is the symbol a special form",
             { return in.boolean(in.arg_symbol(args[0], "special-operator-p")->special_form >= 0); });
  SG_BUILTIN(in, "MACRO-FUNCTION", 1, 2, "the expander of a global macro, or nil", {
    Cell* c = in.fcell(in.arg_symbol(args[0], "macro-function"));
    return c->macro ? c->function : in.nil();
  });
  SG_BUILTIN(in, "MAKE-SYMBOL", 1, 1, "a fresh uninterned symbol",
             { return Interp::symval(in.make_symbol(u32_to_utf8(in.arg_string(args[0], "make-symbol")->chars))); });
  SG_BUILTIN(in, "INTERN", 1, 2, "the symbol with this name; second value :internal if it existed, else nil", {
    std::string name = u32_to_utf8(in.arg_string(args[0], "intern")->chars);
    bool to_keyword = nargs > 1 && ((args[1].is_symbol() && args[1].sym()->name == "KEYWORD") ||
                                    (args[1].is_string() && u32_to_utf8(args[1].str()->chars) == "KEYWORD"));
    if (to_keyword) {
      bool existed = in.has_keyword(name);
      return in.values2(Interp::symval(in.keyword(name)), existed ? in.sym_kw("EXTERNAL") : in.nil());
    }
    bool existed = in.has_symbol(name);
    return in.values2(in.sym(name), existed ? in.sym_kw("INTERNAL") : in.nil());
  });
  {
    Cell& counter = in.intern("*GENSYM-COUNTER*")->cell;
    counter.value = Value::integer(1);
    counter.has_value = true;
    counter.special = true;
    counter.value_origin = kBuiltin;
  }
  define_features_variable(in);
  SG_BUILTIN(in, "GENSYM", 0, 1, "a fresh uninterned symbol G<n>, n from *gensym-counter*", {
    std::string prefix = "G";
    if (nargs > 0 && args[0].is_string()) {
      prefix = u32_to_utf8(args[0].str()->chars);
    } else if (nargs > 0 && args[0].is_int() && args[0].i >= 0) {
      return Interp::symval(in.make_symbol(prefix + std::to_string(args[0].i)));
    } else if (nargs > 0) {
      in.type_error(args[0], "a string or a non-negative integer", "gensym");
    }
    return Interp::symval(in.make_symbol(prefix + std::to_string(in.next_gensym_number())));
  });
  SG_BUILTIN(in, "GENTEMP", 0, 1, "a fresh interned symbol T<n>", {
    std::string prefix = "T";
    if (nargs > 0 && args[0].is_string()) prefix = u32_to_utf8(args[0].str()->chars);
    for (;;) {
      std::string name = prefix + std::to_string(in.gensym_counter++);
      Symbol* s = in.intern(name);
      if (!s->cell.has_value && !s->cell.has_function()) return Interp::symval(s);
    }
  });
  SG_BUILTIN(in, "%UNSUPPORTED", 2, -1,
             "E-UNSUPPORTED with a message and a fix (the prelude's refusals; the other arguments "
             "are evaluated and ignored)",
             {
               if (!args[0].is_string() || !args[1].is_string())
                 in.type_error(args[0], "a message string and a fix string", "%unsupported");
               in.fail("E-UNSUPPORTED", u32_to_utf8(args[0].str()->chars),
                       u32_to_utf8(args[1].str()->chars));
             });
  SG_BUILTIN(in, "SYMBOL-PACKAGE", 1, 1, "unsupported: there are no packages", {
    in.fail("E-UNSUPPORTED", "symbol-package: SexpGPU has modules, not packages");
  });

  // Definitions, as the prelude's defun/defvar/defparameter/defconstant expand.
  SG_BUILTIN(in, "%DEFUN", 2, 2, "define a global function (defun expands to this)", {
    Value name = args[0];
    if (name.is_cons()) {  // (setf name)
      Symbol* s = in.arg_symbol(car_of(cdr_of(name)), "defun");
      in.define_cell(s)->setf_function = args[1];
      return name;
    }
    define_function(in, in.arg_symbol(name, "defun"), args[1], false);
    return name;
  });
  SG_BUILTIN(in, "%SET-MACRO-FUNCTION", 2, 2, "make NAME a macro with this expander", {
    define_function(in, in.arg_symbol(args[0], "macro-function"), args[1], true);
    return args[1];
  });
  SG_BUILTIN(in, "%DEFVAR", 2, 4, "proclaim special; set the value if unbound (or always)", {
    Symbol* s = in.arg_symbol(args[0], "defvar");
    Cell* c = in.define_cell(s);
    if (c->constant) in.fail("E-TYPE", "cannot redefine the constant '" + in.show(args[0]) + "'");
    c->special = true;
    bool always = nargs > 2 && args[2].truthy();
    bool has_init = nargs > 3 ? args[3].truthy() : true;
    if (has_init && (always || !c->has_value)) {
      c->value = args[1];
      c->has_value = true;
    }
    return args[0];
  });
  SG_BUILTIN(in, "%DEFCONSTANT", 2, 2, "define a constant", {
    Symbol* s = in.arg_symbol(args[0], "defconstant");
    Cell* c = in.define_cell(s);
    if (c->constant && !eql(c->value, args[1]) && !equal(c->value, args[1]))
      in.fail("E-TYPE", "defconstant: '" + in.show(args[0]) + "' is already a constant with another value");
    if (s->keyword || s == in.NIL || s == in.T) in.fail("E-TYPE", "cannot redefine " + in.show(args[0]));
    c->value = args[1];
    c->has_value = true;
    c->constant = true;
    return args[0];
  });
  SG_BUILTIN(in, "PROCLAIM", 1, 1, "(proclaim '(special x ...)) makes variables special", {
    Value d = args[0];
    if (car_of(d).is_symbol() && car_of(d).sym() == in.S.special)
      for (Value v = cdr_of(d); v.is_cons(); v = v.cons()->cdr)
        in.define_cell(in.arg_symbol(v.cons()->car, "proclaim"))->special = true;
    return in.nil();
  });

  // Errors and conditions.
  SG_BUILTIN(in, "ERROR", 1, -1, "signal an error (E-USER) with a format message", {
    signal_error(in, args, nargs);
  });
  SG_BUILTIN(in, "CERROR", 2, -1, "as error (there are no restarts)", {
    signal_error(in, args + 1, nargs - 1);
  });
  SG_BUILTIN(in, "SIGNAL", 1, -1, "signal a condition: an error condition is raised, others return nil", {
    if (args[0].is_symbol() && condition_subtype(args[0].sym()->name, "ERROR")) signal_error(in, args, nargs);
    if (args[0].kind == Kind::Condition && condition_subtype(args[0].cond()->type.sym()->name, "ERROR"))
      signal_error(in, args, nargs);
    return in.nil();
  });
  SG_BUILTIN(in, "WARN", 1, -1, "report W-USER with a format message; returns nil", {
    // A condition type or object must be a warning's, as in CL.
    if (args[0].is_symbol() && !condition_subtype(args[0].sym()->name, "WARNING"))
      in.type_error(args[0], "a warning type, a warning or a format control", "warn");
    if (args[0].kind == Kind::Condition &&
        !condition_subtype(args[0].cond()->type.sym()->name, "WARNING"))
      in.type_error(args[0], "a warning type, a warning or a format control", "warn");
    in.warn("W-USER", format_message(in, args, nargs));
    return in.nil();
  });
  SG_BUILTIN(in, "MAKE-CONDITION", 1, -1, "a condition object of the given type", {
    Condition* c = in.alloc<Condition>();
    c->type = args[0];
    c->code = "E-USER";
    c->format_control = in.nil();
    c->format_args = in.nil();
    c->message = op_name(in.arg_symbol(args[0], "make-condition")->name.c_str());
    for (int i = 1; i + 1 < nargs; i += 2)
      if (args[i].is_symbol() && args[i].sym()->name == "FORMAT-CONTROL") {
        c->format_control = args[i + 1];
        for (int j = 1; j + 1 < nargs; j += 2)
          if (args[j].is_symbol() && args[j].sym()->name == "FORMAT-ARGUMENTS") c->format_args = args[j + 1];
        if (c->format_control.is_string()) {
          std::vector<Value> fa = in.list_items(c->format_args, "make-condition");
          c->message = lisp_format(in, c->format_control.str()->chars, fa.data(), int(fa.size()));
        }
      }
    return Value::object(Kind::Condition, c);
  });
  SG_BUILTIN(in, "SIMPLE-CONDITION-FORMAT-CONTROL", 1, 1, "the format control of a condition", {
    if (args[0].kind != Kind::Condition) in.type_error(args[0], "a condition", "simple-condition-format-control");
    Condition* c = args[0].cond();
    return c->format_control.is_nil() ? in.make_string_utf8(c->message) : c->format_control;
  });
  SG_BUILTIN(in, "SIMPLE-CONDITION-FORMAT-ARGUMENTS", 1, 1, "the format arguments of a condition", {
    if (args[0].kind != Kind::Condition) in.type_error(args[0], "a condition", "simple-condition-format-arguments");
    return args[0].cond()->format_args;
  });
  SG_BUILTIN(in, "%CONDITION-CODE", 1, 1, "the diagnostic code a condition was raised with", {
    if (args[0].kind != Kind::Condition) in.type_error(args[0], "a condition", "condition-code");
    return in.make_string_utf8(args[0].cond()->code);
  });

  // Output: print and friends write to standard error (or the captured output).
  SG_BUILTIN(in, "PRIN1", 1, 2, "print readably; returns the object", {
    in.write_output(in.prin1(args[0]));
    return args[0];
  });
  SG_BUILTIN(in, "PRINC", 1, 2, "print for people; returns the object", {
    in.write_output(in.princ(args[0]));
    return args[0];
  });
  SG_BUILTIN(in, "PRINT", 1, 2, "newline, prin1, space; returns the object", {
    in.write_output("\n" + in.prin1(args[0]) + " ");
    return args[0];
  });
  SG_BUILTIN(in, "PPRINT", 1, 2, "newline and prin1; returns no values", {
    in.write_output("\n" + in.prin1(args[0]));
    return in.values({});
  });
  SG_BUILTIN(in, "WRITE", 1, -1, "prin1 (keyword options are accepted and ignored)", {
    in.write_output(in.prin1(args[0]));
    return args[0];
  });
  SG_BUILTIN(in, "TERPRI", 0, 1, "write a newline", {
    in.write_output("\n");
    return in.nil();
  });
  SG_BUILTIN(in, "FRESH-LINE", 0, 1, "write a newline unless at the start of a line", {
    if (in.at_line_start) return in.nil();
    in.write_output("\n");
    return in.t();
  });
  SG_BUILTIN(in, "WRITE-STRING", 1, 2, "write a string", {
    in.write_output(u32_to_utf8(in.arg_string(args[0], "write-string")->chars));
    return args[0];
  });
  SG_BUILTIN(in, "WRITE-LINE", 1, 2, "write a string and a newline", {
    in.write_output(u32_to_utf8(in.arg_string(args[0], "write-line")->chars) + "\n");
    return args[0];
  });
  SG_BUILTIN(in, "WRITE-CHAR", 1, 2, "write a character", {
    in.write_output(u32_to_utf8(std::u32string(1, in.arg_char(args[0], "write-char"))));
    return args[0];
  });
  SG_BUILTIN(in, "PRIN1-TO-STRING", 1, 1, "prin1 into a string", { return in.make_string_utf8(in.prin1(args[0])); });
  SG_BUILTIN(in, "PRINC-TO-STRING", 1, 1, "princ into a string", { return in.make_string_utf8(in.princ(args[0])); });
  SG_BUILTIN(in, "WRITE-TO-STRING", 1, -1, "prin1 into a string (options checked, then ignored)", {
    Value opts[16];
    in.parse_keys(
        args, nargs, 1,
        {"ARRAY", "BASE", "CASE", "CIRCLE", "ESCAPE", "GENSYM", "LENGTH", "LEVEL", "LINES",
         "MISER-WIDTH", "PPRINT-DISPATCH", "PRETTY", "RADIX", "READABLY", "RIGHT-MARGIN"},
        opts);
    return in.make_string_utf8(in.prin1(args[0]));
  });

  SG_BUILTIN(in, "MACROEXPAND-1", 1, 2, "expand a macro call once; second value t if expanded", {
    bool e = false;
    Value r = in.macroexpand_1(args[0], nargs > 1 ? env_of(args[1]) : nullptr, &e);
    return in.values2(r, in.boolean(e));
  });
  SG_BUILTIN(in, "MACROEXPAND", 1, 2, "expand a macro call until it is not one", {
    bool e = false;
    Value r = in.macroexpand(args[0], nargs > 1 ? env_of(args[1]) : nullptr, &e);
    return in.values2(r, in.boolean(e));
  });
  SG_BUILTIN(in, "%BUILTINS", 0, 0, "every builtin function: (name min-args max-args doc), sorted", {
    std::vector<Value> rows;
    for (Symbol* s : in.all_symbols()) {
      const Cell& c = s->cell;
      if (!c.has_function() || c.macro || c.origin != kBuiltin || s->name[0] == '%') continue;
      Function* f = c.function.fn();
      rows.push_back(in.list({in.make_string_utf8(op_name(s->name.c_str())), Value::integer(f->min_args),
                              Value::integer(f->max_args), in.make_string_utf8(s->doc ? s->doc : "")}));
    }
    return in.list_from(rows);
  });
  SG_BUILTIN(in, "%SPECIAL-FORMS", 0, 0, "every special form's name, sorted", {
    std::vector<Value> rows;
    for (Symbol* s : in.all_symbols())
      if (s->special_form >= 0 && s->name[0] != '%') rows.push_back(in.make_string_utf8(op_name(s->name.c_str())));
    return in.list_from(rows);
  });
  SG_BUILTIN(in, "%PRELUDE-DEFINITIONS", 0, 0, "every prelude macro and function: (name kind doc), sorted", {
    std::vector<Value> rows;
    for (Symbol* s : in.all_symbols()) {
      const Cell& c = s->cell;
      if (!c.has_function() || c.origin != kPrelude || s->name[0] == '%') continue;
      Value doc = in.nil();
      Function* f = c.function.fn();
      if (f->info && f->info->doc.is_string()) doc = f->info->doc;
      rows.push_back(in.list({in.make_string_utf8(op_name(s->name.c_str())),
                              Interp::symval(in.keyword(c.macro ? "MACRO" : "FUNCTION")),
                              doc}));
    }
    return in.list_from(rows);
  });
  SG_BUILTIN(in, "%FUNCTION-DOCUMENTATION", 1, 1,
             "the docstring of a function, or of a symbol's function or macro", {
               Value f = args[0];
               if (f.is_symbol()) {
                 const Cell* c = in.fcell(f.sym());
                 if (!c->has_function()) return in.nil();
                 f = c->function;
               }
               if (!f.is_function()) in.type_error(f, "a function or a symbol", "documentation");
               Function* fn = f.fn();
               return fn->info && fn->info->doc.is_string() ? fn->info->doc : in.nil();
             });
  SG_BUILTIN(in, "CONSTANTP", 1, 2, "is the form a constant", {
    Value f = args[0];
    if (f.is_symbol()) return in.boolean(in.vcell(f.sym())->constant);
    if (f.is_cons()) return in.boolean(car_of(f).is_symbol() && car_of(f).sym() == in.S.quote);
    return in.t();
  });
}

}  // namespace sexpgpu::lisp
