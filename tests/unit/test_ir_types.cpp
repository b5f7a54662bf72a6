// core/ir/types: dtypes (names, sizes, parsing), the promotion table checked
// exhaustively against a table written out by hand, shapes, NumPy
// broadcasting with its error messages, axis normalisation and reductions.
#include <array>
#include <vector>

#include "catch.hpp"
#include "ir/types.h"

using namespace sexpgpu::ir;

namespace {

std::vector<int64_t> v(std::initializer_list<int64_t> xs) {
  return xs;
}

std::string bshape(const Shape& a, const Shape& b) {
  std::optional<Shape> s = broadcast_shapes(a, b);
  return s ? s->to_string() : "none";
}

}  // namespace

TEST_CASE("dtype table: names, sizes, categories", "[ir][types]") {
  CHECK(kDTypeCount == 9);
  CHECK(kDefaultDType == DType::F32);
  struct Row {
    DType d;
    const char* keyword;
    const char* ir;
    size_t bytes;
    DTypeCategory cat;
    bool is_signed;
  };
  const Row rows[] = {
      {DType::F32, ":f32", "f32", 4, DTypeCategory::Float, true},
      {DType::BF16, ":bf16", "bf16", 2, DTypeCategory::Float, true},
      {DType::F16, ":f16", "f16", 2, DTypeCategory::Float, true},
      {DType::F64, ":f64", "f64", 8, DTypeCategory::Float, true},
      {DType::I32, ":i32", "i32", 4, DTypeCategory::Int, true},
      {DType::I64, ":i64", "i64", 8, DTypeCategory::Int, true},
      {DType::U8, ":u8", "u8", 1, DTypeCategory::Int, false},
      {DType::U16, ":u16", "u16", 2, DTypeCategory::Int, false},
      {DType::Bool, ":bool", "bool", 1, DTypeCategory::Bool, false},
  };
  for (const Row& r : rows) {
    INFO(r.ir);
    CHECK(lisp_keyword(r.d) == r.keyword);
    CHECK(ir_name(r.d) == r.ir);
    CHECK(size_bytes(r.d) == r.bytes);
    CHECK(category(r.d) == r.cat);
    CHECK(is_signed(r.d) == r.is_signed);
    CHECK(is_float(r.d) == (r.cat == DTypeCategory::Float));
    CHECK(is_int(r.d) == (r.cat == DTypeCategory::Int));
    CHECK(is_bool(r.d) == (r.cat == DTypeCategory::Bool));
  }
}

TEST_CASE("dtype parsing and printing round-trip", "[ir][types]") {
  for (DType d : kAllDTypes) {
    CHECK(parse_dtype(lisp_keyword(d)) == d);
    CHECK(parse_dtype(ir_name(d)) == d);
    CHECK(parse_dtype_ir(ir_name(d)) == d);
  }
  CHECK(parse_dtype("F32") == DType::F32);  // the reader upcases symbol names
  CHECK(parse_dtype(":BF16") == DType::BF16);
  CHECK(parse_dtype(":Bool") == DType::Bool);
  CHECK_FALSE(parse_dtype(":f8"));
  CHECK_FALSE(parse_dtype(""));
  CHECK_FALSE(parse_dtype(":"));
  CHECK_FALSE(parse_dtype("::f32"));
  CHECK_FALSE(parse_dtype(":f32 "));
  CHECK_FALSE(parse_dtype("float32"));
  CHECK_FALSE(parse_dtype_ir(":f32"));  // IR text has no colon
  CHECK_FALSE(parse_dtype_ir("F32"));   // and is lower case
  CHECK(unknown_dtype_message(":f8") ==
        "unknown dtype :f8 (the dtypes are :f32 :bf16 :f16 :f64 :i32 :i64 :u8 :u16 :bool)");
}

