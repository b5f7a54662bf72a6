# Writes OUT: a C++ file defining kPreludeFiles from the Lisp files in FILES
# (a ;-separated list, loaded in that order).
set(body "")
foreach(f ${FILES})
  file(READ "${f}" content)
  get_filename_component(name "${f}" NAME)
  string(APPEND body "    {\"prelude/${name}\", R\"sexpgpu_lisp(${content})sexpgpu_lisp\"},\n")
endforeach()
file(WRITE "${OUT}" "// Generated from the prelude's Lisp files; do not edit.\n#include <cstddef>\nnamespace sexpgpu::lisp {\nstruct PreludeFile { const char* name; const char* text; };\nextern const PreludeFile kPreludeFiles[];\nextern const size_t kPreludeFileCount;\nconst PreludeFile kPreludeFiles[] = {\n${body}};\nconst size_t kPreludeFileCount = sizeof(kPreludeFiles) / sizeof(kPreludeFiles[0]);\n}\n")
