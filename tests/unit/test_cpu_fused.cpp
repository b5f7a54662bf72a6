// The CPU device's fused elementwise kernels: a fusion group (from
// ir::fuse_elementwise) runs as one step whose intermediates need no arena
// buffer, reading same-shape, scalar and broadcast operands; groups it does
// not handle (integer dtypes, casts) run node by node with the same results.
#include <cmath>
#include <nlohmann/json.hpp>

#include "ir/passes.h"
#include "test_cpu_util.h"

using namespace cpu_test;

namespace {

NodeId scalar(Case& c, double value, DType d = DType::F32) {
  ir::Attrs a;
  a.shape = dims({});
  a.dtype = d;
  a.value = value;
  return c.add(Op::Full, {}, a);
}

std::vector<std::string> kernel_names(const cpu::Program& p) {
  std::vector<std::string> names;
  nlohmann::json report = nlohmann::json::parse(p.report_json());
  for (const auto& s : report["steps"]) names.push_back(s["kernel"]);
  return names;
}

std::vector<double> ramp(size_t n, double start, double step) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * double(i);
  return v;
}

}  // namespace

TEST_CASE("cpu fused: a chain with scalar, same-shape and row operands is one step", "[cpu]") {
  // 3 x 700 elements: three blocks of 1024, the last one partial.
  Case c;
  NodeId x = c.input(DType::F32, {3, 700});
  NodeId w = c.input(DType::F32, {3, 700});
  NodeId r = c.input(DType::F32, {3, 1});
  NodeId a = c.add(Op::Mul, {x, scalar(c, 0.5)});
  NodeId e = c.add(Op::Exp, {a});
  NodeId s = c.add(Op::Add, {e, w});
  NodeId m = c.add(Op::Mul, {s, r});
  NodeId positive = c.add(Op::Gt, {x, scalar(c, 0.0)});
  NodeId y = c.add(Op::Where, {positive, m, scalar(c, -1.0)});
  c.output(y);
  ir::fuse_elementwise(*c.fn);
  REQUIRE(c.fn->node(a).fusion_group == c.fn->node(y).fusion_group);

  auto p = c.compile(1);
  CHECK(kernel_names(*p) == std::vector<std::string>{"fused<f32> mul exp add mul gt where"});
  CHECK(p->arena_bytes() == 0);  // the result goes straight to the output

  std::vector<double> xs = ramp(2100, -3, 0.003), ws = ramp(2100, 1, -0.001), rs = {2, -1, 0.25};
  std::vector<double> want(2100);
  for (size_t i = 0; i < want.size(); ++i)
    want[i] = xs[i] > 0 ? (std::exp(float(xs[i]) * 0.5) + float(ws[i])) * rs[i / 700] : -1;
  for (int threads : {1, 2}) {
    INFO(threads << " threads");
    auto out = c.run({xs, ws, rs}, threads);
    check_close(out[0], want, 2e-6, 1e-6);
  }
  // Elements worked by hand: i = 1001 is x = 0.003, w = -0.001 in row 1
  // (r = -1): -(e^0.0015 - 0.001); i = 2099 is x = 3.297, w = -1.099 in row
  // 2 (r = 0.25): (e^1.6485 - 1.099) / 4; i = 0 has x = -3 <= 0.
  auto out = c.run({xs, ws, rs}, 1);
  CHECK(out[0][1001] == Approx(-1.000501126).epsilon(1e-6));
  CHECK(out[0][2099] == Approx(1.025043803).epsilon(1e-6));
  CHECK(out[0][0] == -1);
}

TEST_CASE("cpu fused: the exact gelu's gradient group in f32 and f64", "[cpu]") {
  for (DType d : {DType::F32, DType::F64}) {
    INFO(ir::ir_name(d));
    Case c;
    NodeId x = c.input(d, {5});
    NodeId g = c.input(d, {5});
    // Phi(x) + x phi(x), as the gradient rule stages it, times g.
    NodeId z = c.add(Op::Mul, {x, scalar(c, std::sqrt(0.5), d)});
    NodeId cdf =
        c.add(Op::Mul, {c.add(Op::Add, {scalar(c, 1, d), c.add(Op::Erf, {z})}), scalar(c, 0.5, d)});
    NodeId e = c.add(Op::Exp, {c.add(Op::Mul, {c.add(Op::Mul, {x, x}), scalar(c, -0.5, d)})});
    NodeId pdf = c.add(Op::Mul, {e, scalar(c, 0.3989422804014327, d)});
    NodeId dy = c.add(Op::Mul, {g, c.add(Op::Add, {cdf, c.add(Op::Mul, {x, pdf})})});
    c.output(dy);
    ir::fuse_elementwise(*c.fn);
    auto p = c.compile(1);
    REQUIRE(kernel_names(*p).size() == 1);
    CHECK(kernel_names(*p)[0].rfind(std::string("fused<") + std::string(ir::ir_name(d)), 0) == 0);
    // torch.autograd.grad(F.gelu(x), x, g) in f64.
    auto out = c.run({{-3, -0.5, 0, 1e-3, 2.5}, {1, 1, 1, 1, 2}});
    check_close(out[0], {-0.0119456472042, 0.132504875344, 0.5, 0.500797884295, 2.07522217182},
                d == DType::F32 ? 2e-6 : 1e-9, d == DType::F32 ? 1e-7 : 1e-9);
  }
}

