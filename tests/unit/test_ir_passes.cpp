// The IR passes (core/ir/passes*.cpp): each does what passes.h says, keeps
// `inputs` and `outputs` pointing at the right nodes after renumbering, and
// leaves a function the verifier accepts.
#include <limits>

#include "catch.hpp"
#include "ir/graph.h"
#include "ir/passes.h"
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

struct Fixture {
  Module m;
  Function& fn;
  Builder b;
  Fixture() : fn(m.functions.emplace_back()), b(fn) { fn.name = "f"; }
  std::string text() { return to_text(m, fn); }
  std::string check() { return verify(m, fn); }
  // The value of the full node that output `name` is.
  double full_value(std::string_view name) {
    for (const Output& o : fn.outputs)
      if (o.name == name && fn.node(o.node).op == Op::Full) return *fn.node(o.node).attrs.value;
    FAIL("output " << name << " is not a full");
    return 0;
  }
  DType dtype(std::string_view name) {
    for (const Output& o : fn.outputs)
      if (o.name == name) return fn.type(o.node).dtype;
    return DType::F32;
  }
};

Attrs with_axes(std::initializer_list<int64_t> a) {
  Attrs at;
  at.axes = dims(a);
  return at;
}

Attrs with_shape(std::initializer_list<int64_t> s) {
  Attrs at;
  at.shape = dims(s);
  return at;
}

Attrs with_dtype(DType d) {
  Attrs at;
  at.dtype = d;
  return at;
}

}  // namespace

TEST_CASE("dead code elimination keeps the leaves and what outputs need", "[ir][passes]") {
  Fixture f;
  NodeId x = f.b.input("x", T("f32[3]"));
  f.b.input("unused", T("f32[2]"));
  f.m.params.push_back({"p", T("f32[3]")});
  NodeId p = f.b.param("p", T("f32[3]"));
  f.b.must(Op::Exp, {x});  // dead
  NodeId s = f.b.must(Op::Add, {x, p});
  f.b.must(Op::Neg, {s});  // dead
  NodeId r = f.b.must(Op::Relu, {s});
  f.fn.outputs = {{"r", r}, {"s", s}};
  eliminate_dead_code(f.fn);
  CHECK(f.check() == "");
  CHECK(f.text() ==
        "fn f(%x: f32[3], %unused: f32[2]) params 1\n"
        "  %0 = param \"p\"  f32[3]\n"
        "  %1 = add %x %0  f32[3]\n"
        "  %2 = relu %1    f32[3]\n"
        "  outputs: r=%2, s=%1\n");
  CHECK(f.fn.inputs == std::vector<NodeId>{0, 1, 2});
}

TEST_CASE("common subexpressions merge on op, operands and attributes", "[ir][passes]") {
  Fixture f;
  NodeId x = f.b.input("x", T("f32[2,3]"));
  NodeId rng = f.b.input("rng", T("i64[3]"));
  NodeId e1 = f.b.must(Op::Exp, {x});
  NodeId e2 = f.b.must(Op::Exp, {x});
  NodeId a1 = f.b.must(Op::Add, {e1, x});
  NodeId a2 = f.b.must(Op::Add, {e2, x});  // the same once e2 is e1
  NodeId s0 = f.b.must(Op::Sum, {a1}, with_axes({0}));
  NodeId s1 = f.b.must(Op::Sum, {a2}, with_axes({1}));  // other attributes: kept
  Attrs draw;
  draw.shape = dims({2});
  draw.dtype = DType::F32;
  draw.low = 0.0;
  draw.high = 1.0;
  draw.stream = 1;
  NodeId u1 = f.b.must(Op::RandomUniform, {rng}, draw);
  NodeId u2 = f.b.must(Op::RandomUniform, {rng}, draw);  // the same draw
  draw.stream = 2;
  NodeId u3 = f.b.must(Op::RandomUniform, {rng}, draw);  // another draw
  f.fn.outputs = {{"a2", a2}, {"s0", s0}, {"s1", s1}, {"u1", u1}, {"u2", u2}, {"u3", u3}};
  eliminate_common_subexpressions(f.fn);
  CHECK(f.check() == "");
  CHECK(f.text() ==
        "fn f(%x: f32[2,3], %rng: i64[3]) params 0\n"
        "  %0 = exp %x                                     f32[2,3]\n"
        "  %1 = add %0 %x                                  f32[2,3]\n"
        "  %2 = sum %1 axes=[0]                            f32[3]\n"
        "  %3 = sum %1 axes=[1]                            f32[2]\n"
        "  %4 = random_uniform %rng low=0 high=1 stream=1  f32[2]\n"
        "  %5 = random_uniform %rng low=0 high=1 stream=2  f32[2]\n"
        "  outputs: a2=%1, s0=%2, s1=%3, u1=%4, u2=%4, u3=%5\n");
}

