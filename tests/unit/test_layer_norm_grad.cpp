// layer_norm's gradient with respect to x through the fused layer_norm_grad
// op (grad_rules_neural.cpp): its shape rule and cost, one node in the
// backward (the weight's and bias's gradients stay written out), values
// checked by hand (NumPy, confirmed by finite differences) and against the
// rule written out in primitive ops in f64, the f32 kernel against f64,
// and the lowering's dtypes for bf16.
#include <cmath>
#include <random>

#include "cpu/program.h"
#include "fused_grad_support.h"
#include "ir/autodiff.h"
#include "ir/cost.h"
#include "ir/grad_rules.h"
#include "ir/verify.h"
#include "plan/lower.h"

using namespace sexpgpu::ir;

namespace sexpgpu::ir::grad {
// The written-out rule, kept in grad_rules_neural.cpp for this comparison.
Cotangents norm_written_out(const Vjp& v);
}  // namespace sexpgpu::ir::grad

namespace {

using fused_grad::count_from;
using fused_grad::draw;
using fused_grad::T;
using fused_grad::Values;

Attrs eps_attr(double eps) {
  Attrs a;
  a.eps = eps;
  return a;
}

std::string infer(std::initializer_list<std::string_view> types) {
  return fused_grad::infer(Op::LayerNormGrad, types, eps_attr(1e-5));
}

// A function "f" of x, weight, bias and g (layer_norm's cotangent) whose
// outputs are dx, dweight, dbias by the fused rule and, when asked, dx by
// the written-out one.
struct LayerNormBackward {
  Module module;
  Function& fn;
  Builder b;
  size_t forward_nodes = 0;
  Cotangents fused;

  LayerNormBackward(const TensorType& x, bool written_out)
      : fn(module.functions.emplace_back()), b(fn) {
    fn.name = "f";
    TensorType last{x.dtype, Shape{x.shape[x.shape.rank() - 1]}};
    NodeId xs = b.input("x", x), w = b.input("w", last), bias = b.input("b", last);
    NodeId y = b.must(Op::LayerNorm, {xs, w, bias}, eps_attr(1e-5));
    NodeId g = b.input("g", x);
    forward_nodes = fn.nodes.size();
    Result<Cotangents> grads = vjp(b, y, g, {true, true, true});
    REQUIRE(grads.ok());
    fused = *grads;
    const char* names[] = {"dx", "dw", "db"};
    for (size_t i = 0; i < 3; ++i) fn.outputs.push_back({names[i], *fused[i]});
    if (!written_out) return;
    grad::Emit e(b);
    const Node node = fn.node(y);
    std::vector<bool> wanted{true, false, false};
    Cotangents old = grad::norm_written_out(grad::Vjp{e, node, y, g, wanted});
    fn.outputs.push_back({"dx_written_out", *old[0]});
  }

  size_t count_backward(Op op) const { return count_from(fn, forward_nodes, op); }
};

std::vector<Values> run(LayerNormBackward& f, const std::vector<Values>& in) {
  return fused_grad::run(f.module, f.fn, in);
}

}  // namespace

TEST_CASE("layer_norm_grad: x's type, one float dtype", "[ir][layer_norm]") {
  CHECK(infer({"f32[4,5]", "f32[5]", "f32[4,5]"}) == "f32[4,5]");
  CHECK(infer({"bf16[2,3,8]", "bf16[8]", "bf16[2,3,8]"}) == "bf16[2,3,8]");
  CHECK(infer({"f32[4,5]", "f64[5]", "f32[4,5]"}).find("one float dtype") != std::string::npos);
  CHECK(infer({"i32[4,5]", "i32[5]", "i32[4,5]"}).find("one float dtype") != std::string::npos);
  CHECK(infer({"f32[4,5]", "f32[4]", "f32[4,5]"}).find("shape [5]") != std::string::npos);
  CHECK(infer({"f32[4,5]", "f32[5]", "f32[5]"}).find("x's shape [4,5]") != std::string::npos);
  CHECK(infer({"f32[]", "f32[1]", "f32[]"}).find("at least one axis") != std::string::npos);
  CHECK_FALSE(info(Op::LayerNormGrad).differentiable);
  CHECK(info(Op::LayerNormGrad).lisp_name.empty());
  for (size_t slot = 0; slot < 3; ++slot)
    CHECK_FALSE(operand_differentiable(Op::LayerNormGrad, slot));
}

