// Sequences, part 2: the operators that call a function across whole
// sequences: sort, stable-sort, merge, reduce, some/every/notany/notevery,
// map, map-into, concatenate and make-sequence.
//
// sort and stable-sort are one stable merge sort that works on a copy of the
// (key, element) pairs and writes the result back only when the predicate
// has returned for every comparison, so an error or non-local exit in the
// predicate leaves the sequence as it was. A list is sorted by storing the
// sorted elements into its own conses, so the list given is the result.
#include <algorithm>

#include "lisp/sequence.h"

namespace sexpgpu::lisp {

namespace {

struct Keyed {
  Value key, elem;
};

// Stable: an element of the right run goes first only when strictly before.
void merge_sort(Interp& in, std::vector<Keyed>& xs, Value pred) {
  size_t n = xs.size();
  std::vector<Keyed> buf(n);
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        buf[k++] = call2(in, pred, xs[j].key, xs[i].key).truthy() ? xs[j++] : xs[i++];
      while (i < mid) buf[k++] = xs[i++];
      while (j < hi) buf[k++] = xs[j++];
    }
    xs.swap(buf);
  }
}

Value sort(Interp& in, Value* args, int nargs) {
  Value o[1];
  in.parse_keys(args, nargs, 2, {"KEY"}, o);
  Value seq = args[0];
  Value pred = in.resolve_function(args[1]), key = fn_or_nil(in, o[0]);
  Seq s = seq_of(in, seq, in.current_operator);
  std::vector<Keyed> xs(s.n);
  for (size_t i = 0; i < s.n; ++i) {
    Value e = s.at(in, i);
    xs[i] = {apply_key(in, key, e), e};
  }
  merge_sort(in, xs, pred);
  if (seq.is_cons()) {
    Value l = seq;
    for (size_t i = 0; i < s.n; ++i, l = l.cons()->cdr) l.cons()->car = xs[i].elem;
  } else if (seq.is_vector()) {
    auto& it = seq.vec()->items;
    for (size_t i = 0; i < s.n && i < it.size(); ++i) it[i] = xs[i].elem;
  } else if (seq.is_string()) {
    auto& cs = seq.str()->chars;
    for (size_t i = 0; i < s.n && i < cs.size(); ++i) cs[i] = xs[i].elem.ch;
  }
  in.single();
  return seq;
}

Value merge(Interp& in, Value* args, int nargs) {
  Value o[1];
  in.parse_keys(args, nargs, 4, {"KEY"}, o);
  ResultType rt = result_type(in, args[0], "merge");
  if (rt.kind == RKind::None) in.fail("E-TYPE", "merge: nil is not a sequence type");
  Seq a = seq_of(in, args[1], "merge"), b = seq_of(in, args[2], "merge");
  Value pred = in.resolve_function(args[3]), key = fn_or_nil(in, o[0]);
  std::vector<Value> out;
  out.reserve(a.n + b.n);
  size_t i = 0, j = 0;
  while (i < a.n && j < b.n) {
    Value x = a.at(in, i), y = b.at(in, j);
    // Stable: take from the second only when strictly before the first.
    if (call2(in, pred, apply_key(in, key, y), apply_key(in, key, x)).truthy()) {
      out.push_back(y);
      ++j;
    } else {
      out.push_back(x);
      ++i;
    }
  }
  for (; i < a.n; ++i) out.push_back(a.at(in, i));
  for (; j < b.n; ++j) out.push_back(b.at(in, j));
  in.single();
  return build(in, rt, out, "merge");
}