TEST_CASE("promotion: every pair against the table written out", "[ir][types]") {
  using D = DType;
  // Rows and columns in dtypes.def order: f32 bf16 f16 f64 i32 i64 u8 u16 bool.
  const D order[9] = {D::F32, D::BF16, D::F16, D::F64, D::I32, D::I64, D::U8, D::U16, D::Bool};
  const D expected[9][9] = {
      /* f32  */ {D::F32, D::F32, D::F32, D::F64, D::F32, D::F32, D::F32, D::F32, D::F32},
      /* bf16 */ {D::F32, D::BF16, D::F32, D::F64, D::BF16, D::BF16, D::BF16, D::BF16, D::BF16},
      /* f16  */ {D::F32, D::F32, D::F16, D::F64, D::F16, D::F16, D::F16, D::F16, D::F16},
      /* f64  */ {D::F64, D::F64, D::F64, D::F64, D::F64, D::F64, D::F64, D::F64, D::F64},
      /* i32  */ {D::F32, D::BF16, D::F16, D::F64, D::I32, D::I64, D::I32, D::I32, D::I32},
      /* i64  */ {D::F32, D::BF16, D::F16, D::F64, D::I64, D::I64, D::I64, D::I64, D::I64},
      /* u8   */ {D::F32, D::BF16, D::F16, D::F64, D::I32, D::I64, D::U8, D::U16, D::U8},
      /* u16  */ {D::F32, D::BF16, D::F16, D::F64, D::I32, D::I64, D::U16, D::U16, D::U16},
      /* bool */ {D::F32, D::BF16, D::F16, D::F64, D::I32, D::I64, D::U8, D::U16, D::Bool},
  };
  REQUIRE(std::size(order) == kDTypeCount);
  for (size_t i = 0; i < 9; ++i) REQUIRE(order[i] == kAllDTypes[i]);
  for (size_t i = 0; i < 9; ++i) {
    for (size_t j = 0; j < 9; ++j) {
      INFO(ir_name(order[i]) << " with " << ir_name(order[j]));
      CHECK(promote(order[i], order[j]) == expected[i][j]);
    }
  }
}

TEST_CASE("promotion is a lattice join: commutative, associative, idempotent", "[ir][types]") {
  for (DType a : kAllDTypes) {
    CHECK(promote(a, a) == a);
    CHECK(promote(a, DType::Bool) == a);
    for (DType b : kAllDTypes) {
      CHECK(promote(a, b) == promote(b, a));
      // The result holds both: promoting it again with either changes nothing.
      CHECK(promote(promote(a, b), a) == promote(a, b));
      for (DType c : kAllDTypes) {
        INFO(ir_name(a) << " " << ir_name(b) << " " << ir_name(c));
        CHECK(promote(promote(a, b), c) == promote(a, promote(b, c)));
      }
    }
  }
}

TEST_CASE("shapes: rank, numel, printing", "[ir][types]") {
  Shape s{128, 10};
  CHECK(s.rank() == 2);
  CHECK(s[0] == 128);
  CHECK(s[1] == 10);
  CHECK(s.numel() == 1280);
  CHECK(s.to_string() == "[128,10]");
  CHECK(Shape{}.to_string() == "[]");
  CHECK(Shape{}.is_scalar());
  CHECK(Shape{}.numel() == 1);
  CHECK(Shape{3, 0, 5}.numel() == 0);
  CHECK(Shape{7}.to_string() == "[7]");
  CHECK(Shape{1, 2, 3, 4, 5, 6, 7, 8}.numel() == 40320);  // beyond the inline capacity
  CHECK(Shape{1, 2, 3, 4, 5, 6, 7, 8}.to_string() == "[1,2,3,4,5,6,7,8]");
  CHECK(Shape{2, 3} == Shape{2, 3});
  CHECK_FALSE(Shape{2, 3} == Shape{3, 2});
  CHECK_FALSE(Shape{} == Shape{1});
  CHECK(TensorType{DType::F32, {128, 10}}.to_string() == "f32[128,10]");
  CHECK(TensorType{DType::Bool, {}}.to_string() == "bool[]");
}

TEST_CASE("numel overflow is detected", "[ir][types]") {
  const int64_t big = int64_t{1} << 32;
  CHECK(Shape{big, big / 2 - 1}.numel().has_value());
  CHECK_FALSE(Shape{big, big}.numel().has_value());
  CHECK_FALSE(Shape{INT64_MAX, 2}.numel().has_value());
  CHECK(Shape{INT64_MAX, 1}.numel() == INT64_MAX);
  CHECK(Shape{INT64_MAX, 0, INT64_MAX}.numel() == 0);  // no elements, whatever the rest
  CHECK(Shape{INT64_MAX, 2, 0}.numel() == 0);          // independent of the order

  auto dims = v({big, big});
  Result<Shape> r = make_shape(dims);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() ==
        "invalid shape [4294967296,4294967296]: it has more elements than fit in a "
        "64-bit integer");
  auto neg = v({3, -1});
  Result<Shape> n = make_shape(neg);
  REQUIRE_FALSE(n.ok());
  CHECK(n.error() == "invalid shape [3,-1]: dimension 1 is negative");
  auto ok = v({4, 0, 2});
  CHECK(make_shape(ok).value() == Shape{4, 0, 2});
}

