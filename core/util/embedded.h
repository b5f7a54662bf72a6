// Files embedded in the binary at build time (cmake/embed_files.cmake): the
// prelude, loaded before every file, and the docs, printed by `sexpgpu docs`.
#pragma once

#include <cstddef>

namespace sexpgpu {

struct EmbeddedFile {
  const char* name;
  const char* text;
};

extern const EmbeddedFile kPreludeFiles[];  // "prelude/prelude.lisp", ... in load order
extern const size_t kPreludeFiles_count;
extern const EmbeddedFile kDocPages[];  // "lisp", "check", ... and "llms.txt"
extern const size_t kDocPages_count;
// core/report/page.js and page.css, the report page's own script and style
// (linked into the sexpgpu binary by the report library).
extern const EmbeddedFile kReportFiles[];  // "page.js", "page.css"
extern const size_t kReportFiles_count;
// devices/cuda/codegen/elementwise_prelude.cuh, which NVRTC compiles with every
// generated kernel (linked into the cuda plugin only).
extern const EmbeddedFile kCudaPrelude[];
extern const size_t kCudaPrelude_count;

}  // namespace sexpgpu
