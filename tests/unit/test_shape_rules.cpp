// The op table and its shape/dtype rules (core/ir/ops.def, shape_rules.cpp).
#include <set>

#include "catch.hpp"
#include "ir/ops.h"

using namespace sexpgpu::ir;

namespace {
TensorType T(std::string_view text) { return *parse_tensor_type(text); }

std::string infer(Op op, std::initializer_list<std::string_view> types, Attrs attrs = {}) {
  std::vector<TensorType> in;
  for (auto t : types) in.push_back(T(t));
  Result<TensorType> r = infer_type(op, in, attrs);
  return r ? r->to_string() : "error: " + r.error();
}

Axes axes(std::initializer_list<int64_t> a) {
  Axes out;  // push_back, not the range constructor: GCC 12 warns falsely on that one
  for (int64_t x : a) out.push_back(x);
  return out;
}

Attrs argmax_axes(std::initializer_list<int64_t> a) {
  Attrs at;
  at.axes = axes(a);
  return at;
}
}  // namespace

TEST_CASE("the op table is consistent", "[ir]") {
  std::set<std::string_view> names, ir_names;
  for (size_t i = 0; i < kOpCount; ++i) {
    const OpInfo& oi = kOps[i];
    INFO(oi.ir_name);
    CHECK(static_cast<size_t>(oi.op) == i);  // rows in enum order
    CHECK(ir_names.insert(oi.ir_name).second);  // each name once
    CHECK(op_by_ir_name(oi.ir_name) == oi.op);
    if (!oi.lisp_name.empty()) {
      CHECK(names.insert(oi.lisp_name).second);
      CHECK(op_by_lisp_name(oi.lisp_name) == oi.op);
    }
    // tensors.md: comparison and boolean ops have no gradient.
    if (oi.rule == Rule::Compare || oi.rule == Rule::UnaryBool || oi.rule == Rule::ReduceIndex)
      CHECK_FALSE(oi.differentiable);
  }
  CHECK_FALSE(op_by_lisp_name("no-such-op").has_value());
}

TEST_CASE("elementwise rules: broadcasting and dtypes", "[ir]") {
  CHECK(infer(Op::Relu, {"f32[128,256]"}) == "f32[128,256]");
  CHECK(infer(Op::Exp, {"i32[3]"}) == "f32[3]");
  CHECK(infer(Op::Exp, {"bf16[3]"}) == "bf16[3]");
  CHECK(infer(Op::IsFinite, {"f32[2,2]"}) == "bool[2,2]");
  CHECK(infer(Op::Add, {"f32[128,10]", "f32[10]"}) == "f32[128,10]");
  CHECK(infer(Op::Add, {"f32[4,1]", "f32[1,3]"}) == "f32[4,3]");
  CHECK(infer(Op::Mul, {"bf16[8]", "f32[]"}) == "f32[8]");
  CHECK(infer(Op::Add, {"i32[2]", "i64[2]"}) == "i64[2]");
  CHECK(infer(Op::Div, {"i32[2]", "i32[2]"}) == "f32[2]");
  CHECK(infer(Op::Lt, {"f32[5]", "f32[]"}) == "bool[5]");
  CHECK(infer(Op::Add, {"f32[3,4]", "f32[5]"}) ==
        "error: '+': cannot broadcast f32[3,4] with f32[5]: at axis -1 the sizes are 4 and 5, "
        "and neither is 1");
}

TEST_CASE("where, clamp and cast", "[ir]") {
  CHECK(infer(Op::Where, {"bool[4,1]", "f32[3]", "f32[]"}) == "f32[4,3]");
  CHECK(infer(Op::Where, {"f32[4]", "f32[4]", "f32[4]"}).rfind("error: 'where': the condition", 0) == 0);
  CHECK(infer(Op::Clamp, {"f32[4,3]", "f32[]", "f32[3]"}) == "f32[4,3]");
  CHECK(infer(Op::Clamp, {"f32[3]", "f32[4,3]", "f32[]"}).rfind("error: 'clamp'", 0) == 0);
  Attrs cast;
  cast.dtype = DType::BF16;
  CHECK(infer(Op::Cast, {"f32[2,3]"}, cast) == "bf16[2,3]");
  CHECK(infer(Op::Cast, {"f32[2,3]"}) == "error: 'cast' needs a dtype");
}

TEST_CASE("reductions", "[ir]") {
  CHECK(infer(Op::Sum, {"f32[2,3,4]"}) == "f32[]");
  Attrs last;
  last.axes = axes({-1});
  CHECK(infer(Op::Sum, {"f32[2,3,4]"}, last) == "f32[2,3]");
  last.keepdims = true;
  CHECK(infer(Op::Mean, {"i32[2,3,4]"}, last) == "f32[2,3,1]");
  CHECK(infer(Op::Sum, {"bool[5]"}) == "i32[]");
  Attrs bad;
  bad.axes = axes({3});
  CHECK(infer(Op::Max, {"f32[2,3]"}, bad).rfind("error: 'max' of f32[2,3]: axis 3 is out of range", 0) == 0);
  CHECK(infer(Op::ArgMax, {"f32[128,10]"}, argmax_axes({-1})) == "i32[128]");
  CHECK(infer(Op::ArgMax, {"f32[2,3]"}, argmax_axes({0, 1})).rfind("error", 0) == 0);
}

TEST_CASE("matmul follows NumPy", "[ir]") {
  CHECK(infer(Op::MatMul, {"f32[128,784]", "f32[784,256]"}) == "f32[128,256]");
  CHECK(infer(Op::MatMul, {"f32[8,4,16,32]", "f32[32,64]"}) == "f32[8,4,16,64]");
  CHECK(infer(Op::MatMul, {"f32[8,1,16,32]", "f32[4,32,64]"}) == "f32[8,4,16,64]");
  CHECK(infer(Op::MatMul, {"f32[32]", "f32[32,64]"}) == "f32[64]");
  CHECK(infer(Op::MatMul, {"f32[16,32]", "f32[32]"}) == "f32[16]");
  CHECK(infer(Op::MatMul, {"f32[32]", "f32[32]"}) == "f32[]");
  CHECK(infer(Op::MatMul, {"bf16[2,3]", "f32[3,4]"}) == "f32[2,4]");
  CHECK(infer(Op::MatMul, {"f32[128,784]", "f32[256,10]"}) ==
        "error: 'matmul' of f32[128,784] and f32[256,10]: the contracted dimensions differ (784 "
        "and 256)");
  CHECK(infer(Op::MatMul, {"f32[2,3,4]", "f32[5,4,6]"}).rfind("error: 'matmul'", 0) == 0);
  CHECK(infer(Op::MatMul, {"f32[]", "f32[3]"}).rfind("error: 'matmul'", 0) == 0);
}

TEST_CASE("operand counts are checked", "[ir]") {
  CHECK(infer(Op::Add, {"f32[2]"}) == "error: '+' takes 2 tensor operands, given 1");
}
