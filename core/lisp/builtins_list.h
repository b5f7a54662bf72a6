// Helpers shared by the list builtins (builtins_list.cpp, builtins_list_sets.cpp):
// a cycle-checked walk over a list's conses, a front-to-back list builder,
// calls into Lisp that leave a single value behind, and the :key / :test /
// :test-not matcher with fast paths for the standard tests.
#pragma once

#include "lisp/builtins.h"

namespace sexpgpu::lisp {

// E-TYPE unless V is a list (a cons or nil); V otherwise.
inline Value check_list(Interp& in, Value v, const char* where) {
  if (!v.is_list()) in.type_error(v, "a list", where);
  return v;
}

// Walks the conses of a list. Brent's cycle check makes a circular list an
// E-TYPE instead of a hang; it costs one comparison per step.
class ListWalk {
 public:
  ListWalk(Interp& in, Value list, const char* where)
      : in_(&in), head_(list), where_(where), x_(list), mark_(list) {}
  bool at_cons() const { return x_.is_cons(); }
  Cons* cell() const { return x_.cons(); }
  Value car() const { return x_.cons()->car; }
  Value pos() const { return x_; }  // the current tail
  // Advance; true when this step showed the list to be circular.
  bool step() {
    x_ = x_.cons()->cdr;
    if (!x_.is_cons()) return false;
    if (x_.p == mark_.p) {
      cycle_ = steps_ + 1;
      return true;
    }
    if (++steps_ == power_) {
      mark_ = x_;
      power_ <<= 1;
      steps_ = 0;
    }
    return false;
  }
  void next() {
    if (step()) circular();
  }
  // The length of the cycle just detected by step().
  uint64_t cycle_length() const { return cycle_; }
  // After the walk: E-TYPE if it ended at an atom other than nil.
  void require_nil_end() const {
    if (!x_.is_nil()) in_->type_error(head_, "a proper list", where_);
  }
  [[noreturn]] void circular() const {
    in_->type_error(head_, "a proper list (it is circular)", where_);
  }

 private:
  Interp* in_;
  Value head_;
  const char* where_;
  Value x_, mark_;
  uint64_t steps_ = 0, power_ = 1, cycle_ = 0;
};

// Builds a fresh list front to back.
class ListBuilder {
 public:
  explicit ListBuilder(Interp& in) : in_(in), head_(in.nil()) {}
  void push(Value v) {
    Value c = in_.cons(v, in_.nil());
    if (tail_)
      tail_->cdr = c;
    else
      head_ = c;
    tail_ = c.cons();
  }
  bool empty() const { return tail_ == nullptr; }
  Cons* tail() const { return tail_; }
  // The list, ending in `rest`.
  Value finish(Value rest) {
    if (!tail_) return rest;
    tail_->cdr = rest;
    return head_;
  }
  Value finish() { return finish(in_.nil()); }

 private:
  Interp& in_;
  Value head_;
  Cons* tail_ = nullptr;
};

// The :key, :test and :test-not of one call. eq/eql/equal/equalp tests and
// an absent key run in C++; anything else goes through TestFn.
class Matcher {
 public:
  enum class Mode { Eql, Equal, Equalp, Call };
  Matcher(Interp& in, Value key, Value test, Value test_not);
  Value key(Value x) const { return key_.is_nil() ? x : call1(in_, key_, x); }
  // (test a b), or (not (test-not a b)); both already keyed.
  bool test(Value a, Value b) const {
    switch (mode_) {
      case Mode::Eql: return a == b;
      case Mode::Equal: return equal(a, b);
      case Mode::Equalp: return equalp(a, b);
      case Mode::Call: break;
    }
    bool r = TestFn{in_, test_, test_not_, in_.nil()}(a, b);
    in_.single();
    return r;
  }
  // CL's "satisfies the test": (test item (key elem)).
  bool operator()(Value item, Value elem) const { return test(item, key(elem)); }
  Mode mode() const { return mode_; }
  bool has_key() const { return !key_.is_nil(); }

 private:
  Interp& in_;
  Value key_, test_, test_not_;
  Mode mode_ = Mode::Eql;
};

// Parse :key :test :test-not from args[start..nargs) (E-ARITY for others).
Matcher parse_matcher(Interp& in, Value* args, int nargs, int start);

// A predicate with an optional :key, for the -if / -if-not functions.
class Pred {
 public:
  Pred(Interp& in, Value pred, Value key, bool negate)
      : in_(in), pred_(in.resolve_function(pred)), key_(key), negate_(negate) {
    if (!key_.is_nil()) key_ = in.resolve_function(key_);
  }
  bool operator()(Value elem) const {
    Value k = key_.is_nil() ? elem : call1(in_, key_, elem);
    return call1(in_, pred_, k).truthy() != negate_;
  }

 private:
  Interp& in_;
  Value pred_, key_;
  bool negate_;
};

// Parse the optional :key of an -if function at args[start..nargs).
Pred parse_pred(Interp& in, Value* args, int nargs, int start, bool negate);

// A proper list's conses, in order (E-TYPE for dotted or circular lists).
std::vector<Cons*> list_conses(Interp& in, Value list, const char* where);

void register_list_set_builtins(Interp& in);

}  // namespace sexpgpu::lisp
