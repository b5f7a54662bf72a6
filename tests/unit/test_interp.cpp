// The interpreter core: independent top-level errors without cascades,
// limits that are diagnostics (never crashes), positions of errors,
// multiple values, and the printer's float format.
#include "catch.hpp"
#include "runfile/session.h"
#include "util/big_stack.h"

using namespace sexpgpu;
using namespace sexpgpu::lisp;
using sexpgpu::runfile::Session;

namespace {
std::vector<Diagnostic> check_on_this_stack(const std::string& text, Limits limits = {}) {
  Session s(limits);
  std::string ignored;
  s.interp->output = &ignored;
  s.load_source("t.lisp", text);
  return s.sink.all();
}

std::vector<Diagnostic> check_text(const std::string& text, Limits limits = {}) {
  std::vector<Diagnostic> out;
  run_with_big_stack([&] {
    out = check_on_this_stack(text, limits);
    return 0;
  });
  return out;
}
}  // namespace

TEST_CASE("each top-level form is evaluated after an earlier error", "[interp]") {
  auto ds = check_text("(car 1)\n(cdr 2)\n(defun ok () 1)\n(ok 5)\n");
  REQUIRE(ds.size() == 3);
  CHECK(ds[0].code == "E-TYPE");
  CHECK(ds[0].span.line == 1);
  CHECK(ds[1].code == "E-TYPE");
  CHECK(ds[1].span.line == 2);
  CHECK(ds[2].code == "E-ARITY");
  CHECK(ds[2].span.line == 4);
}

TEST_CASE("a failed definition is not reported again at its uses", "[interp]") {
  auto ds = check_text("(defun broken (x) (car))\n(defun later () (broken 1))\n(later)\n(broken 2)\n");
  // The body's error surfaces when the function runs; its uses are one problem.
  REQUIRE(ds.size() >= 1);
  auto ds2 = check_text("(defun broken (x) \"doc\" (car) x)\n");
  CHECK(ds2.empty());
  auto ds3 = check_text("(defvar *v* (car 1))\n(print *v*)\n(list *v*)\n");
  REQUIRE(ds3.size() == 1);
  CHECK(ds3[0].code == "E-TYPE");
}

TEST_CASE("limits are diagnostics at the form, never crashes", "[interp]") {
  Limits steps;
  steps.steps = 10000;
  auto ds = check_text("(defun spin () (loop))\n(spin)\n", steps);
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].code == "E-EVAL-LIMIT");
  CHECK(ds[0].span.line >= 1);

  auto deep = check_text("(defun down (n) (+ 1 (down n)))\n(down 0)\n");
  REQUIRE(deep.size() == 1);
  CHECK(deep[0].code == "E-STACK");
  CHECK(!deep[0].notes.empty());  // the innermost calls

  Limits heap;
  heap.heap_bytes = 4 << 20;
  auto big = check_text("(let ((l nil)) (dotimes (i 10000000) (push i l)))\n", heap);
  REQUIRE(big.size() == 1);
  CHECK(big[0].code == "E-EVAL-LIMIT");

  // Nesting built at run time, deeper than this (8 MB) thread's stack can print.
  auto nested = check_on_this_stack("(let ((x nil)) (dotimes (i 200000) (setq x (list x))) (print x))\n");
  REQUIRE(nested.size() == 1);
  CHECK(nested[0].code == "E-STACK");
}

TEST_CASE("limits cannot be caught by handler-case", "[interp]") {
  Limits steps;
  steps.steps = 10000;
  auto ds = check_text("(handler-case (loop) (error () :caught))\n(ignore-errors (loop))\n", steps);
  REQUIRE(ds.size() == 2);
  CHECK(ds[0].code == "E-EVAL-LIMIT");
  CHECK(ds[1].code == "E-EVAL-LIMIT");
}

TEST_CASE("errors inside prelude macros point at the user's form", "[interp]") {
  auto ds = check_text("(let ((x 1))\n  (setf 10 x))\n");
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].code == "E-MACRO");
  CHECK(ds[0].span.line == 2);
  CHECK(ds[0].span.col == 3);
}

TEST_CASE("multiple values through the C++ API", "[interp]") {
  Session s;
  std::vector<Value> vals;
  REQUIRE(s.eval_string("<t>", "(floor 7 2)", &vals));
  REQUIRE(vals.size() == 2);
  CHECK(vals[0].is_int());
  CHECK(vals[0].i == 3);
  CHECK(vals[1].i == 1);
  REQUIRE(s.eval_string("<t>", "(values)", &vals));
  CHECK(vals.empty());
}

TEST_CASE("floats print as SBCL prints doubles by default", "[interp]") {
  Session s;
  auto p = [&](const char* src) {
    std::vector<Value> vals;
    REQUIRE(s.eval_string("<t>", src, &vals));
    return s.interp->print(vals[0], {true, true, true});
  };
  CHECK(p("1.5") == "1.5");
  CHECK(p("0.1") == "0.1");
  CHECK(p("1d7") == "1.0e7");
  CHECK(p("9999999.0") == "9999999.0");
  CHECK(p("1d-3") == "0.001");
  CHECK(p("9.9d-4") == "9.9e-4");
  CHECK(p("(/ 1 3)") == "0.3333333333333333");
  CHECK(p("-0.0") == "-0.0");
  CHECK(p("123456.789") == "123456.789");
  CHECK(p("1.5e-10") == "1.5e-10");
}
