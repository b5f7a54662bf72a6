// layer_norm's gradients with respect to its weight and bias through the
// fused layer_norm_param_grad op (grad_rules_neural.cpp): its shape rule
// and cost, one node in the backward in place of the written-out
// statistics and column sums, the CPU kernel by hand (NumPy, confirmed by
// PyTorch's layer_norm backward), the fused rule against the rule written
// out in primitive ops in f64, the f32 kernel against f64, and the
// cotangents' dtypes when the operands' dtypes differ.
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
using fused_grad::run;
using fused_grad::T;
using fused_grad::Values;

Attrs eps_attr(double eps) {
  Attrs a;
  a.eps = eps;
  return a;
}

std::string infer(std::initializer_list<std::string_view> types) {
  return fused_grad::infer(Op::LayerNormParamGrad, types, eps_attr(1e-5));
}

// A function "f" of x, weight, bias and g (layer_norm's cotangent) whose
// outputs are the cotangents the fused rule gives for `wanted` (dx, dw, db
// as wanted) and, with written_out, the weight's and bias's by the
// written-out rule after them.
struct LayerNormBackward {
  Module module;
  Function& fn;
  Builder b;
  size_t forward_nodes = 0;
  Cotangents fused;

  LayerNormBackward(const TensorType& x, const TensorType& w, const TensorType& bias,
                    std::vector<bool> wanted, bool written_out)
      : fn(module.functions.emplace_back()), b(fn) {
    fn.name = "f";
    NodeId xs = b.input("x", x), ws = b.input("w", w), bs = b.input("b", bias);
    NodeId y = b.must(Op::LayerNorm, {xs, ws, bs}, eps_attr(1e-5));
    NodeId g = b.input("g", fn.type(y));
    forward_nodes = fn.nodes.size();
    Result<Cotangents> grads = vjp(b, y, g, wanted);
    REQUIRE(grads.ok());
    fused = *grads;
    const char* names[] = {"dx", "dw", "db"};
    for (size_t i = 0; i < 3; ++i)
      if (wanted[i]) fn.outputs.push_back({names[i], *fused[i]});
    if (!written_out) return;
    grad::Emit e(b);
    const Node node = fn.node(y);
    std::vector<bool> params{false, true, true};
    Cotangents old = grad::norm_written_out(grad::Vjp{e, node, y, g, params});
    fn.outputs.push_back({"dw_written_out", *old[1]});
    fn.outputs.push_back({"db_written_out", *old[2]});
  }

  LayerNormBackward(const TensorType& x, std::vector<bool> wanted, bool written_out)
      : LayerNormBackward(x, last_axis(x), last_axis(x), std::move(wanted), written_out) {}

  static TensorType last_axis(const TensorType& x) {
    return TensorType{x.dtype, Shape{x.shape[x.shape.rank() - 1]}};
  }

  size_t count_backward(Op op) const { return count_from(fn, forward_nodes, op); }
};

// A module whose "f" is layer_norm_param_grad of inputs x and g of `x`.
struct ParamGradOp {
  Module module;
  Function& fn;

  explicit ParamGradOp(const TensorType& x) : fn(module.functions.emplace_back()) {
    fn.name = "f";
    Builder b(fn);
    NodeId xs = b.input("x", x), g = b.input("g", x);
    fn.outputs.push_back({"y", b.must(Op::LayerNormParamGrad, {xs, g}, eps_attr(1e-5))});
  }

  Values run(const Values& x, const Values& g) { return fused_grad::run(module, fn, {x, g})[0]; }
};

}  // namespace

TEST_CASE("layer_norm_param_grad: [2, C] of x's dtype", "[ir][layer_norm_param_grad]") {
  CHECK(infer({"f32[4,5]", "f32[4,5]"}) == "f32[2,5]");
  CHECK(infer({"bf16[2,3,8]", "bf16[2,3,8]"}) == "bf16[2,8]");
  CHECK(infer({"f64[7]", "f64[7]"}) == "f64[2,7]");
  CHECK(infer({"f32[0,6]", "f32[0,6]"}) == "f32[2,6]");
  CHECK(infer({"f32[4,5]", "f64[4,5]"}).find("one float dtype") != std::string::npos);
  CHECK(infer({"i32[4,5]", "i32[4,5]"}).find("one float dtype") != std::string::npos);
  CHECK(infer({"f32[4,5]", "f32[5]"}).find("x's shape [4,5]") != std::string::npos);
  CHECK(infer({"f32[]", "f32[]"}).find("at least one axis") != std::string::npos);
  CHECK_FALSE(info(Op::LayerNormParamGrad).differentiable);
  CHECK(info(Op::LayerNormParamGrad).lisp_name.empty());
  CHECK(info(Op::LayerNormParamGrad).ir_name == "layer_norm_param_grad");
  for (size_t slot = 0; slot < 2; ++slot)
    CHECK_FALSE(operand_differentiable(Op::LayerNormParamGrad, slot));
}

