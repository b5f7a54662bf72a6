// Diagnostics: rendering for people (caret under the span) and as JSON.
#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "util/diagnostics.h"

using namespace sexpgpu;

TEST_CASE("human rendering shows the line, a caret under the span and the fix", "[diagnostics]") {
  SourceMap sources;
  uint32_t id = sources.add("run.lisp", "(defknob width 256)\n(frobnicate width)\n");
  Diagnostic d;
  d.code = "E-UNBOUND";
  d.span = Span{id, 2, 2, 2, 12};
  d.message = "undefined function 'frobnicate'";
  d.fix = "did you mean 'frob'?";
  d.notes.push_back({Span{id, 1, 1, 1, 20}, "width is declared here"});
  std::string out = render_human(sources, d, false);
  CHECK(out ==
        "run.lisp:2:2: E-UNBOUND undefined function 'frobnicate'\n"
        "  2 | (frobnicate width)\n"
        "    |  ^~~~~~~~~~\n"
        "  fix: did you mean 'frob'?\n"
        "  note: run.lisp:1:1: width is declared here\n");
}

TEST_CASE("columns count characters, not bytes", "[diagnostics]") {
  SourceMap sources;
  uint32_t id = sources.add("u.lisp", "(list \"\xC3\xA9\xC3\xA9\" x)\n");
  uint32_t line = 0, col = 0;
  sources.locate(id, std::string("(list \"\xC3\xA9\xC3\xA9\" ").size(), line, col);
  CHECK(line == 1);
  CHECK(col == 12);  // 11 characters precede the position
}

TEST_CASE("JSON rendering has every field of check --json", "[diagnostics]") {
  SourceMap sources;
  uint32_t id = sources.add("run.lisp", "(car 3)\n");
  Diagnostic d;
  d.code = "E-TYPE";
  d.span = Span{id, 1, 6, 1, 7};
  d.message = "car: 3 is not a list";
  auto j = nlohmann::json::parse(render_json(sources, {d}));
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 1);
  CHECK(j[0]["code"] == "E-TYPE");
  CHECK(j[0]["severity"] == "error");
  CHECK(j[0]["file"] == "run.lisp");
  CHECK(j[0]["line"] == 1);
  CHECK(j[0]["col"] == 6);
  CHECK(j[0]["end_line"] == 1);
  CHECK(j[0]["end_col"] == 7);
  CHECK(j[0]["message"] == "car: 3 is not a list");
  CHECK(j[0]["fix"].is_null());
  CHECK(j[0]["notes"].is_array());
}

TEST_CASE("severity follows the code's letter", "[diagnostics]") {
  CHECK(severity_of("E-READ") == Severity::Error);
  CHECK(severity_of("W-SHADOW") == Severity::Warning);
  DiagnosticSink sink;
  sink.report({"E-READ", Severity::Error, {}, "x", "", {}});
  sink.report({"W-USER", Severity::Warning, {}, "y", "", {}});
  CHECK(sink.error_count() == 1);
  CHECK(sink.warning_count() == 1);
}

TEST_CASE("a very long line is shown as a window around the position", "[diagnostics]") {
  SourceMap sources;
  std::string line = "(list " + std::string(5000, 'a') + " oops " + std::string(5000, 'b') + ")";
  uint32_t id = sources.add("long.lisp", line + "\n");
  uint32_t col = uint32_t(line.find("oops")) + 1;
  Diagnostic d;
  d.code = "E-UNBOUND";
  d.span = Span{id, 1, col, 1, col + 4};
  d.message = "the variable 'oops' is unbound";
  std::string out = render_human(sources, d, false);
  CHECK(out.size() < 400);
  CHECK(out.find("oops") != std::string::npos);
  // The caret sits under the 'o' of oops in the window.
  size_t src_line = out.find("  1 | ");
  size_t caret_line = out.find('\n', src_line) + 1;
  size_t oops_at = out.find("oops", src_line) - src_line;
  size_t caret_at = out.find('^', caret_line) - caret_line;
  CHECK(oops_at == caret_at);
}
