// The CPU device's elementwise kernels: every unary, binary, comparison and
// three-operand op, broadcasting, cast, and the dtypes (f64, bf16/f16
// rounding, integer wrapping, bool arithmetic, promotion). Expected values
// from NumPy (float32 where the op is f32).
#include <limits>
#include <utility>

#include "test_cpu_util.h"

using namespace cpu_test;

namespace {
const std::vector<double> kX = {-2.5, -1, -0.5, 0, 0.5, 1.5, 2.5, 3};

std::vector<double> unary_f32(Op op, ir::Attrs attrs = {}) {
  Case c;
  NodeId x = c.input(DType::F32, {8});
  c.output(c.add(op, {x}, std::move(attrs)));
  return c.run({kX})[0];
}

std::vector<double> binary_f32(Op op) {
  Case c;
  NodeId a = c.input(DType::F32, {2, 3});
  NodeId b = c.input(DType::F32, {3});
  c.output(c.add(op, {a, b}));
  return c.run({{1.5, -2, 3, 0.5, 4, -1}, {2, -0.5, 3}})[0];
}
}  // namespace

TEST_CASE("cpu: every unary op in f32", "[cpu]") {
  const std::pair<Op, std::vector<double>> cases[] = {
      {Op::Neg, {2.5, 1.0, 0.5, -0.0, -0.5, -1.5, -2.5, -3.0}},
      {Op::Abs, {2.5, 1.0, 0.5, 0.0, 0.5, 1.5, 2.5, 3.0}},
      {Op::Square, {6.25, 1.0, 0.25, 0.0, 0.25, 2.25, 6.25, 9.0}},
      {Op::Sign, {-1.0, -1.0, -1.0, 0.0, 1.0, 1.0, 1.0, 1.0}},
      {Op::Relu, {0.0, 0.0, 0.0, 0.0, 0.5, 1.5, 2.5, 3.0}},
      {Op::Floor, {-3.0, -1.0, -1.0, 0.0, 0.0, 1.0, 2.0, 3.0}},
      {Op::Ceil, {-2.0, -1.0, -0.0, 0.0, 1.0, 2.0, 3.0, 3.0}},
      {Op::Round, {-2.0, -1.0, -0.0, 0.0, 0.0, 2.0, 2.0, 3.0}},
      {Op::Exp,
       {0.08208499848842621, 0.3678794503211975, 0.6065306663513184, 1.0, 1.6487212181091309,
        4.481688976287842, 12.182494163513184, 20.08553695678711}},
      {Op::Log,
       {NAN, NAN, NAN, -INFINITY, -0.6931471824645996, 0.40546509623527527, 0.9162907600402832,
        1.0986123085021973}},
      {Op::Log1p,
       {NAN, -INFINITY, -0.6931471824645996, 0.0, 0.40546509623527527, 0.9162907600402832,
        1.2527629137039185, 1.3862943649291992}},
      {Op::Expm1,
       {-0.9179149866104126, -0.6321205496788025, -0.39346933364868164, 0.0, 0.6487212777137756,
        3.481688976287842, 11.182494163513184, 19.08553695678711}},
      {Op::Sqrt,
       {NAN, NAN, NAN, 0.0, 0.7071067690849304, 1.2247449159622192, 1.5811388492584229,
        1.7320507764816284}},
      {Op::Rsqrt,
       {NAN, NAN, NAN, INFINITY, 1.4142135381698608, 0.8164966106414795, 0.6324555277824402,
        0.5773502588272095}},
      {Op::Sin,
       {-0.5984721183776855, -0.8414709568023682, -0.4794255495071411, 0.0, 0.4794255495071411,
        0.9974949955940247, 0.5984721183776855, 0.14112000167369843}},
      {Op::Cos,
       {-0.8011435866355896, 0.5403022766113281, 0.8775825500488281, 1.0, 0.8775825500488281,
        0.07073719799518585, -0.8011435866355896, -0.9899924993515015}},
      {Op::Tanh,
       {-0.9866142868995667, -0.7615941762924194, -0.46211716532707214, 0.0, 0.46211716532707214,
        0.9051482677459717, 0.9866142868995667, 0.9950547814369202}},
      {Op::Sigmoid,
       {0.07585818320512772, 0.2689414322376251, 0.3775406777858734, 0.5, 0.622459352016449,
        0.8175745010375977, 0.9241418242454529, 0.9525741338729858}},
      {Op::Gelu,
       {-0.015524162910878658, -0.15865525603294373, -0.1542687714099884, 0.0, 0.3457312285900116,
        1.3997892141342163, 2.48447585105896, 2.995950222015381}},
      {Op::Silu,
       {-0.189645454287529, -0.2689414322376251, -0.1887703388929367, 0.0, 0.3112296760082245,
        1.2263617515563965, 2.310354471206665, 2.857722282409668}},
      {Op::Softplus,
       {0.07888973504304886, 0.3132616877555847, 0.4740769863128662, 0.6931471824645996,
        0.9740769863128662, 1.7014132738113403, 2.578889846801758, 3.0485873222351074}},
      {Op::Reciprocal,
       {-0.4000000059604645, -1.0, -2.0, INFINITY, 2.0, 0.6666666865348816, 0.4000000059604645,
        0.3333333432674408}},
      {Op::StopGradient, kX},
  };
  for (const auto& [op, want] : cases) {
    INFO(ir::info(op).ir_name);
    check_close(unary_f32(op), want, 2e-6, 1e-7);
  }
  check_close(unary_f32(Op::GeluTanh),
              {-0.015084265731275082, -0.15880800783634186, -0.1542859971523285, 0.0,
               0.3457140028476715, 1.3995715379714966, 2.4849157333374023, 2.9963626861572266},
              2e-6, 1e-7);
}

