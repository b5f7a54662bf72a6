// The in-place rule over a device's plan (in_place.h).
#include "in_place.h"

namespace sexpgpu::plan {

bool writes_in_place(std::span<const StepAccess> steps, size_t output, size_t input) {
  const StepAccess* writer = nullptr;
  const ir::Shape* written = nullptr;
  for (const StepAccess& s : steps)
    for (const Access& w : s.writes)
      if (w.index == output) {
        if (writer) return false;  // written twice: the second write may read the first
        writer = &s, written = &w.shape;
      }
  if (!writer) return false;
  for (const StepAccess& s : steps)
    for (const Access& r : s.reads) {
      if (r.index != input) continue;
      if (&s == writer) {
        if (!s.elementwise || r.shape != *written) return false;
      } else if (s.launch >= writer->launch) {
        return false;
      }
    }
  return true;
}

}  // namespace sexpgpu::plan
