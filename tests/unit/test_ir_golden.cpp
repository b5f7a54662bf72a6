// Golden IR: each tests/golden/ir/NAME.lisp stages functions; their text
// after the standard passes must equal NAME.ir, and before them NAME.noopt.ir
// when that file exists. Every staged function verifies, before and after,
// and its JSON reads back to the same text. SEXPGPU_UPDATE_GOLDEN=1 rewrites
// the expected files (review the diff before committing).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "catch.hpp"
#include "ir/json.h"
#include "ir/passes.h"
#include "ir/print.h"
#include "ir/verify.h"
#include "runfile/session.h"
#include "stage/stager.h"

namespace fs = std::filesystem;
using namespace sexpgpu;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void compare_or_update(const fs::path& expected_path, const std::string& actual) {
  if (std::getenv("SEXPGPU_UPDATE_GOLDEN")) {
    std::ofstream(expected_path) << actual;
    return;
  }
  INFO("expected " << expected_path.string() << "; set SEXPGPU_UPDATE_GOLDEN=1 to write it");
  REQUIRE(fs::exists(expected_path));
  CHECK(slurp(expected_path) == actual);
}

// The module a file stages, without the scratch function of top-level forms.
ir::Module stage_file(const fs::path& file) {
  runfile::Session s;
  std::string io_error;
  REQUIRE(s.load_file(file.string(), &io_error));
  for (const Diagnostic& d : s.sink.all()) INFO(render_human(s.sources, d, false));
  REQUIRE(s.sink.error_count() == 0);
  ir::Module m = stage::stager_of(*s.interp).module();
  std::erase_if(m.functions, [](const ir::Function& f) { return f.name == "toplevel"; });
  // Positions print as file names relative to the golden directory.
  for (std::string& f : m.files) f = fs::path(f).filename().string();
  return m;
}

}  // namespace

TEST_CASE("golden IR files", "[ir][golden]") {
  fs::path dir = fs::path(SEXPGPU_SOURCE_DIR) / "tests" / "golden" / "ir";
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".lisp") continue;
    ++files;
    SECTION(entry.path().filename().string()) {
      ir::Module m = stage_file(entry.path());
      REQUIRE(!m.functions.empty());
      CHECK(ir::verify(m) == "");
      fs::path noopt = fs::path(entry.path()).replace_extension(".noopt.ir");
      if (fs::exists(noopt)) compare_or_update(noopt, ir::to_text(m));
      for (ir::Function& f : m.functions) CHECK(ir::optimize(m, f) == "");
      std::string text = ir::to_text(m);
      compare_or_update(fs::path(entry.path()).replace_extension(".ir"), text);
      ir::Result<ir::Module> back = ir::module_from_json(std::string_view(ir::to_json(m).dump()));
      INFO(back.error());
      REQUIRE(back.ok());
      CHECK(ir::to_text(*back) == text);
    }
  }
  CHECK(files >= 4);
}
