// Lists as sets, association lists and trees: member, adjoin, union,
// intersection, set-difference, set-exclusive-or, subsetp (and the
// destructive n- versions), assoc / rassoc and their -if forms, acons,
// pairlis, subst / sublis / nsubst and their -if forms, tree-equal.
//
// Result orders follow SBCL's algorithms (union pushes the longer list's new
// elements onto the shorter; intersection and set-difference push, so they
// come out reversed) so printed results compare equal with it. Membership
// in a long list under a standard test is answered by hashing.
#include <unordered_set>

#include "lisp/builtins_list.h"

namespace sexpgpu::lisp {

// ---- :key / :test / :test-not ----------------------------------------------

static Matcher::Mode standard_mode(Value fn) {
  if (!fn.is_function() || !fn.fn()->builtin || !fn.fn()->name.is_symbol())
    return Matcher::Mode::Call;
  const std::string& n = fn.fn()->name.sym()->name;
  if (n == "EQ" || n == "EQL") return Matcher::Mode::Eql;  // eq is eql on our values
  if (n == "EQUAL") return Matcher::Mode::Equal;
  if (n == "EQUALP") return Matcher::Mode::Equalp;
  return Matcher::Mode::Call;
}

Matcher::Matcher(Interp& in, Value key, Value test, Value test_not)
    : in_(in), key_(key), test_(test), test_not_(test_not) {
  if (test.truthy() && test_not.truthy())
    in.fail("E-ARITY",
            std::string("both :test and :test-not given to '") +
                (in.current_operator ? op_name(in.current_operator) : "function") + "'",
            "give one of them");
  if (key_.truthy()) key_ = in.resolve_function(key_);
  if (test_.truthy()) test_ = in.resolve_function(test_);
  if (test_not_.truthy()) test_not_ = in.resolve_function(test_not_);
  mode_ = test_not_.truthy() ? Mode::Call : test_.is_nil() ? Mode::Eql : standard_mode(test_);
}

Matcher parse_matcher(Interp& in, Value* args, int nargs, int start) {
  Value k[3];
  in.parse_keys(args, nargs, start, {"KEY", "TEST", "TEST-NOT"}, k);
  return Matcher(in, k[0], k[1], k[2]);
}

Pred parse_pred(Interp& in, Value* args, int nargs, int start, bool negate) {
  Value key;
  in.parse_keys(args, nargs, start, {"KEY"}, &key);
  return Pred(in, args[0], key, negate);
}

namespace {

// "Is some element y of a list such that (test k (key y))?", asked many
// times of one list: its keys are computed once, and hashed when the test
// is a standard one and scanning would be slow.
class KeyIndex {
 public:
  KeyIndex(const Matcher& m, const std::vector<Value>& elems, size_t probes)
      : m_(m), set_(0, ValueHasher{hash_test()}, ValueKeyEq{hash_test()}) {
    keys_.reserve(elems.size());
    for (Value y : elems) keys_.push_back(m.key(y));
    hashed_ = m.mode() != Matcher::Mode::Call && keys_.size() > 8 && keys_.size() * probes > 512;
    if (hashed_) set_.insert(keys_.begin(), keys_.end());
  }
  // With `swapped`, ask (test (key y) k) instead.
  bool contains(Value k, bool swapped = false) const {
    if (hashed_) return set_.count(k) != 0;
    for (Value ky : keys_)
      if (swapped ? m_.test(ky, k) : m_.test(k, ky)) return true;
    return false;
  }

