// The fused classifier pass (ir/passes/fuse_classifier.h): a training
// step's (cross-entropy (matmul x w) y) becomes one linear_cross_entropy
// node placed where the loss was, and the step's outputs (the loss and the
// gradients of x and w) are those of the unfused step, run on the CPU in
// f64 and f32, with and without ignored rows, "mean" and "sum"; the
// shape rule's answers; patterns it must leave alone.
#include <cmath>
#include <random>

#include "fused_grad_support.h"
#include "ir/autodiff.h"
#include "ir/passes.h"
#include "ir/passes/fuse_classifier.h"
#include "ir/verify.h"

using namespace sexpgpu::ir;

namespace {

using fused_grad::T;
using fused_grad::Values;

// train(x, w, y): outputs loss, d loss / d x, d loss / d w, of
// cross_entropy(matmul(x, w) [* extra], y) with `a`.
struct Classifier {
  Module module;
  Function& fn;

  Classifier(const TensorType& x, const TensorType& w, const Attrs& a, bool scaled_logits = false)
      : fn(module.functions.emplace_back()) {
    fn.name = "train";
    module.params.push_back({"w", w});
    Builder b(fn);
    Shape rows(Dims(x.shape.begin(), x.shape.end() - 1));
    NodeId xi = b.input("x", x), yi = b.input("y", {DType::I32, rows});
    NodeId wi = b.param("w", w);
    NodeId z = b.must(Op::MatMul, {xi, wi});
    if (scaled_logits) z = b.must(Op::Mul, {z, b.scalar(2.0, x.dtype)});
    NodeId loss = b.must(Op::CrossEntropy, {z, yi}, a);
    Gradients g = differentiate(fn, loss, {xi, wi});
    fn.outputs = {{"loss", loss}, {"dx", g.grads[0]}, {"dw", g.grads[1]}};
  }
};

size_t count(const Function& fn, Op op) {
  return fused_grad::count_from(fn, 0, op);
}

std::vector<Values> run(Classifier& c, const std::vector<Values>& in) {
  return fused_grad::run(c.module, c.fn, in);
}

void compare(const TensorType& x, const TensorType& w, const Attrs& a, const Values& targets,
             double tolerance) {
  std::mt19937_64 rng(7);
  std::vector<Values> in = {fused_grad::draw(rng, size_t(*x.shape.numel()), -2, 2), targets,
                            fused_grad::draw(rng, size_t(*w.shape.numel()), -1, 1)};
  Classifier plain(x, w, a), fused(x, w, a);
  REQUIRE(optimize_without_classifier(plain.module, plain.fn) == "");
  REQUIRE(optimize(fused.module, fused.fn) == "");
  CHECK(count(plain.fn, Op::LinearCrossEntropy) == 0);
  REQUIRE(count(fused.fn, Op::LinearCrossEntropy) == 1);
  CHECK(count(fused.fn, Op::CrossEntropyGrad) == 0);
  CHECK(count(fused.fn, Op::CrossEntropy) == 0);
  std::vector<Values> want = run(plain, in), got = run(fused, in);
  REQUIRE(got.size() == 3);
  for (size_t o = 0; o < 3; ++o) {
    REQUIRE(got[o].size() == want[o].size());
    for (size_t i = 0; i < got[o].size(); ++i) {
      INFO("output " << o << " element " << i);
      CHECK(std::fabs(got[o][i] - want[o][i]) <= tolerance * (1 + std::fabs(want[o][i])));
    }
  }
}

}  // namespace

