// The CUDA plan's answers to ABI 1.3's in-place question (plan/in_place.h):
// an optimizer-like update of two parameters, each one fused group storing
// its moment beside the new value and both merged into one multi-tensor
// launch, writes every output over its input; an input a later step still
// reads, or one a neighbour in the same multi-tensor launch reads, may
// not be. Checked on the plan (no GPU); the values of updates run in place
// on a GPU are the conformance and parity runs' (bench/device-run.sh).
#include "catch.hpp"
#include "cuda/codegen/nvrtc_cache.h"
#include "cuda/program.h"
#include "ir/graph.h"
#include "ir/passes.h"
#include "plan_context.h"

using namespace sexpgpu;
using ir::DType;
using ir::NodeId;
using ir::Op;

namespace {

struct Update {
  ir::Module module;
  ir::Function& fn;
  ir::Builder b;
  Update() : fn(module.functions.emplace_back()), b(fn) { fn.name = "update"; }
  NodeId add(Op op, std::initializer_list<NodeId> operands) {
    ir::Result<NodeId> r = b.add(op, operands, ir::Attrs{});
    INFO(r.error());
    REQUIRE(r.ok());
    return *r;
  }
  NodeId k(double v) { return b.scalar(v, DType::F32); }
  // m' = 0.9 m + g, p' = p - 0.1 m': outputs "p:NAME" and "m:NAME".
  void parameter(const std::string& name, const ir::Shape& s) {
    NodeId p = b.input("p:" + name, {DType::F32, s});
    NodeId m = b.input("m:" + name, {DType::F32, s});
    NodeId g = b.input("g:" + name, {DType::F32, s});
    NodeId m2 = add(Op::Add, {add(Op::Mul, {m, k(0.9)}), g});
    fn.outputs.push_back({"p:" + name, add(Op::Sub, {p, add(Op::Mul, {m2, k(0.1)})})});
    fn.outputs.push_back({"m:" + name, m2});
  }
  std::shared_ptr<cuda::Program> plan() {
    REQUIRE(ir::optimize(module, fn) == "");
    static cuda::NvrtcCache cache(90);
    static cuda::Context ctx = cuda::testing::plan_context(&cache);
    auto program = cuda::Program::compile(module, fn.name, ctx);
    INFO(program.error());
    REQUIRE(program.ok());
    return *program;
  }
  size_t input(const std::string& name) const {
    for (size_t k = 0; k < fn.inputs.size(); ++k)
      if (fn.node(fn.inputs[k]).attrs.name == name) return k;
    FAIL("no input " << name);
    return 0;
  }
  size_t output(const std::string& name) const {
    for (size_t j = 0; j < fn.outputs.size(); ++j)
      if (fn.outputs[j].name == name) return j;
    FAIL("no output " << name);
    return 0;
  }
};

}  // namespace

TEST_CASE("cuda plan: an update's outputs are written over their inputs", "[cuda][in_place]") {
  Update u;
  u.parameter("a", ir::Shape{{768}});
  u.parameter("b", ir::Shape{{64, 48}});
  auto program = u.plan();
  INFO(program->report_json());
  for (const char* name : {"a", "b"})
    for (const char* part : {"p:", "m:"}) {
      std::string s = std::string(part) + name;
      INFO(s);
      CHECK(program->writes_in_place(u.output(s), u.input(s)));
    }
  CHECK(program->report_json().find("multi-tensor x2") != std::string::npos);
  // Over another parameter's input: read by that parameter's member of the
  // same multi-tensor launch.
  CHECK_FALSE(program->writes_in_place(u.output("p:a"), u.input("p:b")));
}

TEST_CASE("cuda plan: an input read after the output is written stays apart", "[cuda][in_place]") {
  Update u;
  u.parameter("a", ir::Shape{{32, 32}});
  // A later reader of p:a that runs after the update: its product.
  NodeId p = u.fn.inputs[u.input("p:a")];
  u.fn.outputs.push_back({"late", u.add(Op::MatMul, {u.fn.outputs[0].node, p})});
  auto program = u.plan();
  INFO(program->report_json());
  CHECK_FALSE(program->writes_in_place(u.output("p:a"), u.input("p:a")));
  CHECK(program->writes_in_place(u.output("m:a"), u.input("m:a")));
}
