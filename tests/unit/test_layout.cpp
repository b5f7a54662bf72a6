// The project's own Lisp is kept in the one layout: every prelude file and
// our example is a fixed point of `sexpgpu fmt` (the spec's examples are
// copied verbatim and checked by test_fmt.cpp instead).
#include <filesystem>
#include <fstream>
#include <sstream>

#include "catch.hpp"
#include "lisp/fmt.h"

TEST_CASE("the prelude and our examples are formatted", "[fmt]") {
  namespace fs = std::filesystem;
  fs::path root(SEXPGPU_SOURCE_DIR);
  std::vector<fs::path> files = {root / "examples" / "lisp-tour.lisp"};
  for (auto& e : fs::directory_iterator(root / "prelude"))
    if (e.path().extension() == ".lisp") files.push_back(e.path());
  for (const fs::path& p : files) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string out;
    sexpgpu::lisp::FmtError err;
    INFO(p.string() << " is not formatted: run sexpgpu fmt " << p.filename().string());
    REQUIRE(sexpgpu::lisp::format_source(ss.str(), out, err));
    CHECK(out == ss.str());
  }
}