TEST_CASE("layer_norm_param_grad costs 8 per element of x", "[cost][layer_norm_param_grad]") {
  Function fn;
  Builder b(fn);
  NodeId x = b.input("x", T("f32[3,4,7]")), g = b.input("g", T("f32[3,4,7]"));
  NodeId sums = b.must(Op::LayerNormParamGrad, {x, g}, eps_attr(1e-5));
  CHECK(node_flops(fn, fn.node(sums)) == 8.0 * 3 * 4 * 7);
}

TEST_CASE("layer_norm's weight and bias gradients are one layer_norm_param_grad node",
          "[autodiff][layer_norm_param_grad]") {
  LayerNormBackward f(T("f32[2,3,8]"), {true, true, true}, false);
  CHECK(verify(f.module, f.fn) == "");
  CHECK(f.count_backward(Op::LayerNormParamGrad) == 1);
  CHECK(f.count_backward(Op::LayerNormGrad) == 1);
  // No statistics nor column sums written out any more.
  CHECK(f.count_backward(Op::Mean) == 0);
  CHECK(f.count_backward(Op::Sum) == 0);
  CHECK(f.count_backward(Op::Rsqrt) == 0);
  CHECK(f.fn.type(*f.fused[1]) == T("f32[8]"));
  CHECK(f.fn.type(*f.fused[2]) == T("f32[8]"));
  const Node& sums = f.fn.node(f.fn.node(f.fn.node(*f.fused[1]).inputs[0]).inputs[0]);
  CHECK(sums.op == Op::LayerNormParamGrad);
  CHECK(sums.attrs.eps == 1e-5);
  CHECK(sums.type == T("f32[2,8]"));

  SECTION("the weight alone") {
    LayerNormBackward w(T("f32[4,8]"), {false, true, false}, false);
    CHECK(verify(w.module, w.fn) == "");
    CHECK(w.count_backward(Op::LayerNormParamGrad) == 1);
    CHECK(w.count_backward(Op::LayerNormGrad) == 0);
  }
  SECTION("the bias alone: a column sum of g, which does not read x") {
    LayerNormBackward bias(T("f32[4,8]"), {false, false, true}, false);
    CHECK(verify(bias.module, bias.fn) == "");
    CHECK(bias.count_backward(Op::LayerNormParamGrad) == 0);
    CHECK(bias.count_backward(Op::Sum) == 1);
  }
}

TEST_CASE("layer_norm_param_grad's cotangents take their operands' dtypes",
          "[autodiff][layer_norm_param_grad]") {
  // x f32 with an f64 weight: layer_norm computes in f64, and so do the sums.
  LayerNormBackward mixed(T("f32[2,3]"), T("f64[3]"), T("f32[3]"), {true, true, true}, false);
  CHECK(verify(mixed.module, mixed.fn) == "");
  CHECK(mixed.fn.type(*mixed.fused[1]) == T("f64[3]"));
  CHECK(mixed.fn.type(*mixed.fused[2]) == T("f32[3]"));
  std::vector<Values> out =
      run(mixed.module, mixed.fn,
          {{0, 1, 5, 2, -1, 0.5}, {1, 1, 1}, {0, 0, 0}, {1, -1, 2, 0.5, 0.25, -3}});
  CHECK(std::abs(out[1][2] - 2.7774573234721163) <= 1e-13);
  CHECK(out[2] == Values{1.5, -0.75, -1.0});

  LayerNormBackward half(T("bf16[4,8]"), T("f32[8]"), T("bf16[8]"), {false, true, true}, false);
  CHECK(verify(half.module, half.fn) == "");
  CHECK(half.fn.type(*half.fused[1]) == T("f32[8]"));
  CHECK(half.fn.type(*half.fused[2]) == T("bf16[8]"));
}

