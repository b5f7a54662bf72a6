# Writes OUT: a C++ file defining kPreludeSource from the Lisp file IN.
file(READ "${IN}" content)
file(WRITE "${OUT}" "// Generated from ${IN}; do not edit.\nnamespace sexpgpu::lisp {\nextern const char* const kPreludeSource;\nconst char* const kPreludeSource = R\"sexpgpu_lisp(${content})sexpgpu_lisp\";\n}\n")