TEST_CASE("layer_norm_grad costs 10 per element of x", "[cost][layer_norm]") {
  Function fn;
  Builder b(fn);
  NodeId x = b.input("x", T("f32[3,4,7]")), w = b.input("w", T("f32[7]"));
  NodeId dx = b.must(Op::LayerNormGrad, {x, w, b.input("g", T("f32[3,4,7]"))}, eps_attr(1e-5));
  CHECK(node_flops(fn, fn.node(dx)) == 10.0 * 3 * 4 * 7);
}

TEST_CASE("layer_norm's dx is one layer_norm_grad node", "[autodiff][layer_norm]") {
  LayerNormBackward f(T("f32[2,3,8]"), false);
  CHECK(verify(f.module, f.fn) == "");
  CHECK(f.count_backward(Op::LayerNormGrad) == 1);
  CHECK(f.fn.node(*f.fused[0]).op == Op::LayerNormGrad);
  CHECK(f.fn.node(*f.fused[0]).attrs.eps == 1e-5);
  // The weight's and bias's gradients are one layer_norm_param_grad node:
  // no mean is written out.
  CHECK(f.count_backward(Op::Mean) == 0);
  CHECK(f.count_backward(Op::LayerNormParamGrad) == 1);
  LayerNormBackward half(T("bf16[4,8]"), false);
  CHECK(half.fn.type(*half.fused[0]) == T("bf16[4,8]"));
}

TEST_CASE("layer_norm_grad by hand", "[cpu][layer_norm]") {
  LayerNormBackward f(T("f64[2,3]"), false);
  Values x{0, 1, 5, 2, -1, 0.5}, w{1, 2, 0.5}, g{1, -1, 2, 0.5, 0.25, -3};
  Values dx = run(f, {x, w, {0, 0, 0}, g})[0];
  Values want{0.6612989376113483, -0.8266244159743743, 0.16532547836302597,
              0.5443292395240429, 0.5443292395240429,  -1.0886584790480858};
  REQUIRE(dx.size() == want.size());
  for (size_t i = 0; i < dx.size(); ++i) CHECK(std::abs(dx[i] - want[i]) <= 1e-13);
}

TEST_CASE("the fused layer_norm dx equals the written-out one in f64", "[autodiff][layer_norm]") {
  std::mt19937_64 rng(20261130);
  LayerNormBackward f(T("f64[3,4,33]"), true);
  REQUIRE(verify(f.module, f.fn) == "");
  Values x = draw(rng, 3 * 4 * 33, -2, 2), g = draw(rng, 3 * 4 * 33, -1, 1);
  Values w = draw(rng, 33, 0.5, 2), bias = draw(rng, 33, -1, 1);
  std::vector<Values> out = run(f, {x, w, bias, g});
  double largest = 0, worst = 0;
  for (size_t e = 0; e < out[3].size(); ++e) {
    largest = std::max(largest, std::abs(out[3][e]));
    worst = std::max(worst, std::abs(out[0][e] - out[3][e]));
  }
  INFO("largest " << largest << ", max difference " << worst);
  CHECK(largest > 0.5);  // not vacuous
  CHECK(worst <= 1e-12);
}

TEST_CASE("layer_norm_grad in f32 agrees with f64", "[cpu][layer_norm]") {
  std::mt19937_64 rng(7);
  Values x = draw(rng, 5 * 768, -3, 3), g = draw(rng, 5 * 768, -1, 1);
  Values w = draw(rng, 768, 0.5, 2), bias(768, 0.0);
  LayerNormBackward narrow(T("f32[5,768]"), false), wide(T("f64[5,768]"), false);
  Values got = run(narrow, {x, w, bias, g})[0], want = run(wide, {x, w, bias, g})[0];
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= 1e-5);
}

TEST_CASE("lowering: bf16 layer_norm_grad computes in f32", "[layer_norm]") {
  Function fn;
  Builder b(fn);
  NodeId x = b.input("x", T("bf16[4,8]")), w = b.input("w", T("bf16[8]"));
  b.must(Op::LayerNormGrad, {x, w, b.input("g", T("bf16[4,8]"))}, eps_attr(1e-5));
  sexpgpu::cpu::Lowered lowered = sexpgpu::cpu::lower(fn);
  std::vector<DType> dtypes;
  for (const auto& n : lowered.nodes)
    if (n.op == Op::LayerNormGrad) {
      dtypes.push_back(n.type.dtype);
      for (NodeId in : n.inputs) dtypes.push_back(lowered.nodes[size_t(in)].type.dtype);
    }
  CHECK(dtypes == std::vector<DType>(4, DType::F32));
  CHECK(lowered.nodes[size_t(lowered.of_original.back())].type == T("bf16[4,8]"));
}