Value reduce(Interp& in, Value* args, int nargs) {
  Value o[5];
  bool present[5];
  in.parse_keys(args, nargs, 2, {"KEY", "FROM-END", "START", "END", "INITIAL-VALUE"}, o, present);
  Value fn = in.resolve_function(args[0]), key = fn_or_nil(in, o[0]);
  Seq s = seq_of(in, args[1], "reduce");
  Bounds b = bounds(in, o[2], o[3], s.n, "reduce");
  bool from_end = o[1].truthy();
  size_t n = b.end - b.start;
  auto elem = [&](size_t k) {  // the k-th element in the order of the fold
    return apply_key(in, key, s.at(in, from_end ? b.end - 1 - k : b.start + k));
  };
  Value acc;
  size_t k = 0;
  if (present[4]) {
    acc = o[4];
  } else if (n == 0) {
    return call1(in, fn, nullptr, 0);
  } else {
    acc = elem(k++);
  }
  for (; k < n; ++k) acc = from_end ? call2(in, fn, elem(k), acc) : call2(in, fn, acc, elem(k));
  in.single();
  return acc;
}

// The sequences args[first..nargs), read once; `n` is the shortest length.
std::vector<Seq> seqs_of(Interp& in, Value* args, int nargs, int first, size_t* n, const char* op) {
  std::vector<Seq> ss;
  ss.reserve(size_t(nargs - first));
  *n = SIZE_MAX;
  for (int i = first; i < nargs; ++i) {
    ss.push_back(seq_of(in, args[i], op));
    *n = std::min(*n, ss.back().n);
  }
  if (ss.empty()) *n = 0;
  return ss;
}

// Call fn on the i-th elements of every sequence.
Value call_across(Interp& in, Value fn, const std::vector<Seq>& ss, size_t i,
                  std::vector<Value>& buf) {
  buf.resize(ss.size());
  for (size_t k = 0; k < ss.size(); ++k) buf[k] = ss[k].at(in, i);
  return call1(in, fn, buf.data(), int(buf.size()));
}

// some (stop_on_true) returns the first true value; every the first false.
Value quantify(Interp& in, Value* args, int nargs, bool stop_on_true) {
  Value fn = in.resolve_function(args[0]);
  size_t n;
  std::vector<Seq> ss = seqs_of(in, args, nargs, 1, &n, in.current_operator);
  std::vector<Value> buf;
  for (size_t i = 0; i < n; ++i) {
    Value r = call_across(in, fn, ss, i, buf);
    if (r.truthy() == stop_on_true) return stop_on_true ? r : in.nil();
  }
  return stop_on_true ? in.nil() : in.t();
}

Value map(Interp& in, Value* args, int nargs) {
  ResultType rt = result_type(in, args[0], "map");
  Value fn = in.resolve_function(args[1]);
  size_t n;
  std::vector<Seq> ss = seqs_of(in, args, nargs, 2, &n, "map");
  std::vector<Value> buf, out;
  if (rt.kind != RKind::None) out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Value r = call_across(in, fn, ss, i, buf);
    if (rt.kind != RKind::None) out.push_back(r);
  }
  in.single();
  return build(in, rt, out, "map");
}

Value map_into(Interp& in, Value* args, int nargs) {
  Value res = args[0];
  Value fn = in.resolve_function(args[1]);
  size_t n;
  std::vector<Seq> ss = seqs_of(in, args, nargs, 2, &n, "map-into");
  // A fill pointer does not limit map-into: it is set to the count stored.
  size_t cap = res.is_vector()   ? res.vec()->items.size()
               : res.is_string() ? res.str()->chars.size()
                                 : seq_length(in, res, "map-into");
  if (ss.empty()) n = res.is_vector() || res.is_string() ? seq_length(in, res, "map-into") : cap;
  n = std::min(n, cap);
  std::vector<Value> buf;
  Value cur = res;
  for (size_t i = 0; i < n; ++i) {
    Value r = call_across(in, fn, ss, i, buf);
    if (res.is_vector()) {
      if (i < res.vec()->items.size()) res.vec()->items[i] = r;
    } else if (res.is_string()) {
      char32_t c = in.arg_char(r, "map-into");
      if (i < res.str()->chars.size()) res.str()->chars[i] = c;
    } else {
      cur.cons()->car = r;
      cur = cur.cons()->cdr;
    }
  }
  if (res.is_vector() && res.vec()->fill_pointer >= 0) res.vec()->fill_pointer = int64_t(n);
  if (res.is_string() && res.str()->fill_pointer >= 0) res.str()->fill_pointer = int64_t(n);
  in.single();
  return res;
}

