// Reverse-mode autodiff (core/ir/autodiff.cpp, grad_rules*.cpp), structurally:
// the IR the gradients are made of, the types of the cotangents, which nodes
// get one, unreached and non-differentiable wrt nodes, and that the result
// verifies. The values are checked in test_gradcheck.cpp.
#include <stdexcept>

#include "catch.hpp"
#include "ir/autodiff.h"
#include "ir/grad_rules.h"
#include "ir/verify.h"

using namespace sexpgpu::ir;

namespace {

struct Graph {
  Module module;
  Function& fn;
  Builder b;

  Graph() : fn(module.functions.emplace_back()), b(fn) { fn.name = "f"; }

  NodeId param(const std::string& path, const TensorType& t) {
    module.params.push_back({path, t, true});
    return b.param(path, t);
  }
  NodeId sum(NodeId x) { return b.must(Op::Sum, {x}); }
  NodeId cast(NodeId x, DType d) {
    Attrs a;
    a.dtype = d;
    return b.must(Op::Cast, {x}, a);
  }
  // Verifies with the gradients as outputs.
  std::string verified(NodeId loss, const Gradients& g) {
    fn.outputs.push_back({"loss", loss});
    for (size_t i = 0; i < g.grads.size(); ++i)
      fn.outputs.push_back({"grad:" + std::to_string(i), g.grads[i]});
    return verify(module, fn);
  }
  const Node& node(NodeId id) const { return fn.node(id); }
};

TensorType T(std::string_view text) {
  return *parse_tensor_type(text);
}

}  // namespace

TEST_CASE("the gradient of a sum is the seed broadcast back", "[autodiff]") {
  Graph g;
  NodeId x = g.param("x", T("f32[2,3]"));
  NodeId loss = g.sum(x);
  Gradients d = differentiate(g.fn, loss, {x});
  REQUIRE(d.grads.size() == 1);
  CHECK(d.unreached.empty());
  const Node& expand = g.node(d.grads[0]);
  CHECK(expand.op == Op::Expand);
  CHECK(expand.type == T("f32[2,3]"));
  const Node& reshape = g.node(expand.inputs[0]);
  CHECK(reshape.op == Op::Reshape);
  CHECK(reshape.type == T("f32[1,1]"));
  const Node& seed = g.node(reshape.inputs[0]);
  CHECK(seed.op == Op::Full);
  CHECK(seed.type == T("f32[]"));
  CHECK(seed.attrs.value == 1.0);
  CHECK(g.verified(loss, d) == "");
}

TEST_CASE("a broadcast operand's cotangent is summed back to its shape", "[autodiff]") {
  Graph g;
  NodeId x = g.param("x", T("f32[2,3]")), y = g.param("y", T("f32[3]"));
  NodeId loss = g.sum(g.b.must(Op::Mul, {x, y}));
  Gradients d = differentiate(g.fn, loss, {x, y});
  CHECK(g.node(d.grads[0]).op == Op::Mul);
  CHECK(g.node(d.grads[0]).type == T("f32[2,3]"));
  const Node& gy = g.node(d.grads[1]);
  CHECK(gy.op == Op::Reshape);
  CHECK(gy.type == T("f32[3]"));
  const Node& summed = g.node(gy.inputs[0]);
  CHECK(summed.op == Op::Sum);
  CHECK(summed.type == T("f32[1,3]"));  // axis 0 summed, kept, then reshaped away
  CHECK(g.verified(loss, d) == "");
}

TEST_CASE("a promoted operand's cotangent is cast back to its dtype", "[autodiff]") {
  Graph g;
  NodeId x = g.param("x", T("f32[3]")), y = g.param("y", T("f64[3]"));
  NodeId loss = g.sum(g.b.must(Op::Mul, {x, y}));
  REQUIRE(g.fn.type(loss) == T("f64[]"));
  Gradients d = differentiate(g.fn, loss, {x, y});
  CHECK(g.node(d.grads[0]).op == Op::Cast);
  CHECK(g.node(d.grads[0]).type == T("f32[3]"));
  CHECK(g.node(d.grads[1]).type == T("f64[3]"));
  CHECK(g.verified(loss, d) == "");
}