TEST_CASE("linear_cross_entropy's shape rule", "[fuse_classifier]") {
  Attrs none;
  CHECK(fused_grad::infer(Op::LinearCrossEntropy, {"f32[6,4]", "f32[4,7]", "i32[6]", "f32[]"},
                          none) == "f32[53]");
  CHECK(fused_grad::infer(Op::LinearCrossEntropy, {"bf16[2,3,4]", "bf16[4,7]", "i64[2,3]", "f32[]"},
                          none) == "f32[53]");
  CHECK(fused_grad::infer(Op::LinearCrossEntropy, {"f64[6,4]", "f64[4,7]", "i32[6]", "f64[]"},
                          none) == "f64[53]");
  CHECK(fused_grad::infer(Op::LinearCrossEntropy, {"f32[6,4]", "f32[5,7]", "i32[6]", "f32[]"}, none)
            .find("do not fit") != std::string::npos);
  CHECK(fused_grad::infer(Op::LinearCrossEntropy, {"f32[6,4]", "f32[4,7]", "i32[5]", "f32[]"}, none)
            .find("targets") != std::string::npos);
  CHECK(fused_grad::infer(Op::LinearCrossEntropy, {"bf16[6,4]", "bf16[4,7]", "i32[6]", "bf16[]"},
                          none)
            .find("g should be f32[]") != std::string::npos);
}

TEST_CASE("the fused classifier computes the unfused step's outputs", "[fuse_classifier]") {
  Attrs mean, sum, ignoring;
  sum.reduction = "sum";
  ignoring.ignore_index = -1;
  Values t2{0, 6, 3, 1, 2, 5}, t3{0, 6, -1, 1, -1, 5};
  SECTION("f64, mean, 2-D x") {
    compare(T("f64[6,4]"), T("f64[4,7]"), mean, t2, 1e-12);
  }
  SECTION("f64, sum, 3-D x") {
    compare(T("f64[2,3,4]"), T("f64[4,7]"), sum, t2, 1e-12);
  }
  SECTION("f64, mean, ignored rows") {
    compare(T("f64[2,3,4]"), T("f64[4,7]"), ignoring, t3, 1e-12);
  }
  SECTION("f64, every row ignored") {
    compare(T("f64[3,4]"), T("f64[4,7]"), ignoring, Values{-1, -1, -1}, 1e-12);
  }
  SECTION("f32, mean") {
    compare(T("f32[6,4]"), T("f32[4,7]"), mean, t2, 1e-5);
  }
}

TEST_CASE("the fused classifier sits where the loss was", "[fuse_classifier]") {
  Classifier c(T("f32[6,4]"), T("f32[4,7]"), Attrs{});
  REQUIRE(optimize(c.module, c.fn) == "");
  NodeId fused = -1;
  for (size_t i = 0; i < c.fn.nodes.size(); ++i)
    if (c.fn.nodes[i].op == Op::LinearCrossEntropy) fused = NodeId(i);
  REQUIRE(fused >= 0);
  // Nothing but the parts of its result after it: no [6, 7] value is left.
  for (const Node& n : c.fn.nodes) CHECK(!(n.type.shape == Shape{6, 7}));
  CHECK(verify(c.module, c.fn) == "");
}

TEST_CASE("the fused classifier leaves other losses alone", "[fuse_classifier]") {
  SECTION("logits scaled between the product and the loss") {
    Classifier c(T("f32[6,4]"), T("f32[4,7]"), Attrs{}, true);
    REQUIRE(optimize(c.module, c.fn) == "");
    CHECK(count(c.fn, Op::LinearCrossEntropy) == 0);
    CHECK(count(c.fn, Op::CrossEntropyGrad) == 1);
  }
  SECTION("reduction none") {
    Attrs none;
    none.reduction = "none";
    Module m;
    Function& fn = m.functions.emplace_back();
    fn.name = "train";
    m.params.push_back({"w", T("f32[4,7]")});
    Builder b(fn);
    NodeId x = b.input("x", T("f32[6,4]")), y = b.input("y", T("i32[6]"));
    NodeId w = b.param("w", T("f32[4,7]"));
    NodeId rows = b.must(Op::CrossEntropy, {b.must(Op::MatMul, {x, w}), y}, none);
    NodeId loss = b.must(Op::Sum, {rows});
    Gradients g = differentiate(fn, loss, {w});
    fn.outputs = {{"loss", loss}, {"dw", g.grads[0]}};
    CHECK(fuse_classifier(fn) == 0);
  }
}
