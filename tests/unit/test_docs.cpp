// Documentation examples are tests: every ```lisp block in docs/*.md is run
// like a golden file (forms, ";=> value", ";!CODE"), in a fresh session per
// block, so the docs cannot drift from what the binary does. Every page of
// the docs index exists, and docs/llms.txt lists every page.
#include "golden_runner.h"
#include "util/big_stack.h"

namespace {

std::vector<std::pair<int, std::string>> lisp_blocks(const std::string& md) {
  std::vector<std::pair<int, std::string>> out;
  std::istringstream in(md);
  std::string line, block;
  int lineno = 0, start = 0;
  bool inside = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (!inside && line.rfind("```lisp", 0) == 0) {
      inside = true;
      start = lineno;
      block.clear();
    } else if (inside && line.rfind("```", 0) == 0) {
      inside = false;
      out.emplace_back(start, block);
    } else if (inside) {
      block += line + "\n";
    }
  }
  return out;
}

}  // namespace

TEST_CASE("every lisp example in docs/ evaluates as it says", "[docs]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(SEXPGPU_SOURCE_DIR) / "docs";
  int checked = 0, blocks = 0;
  for (auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".md") continue;
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    for (auto& [line, text] : lisp_blocks(ss.str())) {
      ++blocks;
      std::string name = e.path().string() + ":" + std::to_string(line);
      DYNAMIC_SECTION(name) {
        sexpgpu::run_with_big_stack([&] {
          golden::run_golden_text(name, text, checked);
          return 0;
        });
      }
    }
  }
  CHECK(blocks > 0);
}

TEST_CASE("docs/llms.txt lists every page in docs/", "[docs]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(SEXPGPU_SOURCE_DIR) / "docs";
  std::ifstream f(dir / "llms.txt");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string llms = ss.str();
  REQUIRE(!llms.empty());
  for (auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".md") continue;
    INFO("llms.txt does not list " << e.path().filename());
    CHECK(llms.find(e.path().filename().string()) != std::string::npos);
  }
}
