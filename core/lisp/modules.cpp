// require and defmodule (language.md, "Modules and require"): resolving a
// path, loading a module once per compilation, cycles, prefixes and :only.
#include "lisp/modules.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lisp/builtins.h"
#include "lisp/reader.h"

namespace sexpgpu::lisp {

namespace fs = std::filesystem;

// The standard modules' directories in the source tree ("sexpgpu/nn" is
// sexpgpu/nn.lisp in one of them), colon-separated: the prelude's and the
// optimizers'. Only a binary of this build tree reads them; an installed one
// reads its own copies (standard_module_dirs).
#ifndef SEXPGPU_LISP_DIRS
#define SEXPGPU_LISP_DIRS ""
#endif
#ifndef SEXPGPU_BUILD_DIR
#define SEXPGPU_BUILD_DIR ""
#endif

namespace {

// Where the standard modules are: the source tree for a binary inside the
// build directory (so an edit to nn.lisp is seen without installing), and
// otherwise PREFIX/share/sexpgpu/lisp beside the binary's PREFIX/bin, where
// `cmake --install` puts them. An installed binary never looks in the
// source tree it was built from, which may be gone or newer.
std::vector<std::string> standard_module_dirs() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  fs::path build = fs::weakly_canonical(SEXPGPU_BUILD_DIR, ec);
  fs::path real = fs::weakly_canonical(exe, ec);
  auto [b, r] = std::mismatch(build.begin(), build.end(), real.begin(), real.end());
  std::vector<std::string> dirs;
  if (!build.empty() && b == build.end()) {
    std::stringstream standard(SEXPGPU_LISP_DIRS);
    for (std::string d; std::getline(standard, d, ':');)
      if (!d.empty()) dirs.push_back(d);
    return dirs;
  }
  fs::path installed = exe.parent_path() / ".." / "share" / "sexpgpu" / "lisp";
  dirs.push_back(installed.lexically_normal().string());
  return dirs;
}

}  // namespace

std::vector<std::string> module_search_dirs(const Interp& in, const std::string& from_file) {
  std::vector<std::string> dirs;
  if (!from_file.empty() && from_file[0] != '<') {
    fs::path p = fs::path(from_file).parent_path();
    dirs.push_back(p.empty() ? "." : p.string());
  } else {
    dirs.push_back(".");  // -e, standard input and the REPL: the working directory
  }
  if (const char* env = std::getenv("SEXPGPU_MODULE_PATH")) {
    std::stringstream ss(env);
    std::string d;
    while (std::getline(ss, d, ':'))
      if (!d.empty()) dirs.push_back(d);
  }
  for (const std::string& d : in.module_path) dirs.push_back(d);
  static const std::vector<std::string> standard = standard_module_dirs();
  dirs.insert(dirs.end(), standard.begin(), standard.end());
  return dirs;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower((unsigned char)c));
  return s;
}

// A path names its file as written when its last segment has an extension
// ("./blocks.lib", "./lib/x.lisp"), as a CL pathname's type does; without
// one, ".lisp" is added ("sexpgpu/nn" -> sexpgpu/nn.lisp). "./" and "../"
// paths are relative to the requiring file only, absolute ones are that file,
// and any other path is looked up in the search directories in order.
bool resolve(Interp& in, const std::string& spec, std::string& out, std::vector<std::string>& tried) {
  bool relative = spec.rfind("./", 0) == 0 || spec.rfind("../", 0) == 0;
  std::string file = spec;
  if (!fs::path(file).has_extension()) file += ".lisp";
  std::vector<std::string> dirs = module_search_dirs(in, in.current_file);
  if (relative && !dirs.empty()) dirs.resize(1);
  if (fs::path(file).is_absolute()) dirs = {""};
  for (const std::string& d : dirs) {
    fs::path p = d.empty() ? fs::path(file) : fs::path(d) / file;
    tried.push_back(p.lexically_normal().string());
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) {
      out = fs::weakly_canonical(p, ec).string();
      return true;
    }
  }
  return false;
}

