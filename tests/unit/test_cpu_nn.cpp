// The CPU device's matmul and fused neural kernels: batched and broadcast
// matmul (f32 through OpenBLAS, ints through the plain loop), softmax,
// log_softmax, cross_entropy, layer_norm, rms_norm, attention (causal, bool
// and float masks) and attention_grad, conv2d with stride/padding/dilation/
// groups and both of its gradients, max/avg pooling and their gradients.
// Expected values from NumPy (direct loops for conv and pooling; the conv
// gradients as the derivatives of those loops, element by element).
#include "test_cpu_util.h"

using namespace cpu_test;

namespace {
// ((i * step) mod 7 - 3) / 2: small exact numbers.
std::vector<double> pattern(size_t n, int step) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = double(int64_t(i) * step % 7 - 3) / 2.0;
  return v;
}
}  // namespace

TEST_CASE("cpu: matmul, batched with broadcasting, and 1-D operands", "[cpu]") {
  Case c;
  NodeId a = c.input(DType::F32, {2, 1, 3, 4});
  NodeId b = c.input(DType::F32, {2, 4, 2});
  NodeId v = c.input(DType::F32, {4});
  NodeId ab = c.add(Op::MatMul, {a, b});
  CHECK(c.type(ab).shape == shape({2, 2, 3, 2}));
  c.output(ab);
  c.output(c.add(Op::MatMul, {a, v}));
  c.output(c.add(Op::MatMul, {v, b}));
  auto out = c.run({pattern(24, 5), pattern(16, 3), {1, 2, 3, 4}});
  check_close(out[0],
              {3.25, 1.0,  -2.75, 2.5,   -1.75, -1.25, 1.0,  -1.25, 2.5,   2.5,   -1.25, 1.0,
               -2.5, 0.25, 0.25,  -1.75, -0.5,  -0.25, 0.25, -0.5,  -1.75, -0.25, -0.25, -1.75});
  check_close(out[1], {-3.5, -5.0, 4.0, -1.0, 4.5, -0.5});
  check_close(out[2], {6.5, -10.0, -10.0, 5.0});
}

TEST_CASE("cpu: matmul of integers and f64", "[cpu]") {
  Case c;
  NodeId a = c.input(DType::I64, {2, 3});
  NodeId b = c.input(DType::I64, {3, 2});
  c.output(c.add(Op::MatMul, {a, b}));
  NodeId x = c.input(DType::F64, {2, 2});
  c.output(c.add(Op::MatMul, {x, x}));
  auto out = c.run({{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12}, {0.1, 0.2, 0.3, 0.4}});
  check_exact(out[0], {58, 64, 139, 154});
  check_close(
      out[1],
      {0.1 * 0.1 + 0.2 * 0.3, 0.1 * 0.2 + 0.2 * 0.4, 0.3 * 0.1 + 0.4 * 0.3, 0.3 * 0.2 + 0.4 * 0.4},
      1e-15, 0);
}

TEST_CASE("cpu: softmax and log_softmax are stable", "[cpu]") {
  Case c;
  NodeId x = c.input(DType::F32, {3, 3});
  ir::Attrs last;
  last.axis = -1;
  ir::Attrs first;
  first.axis = 0;
  c.output(c.add(Op::Softmax, {x}, last));
  c.output(c.add(Op::Softmax, {x}, first));
  c.output(c.add(Op::LogSoftmax, {x}, last));
  auto out = c.run({{1, 2, 3, -1, 0, 5, 1000, 1000, -1000}});
  check_close(out[0],
              {0.09003057330846786, 0.2447284758090973, 0.6652409434318542, 0.002456114860251546,
               0.006676412653177977, 0.9908674955368042, 0.5, 0.5, 0.0});
  check_close(out[1], {0.0, 0.0, 0.11920291930437088, 0.0, 0.0, 0.8807970881462097, 1.0, 1.0, 0.0});
  check_close(out[2], {-2.4076058864593506, -1.4076060056686401, -0.40760597586631775,
                       -6.009174346923828, -5.009174346923828, -0.009174484759569168,
                       -0.6931471824645996, -0.6931471824645996, -2000.693115234375});
}

