// Conses and lists (stub: being written).
#include "lisp/builtins.h"

namespace sexpgpu::lisp {

void register_list_builtins(Interp& in) {
  SG_BUILTIN(in, "CONS", 2, 2, "a new cons", { return in.cons(args[0], args[1]); });
  SG_BUILTIN(in, "LIST", 0, -1, "a new list", { return in.list_from(std::vector<Value>(args, args + nargs)); });
  SG_BUILTIN(in, "CAR", 1, 1, "first of a cons", {
    if (!args[0].is_list()) in.type_error(args[0], "a list", "car");
    return car_of(args[0]);
  });
  SG_BUILTIN(in, "CDR", 1, 1, "rest of a cons", {
    if (!args[0].is_list()) in.type_error(args[0], "a list", "cdr");
    return cdr_of(args[0]);
  });
  SG_BUILTIN(in, "CADR", 1, 1, "", { return car_of(cdr_of(args[0])); });
  SG_BUILTIN(in, "CDDR", 1, 1, "", { return cdr_of(cdr_of(args[0])); });
  SG_BUILTIN(in, "CAAR", 1, 1, "", { return car_of(car_of(args[0])); });
  SG_BUILTIN(in, "CADDR", 1, 1, "", { return car_of(cdr_of(cdr_of(args[0]))); });
  SG_BUILTIN(in, "NTH", 2, 2, "", {
    Value l = args[1];
    for (int64_t i = in.arg_int(args[0], "nth"); i > 0; --i) l = cdr_of(l);
    return car_of(l);
  });
  SG_BUILTIN(in, "MAPCAR", 2, -1, "", {
    std::vector<Value> out;
    std::vector<Value> ls(args + 1, args + nargs);
    for (;;) {
      std::vector<Value> a;
      for (Value& l : ls) {
        if (!l.is_cons()) return in.list_from(out);
        a.push_back(car_of(l));
        l = cdr_of(l);
      }
      out.push_back(in.funcall_designator(args[0], a.data(), int(a.size())));
    }
  });
  SG_BUILTIN(in, "APPEND", 0, -1, "", {
    if (nargs == 0) return in.nil();
    Value r = args[nargs - 1];
    for (int i = nargs - 1; i-- > 0;) r = in.list_from(in.list_items(args[i], "append"), r);
    return r;
  });
  SG_BUILTIN(in, "REVERSE", 1, 1, "", {
    Value r = in.nil();
    for (Value x : in.list_items(args[0], "reverse")) r = in.cons(x, r);
    return r;
  });
  SG_BUILTIN(in, "BUTLAST", 1, 1, "", {
    auto v = in.list_items(args[0], "butlast");
    if (!v.empty()) v.pop_back();
    return in.list_from(v);
  });
  SG_BUILTIN(in, "LAST", 1, 1, "", {
    Value l = args[0];
    while (cdr_of(l).is_cons()) l = cdr_of(l);
    return l;
  });
  SG_BUILTIN(in, "MEMBER", 2, -1, "", {
    for (Value l = args[1]; l.is_cons(); l = cdr_of(l))
      if (eql(car_of(l), args[0])) return l;
    return in.nil();
  });
  SG_BUILTIN(in, "ADJOIN", 2, -1, "", {
    for (Value l = args[1]; l.is_cons(); l = cdr_of(l))
      if (eql(car_of(l), args[0])) return args[1];
    return in.cons(args[0], args[1]);
  });
}

}  // namespace sexpgpu::lisp