TEST_CASE("cpu: predicates give bool", "[cpu]") {
  Case c;
  NodeId x = c.input(DType::F32, {4});
  NodeId fin = c.add(Op::IsFinite, {x});
  NodeId no = c.add(Op::LogicalNot, {x});
  c.output(fin);
  c.output(no);
  CHECK(c.type(fin).dtype == DType::Bool);
  double inf = std::numeric_limits<double>::infinity();
  auto out = c.run({{1.0, inf, NAN, 0.0}});
  check_exact(out[0], {1, 0, 0, 1});
  check_exact(out[1], {0, 0, 0, 1});
}

TEST_CASE("cpu: every binary op and comparison, broadcast [2,3] with [3]", "[cpu]") {
  const std::pair<Op, std::vector<double>> cases[] = {
      {Op::Add, {3.5, -2.5, 6.0, 2.5, 3.5, 2.0}},
      {Op::Sub, {-0.5, -1.5, 0.0, -1.5, 4.5, -4.0}},
      {Op::Mul, {3.0, 1.0, 9.0, 1.0, -2.0, -3.0}},
      {Op::Div, {0.75, 4.0, 1.0, 0.25, -8.0, -0.3333333432674408}},
      {Op::Maximum, {2.0, -0.5, 3.0, 2.0, 4.0, 3.0}},
      {Op::Minimum, {1.5, -2.0, 3.0, 0.5, -0.5, -1.0}},
      {Op::Atan2,
       {0.6435011625289917, -1.8157750368118286, 0.7853981256484985, 0.24497868120670319,
        1.6951513290405273, -0.32175058126449585}},
      {Op::Mod, {1.5, -0.0, 0.0, 0.5, -0.0, 2.0}},
      {Op::Lt, {1.0, 1.0, 0.0, 1.0, 0.0, 1.0}},
      {Op::Le, {1.0, 1.0, 1.0, 1.0, 0.0, 1.0}},
      {Op::Gt, {0.0, 0.0, 0.0, 0.0, 1.0, 0.0}},
      {Op::Ge, {0.0, 0.0, 1.0, 0.0, 1.0, 0.0}},
      {Op::Eq, {0.0, 0.0, 1.0, 0.0, 0.0, 0.0}},
      {Op::Ne, {1.0, 1.0, 0.0, 1.0, 1.0, 1.0}},
      {Op::LogicalAnd, {1, 1, 1, 1, 1, 1}},
      {Op::LogicalOr, {1, 1, 1, 1, 1, 1}},
  };
  for (const auto& [op, want] : cases) {
    INFO(ir::info(op).ir_name);
    check_close(binary_f32(op), want, 1e-6, 0);
  }
  // pow of |a| (NumPy: np.power(np.abs(a), b) in float32)
  Case c;
  NodeId a = c.input(DType::F32, {2, 3});
  NodeId b = c.input(DType::F32, {3});
  c.output(c.add(Op::Pow, {c.add(Op::Abs, {a}), b}));
  check_close(c.run({{1.5, -2, 3, 0.5, 4, -1}, {2, -0.5, 3}})[0],
              {2.25, 0.7071067690849304, 27.0, 0.25, 0.5, 1.0}, 1e-6, 0);
}