TEST_CASE("cpu: cross_entropy by reduction, with ignore_index", "[cpu]") {
  for (std::string reduction : {"none", "sum", "mean"}) {
    Case c;
    NodeId logits = c.input(DType::F32, {4, 3});
    NodeId targets = c.input(DType::I64, {4});
    ir::Attrs a;
    a.reduction = reduction;
    a.ignore_index = -100;
    c.output(c.add(Op::CrossEntropy, {logits, targets}, a));
    auto out = c.run({{1, 2, 3, -1, 0, 5, 2, 2, 2, 0.5, -0.5, 1}, {2, 0, 1, -100}});
    INFO(reduction);
    if (reduction == "none")
      check_close(out[0], {0.40760597586631775, 6.009174346923828, 1.0986123085021973, 0.0});
    if (reduction == "sum") check_close(out[0], {7.515392737704225});
    if (reduction == "mean") check_close(out[0], {2.505130912568075});  // over the 3 counted rows
  }
  Case bad;
  NodeId logits = bad.input(DType::F32, {1, 3});
  NodeId targets = bad.input(DType::I32, {1});
  bad.output(bad.add(Op::CrossEntropy, {logits, targets}));
  CHECK(bad.run_error({{1, 2, 3}, {3}}).find("target 3 (row 0) is out of range for 3 classes") !=
        std::string::npos);
}

TEST_CASE("cpu: layer_norm and rms_norm", "[cpu]") {
  Case c;
  NodeId x = c.input(DType::F32, {2, 4});
  NodeId w = c.input(DType::F32, {4});
  NodeId b = c.input(DType::F32, {4});
  ir::Attrs ln;
  ln.eps = 1e-5;
  c.output(c.add(Op::LayerNorm, {x, w, b}, ln));
  ir::Attrs rn;
  rn.eps = 1e-6;
  c.output(c.add(Op::RmsNorm, {x, w}, rn));
  auto out = c.run({{1, 2, 3, 4, -1, 0, 2, 7}, {1, 0.5, 2, -1}, {0, 1, 0, 0.5}});
  check_close(out[0],
              {-1.3416354656219482, 0.7763940691947937, 0.8944236040115356, -0.8416354060173035,
               -0.9733279943466187, 0.6755573153495789, 0.0, -1.122213363647461},
              1e-5, 1e-6);
  check_close(out[1],
              {0.3651483356952667, 0.3651483356952667, 2.190890073776245, -1.460593342781067,
               -0.2721655070781708, 0.0, 1.088662028312683, -1.9051586389541626},
              1e-5, 1e-6);
}

TEST_CASE("cpu: attention, plain, causal, with bool and float masks", "[cpu]") {
  auto run = [](bool causal, std::optional<double> scale, int mask) {
    Case c;
    NodeId q = c.input(DType::F32, {1, 2, 3, 2});
    NodeId k = c.input(DType::F32, {1, 2, 4, 2});
    NodeId v = c.input(DType::F32, {1, 2, 4, 2});
    ir::Attrs a;
    if (causal) a.causal = true;
    a.scale = scale.value_or(1.0 / std::sqrt(2.0));
    std::vector<std::vector<double>> inputs = {pattern(12, 5), pattern(16, 3), pattern(16, 2)};
    if (mask == 0) {
      c.output(c.add(Op::Attention, {q, k, v}, a));
    } else if (mask == 1) {
      NodeId m = c.input(DType::Bool, {3, 4});
      c.output(c.add(Op::Attention, {q, k, v, m}, a));
      inputs.push_back({1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1});
    } else {
      NodeId m = c.input(DType::F32, {4});
      c.output(c.add(Op::Attention, {q, k, v, m}, a));
      inputs.push_back({0, -1, 2, 0.5});
    }
    return c.run(inputs)[0];
  };
  check_close(
      run(false, std::nullopt, 0),
      {-1.3376786708831787, -0.46908679604530334, 0.009838776662945747, -0.36730918288230896,
       0.09842284023761749, 0.6219139695167542, -0.6439782977104187, -0.10242748260498047,
       0.013355189003050327, 0.04633772745728493, -0.040167201310396194, 0.022379664704203606},
      1e-5, 1e-6);
  check_close(
      run(true, 0.5, 0),
      {-1.3482836484909058, -0.34828364849090576, -0.6373938322067261, 0.36260613799095154,
       0.039257634431123734, 0.42432233691215515, 0.7449186444282532, -0.4336889982223511,
       0.2801292836666107, 0.13739384710788727, -0.061873432248830795, 0.015725810080766678},
      1e-5, 1e-6);
  check_close(
      run(false, std::nullopt, 1),
      {-1.3874387741088867, -0.5224050283432007, -0.38121849298477173, 0.6187815070152283,
       0.09842284023761749, 0.6219139695167542, -0.9671375155448914, 0.03286250680685043,
       0.8812184929847717, -0.1749580055475235, -0.040167201310396194, 0.022379664704203606},
      1e-5, 1e-6);
  check_close(run(false, std::nullopt, 2),
              {-1.259752869606018, -0.4389992654323578, -0.5388345718383789, -0.32235702872276306,
               -0.7021847367286682, -0.016629362478852272, -0.436050146818161, 0.5070489048957825,
               -0.1770257204771042, 0.65776127576828, -0.1999197006225586, 0.6555830240249634},
              1e-5, 1e-6);
}

