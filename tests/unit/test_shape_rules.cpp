// The op table and its shape/dtype rules (core/ir/ops.def, shape_rules.cpp).
#include <set>

#include "catch.hpp"
#include "ir/elementwise.h"
#include "ir/ops.h"

using namespace sexpgpu::ir;

namespace {
TensorType T(std::string_view text) {
  return *parse_tensor_type(text);
}

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
    CHECK(static_cast<size_t>(oi.op) == i);     // rows in enum order
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

// The columns the dispatching code reads instead of listing ops: a row's
// kernel family agrees with its rule, the float unary ops are exactly the
// rows of float_unary.def, and `needs` names attributes in order.
TEST_CASE("the op table's family, needs and scalar rows agree", "[ir]") {
  for (const OpInfo& oi : kOps) {
    INFO(oi.ir_name);
    // Fusion and constant folding (is_elementwise) work on the Elementwise
    // and Cast families; stop_gradient is elementwise too but a Shape copy.
    bool elementwise_family = oi.family == Family::Elementwise || oi.family == Family::Cast;
    CHECK(is_elementwise(oi.op) == (elementwise_family || oi.op == Op::StopGradient));
    CHECK((oi.family == Family::Cast) == (oi.rule == Rule::Cast));
    CHECK((oi.family == Family::Leaf) ==
          (oi.arity == 0 && oi.rule == Rule::FromAttrs && oi.lisp_name.empty()));
    CHECK(is_float_unary(oi.op) == (oi.rule == Rule::UnaryFloat));
    if (oi.family == Family::Creation || oi.family == Family::Random)
      CHECK_FALSE(oi.differentiable);
    for (AttrId a : parse_needs(oi.needs)) CHECK(attr_by_name(attr_name(a)) == a);
  }
  auto names = [](Op op) {
    std::vector<std::string_view> out;
    for (AttrId a : parse_needs(info(op).needs)) out.push_back(attr_name(a));
    return out;
  };
  using V = std::vector<std::string_view>;
  CHECK(names(Op::Input) == V{"name", "shape", "dtype"});
  CHECK(names(Op::Conv2dGradInput) == V{"shape", "stride", "padding", "dilation", "groups"});
  CHECK(names(Op::Add).empty());
  CHECK(info(Op::GeluTanh).family == Family::Elementwise);
  CHECK(info(Op::GeluTanh).lisp_name.empty());  // staged by gelu :approximate :tanh
  CHECK_THROWS(parse_needs("shape no_such_attribute"));
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
  CHECK(
      infer(Op::Where, {"f32[4]", "f32[4]", "f32[4]"}).rfind("error: 'where': the condition", 0) ==
      0);
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
  CHECK(infer(Op::Max, {"f32[2,3]"}, bad)
            .rfind("error: 'max' of f32[2,3]: axis 3 is out of range", 0) == 0);
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

namespace {
Attrs with_shape(std::initializer_list<int64_t> s, std::optional<DType> dtype = std::nullopt) {
  Attrs a;
  a.shape = axes(s);
  a.dtype = dtype;
  return a;
}

Attrs with_axis(int64_t axis) {
  Attrs a;
  a.axis = axis;
  return a;
}

bool fails_with(const std::string& result, std::string_view prefix, std::string_view part) {
  return result.rfind("error: " + std::string(prefix), 0) == 0 &&
         result.find(part) != std::string::npos;
}
}  // namespace

TEST_CASE("every rule family has a rule", "[ir]") {
  // Arity-correct rank-4 f32 operands with no attributes: each rule either
  // computes a type or names what is missing, never "not written".
  for (const OpInfo& oi : kOps) {
    INFO(oi.ir_name);
    std::vector<TensorType> in(size_t(oi.arity < 0 ? 3 : oi.arity), T("f32[2,2,2,2]"));
    Result<TensorType> r = infer_type(oi.op, in, {});
    if (!r) CHECK(r.error().find("not written") == std::string::npos);
  }
}

TEST_CASE("random ops: i64[3] state, dtype and shape", "[ir]") {
  Attrs a = with_shape({4, 5}, DType::BF16);
  CHECK(infer(Op::RandomNormal, {"i64[3]"}, a) == "bf16[4,5]");
  CHECK(infer(Op::RandomUniform, {"i64[3]"}, a) == "bf16[4,5]");
  CHECK(infer(Op::RandomBernoulli, {"i64[3]"}, with_shape({2}, DType::Bool)) == "bool[2]");
  CHECK(fails_with(infer(Op::RandomNormal, {"i32[3]"}, a), "'normal' of i32[3]", "dtype i64"));
  CHECK(fails_with(infer(Op::RandomNormal, {"i64[2]"}, a), "'normal' of i64[2]", "i64[3]"));
  CHECK(fails_with(infer(Op::RandomNormal, {"i64[3]"}, with_shape({2}, DType::I32)), "'normal'",
                   "float dtype"));
  Attrs p = with_shape({2}, DType::F32);
  p.p = 1.5;
  CHECK(fails_with(infer(Op::RandomBernoulli, {"i64[3]"}, p), "'bernoulli'", "not in [0, 1]"));
  CHECK(fails_with(infer(Op::RandomUniform, {"i64[3]"}, with_shape({-1}, DType::F32)), "'uniform'",
                   "negative"));
}

TEST_CASE("reshape, permute, expand", "[ir]") {
  CHECK(infer(Op::Reshape, {"f32[2,3,4]"}, with_shape({6, 4})) == "f32[6,4]");
  CHECK(infer(Op::Reshape, {"i32[6]"}, with_shape({})) ==
        "error: 'reshape' of i32[6]: cannot reshape to []: 6 elements into 1");
  CHECK(fails_with(infer(Op::Reshape, {"f32[2]"}), "'reshape' of f32[2]", "`shape`"));
  Attrs perm;
  perm.axes = axes({2, 0, 1});
  CHECK(infer(Op::Permute, {"f32[2,3,4]"}, perm) == "f32[4,2,3]");
  perm.axes = axes({-1, 0, 1});
  CHECK(infer(Op::Permute, {"f32[2,3,4]"}, perm) == "f32[4,2,3]");
  perm.axes = axes({0, 0, 1});
  CHECK(fails_with(infer(Op::Permute, {"f32[2,3,4]"}, perm), "'permute'", "given twice"));
  perm.axes = axes({1, 0});
  CHECK(fails_with(infer(Op::Permute, {"f32[2,3,4]"}, perm), "'permute'", "not a permutation"));
  CHECK(infer(Op::Expand, {"f32[3,1]"}, with_shape({2, 3, 4})) == "f32[2,3,4]");
  CHECK(infer(Op::Expand, {"f32[3,2]"}, with_shape({3, 4})) ==
        "error: 'expand' of f32[3,2]: cannot broadcast f32[3,2] to [3,4]: at axis -1 the size is "
        "2, the target is 4 (only a size of 1 stretches)");
}

TEST_CASE("concat: same dtype, equal but along the axis", "[ir]") {
  CHECK(infer(Op::Concat, {"f32[2,3]", "f32[2,4]"}, with_axis(1)) == "f32[2,7]");
  CHECK(infer(Op::Concat, {"f32[2,3]", "f32[5,3]", "f32[1,3]"}, with_axis(0)) == "f32[8,3]");
  CHECK(infer(Op::Concat, {"f32[2,3]", "f32[2,4]"}, with_axis(-1)) == "f32[2,7]");
  CHECK(infer(Op::Concat, {"i32[2]"}, with_axis(0)) == "i32[2]");
  CHECK(infer(Op::Concat, {"f32[2,3]", "f32[2,4]"}, with_axis(0)) ==
        "error: 'concat' of f32[2,3] and f32[2,4]: the sizes differ at axis 1 (3 and 4), which is "
        "not the concatenation axis 0");
  CHECK(fails_with(infer(Op::Concat, {"f32[2]", "bf16[2]"}, with_axis(0)),
                   "'concat' of f32[2] and bf16[2]", "same dtype"));
  CHECK(fails_with(infer(Op::Concat, {"f32[2]", "f32[2,1]"}, with_axis(0)), "'concat'", "rank"));
  CHECK(fails_with(infer(Op::Concat, {"f32[2]"}, with_axis(1)), "'concat'", "out of range"));
  CHECK(infer(Op::Concat, {}, with_axis(0)) == "error: 'concat' needs at least one tensor");
}

TEST_CASE("slice: per-axis start, end, step", "[ir]") {
  Attrs s;
  s.starts = axes({1, 0});
  s.ends = axes({5, 4});
  s.steps = axes({3, 1});
  CHECK(infer(Op::Slice, {"f32[5,4]"}, s) == "f32[2,4]");  // rows 1, 4
  s.starts = axes({2});
  s.ends = axes({9});
  s.steps = axes({3});
  CHECK(infer(Op::Slice, {"f32[10]"}, s) == "f32[3]");  // 2, 5, 8
  s.starts = axes({4});
  s.ends = axes({4});
  CHECK(infer(Op::Slice, {"f32[10]"}, s) == "f32[0]");
  s.ends = axes({11});
  CHECK(fails_with(infer(Op::Slice, {"f32[10]"}, s), "'slice' of f32[10]", "at axis 0"));
  s.ends = axes({5});
  s.steps = axes({0});
  CHECK(fails_with(infer(Op::Slice, {"f32[10]"}, s), "'slice'", "step >= 1"));
  s.steps = axes({1, 1});
  CHECK(fails_with(infer(Op::Slice, {"f32[10]"}, s), "'slice'", "one number per axis"));
}

TEST_CASE("take and index_add", "[ir]") {
  CHECK(infer(Op::Take, {"f32[3,4,5]", "i64[2,6]"}, with_axis(1)) == "f32[3,2,6,5]");
  CHECK(infer(Op::Take, {"bf16[1000,64]", "i32[8,16]"}, with_axis(0)) == "bf16[8,16,64]");
  CHECK(infer(Op::Take, {"f32[5]", "u8[]"}, with_axis(0)) == "f32[]");
  CHECK(infer(Op::Take, {"f32[5,2]", "f32[3]"}, with_axis(0)) ==
        "error: 'index' of f32[5,2] and f32[3]: the ids need an integer dtype, not f32");
  CHECK(fails_with(infer(Op::Take, {"f32[5,2]", "bool[3]"}, with_axis(0)), "'index'", "dtype"));
  CHECK(fails_with(infer(Op::Take, {"f32[5,2]", "i32[3]"}, with_axis(2)), "'index'", "range"));
  Attrs ia = with_shape({1000, 64});
  ia.axis = 0;
  CHECK(infer(Op::IndexAdd, {"bf16[8,16,64]", "i32[8,16]"}, ia) == "bf16[1000,64]");
  CHECK(fails_with(infer(Op::IndexAdd, {"f32[8,15,64]", "i32[8,16]"}, ia),
                   "'index_add' of f32[8,15,64] and i32[8,16]", "[8,16,64]"));
  CHECK(fails_with(infer(Op::IndexAdd, {"f32[8,16,64]", "f32[8,16]"}, ia), "'index_add'", "dtype"));
}

TEST_CASE("pad and flip", "[ir]") {
  Attrs p;
  p.pads = axes({1, 2, 0, 3});
  CHECK(infer(Op::Pad, {"f32[2,3]"}, p) == "f32[5,6]");
  CHECK(fails_with(infer(Op::Pad, {"f32[2]"}, p), "'pad' of f32[2]", "2 numbers"));
  p.pads = axes({1, -1});
  CHECK(fails_with(infer(Op::Pad, {"f32[2]"}, p), "'pad'", "negative"));
  Attrs f;
  f.axes = axes({0, -1});
  CHECK(infer(Op::Flip, {"i32[2,3]"}, f) == "i32[2,3]");
  f.axes = axes({1, -1});
  CHECK(fails_with(infer(Op::Flip, {"i32[2,3]"}, f), "'flip'", "given twice"));
  CHECK(fails_with(infer(Op::Flip, {"i32[2,3]"}), "'flip'", "`axes`"));
}

TEST_CASE("softmax and cross_entropy", "[ir]") {
  CHECK(infer(Op::Softmax, {"f32[4,10]"}, with_axis(-1)) == "f32[4,10]");
  CHECK(infer(Op::LogSoftmax, {"i32[4,10]"}, with_axis(0)) == "f32[4,10]");
  CHECK(fails_with(infer(Op::Softmax, {"f32[4,10]"}, with_axis(2)), "'softmax' of f32[4,10]",
                   "out of range"));
  CHECK(fails_with(infer(Op::Softmax, {"f32[4,10]"}), "'softmax'", "`axis`"));
  CHECK(infer(Op::CrossEntropy, {"f32[128,10]", "i32[128]"}) == "f32[]");
  Attrs none;
  none.reduction = "none";
  CHECK(infer(Op::CrossEntropy, {"bf16[4,8,50]", "i64[4,8]"}, none) == "bf16[4,8]");
  none.reduction = "sum";
  CHECK(infer(Op::CrossEntropy, {"i32[4,5]", "i64[4]"}, none) == "f32[]");
  none.reduction = "max";
  CHECK(fails_with(infer(Op::CrossEntropy, {"f32[4,5]", "i64[4]"}, none), "'cross-entropy'",
                   "\"max\""));
  CHECK(infer(Op::CrossEntropy, {"f32[128,10]", "f32[128]"}) ==
        "error: 'cross-entropy' of f32[128,10] and f32[128]: the targets need an integer dtype "
        "(class indices), not f32");
  CHECK(fails_with(infer(Op::CrossEntropy, {"f32[128,10]", "i32[10]"}), "'cross-entropy'",
                   "the shape [128]"));
}

TEST_CASE("layer_norm and rms_norm", "[ir]") {
  CHECK(infer(Op::LayerNorm, {"f32[4,8,32]", "f32[32]", "f32[32]"}) == "f32[4,8,32]");
  CHECK(infer(Op::RmsNorm, {"bf16[4,32]", "bf16[32]"}) == "bf16[4,32]");
  CHECK(infer(Op::RmsNorm, {"bf16[4,32]", "f32[32]"}) == "f32[4,32]");
  CHECK(infer(Op::LayerNorm, {"f32[4,32]", "f32[32]", "f32[4,32]"}) ==
        "error: 'layer-norm' of f32[4,32], f32[32] and f32[4,32]: the bias should have the shape "
        "[32] (x's last axis)");
  CHECK(fails_with(infer(Op::RmsNorm, {"f32[4,32]", "f32[31]"}), "'rms-norm'", "the weight"));
  CHECK(fails_with(infer(Op::RmsNorm, {"f32[]", "f32[1]"}), "'rms-norm'", "at least one axis"));
}

TEST_CASE("attention: [B,H,T,D] with an optional mask", "[ir]") {
  CHECK(infer(Op::Attention, {"f32[2,4,16,8]", "f32[2,4,16,8]", "f32[2,4,16,8]"}) ==
        "f32[2,4,16,8]");
  CHECK(infer(Op::Attention, {"bf16[2,4,3,8]", "bf16[2,4,20,8]", "bf16[2,4,20,8]"}) ==
        "bf16[2,4,3,8]");
  CHECK(infer(Op::Attention, {"f32[2,4,3,8]", "f32[2,4,20,8]", "f32[2,4,20,8]", "bool[3,20]"}) ==
        "f32[2,4,3,8]");
  CHECK(infer(Op::Attention, {"f32[2,4,3,8]", "f32[2,4,20,8]", "f32[2,4,20,8]", "f32[2,1,1,20]"}) ==
        "f32[2,4,3,8]");
  CHECK(fails_with(
      infer(Op::Attention, {"f32[2,4,3,8]", "f32[2,4,20,8]", "f32[2,4,20,8]", "i32[3,20]"}),
      "'attention'", "mask's dtype"));
  CHECK(fails_with(
      infer(Op::Attention, {"f32[2,4,3,8]", "f32[2,4,20,8]", "f32[2,4,20,8]", "bool[3,19]"}),
      "'attention'", "[2,4,3,20]"));
  CHECK(fails_with(infer(Op::Attention, {"f32[2,4,3,8]", "f32[2,4,20,8]", "f32[2,4,19,8]"}),
                   "'attention' of f32[2,4,3,8], f32[2,4,20,8] and f32[2,4,19,8]", "same T"));
  CHECK(fails_with(infer(Op::Attention, {"f32[2,4,3,8]", "f32[2,4,20,7]", "f32[2,4,20,8]"}),
                   "'attention'", "k and q differ"));
  CHECK(fails_with(infer(Op::Attention, {"f32[4,3,8]", "f32[4,3,8]", "f32[4,3,8]"}), "'attention'",
                   "rank 4"));
  CHECK(
      fails_with(infer(Op::Attention, {"f32[1,1,1,1]", "f32[1,1,1,1]"}), "'attention'", "given 2"));
}

TEST_CASE("attention_grad: dq, dk, dv stacked along axis 2", "[ir]") {
  const char *q = "f32[2,4,3,8]", *kv = "f32[2,4,20,8]";
  CHECK(infer(Op::AttentionGrad, {q, kv, kv, q, q}) == "f32[2,4,43,8]");
  CHECK(infer(Op::AttentionGrad, {q, kv, kv, q, q, "bool[3,20]"}) == "f32[2,4,43,8]");
  CHECK(infer(Op::AttentionGrad, {"bf16[1,2,5,4]", "bf16[1,2,5,4]", "bf16[1,2,5,4]",
                                  "bf16[1,2,5,4]", "bf16[1,2,5,4]", "bool[1,2,1,5]"}) ==
        "bf16[1,2,15,4]");
  CHECK(fails_with(infer(Op::AttentionGrad, {q, kv, kv, q}), "'attention_grad'", "given 4"));
  CHECK(fails_with(infer(Op::AttentionGrad, {q, kv, kv, q, q, "f32[3,20]"}), "'attention_grad'",
                   "mask's dtype must be bool"));
  CHECK(fails_with(infer(Op::AttentionGrad, {q, kv, kv, q, q, "bool[3,19]"}), "'attention_grad'",
                   "[2,4,3,20]"));
  CHECK(fails_with(infer(Op::AttentionGrad, {q, kv, "f32[2,4,20,7]", q, q}), "'attention_grad'",
                   "v and q differ"));
  CHECK(fails_with(infer(Op::AttentionGrad, {q, kv, "f32[2,4,19,8]", q, q}), "'attention_grad'",
                   "same T"));
  CHECK(fails_with(infer(Op::AttentionGrad, {q, kv, kv, "f32[2,4,20,8]", q}), "'attention_grad'",
                   "o should have q's shape [2,4,3,8]"));
  CHECK(fails_with(infer(Op::AttentionGrad, {q, kv, kv, q, "f32[2,4,1,8]"}), "'attention_grad'",
                   "g should have q's shape"));
  CHECK(fails_with(infer(Op::AttentionGrad, {q, kv, kv, q, "f64[2,4,3,8]"}), "'attention_grad'",
                   "one float dtype"));
  CHECK(fails_with(infer(Op::AttentionGrad, {"i32[1,1,2,2]", "i32[1,1,2,2]", "i32[1,1,2,2]",
                                             "i32[1,1,2,2]", "i32[1,1,2,2]"}),
                   "'attention_grad'", "one float dtype"));
  CHECK(fails_with(infer(Op::AttentionGrad, {"f32[4,3,8]", kv, kv, q, q}), "'attention_grad'",
                   "rank 4"));
  CHECK_FALSE(info(Op::AttentionGrad).differentiable);
  CHECK(info(Op::AttentionGrad).lisp_name.empty());
}

namespace {
Attrs conv_attrs(std::initializer_list<int64_t> stride, std::initializer_list<int64_t> padding,
                 std::initializer_list<int64_t> dilation, int64_t groups) {
  Attrs a;
  a.stride = axes(stride);
  a.padding = axes(padding);
  a.dilation = axes(dilation);
  a.groups = groups;
  return a;
}

Attrs pool_attrs(std::initializer_list<int64_t> kernel, std::initializer_list<int64_t> stride,
                 std::initializer_list<int64_t> padding) {
  Attrs a;
  a.kernel = axes(kernel);
  a.stride = axes(stride);
  a.padding = axes(padding);
  return a;
}
}  // namespace

TEST_CASE("conv2d and its gradients", "[ir]") {
  // H: (11 + 2*1 - 2*(3-1) - 1)/2 + 1 = 5; W: (9 + 0 - 1*(2-1) - 1)/1 + 1 = 8.
  Attrs a = conv_attrs({2, 1}, {1, 0}, {2, 1}, 2);
  CHECK(infer(Op::Conv2d, {"f32[2,6,11,9]", "f32[8,3,3,2]"}, a) == "f32[2,8,5,8]");
  CHECK(infer(Op::Conv2d, {"f32[1,3,28,28]", "bf16[16,3,5,5]"},
              conv_attrs({1, 1}, {0, 0}, {1, 1}, 1)) == "f32[1,16,24,24]");
  CHECK(fails_with(infer(Op::Conv2d, {"f32[2,6,11,9]", "f32[8,6,3,2]"}, a),
                   "'conv2d' of f32[2,6,11,9] and f32[8,6,3,2]", "C/groups = 3"));
  CHECK(fails_with(
      infer(Op::Conv2d, {"f32[2,6,11,9]", "f32[8,2,3,2]"}, conv_attrs({1, 1}, {0, 0}, {1, 1}, 4)),
      "'conv2d'", "must divide"));
  CHECK(fails_with(
      infer(Op::Conv2d, {"f32[1,1,2,2]", "f32[1,1,3,3]"}, conv_attrs({1, 1}, {0, 0}, {1, 1}, 1)),
      "'conv2d'", "does not fit"));
  CHECK(fails_with(
      infer(Op::Conv2d, {"f32[1,1,4,4]", "f32[1,1,3,3]"}, conv_attrs({0, 1}, {0, 0}, {1, 1}, 1)),
      "'conv2d'", "`stride` [0,1] needs numbers >= 1"));
  CHECK(fails_with(infer(Op::Conv2d, {"f32[1,4,4]", "f32[1,1,3,3]"}, a), "'conv2d'", "rank 4"));
  Attrs gi = a;
  gi.shape = axes({2, 6, 11, 9});
  CHECK(infer(Op::Conv2dGradInput, {"f32[2,8,5,8]", "bf16[8,3,3,2]"}, gi) == "f32[2,6,11,9]");
  CHECK(fails_with(infer(Op::Conv2dGradInput, {"f32[2,8,5,7]", "f32[8,3,3,2]"}, gi),
                   "'conv2d_grad_input'", "[2,8,5,8]"));
  Attrs gw = a;
  gw.shape = axes({8, 3, 3, 2});
  CHECK(infer(Op::Conv2dGradWeight, {"f32[2,6,11,9]", "f32[2,8,5,8]"}, gw) == "f32[8,3,3,2]");
  CHECK(fails_with(infer(Op::Conv2dGradWeight, {"f32[2,6,11,9]", "f32[2,8,5,8]"}, a),
                   "'conv2d_grad_weight'", "`shape`"));
}

TEST_CASE("pools and their gradients", "[ir]") {
  // H: (7 + 2 - 3)/2 + 1 = 4; W: (8 + 2 - 2)/2 + 1 = 5.
  Attrs a = pool_attrs({3, 2}, {2, 2}, {1, 1});
  CHECK(infer(Op::MaxPool2d, {"f32[1,3,7,8]"}, a) == "f32[1,3,4,5]");
  CHECK(infer(Op::AvgPool2d, {"bf16[1,3,7,8]"}, a) == "bf16[1,3,4,5]");
  CHECK(infer(Op::MaxPool2d, {"i32[1,3,7,8]"}, a) == "i32[1,3,4,5]");
  CHECK(infer(Op::AvgPool2d, {"i32[1,3,7,8]"}, a) == "f32[1,3,4,5]");
  CHECK(fails_with(infer(Op::MaxPool2d, {"f32[1,3,7,8]"}, pool_attrs({2, 2}, {2, 2}, {2, 0})),
                   "'max-pool2d' of f32[1,3,7,8]", "at most half"));
  CHECK(fails_with(infer(Op::AvgPool2d, {"f32[1,3,2,8]"}, pool_attrs({3, 2}, {1, 1}, {0, 0})),
                   "'avg-pool2d'", "does not fit"));
  CHECK(fails_with(infer(Op::AvgPool2d, {"f32[1,3,7,8]"}, pool_attrs({3}, {1, 1}, {0, 0})),
                   "'avg-pool2d'", "two numbers"));
  Attrs g = a;
  g.shape = axes({1, 3, 7, 8});
  CHECK(infer(Op::MaxPool2dGrad, {"f32[1,3,7,8]", "bf16[1,3,4,5]"}, g) == "bf16[1,3,7,8]");
  CHECK(infer(Op::AvgPool2dGrad, {"f32[1,3,4,5]"}, g) == "f32[1,3,7,8]");
  CHECK(
      fails_with(infer(Op::AvgPool2dGrad, {"f32[1,3,4,4]"}, g), "'avg_pool2d_grad'", "[1,3,4,5]"));
  CHECK(fails_with(infer(Op::MaxPool2dGrad, {"f32[1,3,7,7]", "f32[1,3,4,5]"}, g),
                   "'max_pool2d_grad'", "x should have"));
}