Module* load_module(Interp& in, const std::string& path, const std::string& spec) {
  for (auto& m : in.modules)
    if (m->path == path) return m.get();
  std::ifstream f(path, std::ios::binary);
  if (!f) in.fail("E-REQUIRE-NOT-FOUND", "cannot read module file " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  auto mod = std::make_unique<Module>();
  mod->path = path;
  mod->name = spec;
  Module* m = mod.get();
  in.modules.push_back(std::move(mod));

  uint32_t file_id = in.sources.add(path, ss.str());
  // A standard module is library code: its errors point at the user's call.
  if (spec.rfind("sexpgpu/", 0) == 0) in.library_files.push_back(file_id);
  Module* saved_module = in.current_module;
  std::string saved_file = in.current_file;
  uint32_t saved_span = in.cur_span;
  in.loading.push_back(m);
  in.current_module = m;
  in.current_file = path;
  struct Restore {
    Interp& in;
    Module* mod;
    std::string file;
    uint32_t span;
    ~Restore() {
      in.current_module = mod;
      in.current_file = file;
      in.cur_span = span;
      in.loading.pop_back();
    }
  } restore{in, saved_module, saved_file, saved_span};

  std::vector<ReadForm> forms;
  try {
    forms = read_file_forms(in, file_id);
  } catch (LispError&) {
    m->failed = true;  // unreadable: required again, it is still a failure
    throw;
  }
  bool first = true;
  for (const ReadForm& rf : forms) {
    bool is_defmodule = rf.form.is_cons() && car_of(rf.form).is_symbol() &&
                        car_of(rf.form).sym()->name == "DEFMODULE";
    if (first && !is_defmodule) {
      Diagnostic d;
      d.code = "E-REQUIRE-NOT-FOUND";
      d.span = rf.span;
      d.message = "'" + spec + "' is not a module: its first form is not (defmodule NAME (:export ...))";
      in.sink.report(d);
      m->failed = true;
      return m;
    }
    first = false;
    uint64_t steps = in.steps;
    uint32_t depth = in.depth;
    in.eval_toplevel(rf.form, nullptr, &rf.span);
    in.steps += steps;  // the requirer's budget keeps counting
    in.depth = depth;
  }
  m->loaded = true;
  return m;
}

// The main file's own path, canonical, once known: a module that requires
// it is a cycle too. Only the main file requires with nothing loading.
const std::string& main_file_path(Interp& in) {
  if (in.main_file.empty() && in.loading.empty() && !in.current_file.empty() &&
      in.current_file[0] != '<') {
    std::error_code ec;
    in.main_file = fs::weakly_canonical(in.current_file, ec).string();
  }
  return in.main_file;
}

// The module `spec` names, loaded once. The cycle is checked as soon as the
// path is resolved, before anything about the file itself.
Module* find_and_load(Interp& in, const std::string& spec) {
  const std::string& main_path = main_file_path(in);
  std::string resolved;
  std::vector<std::string> tried;
  if (!resolve(in, spec, resolved, tried)) {
    std::string where;
    for (const std::string& t : tried) where += (where.empty() ? "" : ", ") + t;
    in.fail("E-REQUIRE-NOT-FOUND", "module \"" + spec + "\" not found (looked in: " + where + ")",
            "check the path; relative paths start with ./ and are relative to the requiring file");
  }
  bool back_to_main = !main_path.empty() && resolved == main_path;
  auto in_chain = std::find_if(in.loading.begin(), in.loading.end(),
                               [&](Module* l) { return l->path == resolved; });
  if (back_to_main || in_chain != in.loading.end()) {
    std::string chain = back_to_main ? fs::path(main_path).filename().string() + " -> " : "";
    for (auto l = back_to_main ? in.loading.begin() : in_chain; l != in.loading.end(); ++l)
      chain += (*l)->name + " -> ";
    in.fail("E-REQUIRE-CYCLE",
            (back_to_main ? "the main file requires itself: "
                          : "module \"" + spec + "\" requires itself: ") +
                chain + spec,
            "move what both need into a third module");
  }
  return load_module(in, resolved, spec);
}

}  // namespace