TEST_CASE("cpu fused: groups in integers or with a cast run node by node", "[cpu]") {
  SECTION("i32") {
    Case c;
    NodeId x = c.input(DType::I32, {4});
    NodeId y = c.add(Op::Mul, {c.add(Op::Add, {x, x}), x});
    c.output(y);
    ir::fuse_elementwise(*c.fn);
    REQUIRE(c.fn->node(y).fusion_group >= 0);
    auto p = c.compile(1);
    CHECK(kernel_names(*p) == std::vector<std::string>{"add<i32> flat", "mul<i32> flat"});
    check_exact(c.run({{1, -2, 3, 40000}})[0], {2, 8, 18, -1094967296});  // 2*40000^2 wraps
  }
  SECTION("a cast inside") {
    Case c;
    NodeId x = c.input(DType::F32, {3});
    ir::Attrs to_f64;
    to_f64.dtype = DType::F64;
    NodeId y =
        c.add(Op::Add, {c.add(Op::Cast, {c.add(Op::Neg, {x})}, to_f64), scalar(c, 1, DType::F64)});
    c.output(y);
    ir::fuse_elementwise(*c.fn);
    REQUIRE(c.fn->node(y).fusion_group >= 0);
    auto p = c.compile(1);
    CHECK(kernel_names(*p).size() == 3);
    check_exact(c.run({{0.5, -2, 0.25}})[0], {0.5, 3, 0.75});
  }
}

TEST_CASE("cpu fused: intermediates of a group need no arena buffer", "[cpu]") {
  const int64_t n = 1000;
  auto build = [&](Case& c) {
    NodeId v = c.input(DType::F32, {n});
    for (int i = 0; i < 6; ++i) v = c.add(i % 2 ? Op::Neg : Op::Exp, {v});
    c.output(c.add(Op::Sum, {v}));
  };
  Case plain, fused;
  build(plain);
  build(fused);
  ir::fuse_elementwise(*fused.fn);
  // Node by node: two 4000-byte buffers in turn (each padded to 4032); fused:
  // only the group's result, which the sum reads.
  CHECK(plain.compile(1)->arena_bytes() == 2 * 4032);
  CHECK(fused.compile(1)->arena_bytes() == 4032);
  float y = 0;
  for (int i = 0; i < 6; ++i) y = i % 2 ? -y : std::exp(y);
  auto out = fused.run({std::vector<double>(size_t(n), 0.0)});
  CHECK(out[0][0] == Approx(double(y) * 1000).epsilon(1e-6));
  CHECK(out[0][0] == Approx(plain.run({std::vector<double>(size_t(n), 0.0)})[0][0]));
}

TEST_CASE("cpu fused: a big group split across threads matches one thread", "[cpu]") {
  // 400000 elements x 3 nodes is past the parallel threshold.
  Case c;
  NodeId x = c.input(DType::F32, {400, 1000});
  NodeId col = c.input(DType::F32, {1000});
  NodeId y = c.add(Op::Sub, {c.add(Op::Square, {x}), c.add(Op::Mul, {x, col})});
  c.output(y);
  ir::fuse_elementwise(*c.fn);
  std::vector<double> xs = ramp(400000, -2, 1e-5), cs = ramp(1000, 0, 0.01);
  std::vector<double> want(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    float v = float(xs[i]);
    want[i] = double(v * v - v * float(cs[i % 1000]));
  }
  auto one = c.run({xs, cs}, 1), two = c.run({xs, cs}, 2);
  check_close(one[0], want, 1e-6, 1e-6);
  check_exact(two[0], one[0]);
}
