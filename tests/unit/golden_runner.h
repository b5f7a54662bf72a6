// The golden runner shared by the golden language files and the docs'
// examples: forms followed by ";=> value" lines or ";!CODE".
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>

#include "catch.hpp"
#include "lisp/builtins.h"
#include "runfile/compile.h"
#include "runfile/contract.h"
#include "runfile/session.h"

namespace golden {

using namespace sexpgpu;
using namespace sexpgpu::lisp;
using sexpgpu::runfile::Session;
namespace fs = std::filesystem;

struct Expectation {
  std::vector<std::string> values;
  std::string error_code;
  uint32_t line = 0;
};

// The expectation comment lines that follow a form (before the next form).
inline Expectation expectations_after(const std::string& text, size_t offset) {
  Expectation e;
  size_t pos = offset;
  // Rest of the form's own line, then following comment-only lines.
  for (;;) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    size_t first = line.find_first_not_of(" \t");
    std::string trimmed = first == std::string::npos ? "" : line.substr(first);
    if (trimmed.rfind(";=>", 0) == 0) {
      std::string v = trimmed.substr(3);
      if (!v.empty() && v[0] == ' ') v.erase(0, 1);
      e.values.push_back(v);
    } else if (trimmed.rfind(";!", 0) == 0) {
      e.error_code = trimmed.substr(2);
      while (!e.error_code.empty() && isspace((unsigned char)e.error_code.back()))
        e.error_code.pop_back();
    } else if (!trimmed.empty() && !(pos == offset)) {
      break;
    } else if (!trimmed.empty() && trimmed[0] != ';') {
      break;  // another form on the same line
    }
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return e;
}

// Runs golden text (named `name` in messages); `checked` counts expectations met.
inline void run_golden_text(const std::string& name, const std::string& text, int& checked) {
  fs::path path(name);
  Session s;
  std::string captured;
  s.interp->output = &captured;
  uint32_t id = s.sources.add(path.string(), text);
  s.interp->current_file = path.string();
  // As for a run file, the declared selection is read first; its
  // diagnostics count for the form they are about.
  std::vector<Diagnostic> early;
  std::vector<ReadForm> all;
  try {
    all = read_file_forms(*s.interp, id);
    select::preread(*s.interp, all, s.selection());
    select::warn_unused(*s.interp, all, s.selection());
  } catch (LispError&) {
    // a read error: reported below at its form
  }
  early = s.sink.all();
  s.sink.clear();
  Reader reader(*s.interp, id);
  for (;;) {
    ReadForm rf;
    try {
      if (!reader.next(rf)) break;
    } catch (LispError& e) {
      FAIL(path.string() << ":" << e.diag.span.line << ": cannot read: " << e.diag.message);
      return;
    }
    Expectation want = expectations_after(text, reader.offset());
    size_t before = s.sink.all().size();
    Value v;
    bool ok = s.interp->eval_toplevel(rf.form, &v, &rf.span);
    for (const Diagnostic& d : early)
      if (d.span.line == rf.span.line) {
        s.sink.report(d);
        if (d.severity == Severity::Error) ok = false;
      }
    std::string where = path.filename().string() + ":" + std::to_string(rf.span.line) + ": " +
                        s.interp->print(rf.form, {true, false, false}).substr(0, 120);
    std::string got_error;
    bool want_warning = want.error_code.rfind("W-", 0) == 0;
    for (size_t i = before; i < s.sink.all().size(); ++i)
      if (want_warning ? s.sink.all()[i].code == want.error_code
                       : s.sink.all()[i].severity == Severity::Error) {
        got_error = s.sink.all()[i].code;
        if (!want.error_code.empty() && got_error != want.error_code)
          got_error += " (" + s.sink.all()[i].message + ")";
        if (want.error_code.empty()) got_error += ": " + s.sink.all()[i].message;
        break;
      }
    if (!want.error_code.empty()) {
      INFO(where);
      CHECK(got_error == want.error_code);
      ++checked;
      continue;
    }
    INFO(where);
    if (!ok) {
      CHECK(got_error == "");
      continue;
    }
    if (!want.values.empty()) {
      std::vector<std::string> got;
      for (Value x : s.interp->last_values(v))
        got.push_back(s.interp->print(x, {true, false, false}));
      CHECK(got == want.values);
      ++checked;
    }
  }
  // A whole run file (a defrun and an objective; other blocks show parts)
  // must also compile: its contract checked and its functions staged, as
  // `sexpgpu check` does.
  auto defines = [&](const char* head, const char* name) {
    for (const ReadForm& rf : all) {
      if (!rf.form.is_cons() || !car_of(rf.form).is_symbol() || car_of(rf.form).sym()->name != head)
        continue;
      Value n = car_of(cdr_of(rf.form));
      if (!name || (n.is_symbol() && n.sym()->name == name)) return true;
    }
    return false;
  };
  if (defines("DEFRUN", nullptr) && defines("DEFUN", "OBJECTIVE") && s.sink.error_count() == 0) {
    size_t before = s.sink.all().size();
    sexpgpu::runfile::check_contract_forms(*s.interp, all);
    std::optional<sexpgpu::runfile::CompiledRun> run =
        sexpgpu::runfile::compile_run(*s.interp, all);
    for (size_t i = before; i < s.sink.all().size(); ++i) {
      const Diagnostic& d = s.sink.all()[i];
      INFO(path.filename().string() << ":" << d.span.line << ": " << d.code << " " << d.message);
      CHECK(d.severity != Severity::Error);
    }
    CHECK(run.has_value());
    ++checked;
  }
}

}  // namespace golden