TEST_CASE("a value used twice sums its cotangents", "[autodiff]") {
  Graph g;
  NodeId x = g.param("x", T("f32[4]"));
  NodeId loss = g.sum(g.b.must(Op::Mul, {x, x}));
  Gradients d = differentiate(g.fn, loss, {x});
  const Node& add = g.node(d.grads[0]);
  CHECK(add.op == Op::Add);
  CHECK(g.node(add.inputs[0]).op == Op::Mul);
  CHECK(g.node(add.inputs[1]).op == Op::Mul);
  CHECK(g.verified(loss, d) == "");
}

TEST_CASE("only nodes between a wrt node and the loss get cotangents", "[autodiff]") {
  Graph g;
  NodeId a = g.b.input("a", T("f32[4,3]"));
  NodeId w = g.param("w", T("f32[3,2]"));
  NodeId loss = g.sum(g.b.must(Op::MatMul, {a, w}));
  size_t forward = g.fn.nodes.size();
  Gradients d = differentiate(g.fn, loss, {w});
  CHECK(g.node(d.grads[0]).op == Op::MatMul);
  CHECK(g.node(d.grads[0]).type == T("f32[3,2]"));
  int matmuls = 0;
  for (size_t i = forward; i < g.fn.nodes.size(); ++i) {
    CHECK_FALSE(g.fn.nodes[i].type.shape == Shape({4, 3}));  // nothing for a
    matmuls += g.fn.nodes[i].op == Op::MatMul;
  }
  CHECK(matmuls == 1);
  CHECK(g.verified(loss, d) == "");
}

TEST_CASE("gradient nodes carry the forward node's source position", "[autodiff]") {
  Graph g;
  uint32_t file = g.module.file_id("model.lisp");
  NodeId x = g.param("x", T("f32[3]"));
  g.b.set_loc({file, 7, 3});
  NodeId e = g.b.must(Op::Exp, {x});
  g.b.set_loc({file, 8, 1});
  NodeId loss = g.sum(e);
  size_t forward = g.fn.nodes.size();
  Gradients d = differentiate(g.fn, loss, {x});
  CHECK(g.node(d.grads[0]).loc == Loc{file, 7, 3});  // exp's rule made it
  for (size_t i = forward; i < g.fn.nodes.size(); ++i) {
    Loc loc = g.fn.nodes[i].loc;
    CHECK((loc == Loc{file, 7, 3} || loc == Loc{file, 8, 1}));
  }
  CHECK(g.verified(loss, d) == "");
}

TEST_CASE("the seed has the loss's dtype", "[autodiff]") {
  Graph g;
  NodeId x = g.param("x", T("f64[2]"));
  NodeId loss = g.sum(x);
  Gradients d = differentiate(g.fn, loss, {x});
  const Node& seed = g.node(g.node(g.node(d.grads[0]).inputs[0]).inputs[0]);
  CHECK(seed.op == Op::Full);
  CHECK(seed.type == T("f64[]"));
}

TEST_CASE("a wrt node the loss does not reach gets zeros", "[autodiff]") {
  Graph g;
  NodeId x = g.param("x", T("f32[3]")), unused = g.param("unused", T("f32[2,2]"));
  NodeId loss = g.sum(x);
  std::vector<NonDifferentiable> nondiff;
  Gradients d = differentiate(g.fn, loss, {x, unused}, &nondiff);
  CHECK(d.unreached == std::vector<size_t>{1});
  CHECK(nondiff.empty());
  const Node& zeros = g.node(d.grads[1]);
  CHECK(zeros.op == Op::Full);
  CHECK(zeros.attrs.value == 0.0);
  CHECK(zeros.type == T("f32[2,2]"));
  CHECK(g.verified(loss, d) == "");
}