// Expected: NumPy's dq, dk, dv of sum(attention(q, k, v) * g) in f64, which
// central differences of the forward confirm to 7e-10.
TEST_CASE("cpu: attention_grad, causal and with a bool mask that hides all keys of a query",
          "[cpu]") {
  auto run = [](bool causal, bool mask) {
    Case c;
    NodeId q = c.input(DType::F32, {1, 2, 3, 2});
    NodeId k = c.input(DType::F32, {1, 2, 4, 2});
    NodeId v = c.input(DType::F32, {1, 2, 4, 2});
    NodeId g = c.input(DType::F32, {1, 2, 3, 2});
    ir::Attrs a;
    a.causal = causal;
    a.scale = 1.0 / std::sqrt(2.0);
    std::vector<std::vector<double>> inputs = {pattern(12, 5), pattern(16, 3), pattern(16, 2),
                                               pattern(12, 4)};
    NodeId grads = -1;
    if (mask) {
      NodeId m = c.input(DType::Bool, {3, 4});
      inputs.push_back({1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 1});  // query 1 sees no key
      NodeId o = c.add(Op::Attention, {q, k, v, m}, a);
      grads = c.add(Op::AttentionGrad, {q, k, v, o, g, m}, a);
    } else {
      NodeId o = c.add(Op::Attention, {q, k, v}, a);
      grads = c.add(Op::AttentionGrad, {q, k, v, o, g}, a);
    }
    CHECK(c.type(grads) == ir::TensorType{DType::F32, shape({1, 2, 11, 2})});
    c.output(grads);
    return c.run(inputs)[0];
  };
  // Per head: dq (3 rows), dk (4 rows), dv (4 rows) of 2.
  check_close(run(true, false),
              {-0.11674056067975364,
               0.01945676011329225,
               0.0,
               0.0,
               0.4392557361240253,
               0.378598492971402,
               -0.08436624169100107,
               0.030248199776209853,
               0.7214427458105364,
               0.18211063493030205,
               -0.11236156797374039,
               -0.037453855991246794,
               -0.524714936145795,
               -0.174904978715265,
               -1.695997491728416,
               0.7520514620862296,
               -0.6423430752784736,
               1.1740252199320371,
               -0.5935867396695025,
               0.869705238010909,
               -0.068072693323608,
               0.20421807997082403,
               -0.1759484211132492,
               -0.17594842111324918,
               -0.040850082056664884,
               -0.040850082056664884,
               0.11605682364085797,
               0.11605682364085808,
               0.09436239094429227,
               0.29098826648158743,
               -0.1671821845399243,
               0.05492721985346158,
               -0.08658819403482486,
               -0.10680350488936365,
               0.15940798763045685,
               -0.23911198144568524,
               0.5473989930055739,
               -1.1107027903869011,
               0.4277768360166356,
               -1.4584303663981033,
               0.3367473674104518,
               -0.33682844143132623,
               0.18807680356733858,
               -0.09403840178366929},
              1e-5, 1e-6);
  check_close(run(false, true),
              {-0.24023028781713743,
               0.17377585406919643,
               0.0,
               0.0,
               0.5864229453669892,
               0.4887512309408824,
               -0.21929050984818868,
               0.10433436704950874,
               0.7959158056852496,
               0.26530526856174985,
               0.010966048789125656,
               -0.0073106991927504375,
               -0.5875913446261862,
               -0.36232893641850805,
               -1.4128448723569769,
               0.5220359375006123,
               -0.3868036839683769,
               1.1604110519051307,
               -0.04847027993307372,
               0.01615675997769124,
               -0.1518811637415725,
               0.3013962506165658,
               -0.21202692123647174,
               -0.21202692123647182,
               0.0,
               0.0,
               0.10708459355737843,
               0.1070845935573785,
               0.25985119749793045,
               -0.306924022935769,
               -0.46924379870056526,
               0.7038656980508479,
               0.156791739029054,
               0.47037521708716196,
               0.052600862173580794,
               -0.8673168922022408,
               0.412137006698819,
               -0.3175479500234386,
               0.3453571639351601,
               -0.17267858196758004,
               0.0,
               -0.45854287625846163,
               0.24250582936602103,
               -1.0512305917505198},
              1e-5, 1e-6);
}

