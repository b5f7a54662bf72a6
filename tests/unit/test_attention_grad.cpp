// attention's gradient through the fused attention_grad op
// (grad_rules_neural.cpp): its shape (one attention_grad node, no
// [B,H,Tq,Tk] scores anywhere in the backward), and its values against the
// rule written out in primitive ops, which a float mask still gets: a float
// mask of 0 and -inf hides exactly what a bool mask does, so the two rules
// differentiate the same function. Also the lowering's dtype for it.
#include <cmath>
#include <limits>
#include <random>

#include "catch.hpp"
#include "cpu/program.h"
#include "ir/autodiff.h"
#include "ir/grad_rules.h"
#include "ir/verify.h"
#include "plan/lower.h"

using namespace sexpgpu::ir;
using sexpgpu::cpu::HostTensor;
using sexpgpu::cpu::Program;

namespace {

constexpr int64_t kB = 2, kH = 3, kTq = 5, kTk = 7, kD = 4;

enum class Mask { None, Bool, Float };

// sum(attention(q, k, v [, mask]) * w) and its gradients with respect to q,
// k and v (all f64 inputs), as the function's outputs "dq", "dk", "dv".
struct AttentionLoss {
  Module module;
  Function& fn;
  Builder b;
  size_t forward_nodes = 0;
  std::vector<NodeId> grads;

  AttentionLoss(bool causal, Mask mask) : fn(module.functions.emplace_back()), b(fn) {
    fn.name = "f";
    auto input = [&](const char* name, DType d, Shape s) { return b.input(name, {d, s}); };
    NodeId q = input("q", DType::F64, Shape{kB, kH, kTq, kD});
    NodeId k = input("k", DType::F64, Shape{kB, kH, kTk, kD});
    NodeId v = input("v", DType::F64, Shape{kB, kH, kTk, kD});
    NodeId w = input("w", DType::F64, Shape{kB, kH, kTq, kD});
    Attrs a;
    a.scale = 0.4;
    a.causal = causal;
    NodeId y = -1;
    if (mask == Mask::None) {
      y = b.must(Op::Attention, {q, k, v}, a);
    } else {
      DType md = mask == Mask::Bool ? DType::Bool : DType::F64;
      y = b.must(Op::Attention, {q, k, v, input("mask", md, Shape{kTq, kTk})}, a);
    }
    NodeId loss = b.must(Op::Sum, {b.must(Op::Mul, {y, w})});
    forward_nodes = fn.nodes.size();
    grads = differentiate(fn, loss, {q, k, v}).grads;
    const char* names[] = {"dq", "dk", "dv"};
    for (size_t i = 0; i < 3; ++i) fn.outputs.push_back({names[i], grads[i]});
  }

  size_t count_backward(Op op) const {
    size_t n = 0;
    for (size_t i = forward_nodes; i < fn.nodes.size(); ++i) n += fn.nodes[i].op == op;
    return n;
  }

  // Backward nodes whose last two axes are [Tq,Tk] or [Tk,Tq]: scores.
  size_t score_shaped_backward() const {
    size_t n = 0;
    for (size_t i = forward_nodes; i < fn.nodes.size(); ++i) {
      const Shape& s = fn.nodes[i].type.shape;
      int64_t r = s.rank();
      if (r < 2) continue;
      bool qk = s[r - 2] == kTq && s[r - 1] == kTk, kq = s[r - 2] == kTk && s[r - 1] == kTq;
      n += qk || kq;
    }
    return n;
  }
};

// Every query keeps key 0, so no row of the float-masked scores is all
// -inf (the written-out rule's softmax would give NaN there).
std::vector<bool> keep_pattern() {
  std::vector<bool> keep(size_t(kTq * kTk));
  for (int64_t i = 0; i < kTq; ++i)
    for (int64_t j = 0; j < kTk; ++j) keep[size_t(i * kTk + j)] = j == 0 || (i + 2 * j) % 3 != 1;
  return keep;
}

// The gradients' values for the given q, k, v, w (and mask values).
std::vector<std::vector<double>> run(AttentionLoss& f, const std::vector<std::vector<double>>& in) {
  Result<std::shared_ptr<Program>> program = Program::compile(f.module, "f");
  INFO(program.error());
  REQUIRE(program.ok());
  std::vector<HostTensor> tensors;
  for (size_t i = 0; i < f.fn.inputs.size(); ++i)
    tensors.push_back(HostTensor::from_doubles(f.fn.type(f.fn.inputs[i]), in[i]));
  Result<std::vector<HostTensor>> out = (*program)->run(tensors);
  INFO(out.error());
  REQUIRE(out.ok());
  std::vector<std::vector<double>> values;
  for (const HostTensor& t : *out) values.push_back(t.to_doubles());
  return values;
}

}  // namespace