TEST_CASE("layer_norm_param_grad by hand", "[cpu][layer_norm_param_grad]") {
  // x [[0, 1, 5], [2, -1, 0.5]], g [[1, -1, 2], [0.5, 0.25, -3]]: NumPy's
  // sums of g xhat and of g, as torch's layer_norm backward gives them.
  Values x{0, 1, 5, 2, -1, 0.5}, g{1, -1, 2, 0.5, 0.25, -3};
  Values want{-0.3134487133594904, 0.1567243566797452, 2.7774573234721163, 1.5, -0.75, -1.0};
  Values got = ParamGradOp(T("f64[2,3]")).run(x, g);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= 1e-13);
  // The same rows as [1, 2, 3]: the leading axes are all rows.
  CHECK(ParamGradOp(T("f64[1,2,3]")).run(x, g) == got);
  // No rows: zeros.
  CHECK(ParamGradOp(T("f64[0,4]")).run({}, {}) == Values(8, 0.0));
  // A constant row has xhat 0 (variance 0, rstd 1/sqrt(eps)): only the bias sums.
  CHECK(ParamGradOp(T("f64[1,3]")).run({2, 2, 2}, {1, 2, 3}) == Values{0, 0, 0, 1, 2, 3});
}

TEST_CASE("the fused layer_norm weight and bias gradients equal the written-out ones in f64",
          "[autodiff][layer_norm_param_grad]") {
  std::mt19937_64 rng(20261130);
  LayerNormBackward f(T("f64[3,4,33]"), {true, true, true}, true);
  REQUIRE(verify(f.module, f.fn) == "");
  Values x = draw(rng, 3 * 4 * 33, -2, 2), g = draw(rng, 3 * 4 * 33, -1, 1);
  Values w = draw(rng, 33, 0.5, 2), bias = draw(rng, 33, -1, 1);
  std::vector<Values> out = run(f.module, f.fn, {x, w, bias, g});
  for (size_t param : {1, 2}) {
    const Values &fused = out[param], &written = out[param + 2];
    REQUIRE(fused.size() == 33);
    REQUIRE(written.size() == 33);
    double largest = 0, worst = 0;
    for (size_t e = 0; e < fused.size(); ++e) {
      largest = std::max(largest, std::abs(written[e]));
      worst = std::max(worst, std::abs(fused[e] - written[e]));
    }
    INFO("operand " << param << ": largest " << largest << ", max difference " << worst);
    CHECK(largest > 1);  // not vacuous
    CHECK(worst <= 1e-12);
  }
}

TEST_CASE("layer_norm_param_grad in f32 agrees with f64", "[cpu][layer_norm_param_grad]") {
  std::mt19937_64 rng(7);
  Values x = draw(rng, 300 * 768, -3, 3), g = draw(rng, 300 * 768, -1, 1);
  Values got = ParamGradOp(T("f32[300,768]")).run(x, g);
  Values want = ParamGradOp(T("f64[300,768]")).run(x, g);
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  INFO("max difference " << worst);
  CHECK(worst <= 1e-4);  // sums of 300 terms of magnitude ~1, rounded once to f32
}

TEST_CASE("lowering: bf16 layer_norm_param_grad computes in f32", "[layer_norm_param_grad]") {
  Function fn;
  Builder b(fn);
  NodeId x = b.input("x", T("bf16[4,8]")), g = b.input("g", T("bf16[4,8]"));
  b.must(Op::LayerNormParamGrad, {x, g}, eps_attr(1e-5));
  sexpgpu::cpu::Lowered lowered = sexpgpu::cpu::lower(fn);
  std::vector<DType> dtypes;
  for (const auto& n : lowered.nodes)
    if (n.op == Op::LayerNormParamGrad) {
      dtypes.push_back(n.type.dtype);
      for (NodeId in : n.inputs) dtypes.push_back(lowered.nodes[size_t(in)].type.dtype);
    }
  CHECK(dtypes == std::vector<DType>(3, DType::F32));
  CHECK(lowered.nodes[size_t(lowered.of_original.back())].type == T("bf16[2,8]"));
}