TEST_CASE("stop_gradient leaves a wrt node unreached, not non-differentiable", "[autodiff]") {
  Graph g;
  NodeId x = g.param("x", T("f32[3]")), frozen = g.param("frozen", T("f32[3]"));
  NodeId stopped = g.b.must(Op::StopGradient, {frozen});
  NodeId loss = g.sum(g.b.must(Op::Mul, {x, stopped}));
  std::vector<NonDifferentiable> nondiff;
  Gradients d = differentiate(g.fn, loss, {frozen, x}, &nondiff);
  CHECK(d.unreached == std::vector<size_t>{0});
  CHECK(nondiff.empty());
  CHECK(g.node(d.grads[0]).op == Op::Full);
  CHECK(g.node(d.grads[1]).op == Op::Mul);
  CHECK(g.verified(loss, d) == "");
}

TEST_CASE("a wrt node reaching the loss only through ops without a gradient", "[autodiff]") {
  Graph g;
  NodeId x = g.param("x", T("f32[4]")), z = g.param("z", T("f32[3,4]"));
  std::vector<NonDifferentiable> nondiff;

  SECTION("argmax: named, zeros, not unreached") {
    NodeId arg = g.b.must(Op::ArgMax, {z});
    NodeId loss = g.sum(g.b.must(Op::Mul, {x, g.cast(arg, DType::F32)}));
    Gradients d = differentiate(g.fn, loss, {x, z}, &nondiff);
    REQUIRE(nondiff.size() == 1);
    CHECK(nondiff[0].wrt_index == 1);
    CHECK(nondiff[0].blocking_node == arg);
    CHECK(d.unreached.empty());
    CHECK(g.node(d.grads[1]).op == Op::Full);
    CHECK(g.node(d.grads[1]).type == T("f32[3,4]"));
    CHECK(g.verified(loss, d) == "");
  }
  SECTION("floor") {
    NodeId fl = g.b.must(Op::Floor, {z});
    NodeId loss = g.sum(fl);
    differentiate(g.fn, loss, {z}, &nondiff);
    REQUIRE(nondiff.size() == 1);
    CHECK(nondiff[0].blocking_node == fl);
  }
  SECTION("a cast to an integer dtype") {
    NodeId to_int = g.cast(z, DType::I32);
    NodeId loss = g.sum(g.cast(to_int, DType::F32));
    differentiate(g.fn, loss, {z}, &nondiff);
    REQUIRE(nondiff.size() == 1);
    CHECK(nondiff[0].blocking_node == to_int);
  }
  SECTION("take's ids: the take is named, the stop nearest the loss") {
    NodeId table = g.b.input("table", T("f32[5,2]"));
    Attrs a;
    a.axis = 0;
    NodeId take = g.b.must(Op::Take, {table, g.cast(z, DType::I32)}, a);
    NodeId loss = g.sum(take);
    differentiate(g.fn, loss, {z}, &nondiff);
    REQUIRE(nondiff.size() == 1);
    CHECK(nondiff[0].blocking_node == take);
  }
  SECTION("a differentiable path as well: no E-NONDIFF") {
    NodeId arg = g.cast(g.b.must(Op::ArgMax, {z}), DType::F32);
    NodeId loss = g.b.must(Op::Add, {g.sum(arg), g.sum(z)});
    Gradients d = differentiate(g.fn, loss, {z}, &nondiff);
    CHECK(nondiff.empty());
    CHECK(g.node(d.grads[0]).op == Op::Expand);
  }
}

TEST_CASE("differentiate needs a scalar float loss", "[autodiff]") {
  Graph g;
  NodeId x = g.param("x", T("f32[3]"));
  CHECK_THROWS_AS(differentiate(g.fn, x, {x}), std::logic_error);
  NodeId count = g.sum(g.cast(x, DType::I32));
  CHECK_THROWS_AS(differentiate(g.fn, count, {x}), std::logic_error);
}

