// The update in place (ABI 1.3, devices/plan/in_place.h): the rule that
// says when a plan may write an output over one of its inputs; the CPU
// program's answers for the patterns an update has and for those it must
// refuse; and the finite guard that makes it safe, staged into the run
// file's functions (runfile/compile.cpp): a loss that is not finite with
// finite gradients still turns the gradient norm non-finite, and an update
// given such gradients writes every parameter and state back unchanged.
#include <cmath>
#include <cstring>

#include "catch.hpp"
#include "cpu/program.h"
#include "ir/passes.h"
#include "plan/in_place.h"
#include "runfile/compile.h"
#include "runfile/session.h"

namespace {

using namespace sexpgpu;
using ir::DType;
using ir::NodeId;
using ir::Op;
using plan::StepAccess;

ir::Shape shape(std::initializer_list<int64_t> d) {
  return ir::Shape(ir::Dims(d));
}

// One function of `module` planned on the CPU.
std::shared_ptr<cpu::Program> planned(ir::Module& module) {
  auto p = cpu::Program::compile(module, module.functions.front().name);
  REQUIRE(p);
  return *p;
}

// A module of one function "f" over input x (f32[4,4]) and w (f32[4,4]).
struct OneFunction {
  ir::Module module;
  ir::Function& fn;
  ir::Builder b;
  NodeId x, w;
  OneFunction() : fn(module.functions.emplace_back()), b(fn) {
    fn.name = "f";
    x = b.input("x", {DType::F32, shape({4, 4})});
    w = b.input("w", {DType::F32, shape({4, 4})});
  }
};

}  // namespace

TEST_CASE("in place: the rule over a plan's steps", "[in_place]") {
  const ir::Shape s = shape({8});
  // Launch 0 reads input 0; launch 1 writes output 0 from input 0 elementwise.
  std::vector<StepAccess> steps = {{0, {{0, s}}, {}, false}, {1, {{0, s}}, {{0, s}}, true}};
  CHECK(plan::writes_in_place(steps, 0, 0));
  CHECK_FALSE(plan::writes_in_place(steps, 1, 0));  // no step writes output 1
  // A reader in the writer's launch (a multi-tensor neighbour) or after it.
  steps.push_back({1, {{0, s}}, {}, true});
  CHECK_FALSE(plan::writes_in_place(steps, 0, 0));
  steps.back().launch = 2;
  CHECK_FALSE(plan::writes_in_place(steps, 0, 0));
  steps.pop_back();
  // The writer reading at another shape (a broadcast) or not elementwise.
  steps[1].reads[0].shape = shape({2, 4});
  CHECK_FALSE(plan::writes_in_place(steps, 0, 0));
  steps[1].reads[0].shape = s;
  steps[1].elementwise = false;
  CHECK_FALSE(plan::writes_in_place(steps, 0, 0));
  // Written twice.
  steps[1].elementwise = true;
  steps.push_back({2, {}, {{0, s}}, true});
  CHECK_FALSE(plan::writes_in_place(steps, 0, 0));
}

TEST_CASE("in place: the CPU program's answers", "[in_place][cpu]") {
  SECTION("an elementwise update of its input, read earlier by a product") {
    OneFunction f;
    NodeId g = f.b.must(Op::MatMul, {f.x, f.w});
    NodeId updated = f.b.must(Op::Sub, {f.x, f.b.must(Op::Mul, {g, f.b.scalar(0.5, DType::F32)})});
    f.fn.outputs = {{"x", updated}, {"g", g}};
    auto p = planned(f.module);
    CHECK(p->writes_in_place(0, 0));
    CHECK_FALSE(p->writes_in_place(1, 0));  // the product reads every element of x
    CHECK(p->writes_in_place(0, 1));  // w's one reader, the product, has run by then
    // Run with x's array as the output: the same numbers as separate arrays.
    std::vector<float> x(16), w(16), out(16), g_out(16), x_alias(16), g_alias(16);
    for (int i = 0; i < 16; ++i) x[size_t(i)] = float(i) / 7.0f, w[size_t(i)] = float(i % 5) - 2;
    x_alias = x;
    const void* in[] = {x.data(), w.data()};
    void* outs[] = {out.data(), g_out.data()};
    REQUIRE(p->run(in, outs) == "");
    const void* in_alias[] = {x_alias.data(), w.data()};
    void* outs_alias[] = {x_alias.data(), g_alias.data()};
    REQUIRE(p->run(in_alias, outs_alias) == "");
    CHECK(std::memcmp(out.data(), x_alias.data(), sizeof(float) * 16) == 0);
    CHECK(std::memcmp(g_out.data(), g_alias.data(), sizeof(float) * 16) == 0);
  }
  SECTION("an input read after the output is written") {
    OneFunction f;
    NodeId y = f.b.must(Op::Add, {f.x, f.b.scalar(1.0, DType::F32)});
    NodeId later = f.b.must(Op::MatMul, {f.x, f.w});
    f.fn.outputs = {{"y", y}, {"later", later}};
    CHECK_FALSE(planned(f.module)->writes_in_place(0, 0));
  }
  SECTION("a transpose of a square input has its shape, not its order") {
    OneFunction f;
    ir::Attrs a;
    a.axes = ir::Dims{1, 0};
    f.fn.outputs = {{"t", f.b.must(Op::Permute, {f.x}, a)}};
    CHECK_FALSE(planned(f.module)->writes_in_place(0, 0));
  }
  SECTION("an output that is the input itself is a copy") {
    OneFunction f;
    f.fn.outputs = {{"same", f.x}};
    CHECK_FALSE(planned(f.module)->writes_in_place(0, 0));
  }
}

