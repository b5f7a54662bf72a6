// Sums of squares of a function's inputs (an optimizer's gradient norms)
// are planned as multi-tensor launches, one per dtype: checked on the plan,
// which needs no GPU; the values are checked on a GPU by the conformance
// suite and the optimizer tests.
#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "cuda/codegen/nvrtc_cache.h"
#include "cuda/context.h"
#include "cuda/program.h"
#include "ir/graph.h"
#include "plan_context.h"

using namespace sexpgpu;
using ir::DType;
using ir::NodeId;
using ir::Op;

TEST_CASE("sums of squares of inputs share multi-tensor launches", "[cuda][reduce]") {
  ir::Module module;
  module.functions.emplace_back();
  ir::Function& fn = module.functions.back();
  fn.name = "norm";
  ir::Builder b(fn);
  auto add = [&](Op op, std::initializer_list<NodeId> operands) {
    ir::Result<NodeId> r = b.add(op, operands, ir::Attrs{});
    INFO(r.error());
    REQUIRE(r.ok());
    return *r;
  };
  auto sum_of_squares = [&](NodeId x) { return add(Op::Sum, {add(Op::Square, {x})}); };
  // A warp's row, a split block's row and a vector: one f32 launch. One f64
  // tensor launches alone, and so does a square of a computed value.
  NodeId g0 = b.input("g0", {DType::F32, ir::Shape{{768}}});
  NodeId g1 = b.input("g1", {DType::F32, ir::Shape{{2304, 768}}});
  NodeId g2 = b.input("g2", {DType::F32, ir::Shape{{7}}});
  NodeId g3 = b.input("g3", {DType::F64, ir::Shape{{3, 5}}});
  NodeId total = add(Op::Add, {sum_of_squares(g0), sum_of_squares(g1)});
  total = add(Op::Add, {total, sum_of_squares(g2)});
  total = add(Op::Add, {total, sum_of_squares(add(Op::Exp, {g2}))});
  fn.outputs.push_back({"total", total});
  fn.outputs.push_back({"f64", sum_of_squares(g3)});

  cuda::NvrtcCache cache(90);
  cuda::Context ctx = cuda::testing::plan_context(&cache);
  auto program = cuda::Program::compile(module, "norm", ctx);
  INFO(program.error());
  REQUIRE(program.ok());
  nlohmann::json report = nlohmann::json::parse((*program)->report_json());
  std::vector<std::string> kernels;
  for (const auto& s : report["steps"]) kernels.push_back(s["kernel"]);
  INFO(report.dump(1));
  REQUIRE(!kernels.empty());
  CHECK(kernels[0].find("multi-tensor x3 sum<f32> of squares rows") == 0);
  CHECK(report["steps"][0]["ops"].size() == 6);    // three squares and three sums
  CHECK(report["steps"][0]["scratch_bytes"] > 0);  // g1's rows are split
  int multi = 0, single = 0;
  for (const std::string& k : kernels) {
    multi += k.find("multi-tensor") == 0;
    single += k.find("sum<") == 0;
  }
  CHECK(multi == 1);
  CHECK(single == 2);  // exp(g2)'s and g3's

  setenv("SEXPGPU_CUDA_MULTI_TENSOR", "0", 1);
  auto separate = cuda::Program::compile(module, "norm", ctx);
  unsetenv("SEXPGPU_CUDA_MULTI_TENSOR");
  REQUIRE(separate.ok());
  nlohmann::json apart = nlohmann::json::parse((*separate)->report_json());
  CHECK(apart["kernels"].get<int>() == report["kernels"].get<int>() + 2);
}
