// format (stub: being written).
#include "lisp/builtins.h"

namespace sexpgpu::lisp {

std::string lisp_format(Interp& in, const std::u32string& control, Value* args, int nargs) {
  (void)args; (void)nargs; (void)in;
  return u32_to_utf8(control);
}

void register_format_builtins(Interp&) {}

}  // namespace sexpgpu::lisp
