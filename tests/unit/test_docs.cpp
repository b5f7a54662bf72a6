// Documentation examples are tests: every ```lisp block in docs/*.md is run
// like a golden file (forms, ";=> value", ";!CODE"), in a fresh session per
// block, so the docs cannot drift from what the binary does. Every page of
// the docs index exists, and docs/llms.txt lists every page.
#include <regex>

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

// The docs index (shared/seed/docs-index.md, beside the repository where the
// project keeps it) fixes each page's name, order and one-line promise;
// llms.txt repeats them, in that order, for every page that is written.
TEST_CASE("docs/llms.txt follows the docs index's order and promises", "[docs]") {
  namespace fs = std::filesystem;
  fs::path source(SEXPGPU_SOURCE_DIR);
  fs::path index = source.parent_path() / "shared" / "seed" / "docs-index.md";
  if (!fs::exists(index)) {
    WARN("skipped: no docs index at " << index.string() << " (the project's shared/ folder)");
    return;
  }
  auto read = [](const fs::path& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  std::string llms = read(source / "docs" / "llms.txt");
  std::istringstream in(read(index));
  const std::regex entry(R"(^- \[(.*)\]\(https://[^)]*/docs/([a-z0-9-]+\.md)\) — (.*)$)");
  std::string line;
  size_t at = 0;
  int pages = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, entry)) continue;
    if (!fs::exists(source / "docs" / m[2].str())) continue;  // not written yet
    std::string want = "- [" + m[1].str() + "](" + m[2].str() + "): " + m[3].str() + "\n";
    size_t found = llms.find(want, at);
    INFO("llms.txt lacks, after the pages before it in the index: " << want);
    CHECK(found != std::string::npos);
    if (found != std::string::npos) at = found + want.size();
    ++pages;
  }
  CHECK(pages >= 40);
}
