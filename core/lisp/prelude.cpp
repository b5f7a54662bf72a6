// Loading the embedded prelude. An error in it is a bug of ours, reported
// loudly rather than hidden among the user's diagnostics.
#include <stdexcept>

#include "lisp/interp.h"
#include "lisp/reader.h"

namespace sexpgpu::lisp {

void load_prelude(Interp& in) {
  std::string saved_file = in.current_file;
  in.current_file = "<prelude>";
  uint32_t id = in.sources.add("prelude/prelude.lisp", kPreludeSource);
  size_t before = in.sink.all().size();
  std::vector<ReadForm> forms = read_file_forms(in, id);
  for (const ReadForm& f : forms) in.eval_toplevel(f.form);
  in.current_file = saved_file;
  if (in.sink.all().size() != before) {
    const Diagnostic& d = in.sink.all()[before];
    throw std::logic_error("internal error: the prelude does not load: " + d.code + " " + d.message +
                           " at line " + std::to_string(d.span.line));
  }
}

}  // namespace sexpgpu::lisp
