// cross_entropy's gradient through the fused cross_entropy_grad op
// (grad_rules_neural.cpp): its shape rule and cost, one node in the
// backward (no probabilities or one-hot materialised), its values by hand
// and against the rule written out in primitive ops (in f64, every
// reduction, with and without ignored rows, all rows ignored), the f32
// kernel against f64, and the lowering's dtypes for bf16 logits.
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
Cotangents cross_entropy_written_out(const Vjp& v);
}  // namespace sexpgpu::ir::grad

namespace {

using fused_grad::count_from;
using fused_grad::T;
using fused_grad::Values;

Attrs ce_attrs(const std::string& reduction, std::optional<int64_t> ignore) {
  Attrs a;
  a.reduction = reduction;
  a.ignore_index = ignore;
  return a;
}

std::string infer(std::initializer_list<std::string_view> types, const Attrs& a) {
  return fused_grad::infer(Op::CrossEntropyGrad, types, a);
}

// A function "f" of logits [rows..., C], targets and g (cross_entropy's
// cotangent) whose outputs are d loss / d logits by the fused rule and,
// when asked, by the written-out one.
struct CrossEntropyBackward {
  Module module;
  Function& fn;
  Builder b;
  NodeId loss = -1;
  size_t forward_nodes = 0;
  NodeId fused = -1;

  CrossEntropyBackward(const TensorType& logits, const Attrs& a, bool written_out)
      : fn(module.functions.emplace_back()), b(fn) {
    fn.name = "f";
    Shape rows(Dims(logits.shape.begin(), logits.shape.end() - 1));
    NodeId z = b.input("z", logits), t = b.input("t", {DType::I64, rows});
    loss = b.must(Op::CrossEntropy, {z, t}, a);
    NodeId g = b.input("g", fn.type(loss));
    forward_nodes = fn.nodes.size();
    Result<Cotangents> grads = vjp(b, loss, g, {true, false});
    REQUIRE(grads.ok());
    fused = *(*grads)[0];
    fn.outputs.push_back({"fused", fused});
    if (!written_out) return;
    grad::Emit e(b);
    const Node node = fn.node(loss);
    std::vector<bool> wanted{true, false};
    Cotangents old = grad::cross_entropy_written_out(grad::Vjp{e, node, loss, g, wanted});
    fn.outputs.push_back({"written_out", *old[0]});
  }

  size_t count_backward(Op op) const { return count_from(fn, forward_nodes, op); }
};

std::vector<Values> run(CrossEntropyBackward& f, const std::vector<Values>& in) {
  return fused_grad::run(f.module, f.fn, in);
}

void check_near(const Values& got, const Values& want, double tolerance) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(std::abs(got[i] - want[i]) <= tolerance);
  }
}

}  // namespace

TEST_CASE("cross_entropy_grad: the logits' type, g shaped as the loss", "[ir][cross_entropy]") {
  Attrs mean = ce_attrs("mean", {}), none = ce_attrs("none", -1);
  CHECK(infer({"f32[4,5]", "i64[4]", "f32[]"}, mean) == "f32[4,5]");
  CHECK(infer({"bf16[2,3,5]", "u8[2,3]", "bf16[2,3]"}, none) == "bf16[2,3,5]");
  CHECK(infer({"f32[4,5]", "i64[4]", "f32[4]"}, mean).find("g should be f32[]") !=
        std::string::npos);
  CHECK(infer({"f32[4,5]", "i64[4]", "f64[]"}, mean).find("g should be f32[]") !=
        std::string::npos);
  CHECK(infer({"i32[4,5]", "i64[4]", "f32[]"}, mean).find("float dtype") != std::string::npos);
  CHECK(infer({"f32[4,5]", "f32[4]", "f32[]"}, mean).find("integer dtype") != std::string::npos);
  CHECK(infer({"f32[4,5]", "i64[3]", "f32[]"}, mean).find("shape [4]") != std::string::npos);
  CHECK(infer({"f32[4,5]", "i64[4]", "f32[]"}, ce_attrs("max", {})).find("not one of") !=
        std::string::npos);
  CHECK_FALSE(info(Op::CrossEntropyGrad).differentiable);
  CHECK(info(Op::CrossEntropyGrad).lisp_name.empty());
  for (size_t slot = 0; slot < 3; ++slot)
    CHECK_FALSE(operand_differentiable(Op::CrossEntropyGrad, slot));
}

TEST_CASE("cross_entropy_grad costs 6 per logit element", "[cost][cross_entropy]") {
  Function fn;
  Builder b(fn);
  NodeId z = b.input("z", T("f32[3,4,7]")), t = b.input("t", T("i32[3,4]"));
  NodeId g = b.input("g", T("f32[]"));
  NodeId dz = b.must(Op::CrossEntropyGrad, {z, t, g}, ce_attrs("sum", {}));
  CHECK(node_flops(fn, fn.node(dz)) == 6.0 * 3 * 4 * 7);
}

TEST_CASE("cross_entropy's gradient is one cross_entropy_grad node", "[autodiff][cross_entropy]") {
  for (const char* reduction : {"mean", "sum", "none"}) {
    INFO(reduction);
    CrossEntropyBackward f(T("f32[2,3,5]"), ce_attrs(reduction, -1), false);
    CHECK(verify(f.module, f.fn) == "");
    CHECK(f.count_backward(Op::CrossEntropyGrad) == 1);
    CHECK(f.count_backward(Op::Softmax) == 0);
    CHECK(f.count_backward(Op::Eq) == 0);
    CHECK(f.fn.node(f.fused).op == Op::CrossEntropyGrad);
  }
  CrossEntropyBackward half(T("bf16[4,5]"), ce_attrs("mean", {}), false);
  CHECK(half.count_backward(Op::CrossEntropyGrad) == 1);
  CHECK(half.fn.type(half.fused) == T("bf16[4,5]"));
}

