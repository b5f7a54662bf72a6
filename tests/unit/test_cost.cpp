// The IR cost model (core/ir/cost.h): FLOPs of each op family against the
// formulas worked out by hand, bytes moved (fusion included), the arena
// planner on small cases whose layout is known, a function's memory, and the
// forward/backward split of a differentiated function.
#include <memory>

#include "catch.hpp"
#include "ir/autodiff.h"
#include "ir/cost.h"
#include "ir/graph.h"
#include "ir/passes.h"

using namespace sexpgpu::ir;

namespace {

TensorType T(std::string_view text) {
  return *parse_tensor_type(text);
}

Dims dims(std::initializer_list<int64_t> d) {
  return Dims(d.begin(), d.end());
}

struct Graph {
  Module module;
  Function& fn;
  Builder b;
  Graph() : fn(module.functions.emplace_back()), b(fn) { fn.name = "f"; }
  NodeId param(const std::string& path, const TensorType& t) {
    module.params.push_back({path, t, true});
    return b.param(path, t);
  }
  double flops(NodeId id) { return node_flops(fn, fn.node(id)); }
};

Attrs conv_attrs(int64_t stride, int64_t padding, int64_t groups) {
  Attrs a;
  a.stride = dims({stride, stride});
  a.padding = dims({padding, padding});
  a.dilation = dims({1, 1});
  a.groups = groups;
  return a;
}

}  // namespace

TEST_CASE("matmul costs 2 M N K per batch element", "[cost]") {
  Graph g;
  NodeId a = g.b.input("a", T("f32[8,16]"));
  NodeId b = g.b.input("b", T("f32[16,32]"));
  NodeId batched = g.b.input("c", T("f32[3,8,16]"));
  NodeId v = g.b.input("v", T("f32[16]"));
  CHECK(g.flops(g.b.must(Op::MatMul, {a, b})) == 2.0 * 8 * 32 * 16);
  CHECK(g.flops(g.b.must(Op::MatMul, {batched, b})) == 3 * 2.0 * 8 * 32 * 16);
  CHECK(g.flops(g.b.must(Op::MatMul, {v, b})) == 2.0 * 32 * 16);  // [16] @ [16,32]
  CHECK(g.flops(g.b.must(Op::MatMul, {v, v})) == 2.0 * 16);       // a dot product
}

TEST_CASE("conv2d and both its gradients cost 2 N Cout Hout Wout Cin/groups KH KW", "[cost]") {
  Graph g;
  NodeId x = g.b.input("x", T("f32[2,4,10,10]"));
  NodeId w = g.b.input("w", T("f32[6,2,3,3]"));  // groups 2: Cin/groups = 2
  NodeId y = g.b.must(Op::Conv2d, {x, w}, conv_attrs(1, 1, 2));
  REQUIRE(g.fn.type(y) == T("f32[2,6,10,10]"));
  const double expected = 2.0 * 2 * 6 * 10 * 10 * 2 * 3 * 3;  // 43200
  CHECK(g.flops(y) == expected);
  Attrs as_x = conv_attrs(1, 1, 2), as_w = conv_attrs(1, 1, 2);
  as_x.shape = dims({2, 4, 10, 10});
  as_w.shape = dims({6, 2, 3, 3});
  CHECK(g.flops(g.b.must(Op::Conv2dGradInput, {y, w}, as_x)) == expected);
  CHECK(g.flops(g.b.must(Op::Conv2dGradWeight, {x, y}, as_w)) == expected);
  NodeId strided = g.b.must(Op::Conv2d, {x, w}, conv_attrs(2, 0, 2));
  REQUIRE(g.fn.type(strided) == T("f32[2,6,4,4]"));
  CHECK(g.flops(strided) == 2.0 * 2 * 6 * 4 * 4 * 2 * 3 * 3);  // 6912
}

