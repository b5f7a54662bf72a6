// The CPU device's shape, creation and random kernels: reshape, permute,
// expand, concat, slice, take (and its range error), index_add, pad, flip;
// full, constant, arange; normal, uniform, bernoulli against philox.h's
// element mapping. Expected values from NumPy.
#include <numeric>

#include "ir/philox.h"
#include "test_cpu_util.h"

using namespace cpu_test;

namespace {
std::vector<double> iota(size_t n, double scale = 1.0) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = double(i) * scale;
  return v;
}
}  // namespace

TEST_CASE("cpu: reshape, permute, expand, flip", "[cpu]") {
  Case c;
  NodeId x = c.input(DType::F32, {2, 3, 4});
  ir::Attrs r;
  r.shape = dims({4, 6});
  c.output(c.add(Op::Reshape, {x}, r));
  ir::Attrs p;
  p.axes = dims({2, 0, 1});
  c.output(c.add(Op::Permute, {x}, p));
  ir::Attrs pn;
  pn.axes = dims({-1, -3, -2});
  c.output(c.add(Op::Permute, {x}, pn));
  ir::Attrs f;
  f.axes = dims({0, 2});
  c.output(c.add(Op::Flip, {x}, f));
  NodeId e = c.input(DType::I64, {3, 1});
  ir::Attrs ex;
  ex.shape = dims({2, 3, 4});
  c.output(c.add(Op::Expand, {e}, ex));
  auto out = c.run({iota(24), {10, 20, 30}});
  check_exact(out[0], iota(24));
  std::vector<double> perm = {0, 4, 8,  12, 16, 20, 1, 5, 9,  13, 17, 21,
                              2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23};
  check_exact(out[1], perm);
  check_exact(out[2], perm);
  check_exact(out[3], {15, 14, 13, 12, 19, 18, 17, 16, 23, 22, 21, 20,
                       3,  2,  1,  0,  7,  6,  5,  4,  11, 10, 9,  8});
  check_exact(out[4], {10, 10, 10, 10, 20, 20, 20, 20, 30, 30, 30, 30,
                       10, 10, 10, 10, 20, 20, 20, 20, 30, 30, 30, 30});
}

TEST_CASE("cpu: concat, slice, pad", "[cpu]") {
  Case c;
  NodeId a = c.input(DType::I32, {2, 2});
  NodeId b = c.input(DType::I32, {2, 1});
  ir::Attrs cat;
  cat.axis = 1;
  c.output(c.add(Op::Concat, {a, b, a}, cat));
  NodeId y = c.input(DType::F64, {4, 5});
  ir::Attrs s;
  s.starts = dims({1, 0});
  s.ends = dims({4, 5});
  s.steps = dims({2, 2});
  c.output(c.add(Op::Slice, {y}, s));
  ir::Attrs p;
  p.pads = dims({1, 0, 0, 2});
  p.value = -1.0;
  c.output(c.add(Op::Pad, {a}, p));
  auto out = c.run({{1, 2, 3, 4}, {5, 6}, iota(20)});
  check_exact(out[0], {1, 2, 5, 1, 2, 3, 4, 6, 3, 4});
  check_exact(out[1], {5, 7, 9, 15, 17, 19});
  check_exact(out[2], {-1, -1, -1, -1, 1, 2, -1, -1, 3, 4, -1, -1});
}

TEST_CASE("cpu: take, index_add, and an id out of range", "[cpu]") {
  Case c;
  NodeId t = c.input(DType::F32, {3, 2});
  NodeId ids = c.input(DType::I32, {2, 2});
  NodeId cols = c.input(DType::I64, {3});
  ir::Attrs ax0;
  ax0.axis = 0;
  c.output(c.add(Op::Take, {t, ids}, ax0));
  ir::Attrs ax1;
  ax1.axis = -1;
  c.output(c.add(Op::Take, {t, cols}, ax1));
  NodeId g = c.input(DType::F32, {2, 2, 2});
  ir::Attrs ia;
  ia.axis = 0;
  ia.shape = dims({3, 2});
  c.output(c.add(Op::IndexAdd, {g, ids}, ia));
  std::vector<double> table = iota(6, 1.5), gv = {1, 2, 3, 4, 5, 6, 7, 8};
  auto out = c.run({table, {2, 0, 1, 1}, {1, 0, 1}, gv});
  check_exact(out[0], {6, 7.5, 0, 1.5, 3, 4.5, 3, 4.5});
  check_exact(out[1], {1.5, 0, 1.5, 4.5, 3, 4.5, 7.5, 6, 7.5});
  check_exact(out[2], {3, 4, 12, 14, 1, 2});

  std::string e = c.run_error({table, {2, 3, 1, 1}, {1, 0, 1}, gv});
  CHECK(e.find("id 3 (position 1) is out of range for axis 0 of size 3") != std::string::npos);
  CHECK(e.find("take") != std::string::npos);
}