TEST_CASE("cpu: broadcasting in both directions and with scalars", "[cpu]") {
  Case c;
  NodeId col = c.input(DType::F32, {3, 1});
  NodeId row = c.input(DType::F32, {1, 4});
  NodeId s = c.input(DType::F32, {});
  NodeId outer = c.add(Op::Mul, {col, row});  // [3,4]
  c.output(c.add(Op::Sub, {outer, s}));       // tensor - scalar
  c.output(c.add(Op::Sub, {s, outer}));       // scalar - tensor
  auto out = c.run({{1, 2, 3}, {1, 10, 100, 1000}, {0.5}});
  check_exact(out[0], {0.5, 9.5, 99.5, 999.5, 1.5, 19.5, 199.5, 1999.5, 2.5, 29.5, 299.5, 2999.5});
  check_exact(out[1], {-0.5, -9.5, -99.5, -999.5, -1.5, -19.5, -199.5, -1999.5, -2.5, -29.5, -299.5,
                       -2999.5});

  // A middle axis stretched: [2,1,3] + [2,4,1] -> [2,4,3].
  Case d;
  NodeId p = d.input(DType::I32, {2, 1, 3});
  NodeId q = d.input(DType::I32, {2, 4, 1});
  d.output(d.add(Op::Add, {p, q}));
  auto sum = d.run({{0, 1, 2, 3, 4, 5}, {0, 10, 20, 30, 40, 50, 60, 70}})[0];
  check_exact(sum, {0,  1,  2,  10, 11, 12, 20, 21, 22, 30, 31, 32,
                    43, 44, 45, 53, 54, 55, 63, 64, 65, 73, 74, 75});
}

TEST_CASE("cpu: where and clamp", "[cpu]") {
  Case c;
  NodeId cond = c.input(DType::Bool, {2, 2});
  NodeId a = c.input(DType::F32, {2, 2});
  NodeId b = c.input(DType::I32, {});  // promoted to f32, broadcast
  c.output(c.add(Op::Where, {cond, a, b}));
  NodeId lo = c.input(DType::F32, {2});
  NodeId hi = c.input(DType::F32, {});
  c.output(c.add(Op::Clamp, {a, lo, hi}));
  auto out = c.run({{1, 0, 0, 1}, {1.5, -2, 7, NAN}, {9}, {0, -1}, {5}});
  check_close(out[0], {1.5, 9, 9, NAN});
  check_close(out[1], {1.5, -1, 5, NAN});
}

TEST_CASE("cpu: cast between dtypes", "[cpu]") {
  Case c;
  NodeId x = c.input(DType::F32, {6});
  for (DType d : {DType::I32, DType::U8, DType::Bool, DType::BF16, DType::F64, DType::I64}) {
    ir::Attrs a;
    a.dtype = d;
    c.output(c.add(Op::Cast, {x}, a));
  }
  auto out = c.run({{-2.7, -0.5, 0.0, 1.9, 300.0, 3.14159265}});
  check_exact(out[0], {-2, 0, 0, 1, 300, 3});  // truncation toward zero
  check_exact(out[1], {0, 0, 0, 1, 255, 3});   // saturating at u8's range
  check_exact(out[2], {1, 1, 0, 1, 1, 1});     // x != 0
  check_exact(out[3], {-2.703125, -0.5, 0, 1.8984375, 300, 3.140625});
  check_close(out[4], {-2.7, -0.5, 0.0, 1.9, 300.0, 3.14159265}, 1e-7, 0);
  check_exact(out[5], {-2, 0, 0, 1, 300, 3});

  // i32 -> u8 wraps; bool -> f32 is 0/1.
  Case w;
  NodeId i = w.input(DType::I32, {3});
  ir::Attrs u8;
  u8.dtype = DType::U8;
  w.output(w.add(Op::Cast, {i}, u8));
  check_exact(w.run({{257, -1, 128}})[0], {1, 255, 128});
}

