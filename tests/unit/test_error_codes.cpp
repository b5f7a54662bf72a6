// Diagnostic codes: every code the source can emit is documented in
// docs/errors.md and vice versa, and every one is triggered by some test
// (a golden `;!CODE`, the CLI tests, or a unit test naming it). A code is
// capitals, digits and dashes (E-S3).
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "catch.hpp"

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::set<std::string> codes_in(const std::string& text, const std::regex& re) {
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it)
    out.insert((*it)[1].str());
  return out;
}

std::set<std::string> source_codes() {
  std::regex quoted("\"([EW]-[A-Z][A-Z0-9-]*[A-Z0-9])\"");
  std::set<std::string> out;
  fs::path root = fs::path(SEXPGPU_SOURCE_DIR);
  for (const char* dir : {"core", "devices", "plugins", "sinks", "diagnostics"}) {
    if (!fs::exists(root / dir)) continue;
    for (auto& e : fs::recursive_directory_iterator(root / dir)) {
      auto ext = e.path().extension();
      if (ext != ".cpp" && ext != ".h" && ext != ".c" && ext != ".cu") continue;
      for (auto& c : codes_in(slurp(e.path()), quoted)) out.insert(c);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("every emitted code is documented, and every documented code is emitted", "[errors]") {
  std::set<std::string> emitted = source_codes();
  REQUIRE(emitted.count("E-READ"));
  std::string doc = slurp(fs::path(SEXPGPU_SOURCE_DIR) / "docs" / "errors.md");
  std::set<std::string> documented =
      codes_in(doc, std::regex("^## ([EW]-[A-Z][A-Z0-9-]*)", std::regex::multiline));
  for (const auto& c : emitted) {
    INFO("emitted but not in docs/errors.md: " << c);
    CHECK(documented.count(c));
  }
  for (const auto& c : documented) {
    INFO("in docs/errors.md but never emitted: " << c);
    CHECK(emitted.count(c));
  }
}

TEST_CASE("every emitted code is triggered by a test", "[errors]") {
  std::string tests;
  fs::path root = fs::path(SEXPGPU_SOURCE_DIR) / "tests";
  for (auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    if (e.path().filename() == "test_error_codes.cpp") continue;
    tests += slurp(e.path());
  }
  std::set<std::string> triggered = codes_in(tests, std::regex(";!([EW]-[A-Z][A-Z0-9-]*)"));
  for (auto& c : codes_in(tests, std::regex("\"([EW]-[A-Z][A-Z0-9-]*[A-Z0-9])\"")))
    triggered.insert(c);
  for (auto& c : codes_in(tests, std::regex("\\b([EW]-[A-Z][A-Z0-9-]*[A-Z0-9])\\b\" \"\\$TMP")))
    triggered.insert(c);
  for (auto& c : codes_in(
           tests, std::regex("expect [a-z-]+ [0-9] \\$\\? \"[^\"]*([EW]-[A-Z][A-Z0-9-]*[A-Z0-9])")))
    triggered.insert(c);
  // Broken run files say what they expect: ";; expect: E-CODE LINE COL".
  for (auto& c : codes_in(tests, std::regex(";; expect: ([EW]-[A-Z][A-Z0-9-]*[A-Z0-9])")))
    triggered.insert(c);
  for (const auto& c : source_codes()) {
    INFO("no test triggers " << c);
    CHECK(triggered.count(c));
  }
}
