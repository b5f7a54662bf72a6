// cpu::Program as a whole: the static memory plan (arena reuse, aliasing of
// reshape, outputs written in place), the plan's corner cases (an output
// that is an input, a node output twice, dead nodes), the lowering report,
// errors at compile and run time, HostTensor conversions; and, hidden under
// [.cpu-bench], rough timings.
#include <chrono>
#include <nlohmann/json.hpp>

#include "plan/memory_plan.h"
#include "test_cpu_util.h"

using namespace cpu_test;

TEST_CASE("cpu: plan_arena reuses freed ranges best-fit", "[cpu]") {
  using cpu::BufferLife;
  // a [0,1] 100B, b [1,2] 200B, c [2,3] 64B (fits a's freed 128), d [3,3] 256B.
  std::vector<BufferLife> lives = {{0, 1, 100}, {1, 2, 200}, {2, 3, 64}, {3, 3, 256}};
  cpu::ArenaLayout l = cpu::plan_arena(lives);
  CHECK(l.offsets[0] == 0);
  CHECK(l.offsets[1] == 128);  // 64-byte aligned after a's 100 bytes
  CHECK(l.offsets[2] == 0);    // a's range, free since step 1
  // d: a's remaining 64 bytes and b's 256 are free and adjacent: coalesced.
  CHECK(l.offsets[3] == 64);
  CHECK(l.bytes == 384);
}

TEST_CASE("cpu: a chain of 10 elementwise ops needs two buffers", "[cpu]") {
  const int64_t n = 1000;
  Case c;
  NodeId x = c.input(DType::F32, {n});
  NodeId v = x;
  for (int i = 0; i < 10; ++i) v = c.add(i % 2 ? Op::Neg : Op::Exp, {v});
  NodeId r = c.add(Op::Reshape, {v}, [] {
    ir::Attrs a;
    a.shape = dims({10, 100});
    return a;
  }());
  c.output(c.add(Op::Sum, {r}));
  auto p = c.compile();
  CHECK(p->arena_bytes() == 2 * 4000 + 2 * 32);  // two 4000-byte buffers, each padded to 4032
  auto out = c.run({std::vector<double>(size_t(n), 0.0)});
  // exp(0)=1, neg: -1, exp: e^-1, ... computed the same way in f32.
  float y = 0;
  for (int i = 0; i < 10; ++i) y = i % 2 ? -y : std::exp(y);
  CHECK(out[0][0] == float(y * 1000.0f));
}

TEST_CASE("cpu: outputs are written in place, inputs and repeats are copied", "[cpu]") {
  Case c;
  NodeId x = c.input(DType::F32, {3});
  NodeId y = c.add(Op::Add, {x, x});
  NodeId dead = c.add(Op::Exp, {x});  // reaches no output: never planned
  (void)dead;
  ir::Attrs r;
  r.shape = dims({1, 3});
  NodeId ry = c.add(Op::Reshape, {y}, r);
  c.output(y, "y");
  c.output(x, "x");    // an input as an output
  c.output(y, "y2");   // the same node twice
  c.output(ry, "ry");  // a reshape that is an output gets its own copy
  auto p = c.compile();
  CHECK(p->arena_bytes() == 0);
  nlohmann::json report = nlohmann::json::parse(p->report_json());
  CHECK(report["device"] == "cpu");
  CHECK(report["arena_bytes"] == 0);
  std::vector<std::string> kernels;
  for (const auto& s : report["steps"]) kernels.push_back(s["kernel"]);
  CHECK(kernels == std::vector<std::string>{"add<f32> flat", "copy", "copy", "copy"});
  CHECK(report["steps"][0]["out"]["in"] == "output");
  auto out = c.run({{1, 2, 3}});
  check_exact(out[0], {2, 4, 6});
  check_exact(out[1], {1, 2, 3});
  check_exact(out[2], {2, 4, 6});
  check_exact(out[3], {2, 4, 6});
}