TEST_CASE("constant folding computes as the device does", "[ir][passes]") {
  Fixture f;
  auto& b = f.b;
  auto out = [&](const char* name, NodeId id) { f.fn.outputs.push_back({name, id}); };
  out("sum", b.must(Op::Add, {b.scalar(2, DType::F32), b.scalar(3, DType::F32)}));
  out("chain",
      b.must(Op::Mul, {b.must(Op::Exp, {b.scalar(0, DType::F32)}), b.scalar(3, DType::F32)}));
  out("wrap", b.must(Op::Add, {b.scalar(2147483647, DType::I32), b.scalar(1, DType::I32)}));
  out("bf16", b.must(Op::Add, {b.scalar(1, DType::BF16), b.scalar(0x1p-8, DType::BF16)}));
  out("div", b.must(Op::Div, {b.scalar(7, DType::I32), b.scalar(2, DType::I32)}));
  out("mod", b.must(Op::Mod, {b.scalar(-7, DType::I64), b.scalar(3, DType::I64)}));
  out("trunc", b.must(Op::Cast, {b.scalar(-3.7, DType::F32)}, with_dtype(DType::I32)));
  out("narrow", b.must(Op::Cast, {b.scalar(300, DType::I64)}, with_dtype(DType::U8)));
  out("lt", b.must(Op::Lt, {b.scalar(1, DType::I32), b.scalar(1.5, DType::F32)}));
  out("where", b.must(Op::Where, {b.scalar(0, DType::Bool), b.scalar(1, DType::F32),
                                  b.scalar(2, DType::F32)}));
  out("nan",
      b.must(Op::IsFinite, {b.scalar(std::numeric_limits<double>::quiet_NaN(), DType::F32)}));
  out("gelu", b.must(Op::GeluTanh, {b.scalar(1, DType::F64)}));
  out("wide", b.must(Op::Mul, {b.full(Shape{2, 2}, 3, DType::F32), b.scalar(2, DType::F32)}));
  fold_constants(f.fn);
  eliminate_dead_code(f.fn);
  CHECK(f.check() == "");
  CHECK(f.full_value("sum") == 5);
  CHECK(f.full_value("chain") == 3);
  CHECK(f.full_value("wrap") == -2147483648.0);
  CHECK(f.full_value("bf16") == 1);  // 1 + 2^-8 ties to the even 1 in bf16
  CHECK(f.dtype("bf16") == DType::BF16);
  CHECK(f.full_value("div") == 3.5);
  CHECK(f.dtype("div") == DType::F32);
  CHECK(f.full_value("mod") == 2);
  CHECK(f.full_value("trunc") == -3);
  CHECK(f.full_value("narrow") == 44);  // integers wrap
  CHECK(f.full_value("lt") == 1);       // compared in f32: 1 < 1.5
  CHECK(f.full_value("where") == 2);
  CHECK(f.full_value("nan") == 0);
  CHECK(f.full_value("gelu") == Approx(0.8411919906082768));
  CHECK(f.full_value("wide") == 6);
  CHECK(f.fn.type(f.fn.outputs.back().node) == T("f32[2,2]"));
  // Only the folded fulls are left.
  CHECK(f.fn.nodes.size() == f.fn.outputs.size());
}