TEST_CASE("cpu: conv2d with stride, padding, dilation and groups, and its gradients", "[cpu]") {
  ir::Attrs a;
  a.stride = dims({2, 1});
  a.padding = dims({1, 2});
  a.dilation = dims({1, 2});
  a.groups = 2;
  std::vector<double> x = pattern(100, 3), w = pattern(72, 5), gy = pattern(60, 2);
  Case c;
  NodeId xi = c.input(DType::F32, {1, 4, 5, 5});
  NodeId wi = c.input(DType::F32, {4, 2, 3, 3});
  NodeId gi = c.input(DType::F32, {1, 4, 3, 5});
  NodeId y = c.add(Op::Conv2d, {xi, wi}, a);
  CHECK(c.type(y).shape == shape({1, 4, 3, 5}));
  c.output(y);
  ir::Attrs gx = a;
  gx.shape = dims({1, 4, 5, 5});
  c.output(c.add(Op::Conv2dGradInput, {gi, wi}, gx));
  ir::Attrs gw = a;
  gw.shape = dims({4, 2, 3, 3});
  c.output(c.add(Op::Conv2dGradWeight, {xi, gi}, gw));
  auto out = c.run({x, w, gy});
  check_close(out[0],
              {-3.75, 2.75,  9.75,  -1.25, -0.25, -2.75, 0.75,  -7.75, -1.5, 2.5,   1.25,  -1.75,
               5.0,   2.75,  -2.25, -6.25, 1.25,  2.25,  0.75,  2.75,  4.75, 2.75,  -8.25, 2.25,
               -6.25, -0.25, -2.25, 2.5,   5.75,  -1.75, -0.25, -2.25, 2.5,  5.75,  -1.75, -0.5,
               2.5,   -1.25, -8.0,  0.75,  -2.75, -0.25, -3.0,  5.75,  2.75, -1.75, -2.75, 1.75,
               -1.75, 5.75,  -2.0,  7.75,  2.25,  -6.25, 2.25,  -1.5,  -1.5, -4.0,  2.75,  0.75});
  check_close(
      out[1],
      {-5.5,  -0.25, 2.5,   1.0,   -1.25, 1.75,  3.5,  -0.5,  -3.5,  4.25,  3.25, -0.25, -5.5,
       0.25,  1.5,   5.25,  -8.75, 2.75,  2.0,   -2.5, -0.25, -0.25, 4.0,   -0.5, -2.75, 1.5,
       0.5,   -0.75, 1.75,  2.0,   0.25,  1.75,  3.0,  0.0,   -8.25, -1.75, 0.75, 3.0,   -4.0,
       -0.25, -2.75, 2.25,  0.0,   0.75,  4.75,  0.25, 1.0,   -5.5,  2.5,   2.75, -1.25, 1.75,
       -2.25, 0.25,  1.0,   4.25,  3.25,  -5.0,  1.25, -2.5,  1.5,   1.0,   0.0,  0.5,   -2.25,
       -2.5,  -3.5,  3.0,   1.75,  -0.25, -2.75, 0.25, 0.5,   0.75,  1.5,   2.0,  -4.75, 3.75,
       2.5,   -4.75, -8.25, -0.75, 6.5,   0.75,  -1.5, -0.25, 1.75,  0.25,  -4.0, 2.75,  4.75,
       0.0,   -11.0, 0.0,   4.75,  2.75,  -4.0,  0.25, 1.75,  -0.25});
  check_close(out[2],
              {2.75, 4.5,  -4.0,  -4.0,  7.25,  -0.25, 0.75, 0.25,  5.5,   1.25,  -5.5, -4.0,
               4.0,  -3.5, -4.0,  -0.5,  0.0,   -3.0,  -3.5, -0.25, -2.75, -0.25, -2.5, -1.0,
               -2.0, -4.5, 1.5,   -0.5,  0.75,  5.25,  4.0,  -0.25, 0.25,  1.25,  2.75, -2.5,
               -3.5, 1.5,  -2.75, 1.0,   -2.75, 0.25,  -1.5, -6.0,  2.0,   2.25,  -0.5, 2.75,
               1.5,  3.75, -4.0,  -2.5,  3.5,   0.75,  2.75, -0.5,  2.25,  7.75,  1.25, -1.0,
               1.25, 6.0,  -1.75, -2.75, 1.5,   -3.5,  1.0,  -3.75, -0.25, 4.75,  -1.5, -2.0});
}

