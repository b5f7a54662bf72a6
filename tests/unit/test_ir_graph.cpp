// The IR graph's verifier (core/ir/verify.cpp) and text form
// (core/ir/print.cpp): a well-formed function passes and prints in the
// documented layout; each kind of malformed function is caught, naming the
// node and the problem.
#include "catch.hpp"
#include "ir/graph.h"
#include "ir/print.h"
#include "ir/verify.h"

using namespace sexpgpu::ir;

namespace {

TensorType T(std::string_view text) {
  return *parse_tensor_type(text);
}

Dims dims(std::initializer_list<int64_t> d) {
  Dims out;
  for (int64_t x : d) out.push_back(x);
  return out;
}

// A small training step: relu(x @ w) into cross_entropy against y.
struct Mlp {
  Module m;
  NodeId x, y, w, h, r, loss;

  Mlp() {
    m.files.push_back("/home/someone/models/mlp.lisp");
    m.params.push_back({"mlp.fc1.weight", T("f32[784,256]")});
    Function& fn = m.functions.emplace_back();
    fn.name = "train_step";
    Builder b(fn);
    x = b.input("x", T("f32[128,784]"));
    y = b.input("y", T("i32[128]"));
    w = b.param("mlp.fc1.weight", T("f32[784,256]"));
    b.set_loc({1, 14, 5});
    h = b.must(Op::MatMul, {x, w});
    b.set_loc({1, 14, 3});
    r = b.must(Op::Relu, {h});
    b.set_loc({1, 15, 3});
    loss = b.must(Op::CrossEntropy, {r, y});
    fn.outputs.push_back({"loss", loss});
  }
  Function& fn() { return m.functions[0]; }
  std::string check() { return verify(m); }
};

}  // namespace

TEST_CASE("a well-formed function verifies", "[ir][verify]") {
  Mlp mlp;
  CHECK(mlp.check() == "");
  CHECK(verify(mlp.m, mlp.fn()) == "");
}

TEST_CASE("the verifier catches bad operands and types", "[ir][verify]") {
  Mlp mlp;
  SECTION("an operand used before it is defined") {
    mlp.fn().node(mlp.h).inputs[1] = mlp.r;
    CHECK(mlp.check() ==
          "fn train_step: %3 = matmul %0 %4 (/home/someone/models/mlp.lisp:14:5): operand %4 is "
          "not defined before its use");
  }
  SECTION("a type that is not the rule's") {
    mlp.fn().node(mlp.r).type = T("f32[128,255]");
    CHECK(mlp.check() ==
          "fn train_step: %4 = relu %3 (/home/someone/models/mlp.lisp:14:3): the node's type "
          "f32[128,255] is not its rule's f32[128,256]");
  }
  SECTION("a rule that fails") {
    mlp.fn().node(mlp.loss).inputs[1] = mlp.x;
    CHECK(mlp.check().find("%5 = cross_entropy %4 %0 (/home/someone/models/mlp.lisp:15:3): "
                           "'cross-entropy' of f32[128,256] and f32[128,784]: the targets need "
                           "an integer dtype") != std::string::npos);
  }
  SECTION("a wrong operand count") {
    mlp.fn().node(mlp.r).inputs.push_back(mlp.h);
    CHECK(mlp.check().find("'relu' takes 1 tensor operand, given 2") != std::string::npos);
  }
  SECTION("a position in a file the module does not have") {
    mlp.fn().node(mlp.r).loc.file = 7;
    CHECK(mlp.check() == "fn train_step: %4 = relu %3: the source position names file 7 of 2");
  }
}

TEST_CASE("the verifier checks required attributes and their values", "[ir][verify]") {
  Module m;
  Function& fn = m.functions.emplace_back();
  fn.name = "f";
  Builder b(fn);
  NodeId state = b.input("rng", T("i64[3]"));
  Attrs normal;
  normal.shape = dims({4});
  normal.dtype = DType::F32;
  normal.mean = 0.0;
  normal.stddev = 1.0;
  NodeId draw = b.must(Op::RandomNormal, {state}, normal);  // the rule needs no stream
  fn.outputs.push_back({"z", draw});
  CHECK(verify(m) == "fn f: %1 = random_normal %0: the `stream` attribute is missing");
  fn.node(draw).attrs.stream = 3;
  CHECK(verify(m) == "");

  Attrs pads;
  pads.pads = dims({1, 1});
  NodeId padded = b.must(Op::Pad, {draw}, pads);
  CHECK(verify(m) == "fn f: %2 = pad %1: the `value` attribute is missing");
  fn.node(padded).attrs.value = 0.0;
  CHECK(verify(m) == "");

  Attrs constant;
  constant.shape = dims({2, 2});
  constant.dtype = DType::F32;
  constant.data = std::vector<double>{1, 2, 3};
  b.must(Op::Constant, {}, constant);
  CHECK(verify(m) == "fn f: %3 = constant: `data` has 3 values for the shape [2,2]");
}

