// Conses and lists: accessors (car ... cddddr, first ... tenth, nth, last),
// construction and copying (list, list*, make-list, append, copy-tree, ...),
// destructive splicing (nconc, nreverse, nbutlast), plists (getf, %remf) and
// the mapping functions. Sets, alists and tree substitution are in
// builtins_list_sets.cpp.
//
// Walks over user lists go through ListWalk, so a circular list is an E-TYPE
// where SBCL would loop forever; otherwise results and errors follow SBCL.
#include "lisp/builtins_list.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "lisp/bit_vector.h"

namespace sexpgpu::lisp {

std::vector<Cons*> list_conses(Interp& in, Value list, const char* where) {
  check_list(in, list, where);
  std::vector<Cons*> out;
  ListWalk w(in, list, where);
  for (; w.at_cons(); w.next()) out.push_back(w.cell());
  w.require_nil_end();
  return out;
}

namespace {

// A non-negative integer argument (index or count).
int64_t arg_index(Interp& in, Value v, const char* where) {
  if (!v.is_int() || v.i < 0) in.type_error(v, "a non-negative integer", where);
  return v.i;
}

// ---- car, cdr and their compositions --------------------------------------

// The letters between C and R, applied right to left: CADR is (car (cdr x)).
template <size_t N>
struct CxrName {
  char s[N];
  constexpr CxrName(const char (&x)[N]) { std::copy_n(x, N, s); }
};

template <CxrName Name>
Value cxr(Interp& in, Value* args, int) {
  static const std::string where = op_name(Name.s);
  Value v = args[0];
  for (size_t i = sizeof(Name.s) - 3; i >= 1; --i) {
    if (v.is_nil()) return v;
    if (!v.is_cons()) in.type_error(v, "a list", where);
    v = Name.s[i] == 'A' ? v.cons()->car : v.cons()->cdr;
  }
  return v;
}

#define SG_CXR(NAME) \
  { #NAME, cxr < #NAME> }
struct CxrEntry {
  const char* name;
  BuiltinFn fn;
};
const CxrEntry kCxrTable[] = {
    SG_CXR(CAR),    SG_CXR(CDR),    SG_CXR(CAAR),   SG_CXR(CADR),   SG_CXR(CDAR),   SG_CXR(CDDR),
    SG_CXR(CAAAR),  SG_CXR(CAADR),  SG_CXR(CADAR),  SG_CXR(CADDR),  SG_CXR(CDAAR),  SG_CXR(CDADR),
    SG_CXR(CDDAR),  SG_CXR(CDDDR),  SG_CXR(CAAAAR), SG_CXR(CAAADR), SG_CXR(CAADAR), SG_CXR(CAADDR),
    SG_CXR(CADAAR), SG_CXR(CADADR), SG_CXR(CADDAR), SG_CXR(CADDDR), SG_CXR(CDAAAR), SG_CXR(CDAADR),
    SG_CXR(CDADAR), SG_CXR(CDADDR), SG_CXR(CDDAAR), SG_CXR(CDDADR), SG_CXR(CDDDAR), SG_CXR(CDDDDR),
};
#undef SG_CXR

// "(car (cdr x))" for CADR: the doc line of each composition.
const char* cxr_doc(size_t i) {
  static const std::vector<std::string> docs = [] {
    std::vector<std::string> out;
    for (const CxrEntry& e : kCxrTable) {
      std::string name(e.name), doc = "x";
      for (size_t j = name.size() - 2; j >= 1; --j)
        doc = std::string(name[j] == 'A' ? "(car " : "(cdr ") + doc + ")";
      out.push_back(doc);
    }
    return out;
  }();
  return docs[i].c_str();
}

// FIRST ... TENTH: the car after N cdrs.
template <int N>
Value nth_elem(Interp& in, Value* args, int) {
  static const char* const kNames[] = {"first", "second",  "third",  "fourth", "fifth",
                                       "sixth", "seventh", "eighth", "ninth",  "tenth"};
  Value v = args[0];
  for (int i = 0; i <= N; ++i) {
    if (v.is_nil()) return v;
    if (!v.is_cons()) in.type_error(v, "a list", kNames[N]);
    v = i == N ? v.cons()->car : v.cons()->cdr;
  }
  return v;
}

const CxrEntry kNthTable[] = {
    {"FIRST", nth_elem<0>},   {"SECOND", nth_elem<1>}, {"THIRD", nth_elem<2>},
    {"FOURTH", nth_elem<3>},  {"FIFTH", nth_elem<4>},  {"SIXTH", nth_elem<5>},
    {"SEVENTH", nth_elem<6>}, {"EIGHTH", nth_elem<7>}, {"NINTH", nth_elem<8>},
    {"TENTH", nth_elem<9>},
};

// N cdrs of a list; on a circular list the count is taken modulo the cycle,
// as SBCL does, so huge counts stay cheap.
Value nthcdr(Interp& in, Value nv, Value list, const char* where) {
  int64_t n = arg_index(in, nv, where);
  check_list(in, list, where);
  ListWalk w(in, list, where);
  for (int64_t i = 0; i < n; ++i) {
    if (!w.at_cons()) {
      if (w.pos().is_nil()) return w.pos();
      in.type_error(w.pos(), "a list", where);
    }
    if (w.step()) {
      int64_t left = (n - i - 1) % int64_t(w.cycle_length());
      Value x = w.pos();
      while (left-- > 0) x = x.cons()->cdr;
      return x;
    }
  }
  return w.pos();
}

// The number of conses of a proper or dotted list (E-TYPE if circular).
size_t count_conses(Interp& in, Value list, const char* where, Value* tail = nullptr) {
  check_list(in, list, where);
  size_t n = 0;
  ListWalk w(in, list, where);
  for (; w.at_cons(); w.next()) ++n;
  if (tail) *tail = w.pos();
  return n;
}

Value nthcdr_unchecked(Value list, size_t n) {
  while (n-- > 0) list = list.cons()->cdr;
  return list;
}

Value last(Interp& in, Value* args, int nargs) {
  int64_t n = nargs > 1 ? arg_index(in, args[1], "last") : 1;
  size_t len = count_conses(in, args[0], "last");
  return nthcdr_unchecked(args[0], len > size_t(n) ? len - size_t(n) : 0);
}

Value copy_list(Interp& in, Value list, const char* where) {
  check_list(in, list, where);
  ListBuilder b(in);
  ListWalk w(in, list, where);
  for (; w.at_cons(); w.next()) b.push(w.car());
  return b.finish(w.pos());
}

Value butlast(Interp& in, Value* args, int nargs, bool destructive) {
  const char* where = destructive ? "nbutlast" : "butlast";
  int64_t n = nargs > 1 ? arg_index(in, args[1], where) : 1;
  if (n == 0) return destructive ? check_list(in, args[0], where) : copy_list(in, args[0], where);
  size_t len = count_conses(in, args[0], where);
  if (len <= size_t(n)) return in.nil();
  size_t keep = len - size_t(n);
  if (destructive) {
    nthcdr_unchecked(args[0], keep - 1).cons()->cdr = in.nil();
    return args[0];
  }
  ListBuilder b(in);
  Value x = args[0];
  for (size_t i = 0; i < keep; ++i, x = x.cons()->cdr) b.push(x.cons()->car);
  return b.finish();
}

// ---- construction ---------------------------------------------------------

Value list_star(Interp& in, Value* args, int nargs) {
  Value r = args[nargs - 1];
  for (int i = nargs - 1; i-- > 0;) r = in.cons(args[i], r);
  return r;
}

Value make_list(Interp& in, Value* args, int nargs) {
  int64_t n = arg_index(in, args[0], "make-list");
  Value init;
  in.parse_keys(args, nargs, 1, {"INITIAL-ELEMENT"}, &init);
  Value r = in.nil();
  for (int64_t i = 0; i < n; ++i) r = in.cons(init, r);
  return r;
}

// Copies every argument but the last, which is shared.
Value append(Interp& in, Value* args, int nargs) {
  if (nargs == 0) return in.nil();
  ListBuilder b(in);
  for (int i = 0; i < nargs - 1; ++i) {
    check_list(in, args[i], "append");
    ListWalk w(in, args[i], "append");
    for (; w.at_cons(); w.next()) b.push(w.car());
    w.require_nil_end();
  }
  return b.finish(args[nargs - 1]);
}

// The last cons of a non-empty list (E-TYPE if circular).
Cons* last_cons(Interp& in, Value list, const char* where) {
  ListWalk w(in, list, where);
  Cons* c = w.cell();
  for (; w.at_cons(); w.next()) c = w.cell();
  return c;
}

// SBCL's nconc: nil arguments are skipped, an atom is allowed only last.
Value nconc(Interp& in, Value* args, int nargs) {
  int i = 0;
  while (i < nargs && args[i].is_nil()) ++i;
  if (i == nargs) return in.nil();
  if (!args[i].is_cons()) {
    if (i == nargs - 1) return args[i];
    in.type_error(args[i], "a list", "nconc");
  }
  Value result = args[i];
  Value splice = result;
  for (++i; i < nargs; ++i) {
    Value e = args[i];
    if (!e.is_list() && i != nargs - 1) in.type_error(e, "a list", "nconc");
    last_cons(in, splice, "nconc")->cdr = e;
    if (e.is_cons()) splice = e;
  }
  return result;
}

Value revappend(Interp& in, Value x, Value y, bool destructive) {
  const char* where = destructive ? "nreconc" : "revappend";
  check_list(in, x, where);
  if (destructive) {
    for (Cons* c : list_conses(in, x, where)) {
      c->cdr = y;
      y = Value::object(Kind::Cons, c);
    }
    return y;
  }
  ListWalk w(in, x, where);
  for (; w.at_cons(); w.next()) y = in.cons(w.car(), y);
  w.require_nil_end();
  return y;
}

// ---- reverse (lists, vectors, strings), list-length ------------------------
// (LENGTH is a sequence function: builtins_sequence.cpp.)

Value reverse(Interp& in, Value s, bool destructive) {
  const char* where = destructive ? "nreverse" : "reverse";
  if (s.is_list()) return revappend(in, s, in.nil(), destructive);
  if (s.is_vector()) {
    Vector* v = s.vec();
    auto end = v->items.begin() + long(v->size());
    if (destructive) {
      std::reverse(v->items.begin(), end);
      return s;
    }
    std::vector<Value> items(std::make_reverse_iterator(end), v->items.rend());
    return is_bit_vector(s) ? make_bit_vector(in, std::move(items), where)
                            : in.make_vector(std::move(items));
  }
  if (s.is_string()) {
    String* str = s.str();
    auto end = str->chars.begin() + long(str->size());
    if (destructive) {
      std::reverse(str->chars.begin(), end);
      return s;
    }
    return in.make_string(std::u32string(std::make_reverse_iterator(end), str->chars.rend()));
  }
  in.type_error(s, "a sequence", where);
}

// nil for a circular list; E-TYPE for a dotted one.
Value list_length(Interp& in, Value list) {
  check_list(in, list, "list-length");
  int64_t n = 0;
  ListWalk w(in, list, "list-length");
  for (; w.at_cons(); ++n)
    if (w.step()) return in.nil();
  w.require_nil_end();
  return Value::integer(n);
}

// ---- copying and tails ----------------------------------------------------

Value copy_alist(Interp& in, Value alist) {
  check_list(in, alist, "copy-alist");
  ListBuilder b(in);
  ListWalk w(in, alist, "copy-alist");
  for (; w.at_cons(); w.next()) {
    Value e = w.car();
    b.push(e.is_cons() ? in.cons(e.cons()->car, e.cons()->cdr) : e);
  }
  w.require_nil_end();
  return b.finish();
}

// Recursive in the cars, iterative along the cdrs; a car cycle runs into
// the native stack limit (E-STACK) rather than overflowing it.
Value copy_tree(Interp& in, Value tree) {
  if (!tree.is_cons()) return tree;
  in.check_native_stack();
  ListBuilder b(in);
  ListWalk w(in, tree, "copy-tree");
  for (; w.at_cons(); w.next()) b.push(copy_tree(in, w.car()));
  return b.finish(w.pos());
}

// The elements of LIST before the tail OBJECT (the whole list if none).
Value ldiff(Interp& in, Value list, Value object) {
  check_list(in, list, "ldiff");
  ListBuilder b(in);
  ListWalk w(in, list, "ldiff");
  for (; w.at_cons(); w.next()) {
    if (w.pos() == object) return b.finish();
    b.push(w.car());
  }
  return b.finish(w.pos() == object ? in.nil() : w.pos());
}

Value tailp(Interp& in, Value object, Value list) {
  check_list(in, list, "tailp");
  ListWalk w(in, list, "tailp");
  for (; w.at_cons(); w.next())
    if (w.pos() == object) return in.t();
  return in.boolean(w.pos() == object);
}

// ---- property lists -------------------------------------------------------

[[noreturn]] void bad_plist(Interp& in, Value plist, const char* where) {
  in.type_error(plist, "a property list (an even-length list)", where);
}

Value getf(Interp& in, Value* args, int nargs) {
  Value plist = args[0];
  ListWalk w(in, plist, "getf");
  while (w.at_cons()) {
    Value key = w.car();
    w.next();
    if (!w.at_cons()) bad_plist(in, plist, "getf");
    if (key == args[1]) return w.car();
    w.next();
  }
  if (!w.pos().is_nil()) bad_plist(in, plist, "getf");
  return nargs > 2 ? args[2] : in.nil();
}

// (get-properties plist indicators): the first pair whose indicator is one
// of INDICATORS, as three values: indicator, value, the plist from there.
Value get_properties(Interp& in, Value plist, Value indicators) {
  std::vector<Value> wanted = in.list_items(indicators, "get-properties");
  ListWalk w(in, plist, "get-properties");
  while (w.at_cons()) {
    Value here = w.pos(), key = w.car();
    w.next();
    if (!w.at_cons()) bad_plist(in, plist, "get-properties");
    if (std::find(wanted.begin(), wanted.end(), key) != wanted.end())
      return in.values({key, w.car(), here});
    w.next();
  }
  if (!w.pos().is_nil()) bad_plist(in, plist, "get-properties");
  return in.values({in.nil(), in.nil(), in.nil()});
}

// (%remf plist indicator thunk): remf's worker. Splices the first pair of
// INDICATOR out of PLIST, calls THUNK if it did, returns the new plist.
Value remf(Interp& in, Value* args) {
  Value plist = args[0];
  Cons* prev_value = nullptr;  // the cons holding the previous pair's value
  ListWalk w(in, plist, "remf");
  while (w.at_cons()) {
    Cons* key = w.cell();
    w.next();
    if (!w.at_cons()) bad_plist(in, plist, "remf");
    Cons* value = w.cell();
    if (key->car == args[1]) {
      if (prev_value)
        prev_value->cdr = value->cdr;
      else
        plist = value->cdr;
      in.apply(in.resolve_function(args[2]), nullptr, 0);
      in.single();
      return plist;
    }
    prev_value = value;
    w.next();
  }
  if (!w.pos().is_nil()) bad_plist(in, plist, "remf");
  return plist;
}

// ---- mapping --------------------------------------------------------------

enum class Collect { None, List, Nconc };

// Splices mapcan's results together as SBCL does: a non-nil result is hung
// on the last cons of those before it, so an atom result is overwritten by
// the next non-nil one (and ends the list if it comes last).
class NconcCollector {
 public:
  NconcCollector(Interp& in, const char* where) : in_(in), where_(where), head_(in.nil()) {}
  void add(Value r) {
    if (r.is_nil()) return;
    if (tail_)
      tail_->cdr = r;
    else
      head_ = r;
    if (r.is_cons()) tail_ = last_cons(in_, r, where_);
  }
  Value result() const { return head_; }

 private:
  Interp& in_;
  const char* where_;
  Value head_;
  Cons* tail_ = nullptr;
};

// MAPCAR and friends: call FN on the cars (or the tails) of the lists until
// one of them is nil. Otherwise a list ending in another atom is an E-TYPE
// (SBCL checks all for nil first); if every list is circular the map could
// never end, which is an E-TYPE too.
Value map_lists(Interp& in, Value* args, int nargs, bool tails, Collect how, const char* where) {
  Value fn = in.resolve_function(args[0]);
  size_t n = size_t(nargs - 1);
  Value* lists = args + 1;
  std::vector<ListWalk> walks;
  walks.reserve(n);
  for (size_t i = 0; i < n; ++i) walks.emplace_back(in, check_list(in, lists[i], where), where);
  std::vector<Value> argv(n);
  std::vector<char> cyclic(n, 0);
  size_t n_cyclic = 0;
  ListBuilder out(in);
  NconcCollector spliced(in, where);
  for (;;) {
    for (size_t i = 0; i < n; ++i) {
      if (!walks[i].pos().is_nil()) continue;
      if (how == Collect::None) return lists[0];
      return how == Collect::List ? out.finish() : spliced.result();
    }
    for (size_t i = 0; i < n; ++i)
      if (!walks[i].at_cons()) in.type_error(lists[i], "a proper list", where);
    for (size_t i = 0; i < n; ++i) argv[i] = tails ? walks[i].pos() : walks[i].car();
    Value r = in.apply(fn, argv.data(), int(n));
    in.single();
    if (how == Collect::List) out.push(r);
    if (how == Collect::Nconc) spliced.add(r);
    for (size_t i = 0; i < n; ++i)
      if (walks[i].step() && !cyclic[i]) {
        cyclic[i] = 1;
        if (++n_cyclic == n) walks[i].circular();
      }
  }
}

}  // namespace

void register_list_builtins(Interp& in) {
  for (size_t i = 0; i < std::size(kCxrTable); ++i)
    in.defbuiltin(kCxrTable[i].name, 1, 1, kCxrTable[i].fn, cxr_doc(i));
  for (const CxrEntry& e : kNthTable) in.defbuiltin(e.name, 1, 1, e.fn, "an element of a list");
  SG_BUILTIN(in, "REST", 1, 1, "the cdr of a list", {
    if (!args[0].is_list()) in.type_error(args[0], "a list", "rest");
    return cdr_of(args[0]);
  });
  SG_BUILTIN(in, "CONS", 2, 2, "a new cons", { return in.cons(args[0], args[1]); });
  SG_BUILTIN(in, "NTHCDR", 2, 2, "the list after N cdrs",
             { return nthcdr(in, args[0], args[1], "nthcdr"); });
  SG_BUILTIN(in, "NTH", 2, 2, "the element at index N of a list", {
    Value tail = nthcdr(in, args[0], args[1], "nth");
    if (!tail.is_list()) in.type_error(tail, "a list", "nth");
    return car_of(tail);
  });
  SG_BUILTIN(in, "LAST", 1, 2, "the last N conses of a list", { return last(in, args, nargs); });
  SG_BUILTIN(in, "BUTLAST", 1, 2, "a copy of a list without its last N elements",
             { return butlast(in, args, nargs, false); });
  SG_BUILTIN(in, "NBUTLAST", 1, 2, "a list without its last N elements (destructive)",
             { return butlast(in, args, nargs, true); });
  SG_BUILTIN(in, "LIST", 0, -1, "a new list of the arguments",
             { return in.list_from(std::vector<Value>(args, args + nargs)); });
  SG_BUILTIN(in, "LIST*", 1, -1, "a list of the arguments ending in the last one",
             { return list_star(in, args, nargs); });
  SG_BUILTIN(in, "MAKE-LIST", 1, -1, "a list of N elements (:initial-element)",
             { return make_list(in, args, nargs); });
  SG_BUILTIN(in, "APPEND", 0, -1, "the lists concatenated (all but the last copied)",
             { return append(in, args, nargs); });
  SG_BUILTIN(in, "NCONC", 0, -1, "the lists concatenated destructively",
             { return nconc(in, args, nargs); });
  SG_BUILTIN(in, "REVAPPEND", 2, 2, "(append (reverse x) y)",
             { return revappend(in, args[0], args[1], false); });
  SG_BUILTIN(in, "NRECONC", 2, 2, "(nconc (nreverse x) y)",
             { return revappend(in, args[0], args[1], true); });
  SG_BUILTIN(in, "REVERSE", 1, 1, "a reversed copy of a sequence",
             { return reverse(in, args[0], false); });
  SG_BUILTIN(in, "NREVERSE", 1, 1, "a sequence reversed in place",
             { return reverse(in, args[0], true); });
  SG_BUILTIN(in, "LIST-LENGTH", 1, 1, "the length of a list, nil if circular",
             { return list_length(in, args[0]); });
  SG_BUILTIN(in, "ENDP", 1, 1, "true for nil, false for a cons", {
    if (!args[0].is_list()) in.type_error(args[0], "a list", "endp");
    return in.boolean(args[0].is_nil());
  });
  SG_BUILTIN(in, "COPY-LIST", 1, 1, "a fresh copy of a list's conses",
             { return copy_list(in, args[0], "copy-list"); });
  SG_BUILTIN(in, "COPY-ALIST", 1, 1, "a copy of an alist and its pairs",
             { return copy_alist(in, args[0]); });
  SG_BUILTIN(in, "COPY-TREE", 1, 1, "a copy of every cons of a tree",
             { return copy_tree(in, args[0]); });
  SG_BUILTIN(in, "LDIFF", 2, 2, "the part of a list before a tail",
             { return ldiff(in, args[0], args[1]); });
  SG_BUILTIN(in, "TAILP", 2, 2, "whether an object is a tail of a list",
             { return tailp(in, args[0], args[1]); });
  SG_BUILTIN(in, "GETF", 2, 3, "a plist's value for an indicator",
             { return getf(in, args, nargs); });
  SG_BUILTIN(in, "GET-PROPERTIES", 2, 2, "the first of several indicators found in a plist",
             { return get_properties(in, args[0], args[1]); });
  SG_BUILTIN(in, "%REMF", 3, 3, "remf's worker: the plist without an indicator",
             { return remf(in, args); });
  SG_BUILTIN(in, "MAPCAR", 2, -1, "the list of FN applied to successive elements",
             { return map_lists(in, args, nargs, false, Collect::List, "mapcar"); });
  SG_BUILTIN(in, "MAPLIST", 2, -1, "the list of FN applied to successive tails",
             { return map_lists(in, args, nargs, true, Collect::List, "maplist"); });
  SG_BUILTIN(in, "MAPC", 2, -1, "FN applied to successive elements; the first list",
             { return map_lists(in, args, nargs, false, Collect::None, "mapc"); });
  SG_BUILTIN(in, "MAPL", 2, -1, "FN applied to successive tails; the first list",
             { return map_lists(in, args, nargs, true, Collect::None, "mapl"); });
  SG_BUILTIN(in, "MAPCAN", 2, -1, "FN's results on successive elements, nconc'ed",
             { return map_lists(in, args, nargs, false, Collect::Nconc, "mapcan"); });
  SG_BUILTIN(in, "MAPCON", 2, -1, "FN's results on successive tails, nconc'ed",
             { return map_lists(in, args, nargs, true, Collect::Nconc, "mapcon"); });
  register_list_set_builtins(in);
}

}  // namespace sexpgpu::lisp