TEST_CASE("cpu: reshape reads its operand in place", "[cpu]") {
  Case c;
  NodeId x = c.input(DType::F32, {2, 3});
  NodeId e = c.add(Op::Exp, {x});
  ir::Attrs r;
  r.shape = dims({3, 2});
  NodeId re = c.add(Op::Reshape, {e}, r);
  NodeId sg = c.add(Op::StopGradient, {re});
  c.output(c.add(Op::MatMul, {sg, x}));
  auto p = c.compile();
  CHECK(p->arena_bytes() == 64);  // exp's 24 bytes; reshape and stop_gradient add nothing
  nlohmann::json report = nlohmann::json::parse(p->report_json());
  CHECK(report["steps"].size() == 2);  // exp, matmul
}

TEST_CASE("cpu: compile and run errors name what went wrong", "[cpu]") {
  Case c;
  NodeId x = c.input(DType::F32, {2});
  c.output(c.add(Op::Neg, {x}));
  auto missing = cpu::Program::compile(c.module, "g");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error() == "no function 'g' in the module");

  auto p = c.compile();
  std::vector<cpu::HostTensor> wrong = {cpu::HostTensor::zeros({DType::F64, shape({2})})};
  auto r = p->run(wrong);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() == "input 0 of 'f' is f32[2], given f64[2]");
  CHECK_FALSE(p->run(std::span<const cpu::HostTensor>()).ok());

  // A function the verifier rejects (an output naming no node).
  c.fn->outputs.push_back({"bad", 99});
  CHECK_FALSE(cpu::Program::compile(c.module, "f").ok());
}

TEST_CASE("cpu: HostTensor converts doubles to every dtype and back", "[cpu]") {
  std::vector<double> v = {1.5, -2.0, 300.25};
  const std::pair<DType, std::vector<double>> cases[] = {
      {DType::F32, {1.5, -2.0, 300.25}}, {DType::F64, {1.5, -2.0, 300.25}},
      {DType::BF16, {1.5, -2.0, 300.0}}, {DType::F16, {1.5, -2.0, 300.25}},
      {DType::I32, {1, -2, 300}},        {DType::I64, {1, -2, 300}},
      {DType::U8, {1, 0, 255}},          {DType::U16, {1, 0, 300}},
      {DType::Bool, {1, 1, 1}}};
  for (const auto& [d, want] : cases) {
    INFO(ir::ir_name(d));
    cpu::HostTensor t = cpu::HostTensor::from_doubles({d, shape({3})}, v);
    CHECK(t.bytes.size() == 3 * ir::size_bytes(d));
    check_exact(t.to_doubles(), want);
  }
}

TEST_CASE("cpu: rough timings", "[.cpu-bench]") {
  using Clock = std::chrono::steady_clock;
  auto time_ms = [](cpu::Program& p, std::vector<cpu::HostTensor>& in, int reps) {
    (void)p.run(in);  // warm up
    auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) (void)p.run(in);
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / reps;
  };
  {
    Case c;
    NodeId x = c.input(DType::F32, {128, 784});
    NodeId w = c.input(DType::F32, {784, 256});
    c.output(c.add(Op::Relu, {c.add(Op::MatMul, {x, w})}));
    auto p = c.compile();
    std::vector<cpu::HostTensor> in = {
        cpu::HostTensor::from_doubles(c.input_types[0], std::vector<double>(128 * 784, 0.01)),
        cpu::HostTensor::from_doubles(c.input_types[1], std::vector<double>(784 * 256, 0.02))};
    WARN("128x784 @ 784x256 f32 matmul + relu: " << time_ms(*p, in, 50) << " ms");
  }
  {
    const int64_t n = 1 << 20;
    Case c;
    NodeId x = c.input(DType::F32, {n});
    NodeId v = x;
    for (int i = 0; i < 10; ++i) v = c.add(i % 2 ? Op::Mul : Op::Add, {v, x});
    c.output(v);
    auto p = c.compile();
    std::vector<cpu::HostTensor> in = {
        cpu::HostTensor::from_doubles(c.input_types[0], std::vector<double>(size_t(n), 0.5))};
    WARN("10-op elementwise chain on 1M f32: " << time_ms(*p, in, 20) << " ms");
  }
}