TEST_CASE("cpu: max and avg pooling with padding, and their gradients", "[cpu]") {
  ir::Attrs a;
  a.kernel = dims({3, 2});
  a.stride = dims({1, 2});
  a.padding = dims({1, 0});
  Case c;
  NodeId x = c.input(DType::F32, {1, 2, 4, 4});
  NodeId g = c.input(DType::F32, {1, 2, 4, 2});
  NodeId ym = c.add(Op::MaxPool2d, {x}, a);
  CHECK(c.type(ym).shape == shape({1, 2, 4, 2}));
  c.output(ym);
  c.output(c.add(Op::AvgPool2d, {x}, a));
  ir::Attrs ga = a;
  ga.shape = dims({1, 2, 4, 4});
  c.output(c.add(Op::MaxPool2dGrad, {x, g}, ga));
  c.output(c.add(Op::AvgPool2dGrad, {g}, ga));
  auto out = c.run({pattern(32, 5), pattern(16, 3)});
  check_close(out[0],
              {1.5, 0.0, 1.5, 1.5, 1.5, 1.5, 1.0, 1.5, 0.0, 1.5, 1.5, 1.5, 1.5, 1.0, 1.5, 0.5});
  check_close(out[1], {0.25, -0.5, 0.4166666567325592, -0.4166666567325592, 0.5,
                       -0.3333333432674408, 0.1666666716337204, 0.0, -0.5, 0.5, -0.4166666567325592,
                       0.5, -0.3333333432674408, 0.0, 0.0, -0.1666666716337204});
  check_close(out[2],
              {0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.5, 0.0,  0.0, -3.0, 0.0, 0.0, 0.0, 0.0,
               0.0, 0.0, 2.5, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, -3.0, 0.0, 0.0,  0.0, 0.0, 0.0, 0.0});
  check_close(out[3], {0.0,
                       0.0,
                       -0.0833333358168602,
                       -0.0833333358168602,
                       0.1666666716337204,
                       0.1666666716337204,
                       -0.25,
                       -0.25,
                       0.5,
                       0.5,
                       -0.5,
                       -0.5,
                       0.25,
                       0.25,
                       -0.4166666567325592,
                       -0.4166666567325592,
                       -0.0833333358168602,
                       -0.0833333358168602,
                       0.4166666567325592,
                       0.4166666567325592,
                       -0.25,
                       -0.25,
                       0.5,
                       0.5,
                       -0.5,
                       -0.5,
                       0.25,
                       0.25,
                       -0.4166666567325592,
                       -0.4166666567325592,
                       0.0833333358168602,
                       0.0833333358168602});
}
