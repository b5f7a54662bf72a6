// Golden language files: tests/golden/lisp/*.lisp hold forms, each followed
// by its expected printed values (";=> v", one line per value, printed as
// `eval` prints: prin1 with lower-case symbols) or an expected error
// (";!E-CODE", or ";!W-CODE" for a warning). A form with no expectation must
// evaluate without error. Every file runs in a fresh session; forms run in
// order, so definitions carry over to later forms of the same file.
#include "golden_runner.h"
#include "util/big_stack.h"

TEST_CASE("golden language files", "[golden]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(SEXPGPU_SOURCE_DIR) / "tests" / "golden" / "lisp";
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".lisp") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(!files.empty());
  int checked = 0;
  for (const fs::path& p : files) {
    DYNAMIC_SECTION(p.filename().string()) {
      std::ifstream f(p);
      std::stringstream ss;
      ss << f.rdbuf();
      // Deep-recursion cases need the evaluator's stack, as the CLI has.
      sexpgpu::run_with_big_stack([&] {
        golden::run_golden_text(p.string(), ss.str(), checked);
        return 0;
      });
    }
  }
  CHECK(checked > 0);
}