TEST_CASE("attention costs 4 B H Tq Tk D, half of it when causal", "[cost]") {
  Graph g;
  NodeId q = g.b.input("q", T("f32[2,3,5,4]"));
  NodeId k = g.b.input("k", T("f32[2,3,7,4]"));
  NodeId v = g.b.input("v", T("f32[2,3,7,4]"));
  Attrs plain, causal;
  plain.scale = causal.scale = 0.5;
  causal.causal = true;
  CHECK(g.flops(g.b.must(Op::Attention, {q, k, v}, plain)) == 4.0 * 2 * 3 * 5 * 7 * 4);  // 3360
  CHECK(g.flops(g.b.must(Op::Attention, {q, k, v}, causal)) == 2.0 * 2 * 3 * 5 * 7 * 4);
}

TEST_CASE("attention_grad costs 2.5 times the forward, half of it when causal", "[cost]") {
  Graph g;
  NodeId q = g.b.input("q", T("f32[2,3,5,4]"));
  NodeId k = g.b.input("k", T("f32[2,3,7,4]"));
  NodeId v = g.b.input("v", T("f32[2,3,7,4]"));
  NodeId mask = g.b.input("mask", T("bool[5,7]"));
  Attrs plain, causal;
  plain.scale = causal.scale = 0.5;
  causal.causal = true;
  NodeId o = g.b.must(Op::Attention, {q, k, v}, plain);
  CHECK(g.flops(g.b.must(Op::AttentionGrad, {q, k, v, o, o}, plain)) ==
        10.0 * 2 * 3 * 5 * 7 * 4);  // 8400
  CHECK(g.flops(g.b.must(Op::AttentionGrad, {q, k, v, o, o, mask}, causal)) ==
        5.0 * 2 * 3 * 5 * 7 * 4);
}

// The gradient with respect to q, k and v, from `forward_end` on, of
// sum(attention(q, k, v [, mask])).
struct AttentionBackward {
  Graph g;
  NodeId forward_end;

  explicit AttentionBackward(bool float_mask) {
    NodeId q = g.param("q", T("f32[2,3,5,4]"));
    NodeId k = g.param("k", T("f32[2,3,7,4]"));
    NodeId v = g.param("v", T("f32[2,3,7,4]"));
    Attrs a;
    a.scale = 0.5;
    NodeId o = float_mask ? g.b.must(Op::Attention, {q, k, v, g.b.input("m", T("f32[5,7]"))}, a)
                          : g.b.must(Op::Attention, {q, k, v}, a);
    NodeId loss = g.b.must(Op::Sum, {o});
    forward_end = NodeId(g.fn.nodes.size());
    Gradients d = differentiate(g.fn, loss, {q, k, v});
    g.fn.outputs = {{"loss", loss}, {"dq", d.grads[0]}, {"dk", d.grads[1]}, {"dv", d.grads[2]}};
  }

  // The FLOPs of the backward's nodes of `op`, and how many there are.
  std::pair<double, int> of(Op op) {
    double flops = 0;
    int count = 0;
    for (NodeId id = forward_end; id < NodeId(g.fn.nodes.size()); ++id)
      if (g.fn.node(id).op == op) {
        flops += g.flops(id);
        ++count;
      }
    return {flops, count};
  }
};

TEST_CASE("attention's gradient is one attention_grad, five matmuls' worth", "[cost]") {
  AttentionBackward b(false);
  CHECK(b.of(Op::AttentionGrad) == std::pair{5 * 2.0 * 2 * 3 * 5 * 7 * 4, 1});
  CHECK(b.of(Op::MatMul).second == 0);
  // The slices out of its result compute nothing.
  CHECK(function_cost(b.g.fn, b.forward_end).flops == 5 * 2.0 * 2 * 3 * 5 * 7 * 4);
}

TEST_CASE("with a float mask, attention's gradient is five matmuls of the forward's size",
          "[cost]") {
  AttentionBackward b(true);
  // s = q k^T again, dv, dp, dq, dk
  CHECK(b.of(Op::MatMul) == std::pair{5 * 2.0 * 2 * 3 * 5 * 7 * 4, 5});
  // The whole backward, with the softmax's and scaling's elementwise work.
  CHECK(function_cost(b.g.fn, b.forward_end).flops > b.of(Op::MatMul).first);
}

