// Golden language files: tests/golden/lisp/*.lisp hold forms, each followed
// by its expected printed values (";=> v", one line per value, printed as
// `eval` prints: prin1 with lower-case symbols) or an expected error
// (";!E-CODE"). A form with no expectation must evaluate without error.
// Every file runs in a fresh session; forms run in order, so definitions
// carry over to later forms of the same file.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "catch.hpp"
#include "lisp/session.h"
#include "util/big_stack.h"

using namespace sexpgpu;
using namespace sexpgpu::lisp;
namespace fs = std::filesystem;

namespace {

struct Expectation {
  std::vector<std::string> values;
  std::string error_code;
  uint32_t line = 0;
};

// The expectation comment lines that follow a form (before the next form).
Expectation expectations_after(const std::string& text, size_t offset) {
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
      while (!e.error_code.empty() && isspace((unsigned char)e.error_code.back())) e.error_code.pop_back();
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

void run_golden_file(const fs::path& path, int& checked) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  Session s;
  std::string captured;
  s.interp->output = &captured;
  uint32_t id = s.sources.add(path.string(), text);
  s.interp->current_file = path.string();
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
      for (Value x : s.interp->last_values(v)) got.push_back(s.interp->print(x, {true, false, false}));
      CHECK(got == want.values);
      ++checked;
    }
  }
}

}  // namespace

TEST_CASE("golden language files", "[golden]") {
  fs::path dir = fs::path(SEXPGPU_SOURCE_DIR) / "tests" / "golden" / "lisp";
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".lisp") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(!files.empty());
  int checked = 0;
  for (const fs::path& p : files) {
    DYNAMIC_SECTION(p.filename().string()) {
      // Deep-recursion cases need the evaluator's stack, as the CLI has.
      run_with_big_stack([&] {
        run_golden_file(p, checked);
        return 0;
      });
    }
  }
  CHECK(checked > 0);
}
