// Modules: a library file whose first form is (defmodule NAME (:export ...)).
// Its definitions live in its own cells; the requirer reaches exports as
// prefix:name, or unprefixed through :only. See language.md, "Modules".
#pragma once

#include <set>
#include <string>
#include <unordered_map>

#include "lisp/interp.h"

namespace sexpgpu::lisp {

struct Module {
  std::string name;  // from defmodule
  std::string path;  // resolved file path, or "sexpgpu/nn" for standard ones
  std::set<std::string> exports;  // symbol names (upper case)
  std::unordered_map<Symbol*, Cell> cells;  // what the module defined
  // In the scope of this module (or of the main file, for the Interp's
  // main_scope): prefix -> module, and names imported unprefixed.
  std::unordered_map<std::string, Module*> prefixes;
  std::unordered_map<Symbol*, Module*> imported;
  bool loaded = false;
  // Could not be loaded (not found, a cycle, not a module): the require
  // reported it, and uses of its prefix are consequences, not new errors.
  bool failed = false;
};

// Where `require` looks for a path (relative to the requiring file, then
// SEXPGPU_MODULE_PATH and the installed lisp directory).
std::vector<std::string> module_search_dirs(const Interp& in, const std::string& from_file);

}  // namespace sexpgpu::lisp