TEST_CASE("tensor types parse from IR text", "[ir][types]") {
  CHECK(parse_tensor_type("f32[128,10]").value() == TensorType{DType::F32, {128, 10}});
  CHECK(parse_tensor_type("bool[]").value() == TensorType{DType::Bool, {}});
  CHECK(parse_tensor_type("i64[0]").value() == TensorType{DType::I64, {0}});
  for (DType d : kAllDTypes) {
    TensorType t{d, {2, 1, 3}};
    CHECK(parse_tensor_type(t.to_string()).value() == t);
  }
  for (const char* bad : {"f32", "f32[", "f8[2]", "f32[2,]", "f32[,2]", "f32[-1]", "f32[2 3]",
                          "f32[a]", "F32[2]", "f32[2]x", "[2]", "f32[99999999999999999999]"}) {
    INFO(bad);
    CHECK_FALSE(parse_tensor_type(bad).ok());
  }
  CHECK(parse_tensor_type("f8[2]").error() == "invalid tensor type \"f8[2]\": unknown dtype");
}

TEST_CASE("broadcasting follows NumPy", "[ir][types]") {
  CHECK(bshape({3, 4}, {4}) == "[3,4]");
  CHECK(bshape({4}, {3, 4}) == "[3,4]");
  CHECK(bshape({3, 1}, {1, 4}) == "[3,4]");
  CHECK(bshape({8, 1, 6, 1}, {7, 1, 5}) == "[8,7,6,5]");  // NumPy's documentation example
  CHECK(bshape({5, 4}, {1}) == "[5,4]");
  CHECK(bshape({15, 3, 5}, {15, 1, 5}) == "[15,3,5]");
  CHECK(bshape({15, 3, 5}, {3, 1}) == "[15,3,5]");
  CHECK(bshape({}, {2, 3}) == "[2,3]");  // a scalar goes with anything
  CHECK(bshape({2, 3}, {}) == "[2,3]");
  CHECK(bshape({}, {}) == "[]");
  CHECK(bshape({1}, {}) == "[1]");
  CHECK(bshape({0}, {1}) == "[0]");  // a 1 stretches to 0, too
  CHECK(bshape({0, 3}, {1, 3}) == "[0,3]");
  CHECK(bshape({1, 1}, {1}) == "[1,1]");
  CHECK(bshape({2, 1, 3}, {2, 1, 3}) == "[2,1,3]");
  // Failures.
  CHECK(bshape({3, 4}, {5}) == "none");
  CHECK(bshape({3}, {4}) == "none");
  CHECK(bshape({2, 1}, {8, 4, 3}) == "none");
  CHECK(bshape({0}, {2}) == "none");
  CHECK(bshape({3, 4}, {3, 1, 5}) == "none");
}

TEST_CASE("broadcast errors name both operands and the axis", "[ir][types]") {
  TensorType a{DType::F32, {3, 4}}, b{DType::F32, {5}};
  CHECK(broadcast_error(a, b) ==
        "cannot broadcast f32[3,4] with f32[5]: at axis -1 the sizes are 4 and 5, and neither "
        "is 1");
  TensorType c{DType::I32, {2, 1}}, d{DType::BF16, {8, 4, 3}};
  CHECK(broadcast_error(c, d) ==
        "cannot broadcast i32[2,1] with bf16[8,4,3]: at axis -2 the sizes are 2 and 4, and "
        "neither is 1");
  // The first conflict from the right is named.
  TensorType e{DType::F32, {2, 3, 4}}, f{DType::F32, {5, 6, 4}};
  CHECK(broadcast_error(e, f) ==
        "cannot broadcast f32[2,3,4] with f32[5,6,4]: at axis -2 the sizes are 3 and 6, and "
        "neither is 1");
}

TEST_CASE("broadcast-to is one-directional", "[ir][types]") {
  CHECK(broadcastable_to({3, 1}, {2, 3, 4}));
  CHECK(broadcastable_to({}, {2, 3}));
  CHECK(broadcastable_to({4}, {3, 4}));
  CHECK(broadcastable_to({1}, {0}));
  CHECK(broadcastable_to({2, 3}, {2, 3}));
  CHECK_FALSE(broadcastable_to({3, 4}, {4}));     // would need to shrink
  CHECK_FALSE(broadcastable_to({3, 4}, {3, 1}));  // the target's 1 does not stretch
  CHECK_FALSE(broadcastable_to({2}, {3}));
  CHECK(broadcast_to_error({DType::F32, {3, 4}}, Shape{3, 5}) ==
        "cannot broadcast f32[3,4] to [3,5]: at axis -1 the size is 4, the target is 5 (only a "
        "size of 1 stretches)");
  CHECK(broadcast_to_error({DType::U8, {2, 3, 4}}, Shape{3, 4}) ==
        "cannot broadcast u8[2,3,4] to [3,4]: it has 3 axes, the target only 2");
}

