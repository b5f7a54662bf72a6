# Writes OUT: a C++ file defining kDocPages from the markdown files in FILES
# (each page's name without .md, and llms.txt as "llms.txt").
set(body "")
foreach(f ${FILES})
  file(READ "${f}" content)
  get_filename_component(name "${f}" NAME)
  string(REGEX REPLACE "\\.md$" "" name "${name}")
  string(APPEND body "    {\"${name}\", R\"sexpgpu_doc(${content})sexpgpu_doc\"},\n")
endforeach()
file(WRITE "${OUT}" "// Generated from docs/; do not edit.\n#include <cstddef>\nnamespace sexpgpu {\nstruct DocPage { const char* name; const char* text; };\nextern const DocPage kDocPages[];\nextern const size_t kDocPageCount;\nconst DocPage kDocPages[] = {\n${body}};\nconst size_t kDocPageCount = sizeof(kDocPages) / sizeof(kDocPages[0]);\n}\n")
