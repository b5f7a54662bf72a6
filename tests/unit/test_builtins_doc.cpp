// docs/builtins.md documents every builtin function, docs/special-forms.md
// every special form and docs/prelude.md every prelude definition: the
// registries are the source of truth, the pages must keep up.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "catch.hpp"
#include "runfile/session.h"

using namespace sexpgpu::lisp;
using sexpgpu::runfile::Session;

namespace {
std::string doc_page(const char* name) {
  std::ifstream f(std::filesystem::path(SEXPGPU_SOURCE_DIR) / "docs" / name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Each name must be on one of the pages (builtins on builtins.md, tensor
// builtins on tensors.md, the run file's on the page of their form).
void check_listed(Session& s, const char* form, std::initializer_list<const char*> pages) {
  std::vector<Value> vals;
  REQUIRE(s.eval_string("<t>", form, &vals));
  std::string text;
  for (const char* page : pages) {
    std::string one = doc_page(page);
    REQUIRE(!one.empty());
    text += one;
  }
  const char* page = *pages.begin();
  int names = 0;
  for (Value row : s.interp->list_items(vals[0], "test")) {
    Value name = row.is_cons() ? row.cons()->car : row;
    std::string n = u32_to_utf8(name.str()->chars);
    INFO(page << " does not mention `" << n << "`");
    CHECK((text.find("`" + n + "`") != std::string::npos ||
           text.find("`(" + n + " ") != std::string::npos ||
           text.find("`(" + n + ")`") != std::string::npos));
    ++names;
  }
  CHECK(names > 0);
}
}  // namespace

TEST_CASE("every builtin, special form and prelude definition is documented", "[docs]") {
  Session s;
  check_listed(s, "(%builtins)",
               {"builtins.md", "tensors.md", "data.md", "objective.md", "models.md",
                "optimizers.md", "optimizer-groups.md", "run-file.md"});
  check_listed(s, "(%special-forms)", {"special-forms.md"});
  check_listed(s, "(%prelude-definitions)",
               {"prelude.md", "models.md", "optimizers.md", "optimizer-groups.md"});
}
