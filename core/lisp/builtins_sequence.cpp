// Sequences (stub: being written).
#include "lisp/builtins.h"

namespace sexpgpu::lisp {

bool TestFn::operator()(Value item, Value elem) const {
  Value k = apply_key(elem);
  if (!test_not.is_nil()) return in.call(test_not, {item, k}).is_nil();
  if (!test.is_nil()) return in.call(test, {item, k}).truthy();
  return eql(item, k);
}

void register_sequence_builtins(Interp&) {}

}  // namespace sexpgpu::lisp