TEST_CASE("cross_entropy_grad by hand: softmax less one-hot, scaled per row",
          "[cpu][cross_entropy]") {
  // Rows [0, 0] -> p (1/2, 1/2); [ln 3, 0] -> (3/4, 1/4); the third ignored.
  Values z{0, 0, std::log(3.0), 0, 1, 2}, t{0, 1, -1};
  SECTION("mean over the two counted rows") {
    CrossEntropyBackward f(T("f64[3,2]"), ce_attrs("mean", -1), false);
    check_near(run(f, {z, t, {2}})[0], {-0.5, 0.5, 0.75, -0.75, 0, 0}, 1e-15);
  }
  SECTION("sum") {
    CrossEntropyBackward f(T("f64[3,2]"), ce_attrs("sum", -1), false);
    check_near(run(f, {z, t, {2}})[0], {-1, 1, 1.5, -1.5, 0, 0}, 1e-15);
  }
  SECTION("none: each row's own g") {
    CrossEntropyBackward f(T("f64[3,2]"), ce_attrs("none", -1), false);
    check_near(run(f, {z, t, {1, -2, 5}})[0], {-0.5, 0.5, -1.5, 1.5, 0, 0}, 1e-15);
  }
  SECTION("mean without ignore_index counts every row") {
    CrossEntropyBackward f(T("f64[2,2]"), ce_attrs("mean", {}), false);
    check_near(run(f, {{0, 0, std::log(3.0), 0}, {0, 1}, {4}})[0], {-1, 1, 1.5, -1.5}, 1e-15);
  }
}

TEST_CASE("the fused cross_entropy gradient equals the written-out one in f64",
          "[autodiff][cross_entropy]") {
  constexpr int64_t kRows = 12, kClasses = 7;
  std::mt19937_64 rng(20261130);
  std::uniform_real_distribution<double> unit(-2, 2);
  Values z(kRows * kClasses), targets(kRows), per_row(kRows);
  for (double& x : z) x = unit(rng);
  for (double& x : per_row) x = unit(rng);
  for (int64_t r = 0; r < kRows; ++r) targets[size_t(r)] = double((r * 5) % kClasses);
  Values some_ignored = targets, all_ignored(kRows, -1.0);
  for (size_t r : {1, 4, 5, 11}) some_ignored[r] = -1;
  struct Variant {
    const char* what;
    std::optional<int64_t> ignore;
    const Values& targets;
  };
  for (const char* reduction : {"mean", "sum", "none"})
    for (const Variant& v :
         {Variant{"no ignore_index", {}, targets}, Variant{"4 rows ignored", -1, some_ignored},
          Variant{"every row ignored", -1, all_ignored}}) {
      INFO(reduction << ", " << v.what);
      CrossEntropyBackward f(T("f64[3,4,7]"), ce_attrs(reduction, v.ignore), true);
      REQUIRE(verify(f.module, f.fn) == "");
      Values g = std::string(reduction) == "none" ? per_row : Values{1.7};
      std::vector<Values> out = run(f, {z, v.targets, g});
      double largest = 0, worst = 0;
      for (size_t e = 0; e < out[1].size(); ++e) {
        largest = std::max(largest, std::abs(out[1][e]));
        worst = std::max(worst, std::abs(out[0][e] - out[1][e]));
      }
      INFO("largest " << largest << ", max difference " << worst);
      if (&v.targets == &all_ignored)
        CHECK(largest == 0);
      else
        CHECK(largest > 0.05);  // not vacuous
      CHECK(worst <= 1e-12);
    }
}

TEST_CASE("cross_entropy_grad in f32 agrees with f64", "[cpu][cross_entropy]") {
  constexpr int64_t kRows = 5, kClasses = 300;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(-4, 4);
  Values z(kRows * kClasses), t{3, 299, -1, 0, 150};
  for (double& x : z) x = double(float(unit(rng)));
  CrossEntropyBackward narrow(T("f32[5,300]"), ce_attrs("mean", -1), false);
  CrossEntropyBackward wide(T("f64[5,300]"), ce_attrs("mean", -1), false);
  Values got = run(narrow, {z, t, {0.5}})[0], want = run(wide, {z, t, {0.5}})[0];
  check_near(got, want, 1e-7);
  for (size_t c = 0; c < size_t(kClasses); ++c) CHECK(got[2 * kClasses + c] == 0);
}

TEST_CASE("lowering: bf16 cross_entropy_grad computes in f32, targets untouched",
          "[cross_entropy]") {
  Function fn;
  Builder b(fn);
  NodeId z = b.input("z", T("bf16[4,5]")), t = b.input("t", T("i32[4]"));
  b.must(Op::CrossEntropyGrad, {z, t, b.input("g", T("bf16[4]"))}, ce_attrs("none", {}));
  sexpgpu::cpu::Lowered lowered = sexpgpu::cpu::lower(fn);
  std::vector<DType> dtypes;
  for (const auto& n : lowered.nodes)
    if (n.op == Op::CrossEntropyGrad) {
      dtypes.push_back(n.type.dtype);
      for (NodeId in : n.inputs) dtypes.push_back(lowered.nodes[size_t(in)].type.dtype);
    }
  CHECK(dtypes == std::vector<DType>{DType::F32, DType::F32, DType::I32, DType::F32});
  CHECK(lowered.nodes[size_t(lowered.of_original.back())].type == T("bf16[4,5]"));
}
