// Helpers shared by the sequence and vector builtins (builtins_sequence.cpp,
// builtins_seqfun.cpp, builtins_vector.cpp): reading any sequence by index,
// checking bounding indices, building a result of a given kind, and calling
// Lisp functions for their primary value only.
//
// Invariant: a Seq reads vectors and strings in place (through the Value, so
// a predicate that grows the vector cannot leave a dangling pointer) and
// lists through a copy of their elements made once, which also checks that
// the list is proper (E-TYPE for dotted or circular lists).
#pragma once

#include <string>
#include <vector>

#include "lisp/builtins.h"

namespace sexpgpu::lisp {

// A function designator argument resolved to a function; nil stays nil.
inline Value fn_or_nil(Interp& in, Value f) {
  return f.is_nil() ? f : in.resolve_function(f);
}

struct Seq {
  Value v;
  std::vector<Value> items;  // the elements of a list
  size_t n = 0;
  Value at(Interp& in, size_t i) const {
    if (v.is_cons()) return items[i];
    if (v.is_vector()) {
      if (i >= v.vec()->items.size()) in.fail("E-TYPE", "the vector changed size while being read");
      return v.vec()->items[i];
    }
    if (i >= v.str()->chars.size()) in.fail("E-TYPE", "the string changed size while being read");
    return Value::character(v.str()->chars[i]);
  }
};

// E-TYPE if `v` is not a sequence (or is a dotted or circular list).
Seq seq_of(Interp& in, Value v, const char* op);
// The length of a sequence (honouring fill pointers).
size_t seq_length(Interp& in, Value v, const char* op);

// [start, end) within a sequence of length `len`; end nil means len. E-TYPE
// for indices that are not non-negative integers or are out of order/range.
struct Bounds {
  size_t start, end;
};
Bounds bounds(Interp& in, Value start, Value end, size_t len, const char* op);

// What map, concatenate, merge and make-sequence build.
enum class RKind { None, List, Vector, String, BitVector };
struct ResultType {
  RKind kind;
  int64_t size = -1;  // a length the type demands, or -1
};
ResultType result_type(Interp& in, Value spec, const char* op);
// Build a result of `t` from elements (E-TYPE for non-characters in a string
// or a length the type does not allow).
Value build(Interp& in, const ResultType& t, const std::vector<Value>& xs, const char* op);
// A new sequence of the same kind as `proto` (list, vector or string).
Value make_like(Interp& in, Value proto, const std::vector<Value>& xs, const char* op);

// :test/:test-not/:key resolved to functions (E-ARITY when both tests given).
TestFn make_test(Interp& in, Value test, Value test_not, Value key);
// Apply a resolved key (nil: identity).
inline Value apply_key(Interp& in, Value key, Value x) {
  return key.is_nil() ? x : call1(in, key, x);
}

// Registration of the files beside builtins_sequence.cpp.
void register_seqfun_builtins(Interp& in);
void register_vector_builtins(Interp& in);

}  // namespace sexpgpu::lisp