TEST_CASE("cpu: bf16 and f16 compute in f32 and round at the output", "[cpu]") {
  for (DType d : {DType::BF16, DType::F16}) {
    Case c;
    NodeId a = c.input(d, {6});
    NodeId b = c.input(d, {6});
    NodeId sum = c.add(Op::Add, {a, b});
    CHECK(c.type(sum).dtype == d);
    c.output(sum);
    c.output(a);  // the input as stored: rounded once from the double
    auto out = c.run({{1.0, 1.00390625, 1.01171875, 3.14159265, 100.3, -0.33333},
                      {1.0, 0.00390625, 0.0078125, 1.0, 0.5, 0.001}});
    if (d == DType::BF16) {
      check_exact(out[1], {1.0, 1.0, 1.015625, 3.140625, 100.5, -0.333984375});
      check_exact(out[0], {2.0, 1.0, 1.0234375, 4.125, 101.0, -0.33203125});
    } else {
      check_exact(out[1], {1.0, 1.00390625, 1.01171875, 3.140625, 100.3125, -0.333251953125});
      check_exact(out[0], {2.0, 1.0078125, 1.01953125, 4.140625, 100.8125, -0.332275390625});
    }
  }
}

TEST_CASE("cpu: f64 keeps double precision", "[cpu]") {
  Case c;
  NodeId x = c.input(DType::F64, {2});
  c.output(c.add(Op::Add, {x, c.b->scalar(1e-12, DType::F64)}));
  c.output(c.add(Op::Exp, {x}));
  auto out = c.run({{1.0, 0.1}});
  CHECK(out[0][0] == 1.0 + 1e-12);
  CHECK(out[0][1] == 0.1 + 1e-12);
  CHECK(out[1][1] == std::exp(0.1));
}

TEST_CASE("cpu: integers wrap, divide to floats, pow and mod exactly", "[cpu]") {
  Case c;
  NodeId a = c.input(DType::I32, {4});
  NodeId b = c.input(DType::I32, {4});
  c.output(c.add(Op::Add, {a, b}));
  c.output(c.add(Op::Mul, {a, b}));
  NodeId q = c.add(Op::Div, {a, b});
  CHECK(c.type(q).dtype == DType::F32);
  c.output(q);
  c.output(c.add(Op::Mod, {a, b}));
  c.output(c.add(Op::Pow, {b, c.b->scalar(3, DType::I32)}));
  c.output(c.add(Op::Neg, {a}));
  auto out = c.run({{2147483647, -7, 7, -2147483648.0}, {1, 2, -2, 3}});
  check_exact(out[0], {-2147483648.0, -5, 5, -2147483645.0});
  check_exact(out[1], {2147483647, -14, -14, -2147483648.0});
  check_close(out[2], {2147483647.0, -3.5, -3.5, -715827882.6666666}, 1e-7, 0);
  check_exact(out[3], {0, 1, -1, 1});  // floored: the divisor's sign
  check_exact(out[4], {1, 8, -8, 27});
  check_exact(out[5], {-2147483647, 7, -7, -2147483648.0});

  Case u;
  NodeId x = u.input(DType::U8, {3});
  u.output(u.add(Op::Sub, {x, u.b->scalar(10, DType::U8)}));
  u.output(u.add(Op::Abs, {x}));
  auto uo = u.run({{5, 200, 10}});
  check_exact(uo[0], {251, 190, 0});
  check_exact(uo[1], {5, 200, 10});
}

