// One-dimensional arrays: vector, make-array, aref/svref, fill pointers
// (vector-push, vector-push-extend, vector-pop), adjust-array and the array
// predicates and dimensions. An array of characters is a String, any other
// a Vector; arrays of more dimensions are tensors, not Lisp arrays
// (E-UNSUPPORTED).
//
// aref reads the whole storage (ignoring the fill pointer, as CL says);
// length, elt and printing stop at the fill pointer.
#include "lisp/bit_vector.h"
#include "lisp/sequence.h"

namespace sexpgpu::lisp {

namespace {

bool is_array(Value v) {
  return v.is_vector() || v.is_string();
}

// The whole storage size (array-total-size).
size_t capacity(Value v) {
  return v.is_vector() ? v.vec()->items.size() : v.str()->chars.size();
}
int64_t& fill_pointer_of(Value v) {
  return v.is_vector() ? v.vec()->fill_pointer : v.str()->fill_pointer;
}
bool& adjustable_of(Value v) {
  return v.is_vector() ? v.vec()->adjustable : v.str()->adjustable;
}

Value check_array(Interp& in, Value v, const char* op) {
  if (!is_array(v)) in.type_error(v, "an array", op);
  return v;
}

Value check_fill_pointer(Interp& in, Value v, const char* op) {
  if (!is_array(v) || fill_pointer_of(v) < 0) in.type_error(v, "an array with a fill pointer", op);
  return v;
}

// A dimensions argument: n or (n). Lists of other lengths are tensors.
size_t dimension(Interp& in, Value dims, const char* op) {
  if (dims.is_cons() || dims.is_nil()) {
    size_t rank = in.list_length(dims, op);
    if (rank != 1)
      in.fail("E-UNSUPPORTED",
              std::string(op) + ": " + in.show(dims) +
                  (rank == 0 ? " makes a zero-dimensional array"
                             : ": multi-dimensional arrays are tensors"),
              "Lisp arrays here are one-dimensional; use a tensor for more dimensions");
    dims = dims.cons()->car;
  }
  if (!dims.is_int() || dims.i < 0) in.type_error(dims, "a non-negative array dimension", op);
  return size_t(dims.i);
}

bool character_type(Value t) {
  if (t.is_cons()) t = t.cons()->car;
  if (!t.is_symbol()) return false;
  const std::string& n = t.sym()->name;
  return n == "CHARACTER" || n == "BASE-CHAR" || n == "STANDARD-CHAR";
}

bool float_type(Value t) {
  if (t.is_cons()) t = t.cons()->car;
  if (!t.is_symbol()) return false;
  const std::string& n = t.sym()->name;
  return n == "DOUBLE-FLOAT" || n == "SINGLE-FLOAT" || n == "FLOAT" || n == "LONG-FLOAT" ||
         n == "SHORT-FLOAT";
}

// Element types that make a bit vector: bit, and what SBCL upgrades to it.
bool bit_type(Value t) {
  if (t.is_symbol()) return t.sym()->name == "BIT";
  if (!t.is_cons() || !car_of(t).is_symbol()) return false;
  const std::string& n = car_of(t).sym()->name;
  Value a = car_of(cdr_of(t)), b = car_of(cdr_of(cdr_of(t)));
  if (n == "UNSIGNED-BYTE") return a.is_int() && a.i == 1;
  if (n == "MOD") return a.is_int() && a.i == 2;
  if (n == "INTEGER") return a.is_int() && a.i == 0 && b.is_int() && b.i == 1;
  return false;
}

// The element a new slot holds when no :initial-element is given (as SBCL
// zero-fills: 0, 0.0 or the character of code 0).
Value default_element(bool chars, Value type) {
  if (chars) return Value::character(0);
  return float_type(type) ? Value::flt(0.0) : Value::integer(0);
}

// The elements of :initial-contents, which must have exactly `n` of them.
std::vector<Value> contents(Interp& in, Value init, size_t n, const char* op) {
  Seq s = seq_of(in, init, op);
  if (s.n != n)
    in.fail("E-TYPE", std::string(op) + ": :initial-contents has " + std::to_string(s.n) +
                          " elements but the array length is " + std::to_string(n));
  std::vector<Value> xs(n);
  for (size_t i = 0; i < n; ++i) xs[i] = s.at(in, i);
  return xs;
}

// Fill pointer value for :fill-pointer (t: the size; nil: none).
int64_t fill_pointer_arg(Interp& in, Value fp, size_t size, const char* op) {
  if (fp.is_nil()) return -1;
  if (fp.is_symbol() && fp.sym() == in.T) return int64_t(size);
  if (!fp.is_int() || fp.i < 0)
    in.type_error(fp, "a fill pointer (t or a non-negative integer)", op);
  if (size_t(fp.i) > size)
    in.fail("E-TYPE", std::string(op) + ": fill pointer " + std::to_string(fp.i) +
                          " is larger than the array size " + std::to_string(size));
  return fp.i;
}

Value store_all(Interp& in, bool chars, std::vector<Value>& xs, const char* op, bool bits = false) {
  if (bits) return make_bit_vector(in, std::move(xs), op);
  if (!chars) return in.make_vector(std::move(xs));
  std::u32string s(xs.size(), 0);
  for (size_t i = 0; i < xs.size(); ++i) s[i] = in.arg_char(xs[i], op);
  return in.make_string(std::move(s));
}

enum {
  kElementType,
  kInitialElement,
  kInitialContents,
  kAdjustable,
  kFillPointer,
  kDisplacedTo,
  kDisplacedOffset
};

Value make_array(Interp& in, Value* args, int nargs) {
  Value o[7];
  bool present[7];
  in.parse_keys(args, nargs, 1,
                {"ELEMENT-TYPE", "INITIAL-ELEMENT", "INITIAL-CONTENTS", "ADJUSTABLE",
                 "FILL-POINTER", "DISPLACED-TO", "DISPLACED-INDEX-OFFSET"},
                o, present);
  size_t n = dimension(in, args[0], "make-array");
  in.check_alloc(n, sizeof(Value), "make-array");
  if (o[kDisplacedTo].truthy())
    in.fail("E-UNSUPPORTED", "make-array: displaced arrays are not supported", "copy with subseq");
  if (present[kInitialElement] && present[kInitialContents])
    in.fail("E-TYPE", "make-array: both :initial-element and :initial-contents given");
  bool chars = character_type(o[kElementType]);
  std::vector<Value> xs =
      present[kInitialContents]
          ? contents(in, o[kInitialContents], n, "make-array")
          : std::vector<Value>(n, present[kInitialElement]
                                      ? o[kInitialElement]
                                      : default_element(chars, o[kElementType]));
  int64_t fp = fill_pointer_arg(in, o[kFillPointer], n, "make-array");
  Value a = store_all(in, chars, xs, "make-array", bit_type(o[kElementType]));
  fill_pointer_of(a) = fp;
  // SBCL makes every array with a fill pointer actually adjustable.
  adjustable_of(a) = o[kAdjustable].truthy() || fp >= 0;
  return a;
}

Value adjust_array(Interp& in, Value* args, int nargs) {
  Value o[7];
  bool present[7];
  in.parse_keys(args, nargs, 2,
                {"ELEMENT-TYPE", "INITIAL-ELEMENT", "INITIAL-CONTENTS", "ADJUSTABLE",
                 "FILL-POINTER", "DISPLACED-TO", "DISPLACED-INDEX-OFFSET"},
                o, present);
  Value a = check_array(in, args[0], "adjust-array");
  size_t n = dimension(in, args[1], "adjust-array");
  in.check_alloc(n, sizeof(Value), "adjust-array");
  if (o[kDisplacedTo].truthy())
    in.fail("E-UNSUPPORTED", "adjust-array: displaced arrays are not supported",
            "copy with subseq");
  bool chars = a.is_string();
  int64_t fp = fill_pointer_of(a);
  if (o[kFillPointer].truthy()) {
    if (fp < 0)
      in.type_error(a, "an array with a fill pointer (adjust-array :fill-pointer)", "adjust-array");
    fp = fill_pointer_arg(in, o[kFillPointer], n, "adjust-array");
  } else if (fp > int64_t(n)) {
    in.fail("E-TYPE", "adjust-array: new size " + std::to_string(n) +
                          " is smaller than the fill pointer " + std::to_string(fp));
  }
  std::vector<Value> xs;
  if (present[kInitialContents]) {
    xs = contents(in, o[kInitialContents], n, "adjust-array");
  } else {
    Value fill = present[kInitialElement] ? o[kInitialElement] : default_element(chars, in.nil());
    xs.assign(n, fill);
    for (size_t i = 0, old = capacity(a); i < n && i < old; ++i)
      xs[i] = a.is_vector() ? a.vec()->items[i] : Value::character(a.str()->chars[i]);
  }
  // An adjustable array is changed in place; any other is replaced by a new one.
  Value r = store_all(in, chars, xs, "adjust-array", is_bit_vector(a));
  if (adjustable_of(a)) {
    if (a.is_vector())
      a.vec()->items.swap(r.vec()->items);
    else
      a.str()->chars.swap(r.str()->chars);
    r = a;
  }
  fill_pointer_of(r) = fp;
  return r;
}

size_t aref_index(Interp& in, Value a, Value* subs, int nsubs, const char* op) {
  if (nsubs != 1)
    in.fail("E-ARITY",
            std::string(op) + ": " + std::to_string(nsubs) + " subscripts for an array of rank 1");
  if (!subs[0].is_int()) in.type_error(subs[0], "an integer index", op);
  int64_t i = subs[0].i;
  if (i < 0 || size_t(i) >= capacity(a))
    in.fail("E-TYPE", std::string(op) + ": index " + std::to_string(i) +
                          " is out of bounds for length " + std::to_string(capacity(a)));
  return size_t(i);
}

Value aref(Value a, size_t i) {
  return a.is_vector() ? a.vec()->items[i] : Value::character(a.str()->chars[i]);
}

// vector-push-extend grows by at least the extension (default: the size).
Value push_extend(Interp& in, Value* args, int nargs) {
  Value a = check_fill_pointer(in, args[1], "vector-push-extend");
  size_t fp = size_t(fill_pointer_of(a));
  if (a.is_string()) in.arg_char(args[0], "vector-push-extend");
  if (fp >= capacity(a)) {
    size_t ext = capacity(a);
    if (nargs > 2) {
      if (!args[2].is_int() || args[2].i < 1)
        in.type_error(args[2], "a positive integer extension", "vector-push-extend");
      ext = size_t(args[2].i);
    }
    size_t grown = capacity(a) + std::max<size_t>(1, ext);
    if (a.is_vector())
      a.vec()->items.resize(grown, Value::integer(0));
    else
      a.str()->chars.resize(grown, 0);
    in.note_alloc(std::max<size_t>(1, ext) * (a.is_vector() ? sizeof(Value) : 4));
    adjustable_of(a) = true;
  }
  if (a.is_vector())
    a.vec()->items[fp] = args[0];
  else
    a.str()->chars[fp] = args[0].ch;
  fill_pointer_of(a) = int64_t(fp + 1);
  return Value::integer(int64_t(fp));
}

}  // namespace

void register_vector_builtins(Interp& in) {
  SG_BUILTIN(in, "VECTOR", 0, -1, "a new simple vector of the arguments",
             { return in.make_vector(std::vector<Value>(args, args + nargs)); });
  SG_BUILTIN(in, "MAKE-ARRAY", 1, -1, "a new one-dimensional array (a string if of characters)",
             { return make_array(in, args, nargs); });
  SG_BUILTIN(in, "ADJUST-ARRAY", 2, -1, "an array of another size with the same elements",
             { return adjust_array(in, args, nargs); });
  SG_BUILTIN(in, "AREF", 1, -1, "the element of an array at an index (ignoring the fill pointer)", {
    Value a = check_array(in, args[0], "aref");
    return aref(a, aref_index(in, a, args + 1, nargs - 1, "aref"));
  });
  SG_BUILTIN(in, "ROW-MAJOR-AREF", 2, 2, "aref of a one-dimensional array", {
    Value a = check_array(in, args[0], "row-major-aref");
    return aref(a, aref_index(in, a, args + 1, 1, "row-major-aref"));
  });
  SG_BUILTIN(in, "SVREF", 2, 2, "the element of a simple vector at an index", {
    Value a = args[0];
    if (!a.is_vector() || a.vec()->fill_pointer >= 0 || a.vec()->adjustable)
      in.type_error(a, "a simple-vector", "svref");
    return aref(a, aref_index(in, a, args + 1, 1, "svref"));
  });
  SG_BUILTIN(in, "VECTOR-PUSH", 2, 2, "store at the fill pointer and advance it; nil when full", {
    Value a = check_fill_pointer(in, args[1], "vector-push");
    size_t fp = size_t(fill_pointer_of(a));
    if (fp >= capacity(a)) return in.nil();
    if (a.is_vector())
      a.vec()->items[fp] = args[0];
    else
      a.str()->chars[fp] = in.arg_char(args[0], "vector-push");
    fill_pointer_of(a) = int64_t(fp + 1);
    return Value::integer(int64_t(fp));
  });
  SG_BUILTIN(in, "VECTOR-PUSH-EXTEND", 2, 3, "vector-push, growing the array when full",
             { return push_extend(in, args, nargs); });
  SG_BUILTIN(in, "VECTOR-POP", 1, 1, "decrease the fill pointer and return the element there", {
    Value a = check_fill_pointer(in, args[0], "vector-pop");
    int64_t& fp = fill_pointer_of(a);
    if (fp == 0) in.fail("E-TYPE", "vector-pop: the vector is empty (its fill pointer is 0)");
    --fp;
    return aref(a, size_t(fp));
  });
  SG_BUILTIN(in, "FILL-POINTER", 1, 1, "the fill pointer of an array", {
    return Value::integer(fill_pointer_of(check_fill_pointer(in, args[0], "fill-pointer")));
  });
  SG_BUILTIN(in, "ARRAY-HAS-FILL-POINTER-P", 1, 1, "does the array have a fill pointer", {
    return in.boolean(fill_pointer_of(check_array(in, args[0], "array-has-fill-pointer-p")) >= 0);
  });
  SG_BUILTIN(in, "ADJUSTABLE-ARRAY-P", 1, 1, "was the array made adjustable",
             { return in.boolean(adjustable_of(check_array(in, args[0], "adjustable-array-p"))); });
  SG_BUILTIN(in, "ARRAY-DIMENSIONS", 1, 1, "the list of an array's dimensions", {
    return in.list(
        {Value::integer(int64_t(capacity(check_array(in, args[0], "array-dimensions"))))});
  });
  SG_BUILTIN(in, "ARRAY-DIMENSION", 2, 2, "an array's dimension along an axis", {
    Value a = check_array(in, args[0], "array-dimension");
    if (!args[1].is_int() || args[1].i != 0)
      in.fail("E-TYPE",
              "array-dimension: axis " + in.show(args[1]) + " is not 0 (arrays have rank 1)");
    return Value::integer(int64_t(capacity(a)));
  });
  SG_BUILTIN(in, "ARRAY-RANK", 1, 1, "the number of dimensions of an array (always 1)", {
    check_array(in, args[0], "array-rank");
    return Value::integer(1);
  });
  SG_BUILTIN(
      in, "ARRAY-TOTAL-SIZE", 1, 1,
      "the number of elements an array holds (ignoring the fill pointer)",
      { return Value::integer(int64_t(capacity(check_array(in, args[0], "array-total-size")))); });
  SG_BUILTIN(in, "ARRAY-IN-BOUNDS-P", 1, -1, "are the subscripts valid indices of the array", {
    Value a = check_array(in, args[0], "array-in-bounds-p");
    if (nargs != 2) in.fail("E-ARITY", "array-in-bounds-p: arrays have rank 1");
    int64_t i = in.arg_int(args[1], "array-in-bounds-p");
    return in.boolean(i >= 0 && size_t(i) < capacity(a));
  });
  SG_BUILTIN(in, "ARRAY-ELEMENT-TYPE", 1, 1, "character for strings, t for other arrays", {
    Value a = check_array(in, args[0], "array-element-type");
    return in.sym(a.is_string() ? "CHARACTER" : is_bit_vector(a) ? "BIT" : "T");
  });
  SG_BUILTIN(in, "ARRAYP", 1, 1, "is it an array", { return in.boolean(is_array(args[0])); });
  SG_BUILTIN(in, "VECTORP", 1, 1, "is it a vector (strings are vectors)",
             { return in.boolean(is_array(args[0])); });
  SG_BUILTIN(in, "SIMPLE-VECTOR-P", 1, 1, "is it a vector of any elements, without fill pointer", {
    return in.boolean(args[0].is_vector() && args[0].vec()->fill_pointer < 0 &&
                      !args[0].vec()->adjustable);
  });
}

}  // namespace sexpgpu::lisp