namespace {

// A run whose loss is NaN at every step while its gradients are finite:
// the log of a target below zero reaches no parameter.
const char* const kNanLoss = R"(
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :regression :features 4 :examples 64 :seed 1) :batch 8)
(defmodel net (x) (nn:linear x 1 :name "fc"))
(defun objective (batch ctx)
  (+ (mse (net (getf batch :x)) (getf batch :y)) (mean (log (- (getf batch :y) 1000.0)))))
(defun optimizer () (optim:adamw :lr 0.1 :weight-decay 0.1))
(defrun :steps 3)
)";

std::shared_ptr<runfile::CompiledRun> compiled(const std::string& text) {
  runfile::Session s;
  s.load_source("/in-place/run.lisp", text);
  s.compile();
  REQUIRE(s.compiled);
  return s.compiled;
}

// Each input of `fn` by name from `given`, else small values of its type.
std::vector<cpu::HostTensor> inputs_of(const ir::Function& fn,
                                       const std::map<std::string, cpu::HostTensor>& given) {
  std::vector<cpu::HostTensor> in;
  for (NodeId id : fn.inputs) {
    const ir::Node& n = fn.node(id);
    std::string name = n.attrs.name.value_or("");
    if (n.op == Op::Param) name = "param:" + name;
    if (auto it = given.find(name); it != given.end()) {
      in.push_back(it->second);
      continue;
    }
    std::vector<double> v(size_t(n.type.shape.numel().value_or(0)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = name == "rng" ? 0.0 : 0.25 + 0.125 * double(i % 7);
    in.push_back(cpu::HostTensor::from_doubles(n.type, v));
  }
  return in;
}

size_t output_index(const ir::Function& fn, const std::string& name) {
  for (size_t j = 0; j < fn.outputs.size(); ++j)
    if (fn.outputs[j].name == name) return j;
  FAIL("no output " << name);
  return 0;
}

}  // namespace

TEST_CASE("in place: the finite guard keeps a step with a NaN loss unapplied", "[in_place][train]") {
  std::shared_ptr<runfile::CompiledRun> run = compiled(kNanLoss);
  const ir::Function* step = run->module.find("train_step");
  const ir::Function* update = run->module.find("update");
  REQUIRE(step);
  REQUIRE(update);
  auto step_program = cpu::Program::compile(run->module, "train_step");
  auto update_program = cpu::Program::compile(run->module, "update");
  REQUIRE(step_program);
  REQUIRE(update_program);
  std::vector<cpu::HostTensor> step_in = inputs_of(*step, {});
  auto step_out = (*step_program)->run(step_in);
  REQUIRE(step_out);
  CHECK(std::isnan(step_out->at(output_index(*step, "loss")).to_doubles()[0]));
  // The gradients fed to the update, and the parameters the step read.
  std::map<std::string, cpu::HostTensor> given;
  for (size_t j = 0; j < step->outputs.size(); ++j)
    if (step->outputs[j].name.starts_with("grad:")) given[step->outputs[j].name] = step_out->at(j);
  for (size_t k = 0; k < step->inputs.size(); ++k)
    if (step->node(step->inputs[k]).op == Op::Param)
      given["param:" + *step->node(step->inputs[k]).attrs.name] = step_in[k];
  std::vector<cpu::HostTensor> update_in = inputs_of(*update, given);
  auto update_out = (*update_program)->run(update_in);
  REQUIRE(update_out);
  CHECK_FALSE(std::isfinite(update_out->at(output_index(*update, "grad-norm")).to_doubles()[0]));
  size_t checked = 0;
  for (size_t k = 0; k < update->inputs.size(); ++k) {
    const ir::Node& n = update->node(update->inputs[k]);
    std::string name = n.op == Op::Param ? "param:" + *n.attrs.name : n.attrs.name.value_or("");
    if (!name.starts_with("param:") && !name.starts_with("state:")) continue;
    size_t j = output_index(*update, name);
    INFO(name);
    CHECK(update_out->at(j).bytes == update_in[k].bytes);  // bit for bit the old value
    CHECK((*update_program)->writes_in_place(j, k));       // and written over it
    ++checked;
  }
  CHECK(checked == 6);  // fc's weight and bias, each with AdamW's two moments
}

TEST_CASE("in place: a finite step is applied", "[in_place][train]") {
  std::string text = kNanLoss;
  const std::string nan_term = " (mean (log (- (getf batch :y) 1000.0)))";
  text.replace(text.find(nan_term), nan_term.size(), " 0.0");
  std::shared_ptr<runfile::CompiledRun> run = compiled(text);
  const ir::Function* update = run->module.find("update");
  REQUIRE(update);
  auto program = cpu::Program::compile(run->module, "update");
  REQUIRE(program);
  std::vector<cpu::HostTensor> in = inputs_of(*update, {});
  auto out = (*program)->run(in);
  REQUIRE(out);
  for (size_t k = 0; k < update->inputs.size(); ++k) {
    const ir::Node& n = update->node(update->inputs[k]);
    if (n.op != Op::Param) continue;
    CHECK(out->at(output_index(*update, "param:" + *n.attrs.name)).bytes != in[k].bytes);
  }
}