TEST_CASE("the loss itself as a wrt node gets the seed", "[autodiff]") {
  Graph g;
  NodeId x = g.param("x", T("f32[3]"));
  NodeId loss = g.sum(x);
  Gradients d = differentiate(g.fn, loss, {loss, x});
  CHECK(g.node(d.grads[0]).op == Op::Full);
  CHECK(g.node(d.grads[0]).attrs.value == 1.0);
  CHECK(g.node(d.grads[1]).type == T("f32[3]"));
}

TEST_CASE("ops without a gradient have no rule", "[autodiff]") {
  Graph g;
  NodeId x = g.param("x", T("f32[3]"));
  for (Op op : {Op::Sign, Op::Floor, Op::StopGradient}) {
    NodeId y = g.b.must(op, {x});
    Result<Cotangents> r = vjp(g.b, y, y, {true});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error() == "'" + std::string(info(op).ir_name) + "' has no gradient");
  }
  CHECK_FALSE(operand_differentiable(Op::Take, 1));
  CHECK_FALSE(operand_differentiable(Op::Where, 0));
  CHECK_FALSE(operand_differentiable(Op::CrossEntropy, 1));
  CHECK(operand_differentiable(Op::Where, 1));
  CHECK(operand_differentiable(Op::Attention, 3));
}

namespace {
// Nodes from `first` on that no output depends on.
int dead_nodes(const Function& fn, size_t first) {
  std::vector<bool> live(fn.nodes.size());
  for (const Output& o : fn.outputs) live[size_t(o.node)] = true;
  for (size_t id = fn.nodes.size(); id-- > 0;)
    if (live[id])
      for (NodeId in : fn.nodes[id].inputs) live[size_t(in)] = true;
  int dead = 0;
  for (size_t id = first; id < fn.nodes.size(); ++id) dead += !live[id];
  return dead;
}
}  // namespace

TEST_CASE("with promoted operands, a rule builds only what the wanted cotangent needs",
          "[autodiff]") {
  Graph g;
  NodeId y = -1, wrt = -1;
  SECTION("matmul") {
    NodeId a = g.b.input("a", T("f32[2,3]"));
    wrt = g.param("w", T("f64[3,4]"));
    y = g.b.must(Op::MatMul, {a, wrt});
  }
  SECTION("pow, the exponent") {
    NodeId a = g.b.input("a", T("f32[3]"));
    wrt = g.param("b", T("f64[3]"));
    y = g.b.must(Op::Pow, {a, wrt});
  }
  SECTION("layer_norm, the weight") {
    Attrs a;
    a.eps = 1e-5;
    NodeId x = g.b.input("x", T("f32[2,3]")), b = g.b.input("b", T("f32[3]"));
    wrt = g.param("w", T("f64[3]"));
    y = g.b.must(Op::LayerNorm, {x, wrt, b}, a);
  }
  SECTION("conv2d, the weight") {
    Attrs a;
    a.stride = a.dilation = Dims{1, 1};
    a.padding = Dims{0, 0};
    a.groups = 1;
    NodeId x = g.b.input("x", T("f32[1,2,4,4]"));
    wrt = g.param("w", T("f64[3,2,3,3]"));
    y = g.b.must(Op::Conv2d, {x, wrt}, a);
  }
  SECTION("attention, v") {
    Attrs a;
    a.scale = 0.5;
    NodeId q = g.b.input("q", T("f32[1,1,2,4]")), k = g.b.input("k", T("f32[1,1,3,4]"));
    wrt = g.param("v", T("f64[1,1,3,4]"));
    y = g.b.must(Op::Attention, {q, k, wrt}, a);
  }
  NodeId loss = g.sum(y);
  size_t forward = g.fn.nodes.size();
  Gradients d = differentiate(g.fn, loss, {wrt});
  CHECK(g.verified(loss, d) == "");
  CHECK(dead_nodes(g.fn, forward) == 0);
}