TEST_CASE("the verifier checks inputs, params and outputs", "[ir][verify]") {
  Mlp mlp;
  SECTION("inputs must list every leaf") {
    mlp.fn().inputs.pop_back();
    CHECK(mlp.check() == "fn train_step: `inputs` must list each input and param node once");
  }
  SECTION("inputs before params") {
    std::swap(mlp.fn().inputs[1], mlp.fn().inputs[2]);
    CHECK(mlp.check() ==
          "fn train_step: `inputs` lists param %2 before input %1 (inputs come first)");
  }
  SECTION("a param not in the module") {
    mlp.m.params[0].path = "mlp.fc2.weight";
    CHECK(mlp.check() == "fn train_step: %2 = param: \"mlp.fc1.weight\" is not a module parameter");
  }
  SECTION("a param of another type than its table entry") {
    mlp.m.params[0].type = T("bf16[784,256]");
    CHECK(mlp.check() ==
          "fn train_step: %2 = param: the parameter \"mlp.fc1.weight\" is "
          "bf16[784,256], the node f32[784,256]");
  }
  SECTION("a leaf whose attributes disagree with its type") {
    mlp.fn().node(mlp.x).attrs.shape = dims({128, 785});
    CHECK(mlp.check() ==
          "fn train_step: %0 = input: the node's type f32[128,784] is not its "
          "rule's f32[128,785]");
  }
  SECTION("two inputs of one name") {
    mlp.fn().node(mlp.y).attrs.name = "x";
    CHECK(mlp.check() == "fn train_step: %1 = input: the name \"x\" is empty or repeated");
  }
  SECTION("an output naming no node") {
    mlp.fn().outputs.push_back({"extra", 99});
    CHECK(mlp.check() == "fn train_step: output \"extra\" names node %99, which is not there");
  }
  SECTION("two outputs of one name") {
    mlp.fn().outputs.push_back({"loss", mlp.r});
    CHECK(mlp.check() == "fn train_step: output name \"loss\" is empty or repeated");
  }
  SECTION("two functions of one name") {
    mlp.m.functions.push_back(mlp.fn());
    CHECK(mlp.check() == "fn train_step: defined twice");
  }
}

TEST_CASE("the verifier checks fusion groups", "[ir][verify]") {
  Module m;
  Function& fn = m.functions.emplace_back();
  fn.name = "f";
  Builder b(fn);
  NodeId x = b.input("x", T("f32[4]"));
  NodeId e = b.must(Op::Exp, {x});
  NodeId n = b.must(Op::Neg, {e});
  NodeId s = b.must(Op::Sum, {n});
  fn.outputs.push_back({"s", s});
  fn.node(e).fusion_group = 0;
  fn.node(n).fusion_group = 0;
  CHECK(verify(m) == "");
  fn.outputs.push_back({"e", e});  // now e escapes the group
  CHECK(verify(m) ==
        "fn f: %1 = exp %0: is used outside its fusion group 0 but is not the group's last node");
  fn.outputs.pop_back();
  fn.node(s).fusion_group = 0;
  CHECK(verify(m) == "fn f: %3 = sum %2: only elementwise nodes join a fusion group");
  fn.node(s).fusion_group = -2;
  CHECK(verify(m) == "fn f: %3 = sum %2: fusion group -2 is invalid");
}

TEST_CASE("the printed form", "[ir][print]") {
  Mlp mlp;
  CHECK(to_text(mlp.m) ==
        "fn train_step(%x: f32[128,784], %y: i32[128]) params 1\n"
        "  %0 = param \"mlp.fc1.weight\"  f32[784,256]\n"
        "  %1 = matmul %x %0            f32[128,256]  mlp.lisp:14:5\n"
        "  %2 = relu %1                 f32[128,256]  mlp.lisp:14:3\n"
        "  %3 = cross_entropy %2 %y     f32[]         mlp.lisp:15:3\n"
        "  outputs: loss=%3\n");
}

TEST_CASE("attributes print after the operands", "[ir][print]") {
  Module m;
  Function& fn = m.functions.emplace_back();
  fn.name = "g";
  Builder b(fn);
  NodeId x = b.input("x", T("f32[2,3]"));
  Attrs sum;
  sum.axes = dims({-1});
  sum.keepdims = true;
  NodeId s = b.must(Op::Sum, {x}, sum);
  NodeId c = b.must(Op::Cast, {s}, [] {
    Attrs a;
    a.dtype = DType::BF16;
    return a;
  }());
  Attrs k;
  k.shape = dims({10});
  k.dtype = DType::F64;
  k.data = std::vector<double>{0.1, 1, 2, 3, 4, 5, 6, 7, 8, 1e-300};
  NodeId data = b.must(Op::Constant, {}, k);
  NodeId fill = b.full(Shape{2, 1}, -std::numeric_limits<double>::infinity(), DType::F32);
  NodeId g = b.must(Op::GeluTanh, {x});
  fn.node(g).fusion_group = 0;
  fn.outputs = {{"c", c}, {"data", data}, {"fill", fill}, {"g", g}, {"x", x}};
  CHECK(verify(m) == "");
  CHECK(to_text(m) ==
        "fn g(%x: f32[2,3]) params 0\n"
        "  %0 = sum %x axes=[-1] keepdims=true                    f32[2,1]\n"
        "  %1 = cast %0                                           bf16[2,1]\n"
        "  %2 = constant data=[0.1,1,2,3,4,5,6,7,...(10 values)]  f64[10]\n"
        "  %3 = full value=-inf                                   f32[2,1]\n"
        "  %4 = gelu_tanh %x fusion=0                             f32[2,3]\n"
        "  outputs: c=%1, data=%2, fill=%3, g=%4, x=%x\n");
}
