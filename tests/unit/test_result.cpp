// Result<T> (util/result.h): the one error type of the IR, the data library
// and the runtime.
#include <memory>
#include <string>
#include <type_traits>

#include "catch.hpp"
#include "data/source.h"
#include "ir/types.h"
#include "util/result.h"

namespace {

using namespace sexpgpu;

static_assert(std::is_same_v<ir::Result<int>, Result<int>>, "ir::Result is util's Result");
static_assert(std::is_same_v<data::Status, Status>, "data's Status is util's Status");

Result<int> half(int n) {
  if (n % 2) return fail("E-USER", std::to_string(n) + " is odd");
  return n / 2;
}

// Passes a failure on with its code, or re-codes a codeless one.
Result<std::string> halved_text(int n) {
  Result<int> h = half(n);
  if (!h) return h.failed();
  return std::to_string(*h);
}

}  // namespace

TEST_CASE("Result holds a value or a diagnostic with a code", "[result]") {
  Result<int> ok = half(8);
  REQUIRE(ok);
  CHECK(*ok == 4);
  CHECK(ok.error().empty());
  CHECK(ok.code().empty());

  Result<int> odd = half(3);
  REQUIRE_FALSE(odd);
  CHECK(odd.code() == "E-USER");
  CHECK(odd.error() == "3 is odd");
  CHECK(odd.diagnostic().severity == Severity::Error);

  Result<std::string> passed = halved_text(5);
  REQUIRE_FALSE(passed);
  CHECK(passed.code() == "E-USER");
  CHECK(passed.error() == "5 is odd");
  CHECK(*halved_text(6) == "3");
}

TEST_CASE("a failure found before its meaning is known has no code yet", "[result]") {
  Result<ir::TensorType> t = ir::parse_tensor_type("f33[2]");
  REQUIRE_FALSE(t);
  CHECK(t.code().empty());
  CHECK_FALSE(t.error().empty());
  Status s = Status::failure("disk full");
  CHECK_FALSE(s);
  CHECK(s.code().empty());
  CHECK(ok_status());
  // A move-only value moves out.
  Result<std::unique_ptr<int>> p = std::make_unique<int>(7);
  std::unique_ptr<int> owned = std::move(p).value();
  CHECK(*owned == 7);
}
