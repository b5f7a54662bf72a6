// Loading the embedded prelude. An error in it is a bug of ours, reported
// loudly rather than hidden among the user's diagnostics.
#include <stdexcept>

#include "lisp/interp.h"
#include "lisp/reader.h"
#include "util/embedded.h"

namespace sexpgpu::lisp {

void load_prelude(Interp& in) {
  std::string saved_file = in.current_file;
  Module* saved_module = in.current_module;
  in.current_file = "<prelude>";
  in.current_module = in.prelude_module;  // its functions and macros run in its scope
  size_t before = in.sink.all().size();
  for (size_t i = 0; i < kPreludeFiles_count; ++i) {
    uint32_t id = in.sources.add(kPreludeFiles[i].name, kPreludeFiles[i].text);
    for (const ReadForm& f : read_file_forms(in, id)) in.eval_toplevel(f.form, nullptr, &f.span);
  }
  in.current_file = saved_file;
  in.current_module = saved_module;
  in.last_prelude_file = uint32_t(in.sources.file_count() - 1);
  if (in.sink.all().size() != before) {
    const Diagnostic& d = in.sink.all()[before];
    std::string file = d.span.valid() ? in.sources.file(d.span.file).path : "?";
    throw std::logic_error("internal error: the prelude does not load: " + d.code + " " + d.message +
                           " at " + file + ":" + std::to_string(d.span.line));
  }
}

}  // namespace sexpgpu::lisp
