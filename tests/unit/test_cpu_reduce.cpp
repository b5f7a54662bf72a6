// The CPU device's reductions: every reduction op over all axes, the last
// axis (contiguous rows), the first and a middle axis (strided), and two
// separated axes (gathered offsets); keepdims, correction, argmax/argmin,
// integer and bool sums. Expected values from NumPy (var/std with ddof=1).
#include <utility>

#include "test_cpu_util.h"

using namespace cpu_test;

namespace {
// x: f32[2,3,4]
const std::vector<double> kX = {0.5, -1.0, 2.0,  3.0, 1.5,  0.0, -2.0, 4.0, 2.0, 2.0, 1.0,  -3.0,
                                1.0, -0.5, 0.25, 5.0, -4.0, 3.0, 2.0,  1.0, 0.0, 1.0, -1.0, 2.0};

std::vector<double> reduce(Op op, std::optional<ir::Dims> axes, bool keepdims = false,
                           ir::Shape* out_shape = nullptr) {
  Case c;
  NodeId x = c.input(DType::F32, {2, 3, 4});
  ir::Attrs a;
  a.axes = std::move(axes);
  if (keepdims) a.keepdims = true;
  NodeId r = c.add(op, {x}, a);
  if (out_shape) *out_shape = c.type(r).shape;
  c.output(r);
  return c.run({kX})[0];
}

using Want = std::vector<std::pair<Op, std::vector<double>>>;

void check_all(const std::optional<ir::Dims>& axes, const Want& want) {
  for (const auto& [op, values] : want) {
    INFO(ir::info(op).ir_name);
    check_close(reduce(op, axes), values, 2e-6, 1e-6);
  }
}
}  // namespace

TEST_CASE("cpu: reductions over every axis", "[cpu]") {
  check_all(std::nullopt, {{Op::Sum, {19.75}},
                           {Op::Prod, {0.0}},
                           {Op::Max, {5.0}},
                           {Op::Min, {-4.0}},
                           {Op::Mean, {0.8229166865348816}},
                           {Op::Var, {4.372169494628906}},
                           {Op::Std, {2.090973377227783}},
                           {Op::LogSumExp, {5.710297584533691}},
                           {Op::Norm, {10.8079833984375}}});
}

TEST_CASE("cpu: reductions over the last axis", "[cpu]") {
  check_all(dims({-1}), {{Op::Sum, {4.5, 3.5, 2.0, 5.75, 2.0, 2.0}},
                         {Op::Prod, {-3.0, -0.0, -12.0, -0.625, -24.0, -0.0}},
                         {Op::Max, {3.0, 4.0, 2.0, 5.0, 3.0, 2.0}},
                         {Op::Min, {-1.0, -2.0, -3.0, -0.5, -4.0, -1.0}},
                         {Op::Mean, {1.125, 0.875, 0.5, 1.4375, 0.5, 0.5}},
                         {Op::Var,
                          {3.0625, 6.395833492279053, 5.666666507720947, 6.015625,
                           9.666666984558105, 1.6666666269302368}},
                         {Op::Std,
                          {1.75, 2.528998374938965, 2.380476236343384, 2.452677011489868,
                           3.109126329421997, 1.29099440574646}},
                         {Op::LogSumExp,
                          {3.38409161567688, 4.09792423248291, 2.8648362159729004,
                           5.030581474304199, 3.408212423324585, 2.4401895999908447}},
                         {Op::Norm,
                          {3.7749171257019043, 4.7169904708862305, 4.242640495300293,
                           5.129570960998535, 5.4772257804870605, 2.4494898319244385}}});
}

TEST_CASE("cpu: reductions over the first and a middle axis", "[cpu]") {
  check_all(dims({0}),
            {{Op::Sum, {1.5, -1.5, 2.25, 8.0, -2.5, 3.0, 0.0, 5.0, 2.0, 3.0, 0.0, -1.0}},
             {Op::Prod, {0.5, 0.5, 0.5, 15.0, -6.0, 0.0, -4.0, 4.0, 0.0, 2.0, -1.0, -6.0}},
             {Op::Max, {1.0, -0.5, 2.0, 5.0, 1.5, 3.0, 2.0, 4.0, 2.0, 2.0, 1.0, 2.0}},
             {Op::Min, {0.5, -1.0, 0.25, 3.0, -4.0, 0.0, -2.0, 1.0, 0.0, 1.0, -1.0, -3.0}},
             {Op::Mean, {0.75, -0.75, 1.125, 4.0, -1.25, 1.5, 0.0, 2.5, 1.0, 1.5, 0.0, -0.5}},
             {Op::Var, {0.125, 0.125, 1.53125, 2.0, 15.125, 4.5, 8.0, 4.5, 2.0, 0.5, 2.0, 12.5}},
             {Op::LogSumExp,
              {1.4740769863128662, -0.02592301554977894, 2.160224199295044, 5.126927852630615,
               1.5040783882141113, 3.0485873222351074, 2.0181498527526855, 4.048587322235107,
               2.1269280910491943, 2.3132617473602295, 1.1269279718399048, 2.0067152976989746}}});
  check_all(dims({1}),
            {{Op::Sum, {4.0, 1.0, 1.0, 4.0, -3.0, 3.5, 1.25, 8.0}},
             {Op::Max, {2.0, 2.0, 2.0, 4.0, 1.0, 3.0, 2.0, 5.0}},
             {Op::Mean,
              {1.3333333730697632, 0.3333333432674408, 0.3333333432674408, 1.3333333730697632, -1.0,
               1.1666666269302368, 0.4166666567325592, 2.6666667461395264}},
             {Op::Std,
              {0.7637625932693481, 1.5275251865386963, 2.0816659927368164, 3.7859389781951904,
               2.6457512378692627, 1.7559423446655273, 1.5069284439086914, 2.0816659927368164}},
             {Op::Norm,
              {2.5495097637176514, 2.2360680103302, 3.0, 5.830951690673828, 4.123105525970459,
               3.2015621662139893, 2.25, 5.4772257804870605}}});
}

