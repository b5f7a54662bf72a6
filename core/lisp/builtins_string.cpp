// Strings and characters (stub: being written).
#include "lisp/builtins.h"

namespace sexpgpu::lisp {

void register_string_builtins(Interp&) {}

}  // namespace sexpgpu::lisp