TEST_CASE("attention's gradient is one attention_grad node and materialises no scores",
          "[autodiff][attention]") {
  for (bool causal : {false, true})
    for (Mask mask : {Mask::None, Mask::Bool}) {
      AttentionLoss f(causal, mask);
      INFO("causal " << causal << ", bool mask " << (mask == Mask::Bool));
      CHECK(verify(f.module, f.fn) == "");
      CHECK(f.count_backward(Op::AttentionGrad) == 1);
      CHECK(f.count_backward(Op::MatMul) == 0);
      CHECK(f.score_shaped_backward() == 0);
      for (NodeId g : f.grads) CHECK(f.fn.node(g).op == Op::Slice);
    }
}

TEST_CASE("a float mask keeps the written-out attention gradient", "[autodiff][attention]") {
  AttentionLoss f(true, Mask::Float);
  CHECK(verify(f.module, f.fn) == "");
  CHECK(f.count_backward(Op::AttentionGrad) == 0);
  CHECK(f.count_backward(Op::MatMul) == 5);
  CHECK(f.score_shaped_backward() > 0);
}

TEST_CASE("attention_grad has no gradient of its own", "[autodiff][attention]") {
  for (size_t slot = 0; slot < 6; ++slot)
    CHECK_FALSE(operand_differentiable(Op::AttentionGrad, slot));
}

TEST_CASE("the fused attention gradient equals the written-out one in f64",
          "[autodiff][attention]") {
  std::mt19937_64 rng(20240611);
  std::uniform_real_distribution<double> unit(-1, 1);
  auto draw = [&](int64_t n) {
    std::vector<double> values(static_cast<size_t>(n));
    for (double& x : values) x = unit(rng);
    return values;
  };
  std::vector<double> q = draw(kB * kH * kTq * kD), k = draw(kB * kH * kTk * kD),
                      v = draw(kB * kH * kTk * kD), w = draw(kB * kH * kTq * kD);
  std::vector<double> keep, added;
  for (bool x : keep_pattern()) {
    keep.push_back(x);
    added.push_back(x ? 0.0 : -std::numeric_limits<double>::infinity());
  }
  std::vector<double> zeros(keep.size(), 0.0);
  for (bool causal : {false, true})
    for (bool masked : {false, true}) {
      INFO("causal " << causal << ", masked " << masked);
      AttentionLoss fused(causal, masked ? Mask::Bool : Mask::None);
      AttentionLoss written_out(causal, Mask::Float);
      REQUIRE(written_out.count_backward(Op::AttentionGrad) == 0);
      std::vector<std::vector<double>> in = {q, k, v, w};
      if (masked) in.push_back(keep);
      auto got = run(fused, in);
      auto want = run(written_out, {q, k, v, w, masked ? added : zeros});
      for (size_t i = 0; i < 3; ++i) {
        REQUIRE(got[i].size() == want[i].size());
        double largest = 0, worst = 0;
        for (size_t e = 0; e < got[i].size(); ++e) {
          largest = std::max(largest, std::abs(want[i][e]));
          worst = std::max(worst, std::abs(got[i][e] - want[i][e]));
        }
        INFO("gradient " << i << ": largest " << largest << ", max difference " << worst);
        CHECK(largest > 0.1);  // not vacuous
        CHECK(worst <= 1e-12);
      }
    }
}

TEST_CASE("lowering: bf16 attention_grad computes in f32 unless the device takes bf16",
          "[attention]") {
  Function fn;
  Builder b(fn);
  TensorType t{DType::BF16, Shape{1, 2, 3, 4}};
  NodeId q = b.input("q", t), k = b.input("k", t), v = b.input("v", t), g = b.input("g", t);
  NodeId mask = b.input("mask", {DType::Bool, Shape{3, 3}});
  Attrs a;
  a.scale = 0.5;
  NodeId o = b.must(Op::Attention, {q, k, v, mask}, a);
  b.must(Op::AttentionGrad, {q, k, v, o, g, mask}, a);
  auto dtypes_of = [&](const sexpgpu::cpu::Lowered& l, Op op) {
    std::vector<DType> d;
    for (const auto& n : l.nodes)
      if (n.op == op) {
        d.push_back(n.type.dtype);
        for (NodeId in : n.inputs) d.push_back(l.nodes[size_t(in)].type.dtype);
      }
    return d;
  };
  sexpgpu::cpu::Lowered emulated = sexpgpu::cpu::lower(fn);
  using D = DType;
  CHECK(dtypes_of(emulated, Op::AttentionGrad) ==
        std::vector<D>{D::F32, D::F32, D::F32, D::F32, D::F32, D::F32, D::Bool});
  sexpgpu::cpu::Lowered native = sexpgpu::cpu::lower(fn, {.native_half_attention = true});
  CHECK(dtypes_of(native, Op::Attention) ==
        std::vector<D>{D::BF16, D::BF16, D::BF16, D::BF16, D::Bool});
  CHECK(dtypes_of(native, Op::AttentionGrad) ==
        std::vector<D>{D::BF16, D::BF16, D::BF16, D::BF16, D::BF16, D::BF16, D::Bool});
  size_t casts = 0;
  for (const auto& n : native.nodes) casts += n.op == Op::Cast;
  CHECK(casts == 0);
}