TEST_CASE("elementwise ops cost one per result element, casts and shape ops none", "[cost]") {
  Graph g;
  NodeId x = g.b.input("x", T("f32[4,5]"));
  NodeId row = g.b.input("row", T("f32[5]"));
  NodeId ids = g.b.input("ids", T("i32[3]"));
  NodeId sum = g.b.must(Op::Add, {x, row});
  CHECK(g.flops(sum) == 20);  // broadcast: the result's elements
  CHECK(g.flops(g.b.must(Op::Exp, {x})) == 20);
  CHECK(g.flops(g.b.must(Op::Gelu, {x})) == 20);
  NodeId positive = g.b.must(Op::Gt, {x, row});
  CHECK(g.flops(positive) == 20);
  CHECK(g.flops(g.b.must(Op::Where, {positive, x, row})) == 20);
  Attrs to_bf16;
  to_bf16.dtype = DType::BF16;
  CHECK(g.flops(g.b.must(Op::Cast, {x}, to_bf16)) == 0);
  Attrs reshape;
  reshape.shape = dims({20});
  CHECK(g.flops(g.b.must(Op::Reshape, {x}, reshape)) == 0);
  Attrs swap;
  swap.axes = dims({1, 0});
  CHECK(g.flops(g.b.must(Op::Permute, {x}, swap)) == 0);
  Attrs rows;
  rows.axis = 0;
  CHECK(g.flops(g.b.must(Op::Take, {x, ids}, rows)) == 0);
  CHECK(g.flops(g.b.must(Op::StopGradient, {x})) == 0);
  CHECK(g.flops(g.b.scalar(1.0, DType::F32)) == 0);
}

TEST_CASE("reductions, softmax, cross-entropy and norms cost a constant per input element",
          "[cost]") {
  Graph g;
  NodeId x = g.b.input("x", T("f32[4,5]"));
  NodeId w = g.b.input("w", T("f32[5]"));
  NodeId y = g.b.input("y", T("i32[4]"));
  Attrs last;
  last.axes = dims({1});
  CHECK(g.flops(g.b.must(Op::Sum, {x}, last)) == 20);
  CHECK(g.flops(g.b.must(Op::Max, {x})) == 20);
  CHECK(g.flops(g.b.must(Op::Mean, {x}, last)) == 20);
  CHECK(g.flops(g.b.must(Op::Norm, {x})) == 40);
  CHECK(g.flops(g.b.must(Op::Var, {x}, last)) == 80);
  CHECK(g.flops(g.b.must(Op::LogSumExp, {x}, last)) == 80);
  Attrs axis;
  axis.axis = 1;
  CHECK(g.flops(g.b.must(Op::ArgMax, {x}, axis)) == 20);
  CHECK(g.flops(g.b.must(Op::Softmax, {x}, axis)) == 100);
  CHECK(g.flops(g.b.must(Op::LogSoftmax, {x}, axis)) == 100);
  Attrs mean;
  mean.reduction = "mean";
  CHECK(g.flops(g.b.must(Op::CrossEntropy, {x, y}, mean)) == 100);  // per logit
  Attrs eps;
  eps.eps = 1e-5;
  CHECK(g.flops(g.b.must(Op::LayerNorm, {x, w, w}, eps)) == 140);
  CHECK(g.flops(g.b.must(Op::RmsNorm, {x, w}, eps)) == 80);
}

TEST_CASE("pools cost the window per result element", "[cost]") {
  Graph g;
  NodeId x = g.b.input("x", T("f32[1,2,6,6]"));
  Attrs a;
  a.kernel = dims({2, 3});
  a.stride = dims({2, 3});
  a.padding = dims({0, 0});
  NodeId p = g.b.must(Op::MaxPool2d, {x}, a);
  REQUIRE(g.fn.type(p) == T("f32[1,2,3,2]"));
  CHECK(g.flops(p) == 12 * 6);
  Attrs back = a;
  back.shape = dims({1, 2, 6, 6});
  CHECK(g.flops(g.b.must(Op::AvgPool2dGrad, {p}, back)) == 12 * 6);
  CHECK(g.flops(g.b.must(Op::MaxPool2dGrad, {x, p}, back)) == 12 * 6);
}