// (require "path" [:as prefix] [:only (names...)])
Value sf_require(Interp& in, Value form, Env*) {
  Value args = cdr_of(form);
  Value spec_v = car_of(args);
  if (!spec_v.is_string())
    in.fail("E-TYPE", "require: the module must be a path string such as \"sexpgpu/nn\" or \"./lib/blocks.lisp\", not " +
                          in.show(spec_v));
  std::string spec = u32_to_utf8(spec_v.str()->chars);
  Value prefix = in.nil();
  Value only = in.nil();
  bool has_only = false;
  for (Value o = cdr_of(args); o.is_cons(); o = cdr_of(cdr_of(o))) {
    Value k = car_of(o);
    if (!cdr_of(o).is_cons()) in.fail("E-ARITY", "require: " + in.show(k) + " needs a value");
    Value v = car_of(cdr_of(o));
    if (k.is_symbol() && k.sym()->keyword && k.sym()->name == "AS") prefix = v;
    else if (k.is_symbol() && k.sym()->keyword && k.sym()->name == "ONLY") {
      only = v;
      has_only = true;
    } else {
      in.fail("E-ARITY", "require: unknown option " + in.show(k), "require takes :as PREFIX and :only (NAMES...)");
    }
  }
  std::string pre = prefix.is_symbol() && !prefix.is_nil() ? prefix.sym()->name
                                                           : upcase_ascii(fs::path(spec).stem().string());
  // What this require makes reachable; for a module that failed to load,
  // its uses become consequences of the error already reported.
  auto make_reachable = [&](Module* m) {
    if (!has_only || !prefix.is_nil()) in.current_module->prefixes[pre] = m;
    for (Value n = only; n.is_cons(); n = n.cons()->cdr) {
      Value s = n.cons()->car;
      if (!s.is_symbol()) in.type_error(s, "a symbol", "require :only");
      if (m->failed) {
        in.poisoned.push_back(s.sym());
        continue;
      }
      if (!m->exports.count(s.sym()->name))
        in.fail("E-UNBOUND", "require :only: module '" + m->name + "' does not export '" +
                                 lower(s.sym()->name) + "'");
      in.current_module->imported[s.sym()] = m;
    }
  };
  Module* m = nullptr;
  try {
    m = find_and_load(in, spec);
  } catch (LispError&) {
    auto stub = std::make_unique<Module>();
    stub->name = spec;
    stub->failed = true;
    Module* failed = stub.get();
    in.modules.push_back(std::move(stub));
    make_reachable(failed);
    throw;
  }
  make_reachable(m);
  in.nvals = 1;
  return in.t();
}

// (defmodule NAME (:export sym...)): the first form of a module file.
Value sf_defmodule(Interp& in, Value form, Env*) {
  Module* m = in.current_module;
  if (m == in.modules[0].get())
    in.fail("E-TYPE", "defmodule is only allowed as the first form of a file loaded with require");
  Value name = car_of(cdr_of(form));
  if (name.is_symbol()) m->name = lower(name.sym()->name);
  else if (name.is_string()) m->name = u32_to_utf8(name.str()->chars);
  for (Value o = cdr_of(cdr_of(form)); o.is_cons(); o = o.cons()->cdr) {
    Value clause = o.cons()->car;
    if (!clause.is_cons() || !car_of(clause).is_symbol() || car_of(clause).sym()->name != "EXPORT")
      in.fail("E-TYPE", "defmodule: " + in.show(clause) + " is not (:export NAME...)");
    for (Value e = cdr_of(clause); e.is_cons(); e = e.cons()->cdr) {
      if (!car_of(e).is_symbol()) in.type_error(car_of(e), "a symbol", "defmodule :export");
      m->exports.insert(car_of(e).sym()->name);
    }
  }
  in.nvals = 1;
  return name;
}

void register_module_builtins(Interp&) {}

}  // namespace sexpgpu::lisp
