// Numbers (stub: being written; see language.md "Builtins", Numbers).
#include "lisp/builtins.h"

namespace sexpgpu::lisp {

void register_number_builtins(Interp& in) {
  SG_BUILTIN(in, "+", 0, -1, "sum", {
    int64_t s = 0;
    for (int i = 0; i < nargs; ++i) s += in.arg_int(args[i], "+");
    return Value::integer(s);
  });
  SG_BUILTIN(in, "-", 1, -1, "difference", {
    int64_t s = in.arg_int(args[0], "-");
    if (nargs == 1) return Value::integer(-s);
    for (int i = 1; i < nargs; ++i) s -= in.arg_int(args[i], "-");
    return Value::integer(s);
  });
  SG_BUILTIN(in, "1+", 1, 1, "plus one", { return Value::integer(in.arg_int(args[0], "1+") + 1); });
  SG_BUILTIN(in, ">=", 1, -1, "not increasing", {
    for (int i = 1; i < nargs; ++i)
      if (in.arg_int(args[i - 1], ">=") < in.arg_int(args[i], ">=")) return in.nil();
    return in.t();
  });
}

}  // namespace sexpgpu::lisp