TEST_CASE("negative axes count from the end; out of range is an error", "[ir][types]") {
  CHECK(normalize_axis(0, 3).value() == 0);
  CHECK(normalize_axis(2, 3).value() == 2);
  CHECK(normalize_axis(-1, 3).value() == 2);
  CHECK(normalize_axis(-3, 3).value() == 0);
  CHECK(normalize_axis(3, 4).value() == 3);  // unsqueeze of a rank-3 tensor passes rank + 1
  CHECK(normalize_axis(3, 3).error() ==
        "axis 3 is out of range (valid axes for rank 3 are -3 to 2)");
  CHECK(normalize_axis(-4, 3).error() ==
        "axis -4 is out of range (valid axes for rank 3 are -3 to 2)");
  CHECK(normalize_axis(0, 0).error() == "axis 0 is out of range (a tensor of rank 0 has no axes)");
  CHECK(normalize_axis(-1, 0).error() ==
        "axis -1 is out of range (a tensor of rank 0 has no axes)");
  CHECK_FALSE(normalize_axis(INT64_MIN, 2).ok());
  CHECK_FALSE(normalize_axis(INT64_MAX, 2).ok());
}

TEST_CASE("several axes: normalised, sorted, repeats rejected", "[ir][types]") {
  auto a = v({-1, 0});
  Result<Axes> r = normalize_axes(a, 3);
  REQUIRE(r.ok());
  CHECK(std::vector<int64_t>(r->begin(), r->end()) == v({0, 2}));
  auto same = v({1, -2});
  CHECK(normalize_axes(same, 3).error() == "axis -2 is given twice (the same axis as 1)");
  auto twice = v({0, 0});
  CHECK(normalize_axes(twice, 2).error() == "axis 0 is given twice");
  auto out = v({0, 5});
  CHECK(normalize_axes(out, 2).error() ==
        "axis 5 is out of range (valid axes for rank 2 are -2 to 1)");
  CHECK(normalize_axes({}, 2).value().empty());
  Axes all = all_axes(4);
  CHECK(std::vector<int64_t>(all.begin(), all.end()) == v({0, 1, 2, 3}));
  CHECK(all_axes(0).empty());
}

TEST_CASE("reduction shapes with and without keepdims", "[ir][types]") {
  Shape s{2, 3, 4};
  auto ax = [](std::initializer_list<int64_t> xs) { return std::vector<int64_t>(xs); };
  auto red = [&](std::optional<std::vector<int64_t>> axes, bool keep) {
    std::optional<std::span<const int64_t>> span;
    if (axes) span = std::span<const int64_t>(*axes);
    Result<Shape> r = reduction_shape(s, span, keep);
    return r ? r->to_string() : "error: " + r.error();
  };
  CHECK(red(std::nullopt, false) == "[]");  // default: all axes
  CHECK(red(std::nullopt, true) == "[1,1,1]");
  CHECK(red(ax({1}), false) == "[2,4]");
  CHECK(red(ax({1}), true) == "[2,1,4]");
  CHECK(red(ax({-1}), false) == "[2,3]");
  CHECK(red(ax({-1, 0}), false) == "[3]");
  CHECK(red(ax({2, 0}), true) == "[1,3,1]");
  CHECK(red(ax({0, 1, 2}), false) == "[]");
  CHECK(red(ax({}), false) == "[2,3,4]");  // an explicit empty list reduces nothing (NumPy)
  CHECK(red(ax({3}), false) == "error: axis 3 is out of range (valid axes for rank 3 are -3 to 2)");
  CHECK(red(ax({0, -3}), false) == "error: axis -3 is given twice (the same axis as 0)");

  auto one = ax({0});
  CHECK(reduce_shape(Shape{5}, one, false) == Shape{});
  CHECK(reduce_shape(Shape{5}, one, true) == Shape{1});
  CHECK(reduce_shape(Shape{}, {}, false) == Shape{});  // a scalar reduced over all of nothing
  CHECK(reduction_shape(Shape{}, std::nullopt, true).value() == Shape{});
  CHECK(reduce_shape(Shape{0, 7}, one, false) == Shape{7});
}