Value concatenate(Interp& in, Value* args, int nargs) {
  ResultType rt = result_type(in, args[0], "concatenate");
  if (rt.kind == RKind::None) in.fail("E-TYPE", "concatenate: nil is not a sequence type");
  std::vector<Value> out;
  for (int k = 1; k < nargs; ++k) {
    Seq s = seq_of(in, args[k], "concatenate");
    for (size_t i = 0; i < s.n; ++i) out.push_back(s.at(in, i));
  }
  return build(in, rt, out, "concatenate");
}

Value make_sequence(Interp& in, Value* args, int nargs) {
  Value o[1];
  bool present[1];
  in.parse_keys(args, nargs, 2, {"INITIAL-ELEMENT"}, o, present);
  ResultType rt = result_type(in, args[0], "make-sequence");
  if (!args[1].is_int() || args[1].i < 0)
    in.type_error(args[1], "a non-negative integer size", "make-sequence");
  in.check_alloc(uint64_t(args[1].i), sizeof(Value), "make-sequence");
  Value fill = present[0]                                                ? o[0]
               : rt.kind == RKind::String                                ? Value::character(0)
               : rt.kind == RKind::Vector || rt.kind == RKind::BitVector ? Value::integer(0)
                                                                         : in.nil();
  if (rt.kind == RKind::None) in.fail("E-TYPE", "make-sequence: nil is not a sequence type");
  return build(in, rt, std::vector<Value>(size_t(args[1].i), fill), "make-sequence");
}

}  // namespace

void register_seqfun_builtins(Interp& in) {
  SG_BUILTIN(in, "SORT", 2, -1, "sort a sequence by a predicate (destructive; returns the result)",
             { return sort(in, args, nargs); });
  SG_BUILTIN(in, "STABLE-SORT", 2, -1, "sort keeping equal elements in order (destructive)",
             { return sort(in, args, nargs); });
  SG_BUILTIN(in, "MERGE", 4, -1, "merge two sorted sequences into a sequence of a type",
             { return merge(in, args, nargs); });
  SG_BUILTIN(in, "REDUCE", 2, -1, "combine the elements with a two-argument function",
             { return reduce(in, args, nargs); });
  SG_BUILTIN(in, "SOME", 2, -1, "the first true value of a predicate across sequences",
             { return quantify(in, args, nargs, true); });
  SG_BUILTIN(in, "EVERY", 2, -1, "t if a predicate holds across sequences",
             { return quantify(in, args, nargs, false); });
  SG_BUILTIN(in, "NOTANY", 2, -1, "t if a predicate holds for no elements",
             { return in.boolean(quantify(in, args, nargs, true).is_nil()); });
  SG_BUILTIN(in, "NOTEVERY", 2, -1, "t if a predicate fails for some elements",
             { return in.boolean(quantify(in, args, nargs, false).is_nil()); });
  SG_BUILTIN(in, "MAP", 3, -1, "apply a function across sequences, collecting a sequence of a type",
             { return map(in, args, nargs); });
  SG_BUILTIN(in, "MAP-INTO", 2, -1, "store a function's results across sequences into a sequence",
             { return map_into(in, args, nargs); });
  SG_BUILTIN(in, "CONCATENATE", 1, -1, "a new sequence of a type holding the elements of all",
             { return concatenate(in, args, nargs); });
  SG_BUILTIN(in, "MAKE-SEQUENCE", 2, -1, "a new sequence of a type and size",
             { return make_sequence(in, args, nargs); });
}

}  // namespace sexpgpu::lisp
