// Argument helpers for builtins: typed access with E-TYPE, proper-list
// walking that refuses circular lists, and keyword-argument parsing.
#include "lisp/interp.h"

namespace sexpgpu::lisp {

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