TEST_CASE("cpu: full, constant, arange", "[cpu]") {
  Case c;
  NodeId x = c.input(DType::F32, {3});
  c.output(c.add(Op::Add, {x, c.b->full(shape({3}), 0.5, DType::F32)}));
  ir::Attrs k;
  k.shape = dims({2, 2});
  k.dtype = DType::BF16;
  k.data = std::vector<double>{1.0, 3.14159, -2.5, 1000.7};
  c.output(c.add(Op::Constant, {}, k));
  ir::Attrs r;
  r.shape = dims({5});
  r.dtype = DType::I32;
  r.start = 3;
  r.step = -2;
  c.output(c.add(Op::Arange, {}, r));
  ir::Attrs rf;
  rf.shape = dims({4});
  rf.dtype = DType::F32;
  rf.start = 0.5;
  rf.step = 0.25;
  c.output(c.add(Op::Arange, {}, rf));
  auto out = c.run({{1, 2, 3}});
  check_exact(out[0], {1.5, 2.5, 3.5});
  check_exact(out[1], {1.0, 3.140625, -2.5, 1000.0});  // rounded to bf16
  check_exact(out[2], {3, 1, -1, -3, -5});
  check_exact(out[3], {0.5, 0.75, 1.0, 1.25});
}

TEST_CASE("cpu: random draws follow philox.h's element mapping", "[cpu]") {
  const int64_t n = 4096;
  const uint64_t seed = 1234, step = 7, stream = 99;
  Case c;
  NodeId rng = c.input(DType::I64, {3});
  ir::Attrs u;
  u.shape = dims({n});
  u.dtype = DType::F32;
  u.stream = int64_t(stream);
  u.low = -1.0;
  u.high = 3.0;
  c.output(c.add(Op::RandomUniform, {rng}, u));
  ir::Attrs nrm = u;
  nrm.low.reset();
  nrm.high.reset();
  nrm.mean = 1.0;
  nrm.stddev = 2.0;
  c.output(c.add(Op::RandomNormal, {rng}, nrm));
  ir::Attrs ber;
  ber.shape = dims({n});
  ber.dtype = DType::U8;
  ber.stream = int64_t(stream);
  ber.p = 0.25;
  c.output(c.add(Op::RandomBernoulli, {rng}, ber));
  ir::Attrs ub = u;
  ub.dtype = DType::BF16;
  ub.low = 0.0;
  ub.high = 1.0;
  c.output(c.add(Op::RandomUniform, {rng}, ub));
  auto out = c.run({{double(seed), double(step), 0}});

  stage::RngStream s = *stage::make_rng_stream(seed, stream, step, 0);
  double sum_normal = 0, ones = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t k = uint64_t(i);
    if (out[0][size_t(i)] != double(-1.0f + 4.0f * stage::rng_uniform_f32(s, k)))
      FAIL("uniform element " << i);
    if (out[1][size_t(i)] != double(1.0f + 2.0f * stage::rng_normal_f32(s, k)))
      FAIL("normal element " << i);
    if (out[2][size_t(i)] != (stage::rng_uniform_f32(s, k) < 0.25f ? 1.0 : 0.0))
      FAIL("bernoulli element " << i);
    if (out[3][size_t(i)] != double(stage::rng_uniform_f32(s, k, stage::kUniformBitsBF16)))
      FAIL("bf16 uniform element " << i);
    sum_normal += out[1][size_t(i)];
    ones += out[2][size_t(i)];
  }
  CHECK(std::fabs(sum_normal / n - 1.0) < 0.1);
  CHECK(std::fabs(ones / n - 0.25) < 0.03);

  // Another step draws other numbers; the same state the same ones.
  auto again = c.run({{double(seed), double(step), 0}});
  CHECK(again[0] == out[0]);
  auto next = c.run({{double(seed), double(step + 1), 0}});
  CHECK(next[0] != out[0]);
}