TEST_CASE("bytes: operands read, results written, a fused group touches memory once", "[cost]") {
  Graph g;
  NodeId x = g.b.input("x", T("f32[1024]"));
  NodeId two = g.b.scalar(2.0, DType::F32);
  NodeId a = g.b.must(Op::Mul, {x, two});
  NodeId t = g.b.must(Op::Tanh, {a});
  NodeId s = g.b.must(Op::Add, {t, x});
  g.fn.outputs = {{"out", s}};
  Cost plain = function_cost(g.fn);
  CHECK(plain.flops == 3 * 1024);
  // full writes 4; mul reads x and the scalar, writes 4096; tanh 4096 in and
  // out; add reads t and x, writes 4096.
  CHECK(plain.bytes_written == 4 + 3 * 4096);
  CHECK(plain.bytes_read == (4096 + 4) + 4096 + 2 * 4096);
  fuse_elementwise(g.fn);
  REQUIRE(g.fn.node(a).fusion_group >= 0);
  REQUIRE(g.fn.node(s).fusion_group == g.fn.node(a).fusion_group);
  Cost fused = function_cost(g.fn);
  CHECK(fused.flops == plain.flops);
  CHECK(fused.bytes_written == 4 + 4096);  // only the group's last node
  CHECK(fused.bytes_read == 4096 + 4);     // x once (read by two members) and the scalar
}

TEST_CASE("nodes no output depends on cost nothing", "[cost]") {
  Graph g;
  NodeId x = g.b.input("x", T("f32[10]"));
  g.b.must(Op::Exp, {x});  // dead
  NodeId n = g.b.must(Op::Neg, {x});
  g.fn.outputs = {{"out", n}};
  CHECK(function_cost(g.fn).flops == 10);
  std::vector<bool> live = live_nodes(g.fn);
  CHECK(live == std::vector<bool>{true, false, true});
}

TEST_CASE("the arena planner reuses the bytes of buffers no longer read", "[cost]") {
  SECTION("a chain needs two buffers") {
    std::vector<BufferLife> chain = {{0, 1, 100}, {1, 2, 100}, {2, 3, 100}, {3, 4, 100}};
    ArenaPlan plan = plan_arena(chain);
    CHECK(plan.offsets == std::vector<int64_t>{0, 128, 0, 128});  // 100 rounds up to 128
    CHECK(plan.bytes == 256);
  }
  SECTION("first fit takes the lowest hole that holds the buffer, else grows") {
    std::vector<BufferLife> b = {
        {0, 5, 64},  {0, 1, 128}, {0, 5, 64},  // the middle one is freed after step 1
        {2, 3, 64},                            // the hole [64, 192): offset 64
        {2, 3, 128},                           // [128, 192) is too small: grow
    };
    ArenaPlan plan = plan_arena(b);
    CHECK(plan.offsets == std::vector<int64_t>{0, 64, 192, 64, 256});
    CHECK(plan.bytes == 384);
  }
  SECTION("freed neighbours coalesce, and no buffer reuses its own operand's bytes") {
    std::vector<BufferLife> b = {{0, 0, 64}, {0, 0, 64}, {1, 1, 128}};
    CHECK(plan_arena(b).offsets == std::vector<int64_t>{0, 64, 0});
    std::vector<BufferLife> reader = {{0, 1, 64}, {1, 2, 64}};  // 1 reads 0 while writing
    CHECK(plan_arena(reader).bytes == 128);
  }
  SECTION("sizes are 64-byte aligned; empty buffers take no bytes") {
    std::vector<BufferLife> b = {{0, 2, 1}, {1, 2, 0}, {2, 2, 65}};
    ArenaPlan plan = plan_arena(b);
    CHECK(plan.offsets == std::vector<int64_t>{0, 0, 64});
    CHECK(plan.bytes == 64 + 128);
  }
}

