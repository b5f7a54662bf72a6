// The CPU device's fast paths, each checked against known values and for
// being taken (the lowering report): a permute of the last two axes folded
// into matmul as a gemm transpose flag, where with same-shape and scalar
// operands, sums over leading axes, and the vectorised f32 exp, gelu and
// softmax (against libm in f64). Expected matmul and reduction values from
// NumPy.
#include <nlohmann/json.hpp>

#include "test_cpu_util.h"

using namespace cpu_test;

namespace {
// ((i * step) mod 7 - 3) / 2: small exact numbers.
std::vector<double> pattern(size_t n, int step) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = double(int64_t(i) * step % 7 - 3) / 2.0;
  return v;
}

ir::Attrs permute_axes(std::initializer_list<int64_t> axes) {
  ir::Attrs a;
  a.axes = dims(axes);
  return a;
}

std::vector<std::string> kernel_names(const cpu::Program& p) {
  std::vector<std::string> names;
  nlohmann::json report = nlohmann::json::parse(p.report_json());
  for (const auto& s : report["steps"]) names.push_back(s["kernel"].get<std::string>());
  return names;
}

bool any_contains(const std::vector<std::string>& names, const std::string& part) {
  for (const std::string& n : names)
    if (n.find(part) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST_CASE("cpu: a permute of the last two axes folds into matmul", "[cpu]") {
  Case c;
  NodeId a = c.input(DType::F32, {2, 3});
  NodeId b = c.input(DType::F32, {2, 2});
  NodeId x = c.input(DType::F32, {2, 3, 4});
  NodeId y = c.input(DType::F32, {2, 3, 4});
  NodeId w = c.input(DType::F32, {3, 4});
  c.output(c.add(Op::MatMul, {c.add(Op::Permute, {a}, permute_axes({1, 0})), b}));
  c.output(c.add(Op::MatMul, {c.add(Op::Permute, {x}, permute_axes({0, 2, 1})), y}));
  c.output(c.add(Op::MatMul, {x, c.add(Op::Permute, {w}, permute_axes({-1, -2}))}));
  auto p = c.compile();
  std::vector<std::string> names = kernel_names(*p);
  CHECK(names.size() == 3);  // the three matmuls: no permute copies
  CHECK(any_contains(names, "a^T"));
  CHECK(any_contains(names, "folded b^T"));
  auto out = c.run({pattern(6, 5), pattern(4, 3), pattern(24, 5), pattern(24, 3), pattern(12, 2)});
  check_close(out[0], {0.75, 0.5, 0.75, -0.75, 0.75, -0.25});
  check_close(out[1], {3.75,  0.0,   -2.0, -0.5, -1.0, -0.5,  1.75,  -1.25, -0.5,  -1.0,  0.25,
                       -0.25, 0.0,   3.75, -3.0, 4.25, -0.75, 1.0,   -0.75, -0.75, -1.75, 2.5,
                       -0.25, -1.25, 4.25, -3.0, 3.75, 0.0,   -0.25, 0.25,  -1.0,  -0.5});
  check_close(out[2], {0.25, 3.0, 2.25, -5.0, 0.25, 0.25, 0.25, -4.25, -3.5, 0.25, -3.5, -3.75, 2.0,
                       0.75, 1.25, 2.0, 1.5, 1.0});
}

TEST_CASE("cpu: a permute read by more than matmul is still computed", "[cpu]") {
  Case c;
  NodeId a = c.input(DType::F32, {2, 3});
  NodeId at = c.add(Op::Permute, {a}, permute_axes({1, 0}));
  c.output(c.add(Op::MatMul, {at, c.input(DType::F32, {2, 2})}));
  c.output(c.add(Op::Neg, {at}));
  auto out = c.run({pattern(6, 5), pattern(4, 3)});
  check_close(out[0], {0.75, 0.5, 0.75, -0.75, 0.75, -0.25});
  // a = [[-1.5, 1, 0], [-1, 1.5, 0.5]]: -a^T row by row.
  check_close(out[1], {1.5, 1.0, -1.0, -1.5, 0.0, -0.5});
}

TEST_CASE("cpu: where with same-shape, scalar and broadcast operands", "[cpu]") {
  Case c;
  NodeId cond = c.input(DType::Bool, {2, 3});
  NodeId x = c.input(DType::F32, {2, 3});
  NodeId zero = c.input(DType::F32, {});
  NodeId row = c.input(DType::F32, {3});
  c.output(c.add(Op::Where, {cond, x, zero}));  // relu's gradient
  c.output(c.add(Op::Where, {cond, zero, x}));
  c.output(c.add(Op::Where, {cond, x, row}));
  c.output(c.add(Op::Clamp, {x, zero, row}));
  auto out = c.run({{1, 0, 1, 0, 0, 1}, {1, -2, 3, -4, 5, -6}, {0}, {10, 20, 30}});
  check_exact(out[0], {1, 0, 3, 0, 0, -6});
  check_exact(out[1], {0, -2, 0, -4, 5, 0});
  check_exact(out[2], {1, 20, 3, 10, 20, -6});
  check_exact(out[3], {1, 0, 3, 0, 5, 0});
}

TEST_CASE("cpu: sums and means over leading axes walk whole rows", "[cpu]") {
  Case c;
  NodeId x = c.input(DType::F32, {3, 2, 4});
  ir::Attrs lead;
  lead.axes = dims({0, 1});
  ir::Attrs first;
  first.axes = dims({0});
  c.output(c.add(Op::Sum, {x}, lead));
  c.output(c.add(Op::Mean, {x}, first));
  NodeId big = c.input(DType::F32, {600, 300});  // wider than one accumulator tile
  c.output(c.add(Op::Sum, {big}, first));
  std::vector<double> ones(600 * 300);
  for (size_t i = 0; i < ones.size(); ++i) ones[i] = double(i % 300);
  auto out = c.run({pattern(24, 5), ones});
  check_close(out[0], {1.0, -1.5, -0.5, 0.5});
  check_close(out[1], {-1.0 / 6, 0.0, 1.0 / 6, 1.0 / 3, 0.5, -0.5, -1.0 / 3, -1.0 / 6});
  std::vector<double> want(300);
  for (size_t j = 0; j < 300; ++j) want[j] = 600.0 * double(j);
  check_close(out[2], want);
}

TEST_CASE("cpu: vectorised f32 exp, gelu and softmax match libm", "[cpu]") {
  std::vector<double> xs;
  for (int i = -400; i <= 400; ++i) xs.push_back(i * 0.237);
  for (double v : {-87.5, -88.0, -100.0, -104.0, 87.5, 88.7, 89.0, 1e-30, -0.0}) xs.push_back(v);
  xs.push_back(INFINITY);
  xs.push_back(-INFINITY);
  xs.push_back(NAN);
  int64_t n = int64_t(xs.size());
  Case c;
  NodeId x = c.input(DType::F32, {n});
  c.output(c.add(Op::Exp, {x}));
  c.output(c.add(Op::Gelu, {x}));
  auto out = c.run({xs});
  std::vector<double> exp_want, gelu_want;
  for (double v : xs) {
    float f = float(v);  // the input as the kernel sees it
    // Rounded to f32 as the output is (which matters for denormals).
    exp_want.push_back(float(std::exp(double(f))));
    gelu_want.push_back(float(0.5 * double(f) * std::erfc(-double(f) / std::sqrt(2.0))));
  }
  // exp: libm's results where the polynomial does not hold (denormals, inf).
  check_close(out[0], exp_want, 1e-6, 0);
  // gelu: within 2e-6 relative down to x = -5; further left, where the
  // f32 erf form 0.5 x (1 + erf) has cancelled to 0 long before, the
  // rounding of x^2 inside exp(-x^2 / 2) costs up to ~1e-5.
  check_close(out[1], gelu_want, 2e-5, 1e-30);
  for (size_t i = 0; i < xs.size(); ++i)
    if (xs[i] > -5 && std::isfinite(xs[i])) check_close({out[1][i]}, {gelu_want[i]}, 2e-6, 1e-30);

  // A long softmax row with large values and masked (-inf) entries, and an
  // all -inf row (0 / 0).
  Case s;
  NodeId rows = s.input(DType::F32, {2, 100});
  ir::Attrs last;
  last.axis = -1;
  s.output(s.add(Op::Softmax, {rows}, last));
  std::vector<double> in(200, -INFINITY), want(200, NAN);
  for (int k = 0; k < 60; ++k) in[size_t(k)] = 80.0 + 0.37 * k;
  double total = 0;
  for (int k = 0; k < 60; ++k)
    total += std::exp(double(float(in[size_t(k)])) - double(float(in[59])));
  for (int k = 0; k < 100; ++k)
    want[size_t(k)] =
        k < 60 ? std::exp(double(float(in[size_t(k)])) - double(float(in[59]))) / total : 0.0;
  check_close(s.run({in})[0], want, 2e-6, 1e-12);
}