 private:
  HashTest hash_test() const {
    switch (m_.mode()) {
      case Matcher::Mode::Equal: return HashTest::Equal;
      case Matcher::Mode::Equalp: return HashTest::Equalp;
      default: return HashTest::Eql;
    }
  }
  const Matcher& m_;
  std::vector<Value> keys_;
  std::unordered_set<Value, ValueHasher, ValueKeyEq> set_;
  bool hashed_ = false;
};

Value cons_value(Cons* c) {
  return Value::object(Kind::Cons, c);
}

// ---- member and adjoin -------------------------------------------------------

template <class Test>
Value member_if(Interp& in, Value list, const char* where, const Test& test) {
  check_list(in, list, where);
  ListWalk w(in, list, where);
  for (; w.at_cons(); w.next())
    if (test(w.car())) return w.pos();
  w.require_nil_end();
  return in.nil();
}

Value member(Interp& in, Value* args, int nargs) {
  Matcher m = parse_matcher(in, args, nargs, 2);
  return member_if(in, args[1], "member", [&](Value e) { return m(args[0], e); });
}

Value adjoin(Interp& in, Value* args, int nargs) {
  Matcher m = parse_matcher(in, args, nargs, 2);
  Value k = m.key(args[0]);
  Value found = member_if(in, args[1], "adjoin", [&](Value e) { return m(k, e); });
  return found.is_nil() ? in.cons(args[0], args[1]) : args[1];
}

// ---- set operations ----------------------------------------------------------

struct SetArgs {
  Matcher m;
  std::vector<Cons*> a, b;  // the conses of list1 and list2
};

SetArgs set_args(Interp& in, Value* args, int nargs, const char* where) {
  Matcher m = parse_matcher(in, args, nargs, 2);
  return SetArgs{m, list_conses(in, args[0], where), list_conses(in, args[1], where)};
}

std::vector<Value> cars(const std::vector<Cons*>& cs) {
  std::vector<Value> out;
  out.reserve(cs.size());
  for (Cons* c : cs) out.push_back(c->car);
  return out;
}

// Union: the longer list's elements missing from the shorter, pushed onto
// the shorter one (reusing the longer one's conses when destructive).
Value union_(Interp& in, Value* args, int nargs, bool destructive) {
  SetArgs s = set_args(in, args, nargs, destructive ? "nunion" : "union");
  bool first_short = s.a.size() < s.b.size();
  Value result = first_short ? args[0] : args[1];
  const std::vector<Cons*>& lng = first_short ? s.b : s.a;
  KeyIndex idx(s.m, cars(first_short ? s.a : s.b), lng.size());
  for (Cons* c : lng) {
    if (idx.contains(s.m.key(c->car))) continue;
    if (destructive) {
      c->cdr = result;
      result = cons_value(c);
    } else {
      result = in.cons(c->car, result);
    }
  }
  return result;
}

// The elements of list1 whose membership in list2 is `keep`, pushed (so in
// reverse order), as intersection (keep members) and set-difference do.
Value filter_by_membership(Interp& in, SetArgs& s, bool keep, bool destructive) {
  KeyIndex idx(s.m, cars(s.b), s.a.size());
  Value result = in.nil();
  for (Cons* c : s.a) {
    if (idx.contains(s.m.key(c->car)) != keep) continue;
    if (destructive) {
      c->cdr = result;
      result = cons_value(c);
    } else {
      result = in.cons(c->car, result);
    }
  }
  return result;
}

Value intersection(Interp& in, Value* args, int nargs, bool destructive) {
  SetArgs s = set_args(in, args, nargs, destructive ? "nintersection" : "intersection");
  if (s.a.empty() || s.b.empty()) return in.nil();
  return filter_by_membership(in, s, true, destructive);
}

Value set_difference(Interp& in, Value* args, int nargs, bool destructive) {
  SetArgs s = set_args(in, args, nargs, destructive ? "nset-difference" : "set-difference");
  if (s.b.empty()) return args[0];
  return filter_by_membership(in, s, false, destructive);
}

Value set_exclusive_or(Interp& in, Value* args, int nargs) {
  SetArgs s = set_args(in, args, nargs, "set-exclusive-or");
  std::vector<Value> a = cars(s.a), b = cars(s.b);
  KeyIndex in_a(s.m, a, b.size()), in_b(s.m, b, a.size());
  Value result = in.nil();
  for (Value x : a)
    if (!in_b.contains(s.m.key(x))) result = in.cons(x, result);
  for (Value y : b)
    if (!in_a.contains(s.m.key(y), true)) result = in.cons(y, result);
  return result;
}

// SBCL's nset-exclusive-or: for each element of list1, splice every matching
// element out of list2 (into a deleted list); drop the element from list1 if
// it matched anything; finally append what is left of list2.
Value nset_exclusive_or(Interp& in, Value* args, int nargs) {
  SetArgs s = set_args(in, args, nargs, "nset-exclusive-or");
  const Matcher& m = s.m;
  Value list1 = args[0], list2 = args[1], deleted = in.nil();
  Cons* splicex = nullptr;
  for (Cons* x : s.a) {
    Value kx = m.key(x->car);
    bool found = false;
    Cons* splicey = nullptr;
    for (Value y = list2; y.is_cons();) {
      Cons* yc = y.cons();
      Value next = yc->cdr;
      if (m.test(kx, m.key(yc->car))) {
        if (splicey)
          splicey->cdr = next;
        else
          list2 = next;
        yc->cdr = deleted;
        deleted = y;
        found = true;
      } else {
        splicey = yc;
      }
      y = next;
    }
    for (Value d = deleted; !found && d.is_cons(); d = d.cons()->cdr) found = m(kx, d.cons()->car);
    if (!found)
      splicex = x;
    else if (splicex)
      splicex->cdr = x->cdr;
    else
      list1 = x->cdr;
  }
  if (!splicex) return list2;
  splicex->cdr = list2;
  return list1;
}

Value subsetp(Interp& in, Value* args, int nargs) {
  SetArgs s = set_args(in, args, nargs, "subsetp");
  KeyIndex idx(s.m, cars(s.b), s.a.size());
  for (Cons* c : s.a)
    if (!idx.contains(s.m.key(c->car))) return in.nil();
  return in.t();
}

// ---- association lists -------------------------------------------------------

// The first pair of ALIST satisfying `test`; nil elements are skipped.
template <class Test>
Value assoc_if(Interp& in, Value alist, const char* where, const Test& test) {
  check_list(in, alist, where);
  ListWalk w(in, alist, where);
  for (; w.at_cons(); w.next()) {
    Value e = w.car();
    if (e.is_nil()) continue;
    if (!e.is_cons()) in.type_error(e, "a cons (an alist element)", where);
    if (test(e.cons())) return e;
  }
  w.require_nil_end();
  return in.nil();
}

Value assoc(Interp& in, Value* args, int nargs, bool by_cdr) {
  Matcher m = parse_matcher(in, args, nargs, 2);
  return assoc_if(in, args[1], by_cdr ? "rassoc" : "assoc",
                  [&](Cons* p) { return m(args[0], by_cdr ? p->cdr : p->car); });
}

Value assoc_pred(Interp& in, Value* args, int nargs, bool by_cdr, bool negate, const char* where) {
  Pred p = parse_pred(in, args, nargs, 2, negate);
  return assoc_if(in, args[1], where, [&](Cons* c) { return p(by_cdr ? c->cdr : c->car); });
}

Value pairlis(Interp& in, Value* args, int nargs) {
  Value alist = nargs > 2 ? args[2] : in.nil();
  std::vector<Cons*> keys = list_conses(in, args[0], "pairlis");
  std::vector<Cons*> data = list_conses(in, args[1], "pairlis");
  if (keys.size() != data.size())
    in.fail("E-TYPE", "pairlis: the lists of keys and data are of unequal length (" +
                          std::to_string(keys.size()) + " and " + std::to_string(data.size()) +
                          ")");
  for (size_t i = 0; i < keys.size(); ++i)
    alist = in.cons(in.cons(keys[i]->car, data[i]->car), alist);
  return alist;
}

// ---- trees -------------------------------------------------------------------

// SUBST and friends. `match(subtree, &replacement)` is asked of every
// subtree, outermost first. Recursive in the cars, iterative along the cdrs
// (a long list must not exhaust the stack); unchanged parts are shared.
template <class Match>
Value subst_tree(Interp& in, Value tree, const Match& match, const char* where) {
  Value rep;
  if (match(tree, &rep)) return rep;
  if (!tree.is_cons()) return tree;
  in.check_native_stack();
  std::vector<Cons*> spine;
  std::vector<Value> new_cars;
  ListWalk w(in, tree, where);
  Value tail;
  for (;;) {
    spine.push_back(w.cell());
    new_cars.push_back(subst_tree(in, w.car(), match, where));
    w.next();
    if (match(w.pos(), &tail)) break;
    if (!w.at_cons()) {
      tail = w.pos();
      break;
    }
  }
  Value r = tail;
  for (size_t i = spine.size(); i-- > 0;)
    r = new_cars[i] == spine[i]->car && r == spine[i]->cdr ? cons_value(spine[i])
                                                           : in.cons(new_cars[i], r);
  return r;
}

// NSUBST and friends: the same walk, replacing in place.
template <class Match>
Value nsubst_tree(Interp& in, Value tree, const Match& match, const char* where) {
  Value rep;
  if (match(tree, &rep)) return rep;
  if (!tree.is_cons()) return tree;
  in.check_native_stack();
  ListWalk w(in, tree, where);
  for (;;) {
    Cons* c = w.cell();
    c->car = nsubst_tree(in, c->car, match, where);
    w.next();
    if (match(w.pos(), &rep)) {
      c->cdr = rep;
      break;
    }
    if (!w.at_cons()) break;
  }
  return tree;
}

template <class Match>
Value subst_any(Interp& in, Value tree, bool destructive, const Match& match, const char* where) {
  return destructive ? nsubst_tree(in, tree, match, where) : subst_tree(in, tree, match, where);
}

// (subst new old tree &key key test test-not)
Value subst(Interp& in, Value* args, int nargs, bool destructive) {
  Matcher m = parse_matcher(in, args, nargs, 3);
  Value fresh = args[0], old = args[1];
  auto match = [&](Value t, Value* rep) {
    if (!m(old, t)) return false;
    *rep = fresh;
    return true;
  };
  return subst_any(in, args[2], destructive, match, destructive ? "nsubst" : "subst");
}

// (subst-if new predicate tree &key key), and the -if-not and n- forms.
Value subst_if(Interp& in, Value* args, int nargs, bool negate, bool destructive,
               const char* where) {
  Value key;
  in.parse_keys(args, nargs, 3, {"KEY"}, &key);
  Pred p(in, args[1], key, negate);
  Value fresh = args[0];
  auto match = [&](Value t, Value* rep) {
    if (!p(t)) return false;
    *rep = fresh;
    return true;
  };
  return subst_any(in, args[2], destructive, match, where);
}

// (sublis alist tree &key key test test-not): (test (key subtree) (car pair)).
Value sublis(Interp& in, Value* args, int nargs, bool destructive) {
  const char* where = destructive ? "nsublis" : "sublis";
  Matcher m = parse_matcher(in, args, nargs, 2);
  std::vector<Cons*> pairs;
  for (Cons* c : list_conses(in, args[0], where)) {
    if (c->car.is_nil()) continue;
    if (!c->car.is_cons()) in.type_error(c->car, "a cons (an alist element)", where);
    pairs.push_back(c->car.cons());
  }
  auto match = [&](Value t, Value* rep) {
    Value k = m.key(t);
    for (Cons* p : pairs)
      if (m.test(k, p->car)) {
        *rep = p->cdr;
        return true;
      }
    return false;
  };
  return subst_any(in, args[1], destructive, match, where);
}

// As SBCL, the default test first asks eq of each pair of subtrees (so a
// circular tree is tree-equal to itself).
bool tree_equal(Interp& in, Value x, Value y, const Matcher& m) {
  if (m.mode() == Matcher::Mode::Eql && x == y) return true;
  in.check_native_stack();
  ListWalk w(in, x, "tree-equal");
  for (; w.at_cons(); w.next()) {
    if (!y.is_cons() || !tree_equal(in, w.car(), y.cons()->car, m)) return false;
    y = y.cons()->cdr;
  }
  return !y.is_cons() && m.test(w.pos(), y);
}

}  // namespace

void register_list_set_builtins(Interp& in) {
  SG_BUILTIN(in, "MEMBER", 2, -1, "the tail of a list from an item (:key :test :test-not)",
             { return member(in, args, nargs); });
  SG_BUILTIN(in, "MEMBER-IF", 2, -1, "the tail of a list from an element satisfying a predicate", {
    Pred p = parse_pred(in, args, nargs, 2, false);
    return member_if(in, args[1], "member-if", p);
  });
  SG_BUILTIN(in, "MEMBER-IF-NOT", 2, -1, "the tail of a list from an element failing a predicate", {
    Pred p = parse_pred(in, args, nargs, 2, true);
    return member_if(in, args[1], "member-if-not", p);
  });
  SG_BUILTIN(in, "ADJOIN", 2, -1, "a list with an item added unless already a member",
             { return adjoin(in, args, nargs); });
  SG_BUILTIN(in, "UNION", 2, -1, "the union of two lists",
             { return union_(in, args, nargs, false); });
  SG_BUILTIN(in, "NUNION", 2, -1, "the union of two lists (destructive)",
             { return union_(in, args, nargs, true); });
  SG_BUILTIN(in, "INTERSECTION", 2, -1, "the elements of list1 also in list2",
             { return intersection(in, args, nargs, false); });
  SG_BUILTIN(in, "NINTERSECTION", 2, -1, "intersection, reusing list1",
             { return intersection(in, args, nargs, true); });
  SG_BUILTIN(in, "SET-DIFFERENCE", 2, -1, "the elements of list1 not in list2",
             { return set_difference(in, args, nargs, false); });
  SG_BUILTIN(in, "NSET-DIFFERENCE", 2, -1, "set-difference, reusing list1",
             { return set_difference(in, args, nargs, true); });
  SG_BUILTIN(in, "SET-EXCLUSIVE-OR", 2, -1, "the elements in exactly one of two lists",
             { return set_exclusive_or(in, args, nargs); });
  SG_BUILTIN(in, "NSET-EXCLUSIVE-OR", 2, -1, "set-exclusive-or, reusing both lists",
             { return nset_exclusive_or(in, args, nargs); });
  SG_BUILTIN(in, "SUBSETP", 2, -1, "whether every element of list1 is in list2",
             { return subsetp(in, args, nargs); });
  SG_BUILTIN(in, "ASSOC", 2, -1, "the first pair of an alist whose car matches",
             { return assoc(in, args, nargs, false); });
  SG_BUILTIN(in, "RASSOC", 2, -1, "the first pair of an alist whose cdr matches",
             { return assoc(in, args, nargs, true); });
  SG_BUILTIN(in, "ASSOC-IF", 2, -1, "the first pair whose car satisfies a predicate",
             { return assoc_pred(in, args, nargs, false, false, "assoc-if"); });
  SG_BUILTIN(in, "ASSOC-IF-NOT", 2, -1, "the first pair whose car fails a predicate",
             { return assoc_pred(in, args, nargs, false, true, "assoc-if-not"); });
  SG_BUILTIN(in, "RASSOC-IF", 2, -1, "the first pair whose cdr satisfies a predicate",
             { return assoc_pred(in, args, nargs, true, false, "rassoc-if"); });
  SG_BUILTIN(in, "RASSOC-IF-NOT", 2, -1, "the first pair whose cdr fails a predicate",
             { return assoc_pred(in, args, nargs, true, true, "rassoc-if-not"); });
  SG_BUILTIN(in, "ACONS", 3, 3, "an alist with a pair added in front",
             { return in.cons(in.cons(args[0], args[1]), args[2]); });
  SG_BUILTIN(in, "PAIRLIS", 2, 3, "an alist pairing keys with data",
             { return pairlis(in, args, nargs); });
  SG_BUILTIN(in, "SUBST", 3, -1, "a tree with subtrees matching OLD replaced by NEW",
             { return subst(in, args, nargs, false); });
  SG_BUILTIN(in, "NSUBST", 3, -1, "subst, in place", { return subst(in, args, nargs, true); });
  SG_BUILTIN(in, "SUBST-IF", 3, -1, "a tree with subtrees satisfying a predicate replaced",
             { return subst_if(in, args, nargs, false, false, "subst-if"); });
  SG_BUILTIN(in, "SUBST-IF-NOT", 3, -1, "a tree with subtrees failing a predicate replaced",
             { return subst_if(in, args, nargs, true, false, "subst-if-not"); });
  SG_BUILTIN(in, "NSUBST-IF", 3, -1, "subst-if, in place",
             { return subst_if(in, args, nargs, false, true, "nsubst-if"); });
  SG_BUILTIN(in, "NSUBST-IF-NOT", 3, -1, "subst-if-not, in place",
             { return subst_if(in, args, nargs, true, true, "nsubst-if-not"); });
  SG_BUILTIN(in, "SUBLIS", 2, -1, "a tree with substitutions from an alist",
             { return sublis(in, args, nargs, false); });
  SG_BUILTIN(in, "NSUBLIS", 2, -1, "sublis, in place", { return sublis(in, args, nargs, true); });
  SG_BUILTIN(in, "TREE-EQUAL", 2, -1, "whether two trees have the same shape and leaves", {
    Value k[2];
    in.parse_keys(args, nargs, 2, {"TEST", "TEST-NOT"}, k);
    Matcher m(in, in.nil(), k[0], k[1]);
    return in.boolean(tree_equal(in, args[0], args[1], m));
  });
}

}  // namespace sexpgpu::lisp