TEST_CASE("cpu: bool arithmetic is 0/1, mixed dtypes promote", "[cpu]") {
  Case c;
  NodeId p = c.input(DType::Bool, {4});
  NodeId q = c.input(DType::Bool, {4});
  NodeId sum = c.add(Op::Add, {p, q});
  CHECK(c.type(sum).dtype == DType::Bool);
  c.output(sum);
  c.output(c.add(Op::Mul, {p, q}));
  c.output(c.add(Op::LogicalAnd, {p, q}));
  c.output(c.add(Op::Eq, {p, q}));
  NodeId f = c.input(DType::F32, {4});
  NodeId mixed = c.add(Op::Mul, {f, p});  // bool is 0/1 of the other dtype
  CHECK(c.type(mixed).dtype == DType::F32);
  c.output(mixed);
  NodeId i = c.input(DType::I64, {4});
  NodeId fi = c.add(Op::Add, {f, i});
  CHECK(c.type(fi).dtype == DType::F32);
  c.output(fi);
  auto out = c.run({{0, 1, 0, 1}, {0, 0, 1, 1}, {1.5, 2.5, 3.5, 4.5}, {1, 2, 3, 4}});
  check_exact(out[0], {0, 1, 1, 1});
  check_exact(out[1], {0, 0, 0, 1});
  check_exact(out[2], {0, 0, 0, 1});
  check_exact(out[3], {1, 0, 0, 1});
  check_exact(out[4], {0, 2.5, 0, 4.5});
  check_exact(out[5], {2.5, 4.5, 6.5, 8.5});
}

TEST_CASE("cpu: big elementwise ops split across threads give the same numbers", "[cpu]") {
  const int64_t n = 200003;
  std::vector<double> x(n), y(n);
  for (int64_t i = 0; i < n; ++i) {
    x[size_t(i)] = double(i % 1000) / 100.0 - 5.0;
    y[size_t(i)] = double((i * 7) % 13) - 6.0;
  }
  auto build = [&](Case& c) {
    NodeId a = c.input(DType::F32, {n});
    NodeId b = c.input(DType::F32, {n});
    c.output(c.add(Op::Add, {c.add(Op::Tanh, {a}), c.add(Op::Mul, {a, b})}));
    c.output(c.add(Op::Sum, {a}));
  };
  Case one, two;
  build(one);
  build(two);
  auto single = one.run({x, y}, 1);
  auto many = two.run({x, y}, 2);
  CHECK(many[0] == single[0]);
  CHECK(many[1] == single[1]);
  CHECK(single[0][1] == float(std::tanh(float(-4.99)) + float(-4.99 * 1.0)));
}

TEST_CASE("cpu: f32 erf within 1e-6 relative of libm's f64 erf", "[cpu]") {
  // Both sides of the switch at |z| = 1/2, tiny values, the tails, inf, NaN.
  std::vector<double> xs = {0, 1e-30, -1e-4, 0.3, 0.4999, 0.5, -0.5001, 1.7, -3, 4, 9.5, 1e10};
  for (double v = -6; v <= 6; v += 0.0137) xs.push_back(v);
  Case c;
  NodeId x = c.input(DType::F32, {int64_t(xs.size())});
  c.output(c.add(Op::Erf, {x}));
  auto out = c.run({xs});
  std::vector<double> want;
  for (double v : xs) want.push_back(std::erf(double(float(v))));
  check_close(out[0], want, 1e-6, 1e-30);
  // math.erf, for a few of them.
  CHECK(out[0][3] == Approx(0.3286267594591274).epsilon(1e-6));
  CHECK(out[0][2] == Approx(-0.00011283791633342487).epsilon(1e-6));
  Case special;
  NodeId s = special.input(DType::F32, {3});
  special.output(special.add(Op::Erf, {s}));
  auto sv = special.run({{INFINITY, -INFINITY, NAN}});
  CHECK(sv[0][0] == 1);
  CHECK(sv[0][1] == -1);
  CHECK(std::isnan(sv[0][2]));
}