TEST_CASE("cpu: reductions over two separated axes", "[cpu]") {
  check_all(dims({0, 2}),
            {{Op::Sum, {10.25, 5.5, 4.0}},
             {Op::Prod, {1.875, 0.0, 0.0}},
             {Op::Max, {5.0, 4.0, 2.0}},
             {Op::Min, {-1.0, -4.0, -3.0}},
             {Op::Mean, {1.28125, 0.6875, 0.5}},
             {Op::Var, {3.9185268878936768, 6.924107074737549, 3.142857074737549}},
             {Op::Std, {1.9795268774032593, 2.6313698291778564, 1.7728105783462524}},
             {Op::LogSumExp, {5.206822395324707, 4.504535675048828, 3.3680334091186523}},
             {Op::Norm, {6.368869781494141, 7.2284159660339355, 4.898979663848877}}});
}

TEST_CASE("cpu: keepdims, correction, argmax and argmin", "[cpu]") {
  ir::Shape s;
  check_close(reduce(Op::Sum, dims({1}), true, &s), {4.0, 1.0, 1.0, 4.0, -3.0, 3.5, 1.25, 8.0});
  CHECK(s == shape({2, 1, 4}));

  Case c;
  NodeId x = c.input(DType::F32, {2, 3, 4});
  ir::Attrs v;
  v.axes = dims({-1});
  v.correction = 0;
  c.output(c.add(Op::Var, {x}, v));
  ir::Attrs last;
  last.axes = dims({2});
  c.output(c.add(Op::ArgMax, {x}, last));
  ir::Attrs mid;
  mid.axes = dims({1});
  c.output(c.add(Op::ArgMin, {x}, mid));
  c.output(c.add(Op::ArgMax, {x}));  // of the flattened tensor
  c.output(c.add(Op::ArgMin, {x}));
  auto out = c.run({kX});
  check_close(out[0], {2.296875, 4.796875, 4.25, 4.51171875, 7.25, 1.25});
  check_exact(out[1], {3, 3, 0, 3, 1, 3});
  check_exact(out[2], {0, 0, 1, 2, 1, 0, 2, 1});
  check_exact(out[3], {15});
  check_exact(out[4], {16});
}

TEST_CASE("cpu: argmax takes the first maximum, NaN wins", "[cpu]") {
  Case c;
  NodeId x = c.input(DType::F32, {2, 4});
  ir::Attrs a;
  a.axes = dims({1});
  c.output(c.add(Op::ArgMax, {x}, a));
  c.output(c.add(Op::Max, {x}, a));
  auto out = c.run({{1, 3, 3, 2, 1, NAN, 5, NAN}});
  check_exact(out[0], {1, 1});
  CHECK(out[1][0] == 3);
  CHECK(std::isnan(out[1][1]));
}

TEST_CASE("cpu: integer and bool reductions", "[cpu]") {
  Case c;
  NodeId i = c.input(DType::I32, {2, 3});
  NodeId b = c.input(DType::Bool, {2, 3});
  ir::Attrs last;
  last.axes = dims({1});
  c.output(c.add(Op::Sum, {i}, last));
  c.output(c.add(Op::Prod, {i}, last));
  NodeId mean = c.add(Op::Mean, {i});
  CHECK(c.type(mean).dtype == DType::F32);
  c.output(mean);
  NodeId count = c.add(Op::Sum, {b});
  CHECK(c.type(count).dtype == DType::I32);
  c.output(count);
  c.output(c.add(Op::Max, {b}, last));
  auto out = c.run({{2147483647, 1, 5, -3, 4, 7}, {1, 0, 1, 0, 0, 0}});
  check_exact(out[0], {-2147483643.0, 8});   // wraps
  check_exact(out[1], {2147483643.0, -84});  // 2147483647 * 5 wraps (NumPy int32)
  check_close(out[2], {(2147483647.0 + 1 + 5 - 3 + 4 + 7) / 6}, 1e-7, 0);
  check_exact(out[3], {2});
  check_exact(out[4], {1, 0});
}

TEST_CASE("cpu: a big row sum is split across threads", "[cpu]") {
  const int64_t rows = 300, cols = 1000;
  std::vector<double> x(size_t(rows * cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = double(i % 7) - 3.0;
  Case c;
  NodeId in = c.input(DType::F32, {rows, cols});
  ir::Attrs last;
  last.axes = dims({-1});
  c.output(c.add(Op::Sum, {in}, last));
  ir::Attrs first;
  first.axes = dims({0});
  c.output(c.add(Op::Mean, {in}, first));
  auto out = c.run({x}, 2);
  for (int64_t r = 0; r < rows; ++r) {
    double want = 0;
    for (int64_t k = 0; k < cols; ++k) want += x[size_t(r * cols + k)];
    if (out[0][size_t(r)] != want) FAIL("row " << r << ": " << out[0][size_t(r)] << " != " << want);
  }
  double col0 = 0;
  for (int64_t r = 0; r < rows; ++r) col0 += x[size_t(r * cols)];
  CHECK(out[1][0] == float(col0 / rows));
}
