// Reader: spans, numbers, syntax, and E-READ positions.
#include "catch.hpp"
#include "runfile/session.h"

using namespace sexpgpu;
using namespace sexpgpu::lisp;
using sexpgpu::runfile::Session;

static std::string read_print(Session& s, const std::string& text) {
  auto forms = read_string_forms(*s.interp, "<test>", text);
  std::string out;
  for (auto& f : forms)
    out += (out.empty() ? "" : " ") + s.interp->print(f.form, {true, true, true});
  return out;
}

TEST_CASE("reader reads the syntax of language.md", "[reader]") {
  Session s;
  CHECK(read_print(s, "(a b . c)") == "(A B . C)");
  CHECK(read_print(s, "'x `(a ,b ,@c) #'f") == "'X `(A ,B ,@C) #'F");
  CHECK(read_print(s, "#x1F #b101 #o17 1.5 1e-3 1.5d0 -0.0 1.") == "31 5 15 1.5 0.001 1.5 -0.0 1");
  CHECK(read_print(s, "\"a\\\"b\" #\\a #\\Space #\\Newline") == "\"a\\\"b\" #\\a #\\  #\\Newline");
  CHECK(read_print(s, "|Mixed Case| :lr nn:linear #(1 2 3)") ==
        "|Mixed Case| :LR NN:LINEAR #(1 2 3)");
  CHECK(read_print(s, "a #| nested #| comment |# |# b ; line\n c") == "A B C");
  CHECK(read_print(s, "#+sexpgpu yes #-sexpgpu no #+cuda-nope x y") == "YES Y");
  CHECK(read_print(s, "1/2 6/3") == "0.5 2");
}

TEST_CASE("reader errors point at the opening token", "[reader]") {
  Session s;
  auto read_error = [&](const std::string& text) -> Diagnostic {
    try {
      read_string_forms(*s.interp, "<test>", text);
    } catch (LispError& e) {
      return e.diag;
    }
    FAIL("no error for " << text);
    return {};
  };
  Diagnostic d = read_error("(a (b c)\n");
  CHECK(d.code == "E-READ");
  CHECK(d.span.line == 1);
  CHECK(d.span.col == 1);
  d = read_error("  \"abc");
  CHECK(d.code == "E-READ");
  CHECK(d.span.col == 3);
  CHECK(read_error(")").code == "E-READ");
  CHECK(read_error("#<foo>").code == "E-READ");
  CHECK(read_error("99999999999999999999").code == "E-OVERFLOW");
  CHECK(read_error("#\\NoSuchChar").code == "E-READ");
  // labels (#n= #n#), bit vectors (#*), and the syntax of what is left out
  CHECK(read_error("(#1# 2)").code == "E-READ");
  CHECK(read_error("(#1=a #1=b)").code == "E-READ");
  CHECK(read_error("#1=#1#").code == "E-READ");
  CHECK(read_error("#1=(a b . #1#)").code == "E-READ");  // circular structure
  CHECK(read_error("#*012").code == "E-READ");
  CHECK(read_error("#2*011").code == "E-READ");
  CHECK(read_error("#3*").code == "E-READ");
  CHECK(read_error("#c(1 2)").code == "E-UNSUPPORTED");
  CHECK(read_error("#p\"/tmp/x\"").code == "E-UNSUPPORTED");
}

TEST_CASE("reader labels and bit vectors", "[reader]") {
  Session s;
  CHECK(read_print(s, "(#1=(a b) #1# #2=x #2#)") == "((A B) (A B) X X)");
  CHECK(read_print(s, "#*0110 #5*01 #* #0*") == "#*0110 #*01111 #* #*");
  // shared structure: the second element is the first one itself
  auto forms = read_string_forms(*s.interp, "<test>", "(#1=(a) #1#)");
  Value x = forms.at(0).form;
  REQUIRE(x.is_cons());
  CHECK(x.cons()->car.p == x.cons()->cdr.cons()->car.p);
  // a label inside a vector, and one top-level form's labels do not reach the next
  CHECK(read_print(s, "#(#1=(z) #1#) #1=q") == "#((Z) (Z)) Q");
}

TEST_CASE("every element of a list carries its span", "[reader]") {
  Session s;
  auto forms = read_string_forms(*s.interp, "<test>", "(foo\n  bar (baz))");
  REQUIRE(forms.size() == 1);
  Cons* c = forms[0].form.cons();
  Span whole = s.interp->span_of(c->span);
  CHECK(whole.line == 1);
  CHECK(whole.end_line == 2);
  Span bar = s.interp->span_of(c->cdr.cons()->car_span);
  CHECK(bar.line == 2);
  CHECK(bar.col == 3);
  CHECK(bar.end_col == 6);
}

// *features* is what this build has, fixed at build time (the CMake option
// that builds the CUDA device also sets SEXPGPU_TEST_BUILD_CUDA here), never
// what a machine loads: the same file reads the same on every machine.
TEST_CASE("#+cuda and *features* say what the build has", "[reader]") {
  Session s;
#if SEXPGPU_TEST_BUILD_CUDA
  const char* cuda = "YES";
#else
  const char* cuda = "NO";
#endif
  CHECK(read_print(s, "#+cuda yes #-cuda no") == cuda);
  CHECK(read_print(s, "#+(and sexpgpu (not nccl)) ok") == "OK");
  std::vector<Value> last;
  REQUIRE(s.eval_string("<test>",
                        "(list (not (null (member :sexpgpu *features*)))"
                        " (not (null (member :cuda *features*))))",
                        &last));
  REQUIRE(last.size() == 1);
  CHECK(s.interp->print(last[0], {true, true, true}) ==
        std::string(SEXPGPU_TEST_BUILD_CUDA ? "(T T)" : "(T NIL)"));
}
