// Sequences (lists, vectors, strings), part 1: the shared helpers of
// sequence.h, element access (elt, subseq, length, copy-seq), the
// find/position/count, remove/delete and substitute families,
// remove-duplicates, fill, replace, search and mismatch. Part 2 (sort, map,
// reduce, concatenate...) is builtins_seqfun.cpp; arrays are
// builtins_vector.cpp.
//
// Every operator reads its sequence through a Seq (sequence.h) and checks
// :start/:end against the length first, so a bad index is E-TYPE before any
// user function runs, as in SBCL.
#include <algorithm>
#include <unordered_set>

#include "lisp/bit_vector.h"
#include "lisp/builtins_list.h"
#include "lisp/sequence.h"

namespace sexpgpu::lisp {

bool TestFn::operator()(Value item, Value elem) const {
  Value k = key.is_nil() ? elem : call1(in, key, elem);
  if (!test_not.is_nil()) return call2(in, test_not, item, k).is_nil();
  if (!test.is_nil()) return call2(in, test, item, k).truthy();
  return eql(item, k);
}

// ---- shared helpers (sequence.h) ---------------------------------------------------

Seq seq_of(Interp& in, Value v, const char* op) {
  Seq s;
  s.v = v;
  if (v.is_cons()) {
    s.items = in.list_items(v, op_name(op));
    s.n = s.items.size();
  } else if (v.is_vector()) {
    s.n = v.vec()->size();
  } else if (v.is_string()) {
    s.n = v.str()->size();
  } else if (!v.is_nil()) {
    in.type_error(v, "a sequence", op_name(op));
  }
  return s;
}

size_t seq_length(Interp& in, Value v, const char* op) {
  if (v.is_vector()) return v.vec()->size();
  if (v.is_string()) return v.str()->size();
  if (v.is_list()) return in.list_length(v, op_name(op));
  in.type_error(v, "a sequence", op_name(op));
}

static size_t index_arg(Interp& in, Value v, const char* op) {
  if (!v.is_int() || v.i < 0) in.type_error(v, "a non-negative integer index", op_name(op));
  return size_t(v.i);
}

Bounds bounds(Interp& in, Value start, Value end, size_t len, const char* op) {
  size_t s = start.is_nil() ? 0 : index_arg(in, start, op);
  size_t e = end.is_nil() ? len : index_arg(in, end, op);
  if (s > e || e > len)
    in.fail("E-TYPE", op_name(op) + ": the bounding indices " + std::to_string(s) + " and " +
                          (end.is_nil() ? "nil" : std::to_string(e)) +
                          " are bad for a sequence of length " + std::to_string(len));
  return {s, e};
}

TestFn make_test(Interp& in, Value test, Value test_not, Value key) {
  if (!test.is_nil() && !test_not.is_nil())
    in.fail("E-ARITY",
            std::string(op_name(in.current_operator)) + ": both :test and :test-not given",
            "give one of them");
  return TestFn{in, fn_or_nil(in, test), fn_or_nil(in, test_not), fn_or_nil(in, key)};
}

static Value make_string_from(Interp& in, const std::vector<Value>& xs, const char* op) {
  std::u32string s;
  s.reserve(xs.size());
  for (Value x : xs) {
    if (!x.is_char()) in.type_error(x, "a character (the result is a string)", op_name(op));
    s.push_back(x.ch);
  }
  return in.make_string(std::move(s));
}

Value make_like(Interp& in, Value proto, const std::vector<Value>& xs, const char* op) {
  if (is_bit_vector(proto)) return make_bit_vector(in, xs, op);
  if (proto.is_vector()) return in.make_vector(xs);
  if (proto.is_string()) return make_string_from(in, xs, op);
  return in.list_from(xs);
}

static bool sym_is(Value v, const char* name) {
  return v.is_symbol() && !v.sym()->keyword && v.sym()->name == name;
}

ResultType result_type(Interp& in, Value spec, const char* op) {
  static const char* kLists[] = {"LIST", "CONS", "NULL"};
  static const char* kVectors[] = {"VECTOR", "SIMPLE-VECTOR", "ARRAY", "SIMPLE-ARRAY"};
  static const char* kStrings[] = {"STRING", "SIMPLE-STRING", "BASE-STRING", "SIMPLE-BASE-STRING"};
  Value head = spec.is_cons() ? spec.cons()->car : spec;
  if (spec.is_nil()) return {RKind::None};
  for (const char* n : kLists)
    if (sym_is(head, n)) return {RKind::List};
  for (const char* n : kStrings)
    if (sym_is(head, n)) {
      Value size = car_of(cdr_of(spec));
      return {RKind::String, spec.is_cons() && size.is_int() ? size.i : -1};
    }
  if (sym_is(head, "BIT-VECTOR") || sym_is(head, "SIMPLE-BIT-VECTOR")) {
    Value size = car_of(cdr_of(spec));
    return {RKind::BitVector, spec.is_cons() && size.is_int() ? size.i : -1};
  }
  for (const char* n : kVectors)
    if (sym_is(head, n)) {
      if (!spec.is_cons()) return {RKind::Vector};
      // (vector elt [size]), (simple-vector size), (array elt (size)).
      bool sv = sym_is(head, "SIMPLE-VECTOR");
      Value elt = sv ? in.t() : car_of(cdr_of(spec));
      Value size = sv ? car_of(cdr_of(spec)) : car_of(cdr_of(cdr_of(spec)));
      if (size.is_cons()) size = size.cons()->car;
      bool chars =
          sym_is(elt, "CHARACTER") || sym_is(elt, "BASE-CHAR") || sym_is(elt, "STANDARD-CHAR");
      return {chars                ? RKind::String
              : sym_is(elt, "BIT") ? RKind::BitVector
                                   : RKind::Vector,
              size.is_int() ? size.i : -1};
    }
  in.fail("E-TYPE", op_name(op) + ": " + in.show(spec) + " is not a sequence type",
          "use list, vector, simple-vector or string");
}

Value build(Interp& in, const ResultType& t, const std::vector<Value>& xs, const char* op) {
  if (t.size >= 0 && size_t(t.size) != xs.size())
    in.fail("E-TYPE", op_name(op) + ": the result has " + std::to_string(xs.size()) +
                          " elements but the type asks for " + std::to_string(t.size));
  switch (t.kind) {
    case RKind::None: return in.nil();
    case RKind::List: return in.list_from(xs);
    case RKind::Vector: return in.make_vector(xs);
    case RKind::String: return make_string_from(in, xs, op);
    case RKind::BitVector: return make_bit_vector(in, xs, op);
  }
  return in.nil();
}

namespace {

// ---- element access ----------------------------------------------------------------

Value elt(Interp& in, Value seq, Value index) {
  size_t i = index_arg(in, index, "elt");
  if (seq.is_list()) {
    Value l = seq;
    for (size_t k = 0; k < i && l.is_cons(); ++k) l = l.cons()->cdr;
    if (!l.is_cons()) {
      if (!l.is_nil()) in.type_error(seq, "a proper list", "elt");
      in.fail("E-TYPE", "elt: index " + std::to_string(i) + " is too large for a list of length " +
                            std::to_string(in.list_length(seq, "elt")));
    }
    return l.cons()->car;
  }
  Seq s = seq_of(in, seq, "elt");
  if (i >= s.n)
    in.fail("E-TYPE", "elt: index " + std::to_string(i) + " is out of bounds for length " +
                          std::to_string(s.n));
  return s.at(in, i);
}

Value subseq(Interp& in, Value seq, Value start, Value end) {
  if (seq.is_string()) {
    Bounds b = bounds(in, start, end, seq.str()->size(), "subseq");
    return in.make_string(seq.str()->chars.substr(b.start, b.end - b.start));
  }
  if (seq.is_vector()) {
    Bounds b = bounds(in, start, end, seq.vec()->size(), "subseq");
    auto& it = seq.vec()->items;
    std::vector<Value> part(it.begin() + long(b.start), it.begin() + long(b.end));
    return is_bit_vector(seq) ? make_bit_vector(in, std::move(part), "subseq")
                              : in.make_vector(std::move(part));
  }
  Seq s = seq_of(in, seq, "subseq");
  Bounds b = bounds(in, start, end, s.n, "subseq");
  return in.list_from(
      std::vector<Value>(s.items.begin() + long(b.start), s.items.begin() + long(b.end)));
}

// ---- matching: the item, -if and -if-not variants ----------------------------------

enum class Mode { Item, If, IfNot };

struct Match {
  Mode mode;
  Value item;  // the item (Item) or the predicate (If, IfNot)
  TestFn test;
  bool operator()(Value elem) const {
    if (mode == Mode::Item) return test(item, elem);
    Value k = apply_key(test.in, test.key, elem);
    return call1(test.in, item, k).truthy() == (mode == Mode::If);
  }
};

struct Keys {
  Value from_end, start, end, key, count;
};

// args[base] is the item or predicate, args[base + 1] the sequence, keywords
// follow. `with_count` adds :count (remove, delete, substitute).
Match parse_match(Interp& in, Value* args, int nargs, int base, Mode mode, bool with_count,
                  Keys& k) {
  Value o[7];
  int first = base + 2;
  Value test = in.nil(), test_not = in.nil();
  if (mode == Mode::Item) {
    if (with_count)
      in.parse_keys(args, nargs, first,
                    {"FROM-END", "START", "END", "KEY", "COUNT", "TEST", "TEST-NOT"}, o);
    else
      in.parse_keys(args, nargs, first, {"FROM-END", "START", "END", "KEY", "TEST", "TEST-NOT"}, o);
    test = o[with_count ? 5 : 4];
    test_not = o[with_count ? 6 : 5];
  } else if (with_count) {
    in.parse_keys(args, nargs, first, {"FROM-END", "START", "END", "KEY", "COUNT"}, o);
  } else {
    in.parse_keys(args, nargs, first, {"FROM-END", "START", "END", "KEY"}, o);
  }
  k = {o[0], o[1], o[2], o[3], with_count ? o[4] : in.nil()};
  Value item = mode == Mode::Item ? args[base] : in.resolve_function(args[base]);
  return Match{mode, item, make_test(in, test, test_not, k.key)};
}

// Walk [start, end) of a sequence in order, stopping when f(i, elem) is
// true; returns the index it stopped at or `end`. Lists are walked in place
// (only their length is checked first), which keeps find on long lists cheap.
template <class F>
size_t scan_forward(Interp& in, Value seq, Keys& k, const char* op, F f) {
  if (seq.is_cons()) {
    Bounds b = bounds(in, k.start, k.end, in.list_length(seq, op_name(op)), op);
    Value l = seq;
    for (size_t i = 0; i < b.start; ++i) l = l.cons()->cdr;
    for (size_t i = b.start; i < b.end; ++i, l = l.cons()->cdr)
      if (f(i, l.cons()->car)) return i;
    return b.end;
  }
  Seq s = seq_of(in, seq, op);
  Bounds b = bounds(in, k.start, k.end, s.n, op);
  for (size_t i = b.start; i < b.end; ++i)
    if (f(i, s.at(in, i))) return i;
  return b.end;
}

// find, position (find returns the element, position its index).
Value find_like(Interp& in, Value* args, int nargs, Mode mode, bool position) {
  Keys k;
  Match m = parse_match(in, args, nargs, 0, mode, false, k);
  const char* op = in.current_operator;
  Value found = in.nil();
  auto hit = [&](size_t i, Value e) {
    found = position ? Value::integer(int64_t(i)) : e;
    return true;
  };
  if (k.from_end.truthy()) {
    Seq s = seq_of(in, args[1], op);
    Bounds b = bounds(in, k.start, k.end, s.n, op);
    for (size_t i = b.end; i-- > b.start;)
      if (m(s.at(in, i)) && hit(i, s.at(in, i))) break;
  } else {
    scan_forward(in, args[1], k, op, [&](size_t i, Value e) { return m(e) && hit(i, e); });
  }
  in.single();
  return found;
}

Value count_like(Interp& in, Value* args, int nargs, Mode mode) {
  Keys k;
  Match m = parse_match(in, args, nargs, 0, mode, false, k);
  int64_t n = 0;
  if (k.from_end.truthy()) {  // the key and test see the elements last to first
    const char* op = in.current_operator;
    Seq s = seq_of(in, args[1], op);
    Bounds b = bounds(in, k.start, k.end, s.n, op);
    for (size_t i = b.end; i-- > b.start;) n += m(s.at(in, i));
  } else {
    scan_forward(in, args[1], k, in.current_operator, [&](size_t, Value e) {
      n += m(e);
      return false;
    });
  }
  in.single();
  return Value::integer(n);
}

// Which elements of [start, end) match, at most :count of them, from the end
// when :from-end.
std::vector<char> marked(Interp& in, const Seq& s, const Match& m, const Keys& k, Bounds b,
                         size_t* nmarked) {
  int64_t limit = INT64_MAX;
  if (!k.count.is_nil())
    limit = std::max<int64_t>(0, in.arg_int(k.count, op_name(in.current_operator)));
  std::vector<char> mark(s.n, 0);
  size_t n = 0;
  if (k.from_end.truthy()) {
    for (size_t i = b.end; i-- > b.start && int64_t(n) < limit;)
      if (m(s.at(in, i))) mark[i] = 1, ++n;
  } else {
    for (size_t i = b.start; i < b.end && int64_t(n) < limit; ++i)
      if (m(s.at(in, i))) mark[i] = 1, ++n;
  }
  *nmarked = n;
  return mark;
}

// Unlink the marked conses of a list; returns the new head.
Value splice_out(Interp& in, Value list, const std::vector<char>& drop) {
  Value head = in.nil();
  Cons* last = nullptr;
  size_t i = 0;
  for (Value l = list; l.is_cons(); l = l.cons()->cdr, ++i) {
    if (drop[i]) continue;
    if (last)
      last->cdr = l;
    else
      head = l;
    last = l.cons();
  }
  if (last) last->cdr = in.nil();
  return head;
}

// Remove the marked elements: a fresh sequence (as SBCL, even when nothing
// is removed), or for delete the same conses, or the same vector when it
// has a fill pointer.
Value without(Interp& in, const Seq& s, const std::vector<char>& drop, size_t ndrop,
              bool destructive, const char* op) {
  if (destructive && s.v.is_cons()) return ndrop ? splice_out(in, s.v, drop) : s.v;
  if (destructive && s.v.is_vector() && s.v.vec()->fill_pointer >= 0) {
    auto& it = s.v.vec()->items;
    size_t j = 0;
    for (size_t i = 0; i < s.n; ++i)
      if (!drop[i]) it[j++] = it[i];
    s.v.vec()->fill_pointer = int64_t(j);
    return s.v;
  }
  if (destructive && s.v.is_string() && s.v.str()->fill_pointer >= 0) {
    auto& cs = s.v.str()->chars;
    size_t j = 0;
    for (size_t i = 0; i < s.n; ++i)
      if (!drop[i]) cs[j++] = cs[i];
    s.v.str()->fill_pointer = int64_t(j);
    return s.v;
  }
  std::vector<Value> keep;
  keep.reserve(s.n - ndrop);
  for (size_t i = 0; i < s.n; ++i)
    if (!drop[i]) keep.push_back(s.at(in, i));
  return make_like(in, s.v, keep, op);
}

Value remove_like(Interp& in, Value* args, int nargs, Mode mode, bool destructive) {
  Keys k;
  Match m = parse_match(in, args, nargs, 0, mode, true, k);
  const char* op = in.current_operator;
  Seq s = seq_of(in, args[1], op);
  Bounds b = bounds(in, k.start, k.end, s.n, op);
  size_t n = 0;
  std::vector<char> drop = marked(in, s, m, k, b, &n);
  in.single();
  return without(in, s, drop, n, destructive, op);
}

// Store v at index i of a sequence read through `s` (lists: the i-th cons).
void store(Interp& in, const Seq& s, size_t i, Value v, Value* cons_cursor, const char* op) {
  if (s.v.is_vector()) {
    if (!is_bit(v) && is_bit_vector(s.v)) in.type_error(v, "a bit (0 or 1)", op_name(op));
    s.v.vec()->items[i] = v;
  } else if (s.v.is_string()) {
    s.v.str()->chars[i] = in.arg_char(v, op_name(op));
  } else {
    cons_cursor->cons()->car = v;
  }
}

Value substitute_like(Interp& in, Value* args, int nargs, Mode mode, bool destructive) {
  Keys k;
  Match m = parse_match(in, args, nargs, 1, mode, true, k);
  const char* op = in.current_operator;
  Value seq = args[2];
  Seq s = seq_of(in, seq, op);
  Bounds b = bounds(in, k.start, k.end, s.n, op);
  size_t n = 0;
  std::vector<char> hit = marked(in, s, m, k, b, &n);
  in.single();
  Value neu = args[0];
  if (destructive) {
    if (s.v.is_string() && n > 0) in.arg_char(neu, op_name(op));
    Value cur = seq;
    for (size_t i = 0; i < s.n; ++i) {
      if (hit[i]) store(in, s, i, neu, &cur, op);
      if (cur.is_cons()) cur = cur.cons()->cdr;
    }
    return seq;
  }
  std::vector<Value> xs(s.n);
  for (size_t i = 0; i < s.n; ++i) xs[i] = hit[i] ? neu : s.at(in, i);
  return make_like(in, seq, xs, op);
}

// ---- remove-duplicates ---------------------------------------------------------------

Value remove_duplicates(Interp& in, Value* args, int nargs, bool destructive) {
  Value o[6];
  in.parse_keys(args, nargs, 1, {"FROM-END", "TEST", "TEST-NOT", "START", "END", "KEY"}, o);
  const char* op = in.current_operator;
  TestFn t = make_test(in, o[1], o[2], in.nil());
  Value key = fn_or_nil(in, o[5]);
  Seq s = seq_of(in, args[0], op);
  Bounds b = bounds(in, o[3], o[4], s.n, op);
  std::vector<Value> keys(s.n);
  for (size_t i = b.start; i < b.end; ++i) keys[i] = apply_key(in, key, s.at(in, i));
  std::vector<char> drop(s.n, 0);
  size_t n = 0;
  Matcher standard(in, in.nil(), o[1], o[2]);
  if (standard.mode() != Matcher::Mode::Call) {
    // eq, eql, equal or equalp: one pass with a hash set instead of all pairs.
    HashTest ht = standard.mode() == Matcher::Mode::Equal    ? HashTest::Equal
                  : standard.mode() == Matcher::Mode::Equalp ? HashTest::Equalp
                                                             : HashTest::Eql;
    std::unordered_set<Value, ValueHasher, ValueKeyEq> seen(0, ValueHasher{ht}, ValueKeyEq{ht});
    auto visit = [&](size_t i) {
      if (!seen.insert(keys[i]).second) drop[i] = 1, ++n;
    };
    if (o[0].truthy())  // keep the first occurrence
      for (size_t i = b.start; i < b.end; ++i) visit(i);
    else  // keep the last occurrence
      for (size_t i = b.end; i-- > b.start;) visit(i);
  } else if (o[0].truthy()) {  // keep the first occurrence
    for (size_t j = b.start; j < b.end; ++j)
      for (size_t i = b.start; i < j; ++i)
        if (!drop[i] && t(keys[i], keys[j])) {
          drop[j] = 1, ++n;
          break;
        }
  } else {  // keep the last occurrence
    for (size_t i = b.start; i < b.end; ++i)
      for (size_t j = i + 1; j < b.end; ++j)
        if (t(keys[i], keys[j])) {
          drop[i] = 1, ++n;
          break;
        }
  }
  in.single();
  return without(in, s, drop, n, destructive, op);
}

// ---- fill, replace -------------------------------------------------------------------

Value fill(Interp& in, Value* args, int nargs) {
  Value o[2];
  in.parse_keys(args, nargs, 2, {"START", "END"}, o);
  Value seq = args[0], item = args[1];
  if (seq.is_list()) {
    Bounds b = bounds(in, o[0], o[1], in.list_length(seq, "fill"), "fill");
    Value l = seq;
    for (size_t i = 0; i < b.end; ++i, l = l.cons()->cdr)
      if (i >= b.start) l.cons()->car = item;
    return seq;
  }
  Seq s = seq_of(in, seq, "fill");
  Bounds b = bounds(in, o[0], o[1], s.n, "fill");
  if (seq.is_string()) {
    char32_t c = in.arg_char(item, "fill");
    std::fill(seq.str()->chars.begin() + long(b.start), seq.str()->chars.begin() + long(b.end), c);
  } else {
    std::fill(seq.vec()->items.begin() + long(b.start), seq.vec()->items.begin() + long(b.end),
              item);
  }
  return seq;
}

Value replace(Interp& in, Value* args, int nargs) {
  Value o[4];
  in.parse_keys(args, nargs, 2, {"START1", "END1", "START2", "END2"}, o);
  Seq s1 = seq_of(in, args[0], "replace"), s2 = seq_of(in, args[1], "replace");
  Bounds b1 = bounds(in, o[0], o[1], s1.n, "replace");
  Bounds b2 = bounds(in, o[2], o[3], s2.n, "replace");
  size_t n = std::min(b1.end - b1.start, b2.end - b2.start);
  // Read the source first: replacing a sequence with itself copies as if
  // from a separate copy.
  std::vector<Value> src(n);
  for (size_t i = 0; i < n; ++i) src[i] = s2.at(in, b2.start + i);
  Value cur = args[0];
  for (size_t i = 0; i < b1.start && cur.is_cons(); ++i) cur = cur.cons()->cdr;
  for (size_t i = 0; i < n; ++i) {
    store(in, s1, b1.start + i, src[i], &cur, "replace");
    if (cur.is_cons()) cur = cur.cons()->cdr;
  }
  return args[0];
}

// ---- search, mismatch ----------------------------------------------------------------

struct TwoSeqs {
  Seq a, b;
  Bounds ba, bb;
  bool from_end;
  TestFn test;
  Value key;
  // Do a[i] and b[j] match (test of their keys, in that order)?
  bool same(Interp& in, size_t i, size_t j) const {
    return test(apply_key(in, key, a.at(in, i)), apply_key(in, key, b.at(in, j)));
  }
};

TwoSeqs parse_two(Interp& in, Value* args, int nargs) {
  Value o[8];
  in.parse_keys(args, nargs, 2,
                {"FROM-END", "TEST", "TEST-NOT", "KEY", "START1", "START2", "END1", "END2"}, o);
  const char* op = in.current_operator;
  TwoSeqs t{seq_of(in, args[0], op),
            seq_of(in, args[1], op),
            {},
            {},
            o[0].truthy(),
            make_test(in, o[1], o[2], in.nil()),
            fn_or_nil(in, o[3])};
  t.ba = bounds(in, o[4], o[6], t.a.n, op);
  t.bb = bounds(in, o[5], o[7], t.b.n, op);
  return t;
}

Value search(Interp& in, Value* args, int nargs) {
  TwoSeqs t = parse_two(in, args, nargs);
  size_t len = t.ba.end - t.ba.start;
  if (t.bb.end - t.bb.start < len) return in.nil();
  size_t lo = t.bb.start, hi = t.bb.end - len;  // candidate positions [lo, hi]
  auto at = [&](size_t p) {
    for (size_t k = 0; k < len; ++k)
      if (!t.same(in, t.ba.start + k, p + k)) return false;
    return true;
  };
  Value r = in.nil();
  if (t.from_end) {
    for (size_t p = hi + 1; p-- > lo;)
      if (at(p)) {
        r = Value::integer(int64_t(p));
        break;
      }
  } else {
    for (size_t p = lo; p <= hi; ++p)
      if (at(p)) {
        r = Value::integer(int64_t(p));
        break;
      }
  }
  in.single();
  return r;
}

Value mismatch(Interp& in, Value* args, int nargs) {
  TwoSeqs t = parse_two(in, args, nargs);
  size_t la = t.ba.end - t.ba.start, lb = t.bb.end - t.bb.start, n = std::min(la, lb);
  size_t k = 0;
  if (t.from_end) {
    while (k < n && t.same(in, t.ba.end - 1 - k, t.bb.end - 1 - k)) ++k;
    in.single();
    if (k == n && la == lb) return in.nil();
    return Value::integer(int64_t(t.ba.end - k));
  }
  while (k < n && t.same(in, t.ba.start + k, t.bb.start + k)) ++k;
  in.single();
  if (k == n && la == lb) return in.nil();
  return Value::integer(int64_t(t.ba.start + k));
}

}  // namespace

// ---- registration ------------------------------------------------------------------------

void register_sequence_builtins(Interp& in) {
  SG_BUILTIN(in, "ELT", 2, 2, "the element of a sequence at an index",
             { return elt(in, args[0], args[1]); });
  SG_BUILTIN(in, "SUBSEQ", 2, 3, "a fresh copy of part of a sequence",
             { return subseq(in, args[0], args[1], nargs > 2 ? args[2] : in.nil()); });
  SG_BUILTIN(in, "LENGTH", 1, 1, "the number of elements of a sequence (up to a fill pointer)",
             { return Value::integer(int64_t(seq_length(in, args[0], "length"))); });
  SG_BUILTIN(in, "COPY-SEQ", 1, 1, "a fresh copy of a sequence",
             { return subseq(in, args[0], Value::integer(0), in.nil()); });

  SG_BUILTIN(in, "FIND", 2, -1, "the first element matching an item",
             { return find_like(in, args, nargs, Mode::Item, false); });
  SG_BUILTIN(in, "FIND-IF", 2, -1, "the first element satisfying a predicate",
             { return find_like(in, args, nargs, Mode::If, false); });
  SG_BUILTIN(in, "FIND-IF-NOT", 2, -1, "the first element not satisfying a predicate",
             { return find_like(in, args, nargs, Mode::IfNot, false); });
  SG_BUILTIN(in, "POSITION", 2, -1, "the index of the first element matching an item",
             { return find_like(in, args, nargs, Mode::Item, true); });
  SG_BUILTIN(in, "POSITION-IF", 2, -1, "the index of the first element satisfying a predicate",
             { return find_like(in, args, nargs, Mode::If, true); });
  SG_BUILTIN(in, "POSITION-IF-NOT", 2, -1,
             "the index of the first element not satisfying a predicate",
             { return find_like(in, args, nargs, Mode::IfNot, true); });
  SG_BUILTIN(in, "COUNT", 2, -1, "how many elements match an item",
             { return count_like(in, args, nargs, Mode::Item); });
  SG_BUILTIN(in, "COUNT-IF", 2, -1, "how many elements satisfy a predicate",
             { return count_like(in, args, nargs, Mode::If); });
  SG_BUILTIN(in, "COUNT-IF-NOT", 2, -1, "how many elements do not satisfy a predicate",
             { return count_like(in, args, nargs, Mode::IfNot); });

  SG_BUILTIN(in, "REMOVE", 2, -1, "a copy without the elements matching an item",
             { return remove_like(in, args, nargs, Mode::Item, false); });
  SG_BUILTIN(in, "REMOVE-IF", 2, -1, "a copy without the elements satisfying a predicate",
             { return remove_like(in, args, nargs, Mode::If, false); });
  SG_BUILTIN(in, "REMOVE-IF-NOT", 2, -1, "a copy of the elements satisfying a predicate",
             { return remove_like(in, args, nargs, Mode::IfNot, false); });
  SG_BUILTIN(in, "DELETE", 2, -1, "remove, reusing the sequence",
             { return remove_like(in, args, nargs, Mode::Item, true); });
  SG_BUILTIN(in, "DELETE-IF", 2, -1, "remove-if, reusing the sequence",
             { return remove_like(in, args, nargs, Mode::If, true); });
  SG_BUILTIN(in, "DELETE-IF-NOT", 2, -1, "remove-if-not, reusing the sequence",
             { return remove_like(in, args, nargs, Mode::IfNot, true); });

  SG_BUILTIN(in, "SUBSTITUTE", 3, -1, "a copy with the elements matching an item replaced",
             { return substitute_like(in, args, nargs, Mode::Item, false); });
  SG_BUILTIN(in, "SUBSTITUTE-IF", 3, -1, "a copy with the elements satisfying a predicate replaced",
             { return substitute_like(in, args, nargs, Mode::If, false); });
  SG_BUILTIN(in, "SUBSTITUTE-IF-NOT", 3, -1,
             "a copy with the elements not satisfying a predicate replaced",
             { return substitute_like(in, args, nargs, Mode::IfNot, false); });
  SG_BUILTIN(in, "NSUBSTITUTE", 3, -1, "substitute in place",
             { return substitute_like(in, args, nargs, Mode::Item, true); });
  SG_BUILTIN(in, "NSUBSTITUTE-IF", 3, -1, "substitute-if in place",
             { return substitute_like(in, args, nargs, Mode::If, true); });
  SG_BUILTIN(in, "NSUBSTITUTE-IF-NOT", 3, -1, "substitute-if-not in place",
             { return substitute_like(in, args, nargs, Mode::IfNot, true); });

  SG_BUILTIN(in, "REMOVE-DUPLICATES", 1, -1,
             "a copy keeping the last of equal elements (the first with :from-end)",
             { return remove_duplicates(in, args, nargs, false); });
  SG_BUILTIN(in, "DELETE-DUPLICATES", 1, -1, "remove-duplicates, reusing the sequence",
             { return remove_duplicates(in, args, nargs, true); });
  SG_BUILTIN(in, "FILL", 2, -1, "store an item into part of a sequence",
             { return fill(in, args, nargs); });
  SG_BUILTIN(in, "REPLACE", 2, -1, "copy part of one sequence into another",
             { return replace(in, args, nargs); });
  // (setf (subseq seq start [end]) new): replace with new's elements, as CL
  // defines it; the value is new.
  SG_BUILTIN(in, "%SET-SUBSEQ", 3, 4, "(setf subseq)", {
    Value rargs[6] = {args[0], args[nargs - 1],   in.sym_kw("START1"),
                      args[1], in.sym_kw("END1"), nargs == 4 ? args[2] : in.nil()};
    replace(in, rargs, 6);
    return args[nargs - 1];
  });
  SG_BUILTIN(in, "SEARCH", 2, -1, "the position of a subsequence in a sequence",
             { return search(in, args, nargs); });
  SG_BUILTIN(in, "MISMATCH", 2, -1, "the position where two sequences first differ",
             { return mismatch(in, args, nargs); });

  register_seqfun_builtins(in);
  register_vector_builtins(in);
}

}  // namespace sexpgpu::lisp
