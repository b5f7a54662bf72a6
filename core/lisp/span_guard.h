// SpanGuard: while a form is evaluated, errors point at it. Saves and
// restores the interpreter's current span, cons and innermost user span.
#pragma once

#include "lisp/interp.h"

namespace sexpgpu::lisp {

struct SpanGuard {
  Interp& in;
  uint32_t saved_cur, saved_atom, saved_user;
  Cons* saved_cons;
  SpanGuard(Interp& i, uint32_t s, Cons* c = nullptr)
      : in(i),
        saved_cur(i.cur_span),
        saved_atom(i.atom_span),
        saved_user(i.user_span),
        saved_cons(i.cur_cons) {
    if (s) {
      in.cur_span = s;
      in.cur_cons = c;
      if (in.is_user_file(in.span_of(s).file)) in.user_span = s;
    }
    in.atom_span = 0;
  }
  ~SpanGuard() {
    in.cur_span = saved_cur;
    in.atom_span = saved_atom;
    in.user_span = saved_user;
    in.cur_cons = saved_cons;
  }
};

}  // namespace sexpgpu::lisp
