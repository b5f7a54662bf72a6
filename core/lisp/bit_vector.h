// Bit vectors: one-dimensional arrays of element type bit (#*0101). A bit
// vector is a Vector (Kind::Vector, items holding the integers 0 and 1) whose
// object is a BitVector, so every vector operation reads it as it is and only
// the places that care (printing, typep/type-of, storing an element, making a
// result of the same kind) ask is_bit_vector. Declared here rather than in
// value.h: the few files that know about bit vectors include this one.
#pragma once

#include <typeinfo>

#include "lisp/interp.h"

namespace sexpgpu::lisp {

struct BitVector : Vector {};

inline bool is_bit_vector(Value v) {
  return v.is_vector() && typeid(*v.vec()) == typeid(BitVector);
}

inline bool is_bit(Value v) {
  return v.is_int() && (v.i == 0 || v.i == 1);
}

// A bit vector of these elements (E-TYPE unless each is 0 or 1).
inline Value make_bit_vector(Interp& in, std::vector<Value> items, const char* op) {
  for (Value x : items)
    if (!is_bit(x)) in.type_error(x, "a bit (0 or 1), an element of a bit vector", op);
  BitVector* v = in.alloc<BitVector>();
  in.note_alloc(items.size() * sizeof(Value));
  v->items = std::move(items);
  return Value::object(Kind::Vector, v);
}

}  // namespace sexpgpu::lisp