TEST_CASE("a function's memory: leaves, outputs and the intermediate arena", "[cost]") {
  SECTION("a chain of four ops keeps two intermediates at once") {
    Graph g;
    NodeId x = g.b.input("x", T("f32[1000]"));
    NodeId e = x;
    for (int i = 0; i < 4; ++i) e = g.b.must(Op::Exp, {e});
    g.fn.outputs = {{"out", e}};
    MemoryUse m = plan_memory(g.fn);
    CHECK(m.input_bytes == 4000);
    CHECK(m.output_bytes == 4000);
    CHECK(m.intermediate_peak == 2 * 4032);  // 4000 aligned to 64
  }
  SECTION("params, views sharing their operand's buffer, an output outside the arena") {
    Graph g;
    NodeId x = g.b.input("x", T("f32[8,16]"));
    NodeId w = g.param("w", T("f32[16,32]"));
    NodeId h = g.b.must(Op::MatMul, {x, w});  // 1024 bytes
    Attrs flat;
    flat.shape = dims({256});
    NodeId v = g.b.must(Op::Reshape, {h}, flat);  // h's buffer
    NodeId r = g.b.must(Op::Relu, {v});           // 1024 bytes, live with h
    NodeId loss = g.b.must(Op::Sum, {r});
    g.fn.outputs = {{"loss", loss}, {"h", h}};
    MemoryUse m = plan_memory(g.fn);
    CHECK(m.input_bytes == 512);
    CHECK(m.param_bytes == 2048);
    CHECK(m.output_bytes == 4 + 1024);
    CHECK(m.intermediate_peak == 1024);  // r only: h is an output
  }
  SECTION("a fused group's members take no buffer") {
    Graph g;
    NodeId x = g.b.input("x", T("f32[1000]"));
    NodeId e = x;
    for (int i = 0; i < 4; ++i) e = g.b.must(Op::Exp, {e});
    NodeId s = g.b.must(Op::Sum, {e});
    g.fn.outputs = {{"out", s}};
    CHECK(plan_memory(g.fn).intermediate_peak == 2 * 4032);
    fuse_elementwise(g.fn);
    CHECK(plan_memory(g.fn).intermediate_peak == 4032);  // the group's last exp
  }
}

TEST_CASE("a transpose that only matmuls read is a view of its operand", "[cost]") {
  auto build = [](bool also_elementwise) {
    auto g = std::make_unique<Graph>();
    NodeId x = g->b.input("x", T("f32[8,16]"));
    NodeId w = g->param("w", T("f32[16,32]"));
    NodeId h = g->b.must(Op::MatMul, {x, w});  // [8,32]: 1024 bytes
    Attrs swap;
    swap.axes = dims({1, 0});
    NodeId t = g->b.must(Op::Permute, {h}, swap);  // [32,8]
    g->fn.outputs = {{"out", g->b.must(Op::MatMul, {t, x})}};
    if (also_elementwise) g->fn.outputs.push_back({"e", g->b.must(Op::Exp, {t})});
    return g;
  };
  auto folded = build(false);
  CHECK(plan_memory(folded->fn).intermediate_peak == 1024);  // h alone, read through t
  Cost c = function_cost(folded->fn);
  CHECK(c.bytes_written == 1024 + 32 * 16 * 4);  // h and the output, no copy for t
  // Read by exp too, the transpose is a copy, written while h is still read.
  auto copied = build(true);
  CHECK(plan_memory(copied->fn).intermediate_peak == 2048);
}

TEST_CASE("a differentiated function splits into forward and backward FLOPs", "[cost]") {
  Graph g;
  NodeId x = g.b.input("x", T("f32[8,16]"));
  NodeId w = g.param("w", T("f32[16,32]"));
  NodeId loss = g.b.must(Op::Sum, {g.b.must(Op::MatMul, {x, w})});
  const NodeId forward_end = NodeId(g.fn.nodes.size());
  Gradients d = differentiate(g.fn, loss, {w});
  g.fn.outputs = {{"loss", loss}, {"grad:w", d.grads[0]}};
  const double matmul = 2.0 * 8 * 32 * 16;
  CHECK(function_cost(g.fn, 0, forward_end).flops == matmul + 8 * 32);  // the product, the sum
  // dw = x^T g: the same product; the sum's gradient is a broadcast.
  CHECK(function_cost(g.fn, forward_end).flops == matmul);
  CHECK(function_cost(g.fn).flops == 2 * matmul + 8 * 32);
}