TEST_CASE("fold_constants removes identities that keep the type", "[ir][passes]") {
  Fixture f;
  auto& b = f.b;
  NodeId x = b.input("x", T("f32[2,3]"));
  NodeId i = b.input("i", T("i32[2,3]"));
  auto out = [&](const char* name, NodeId id) { f.fn.outputs.push_back({name, id}); };
  out("add0", b.must(Op::Add, {x, b.scalar(0, DType::F32)}));
  out("zero_add", b.must(Op::Add, {b.scalar(0, DType::F32), x}));
  out("mul1", b.must(Op::Mul, {b.scalar(1, DType::F32), x}));
  out("sub0", b.must(Op::Sub, {x, b.scalar(0, DType::BF16)}));
  out("div1", b.must(Op::Div, {x, b.scalar(1, DType::F32)}));
  out("cast", b.must(Op::Cast, {x}, with_dtype(DType::F32)));
  out("perm", b.must(Op::Permute, {x}, with_axes({0, -1})));
  out("reshape", b.must(Op::Reshape, {x}, with_shape({2, 3})));
  // Kept: the type changes (broadcast, promotion, integer division).
  out("broadcast", b.must(Op::Add, {x, b.full(Shape{4, 1, 1}, 0, DType::F32)}));
  out("promote", b.must(Op::Mul, {i, b.scalar(1, DType::F32)}));
  out("intdiv", b.must(Op::Div, {i, b.scalar(1, DType::I32)}));
  // reshape(reshape(x)) reads x once.
  out("rr", b.must(Op::Reshape, {b.must(Op::Reshape, {x}, with_shape({6}))}, with_shape({3, 2})));
  fold_constants(f.fn);
  eliminate_dead_code(f.fn);
  CHECK(f.check() == "");
  CHECK(f.text() ==
        "fn f(%x: f32[2,3], %i: i32[2,3]) params 0\n"
        "  %0 = full value=0  f32[4,1,1]\n"
        "  %1 = add %x %0     f32[4,2,3]\n"
        "  %2 = full value=1  f32[]\n"
        "  %3 = mul %i %2     f32[2,3]\n"
        "  %4 = full value=1  i32[]\n"
        "  %5 = div %i %4     f32[2,3]\n"
        "  %6 = reshape %x    f32[3,2]\n"
        "  outputs: add0=%x, zero_add=%x, mul1=%x, sub0=%x, div1=%x, cast=%x, perm=%x, "
        "reshape=%x, broadcast=%1, promote=%3, intdiv=%5, rr=%6\n");
}

TEST_CASE("fusion marks maximal elementwise groups", "[ir][passes]") {
  Fixture f;
  auto& b = f.b;
  NodeId x = b.input("x", T("f32[4,8]"));
  NodeId y = b.input("y", T("f32[8]"));
  NodeId e = b.must(Op::Exp, {x});
  NodeId n = b.must(Op::Neg, {e});
  NodeId s = b.must(Op::Sin, {e});
  NodeId a = b.must(Op::Add, {n, s});               // diamond: e, n, s, a fuse
  NodeId m = b.must(Op::Mul, {a, y});               // y broadcasts in; m joins
  NodeId r = b.must(Op::Sum, {m}, with_axes({1}));  // not elementwise: ends the group
  NodeId t = b.must(Op::Tanh, {r});
  NodeId u = b.must(Op::Sqrt, {t});     // t and u: a second group
  NodeId lone = b.must(Op::Relu, {x});  // alone: no group
  f.fn.outputs = {{"u", u}, {"lone", lone}};
  fuse_elementwise(f.fn);
  CHECK(f.check() == "");
  for (NodeId id : {e, n, s, a, m}) CHECK(f.fn.node(id).fusion_group == 0);
  CHECK(f.fn.node(r).fusion_group == -1);
  CHECK(f.fn.node(t).fusion_group == 1);
  CHECK(f.fn.node(u).fusion_group == 1);
  CHECK(f.fn.node(lone).fusion_group == -1);

  // A member that is also an output ends its own group.
  f.fn.outputs.push_back({"n", n});
  fuse_elementwise(f.fn);
  CHECK(f.check() == "");
  CHECK(f.fn.node(n).fusion_group != f.fn.node(m).fusion_group);
  CHECK(f.fn.node(s).fusion_group == f.fn.node(m).fusion_group);
}

TEST_CASE("optimize runs the pipeline and verifies", "[ir][passes]") {
  Fixture f;
  auto& b = f.b;
  NodeId x = b.input("x", T("f32[3]"));
  NodeId two = b.must(Op::Add, {b.scalar(1, DType::F32), b.scalar(1, DType::F32)});
  NodeId y1 = b.must(Op::Mul, {x, two});
  NodeId y2 = b.must(Op::Mul, {x, b.scalar(2, DType::F32)});  // the same after folding
  NodeId z = b.must(Op::Add, {y1, y2});
  NodeId w = b.must(Op::Mul, {z, b.scalar(1, DType::F32)});
  b.must(Op::Exp, {w});  // dead
  f.fn.outputs = {{"w", w}};
  CHECK(optimize(f.m, f.fn) == "");
  CHECK(f.text() ==
        "fn f(%x: f32[3]) params 0\n"
        "  %0 = full value=2        f32[]\n"
        "  %1 = mul %x %0 fusion=0  f32[3]\n"
        "  %2 = add %1 %1 fusion=0  f32[3]\n"
        "  outputs: w=%2\n");
}
