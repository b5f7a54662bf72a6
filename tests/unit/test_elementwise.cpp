// core/ir/elementwise.h: the scalar meaning of the elementwise ops, shared by
// constant folding and the CPU kernels. Expected values are hand-derived or
// from Python's math module and struct's IEEE half ('e') conversion.
#include <cmath>
#include <limits>

#include "catch.hpp"
#include "ir/elementwise.h"

using namespace sexpgpu::ir;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("bf16 bits round to nearest even", "[ir][elementwise]") {
  CHECK(to_bf16_bits(1.0f) == 0x3F80);
  CHECK(to_bf16_bits(1.0f + 0x1p-8f) == 0x3F80);             // tie: to the even 1.0
  CHECK(to_bf16_bits(1.0f + 3 * 0x1p-8f) == 0x3F82);         // tie: to the even 1 + 2^-6
  CHECK(to_bf16_bits(1.0f + 0x1p-8f + 0x1p-20f) == 0x3F81);  // above the tie
  CHECK(to_bf16_bits(0.1f) == 0x3DCD);                       // 0x3DCCCCCD rounds up
  CHECK(to_bf16_bits(3.14159265f) == 0x4049);                // 0x40490FDB rounds down
  CHECK(to_bf16_bits(-0.0f) == 0x8000);
  CHECK(to_bf16_bits(std::numeric_limits<float>::max()) == 0x7F80);  // overflows to inf
  CHECK(std::isnan(from_bf16_bits(to_bf16_bits(std::nanf("")))));
  CHECK(from_bf16_bits(0x4049) == 3.140625f);
  CHECK(bf16_round(1.0f + 3 * 0x1p-8f) == 1.015625f);
}

TEST_CASE("f16 bits round to nearest even, with subnormals", "[ir][elementwise]") {
  struct Row {
    float value;
    uint16_t bits;
  };
  // Python: struct.unpack("<H", struct.pack("<e", x)).
  const Row rows[] = {{1.0f, 0x3c00},         {-2.5f, 0xc100},          {65504.0f, 0x7bff},
                      {65519.0f, 0x7bff},     {65520.0f, 0x7c00},       {0x1p-24f, 0x0001},
                      {0x1p-25f, 0x0000},     {1.00146484375f, 0x3c02}, {2.5f * 0x1p-24f, 0x0002},
                      {3 * 0x1p-25f, 0x0002}, {1e-4f, 0x068e},          {-1e-5f, 0x80a8},
                      {3.14159265f, 0x4248},  {0.1f, 0x2e66},           {-1.5f * 0x1p-14f, 0x8600}};
  for (const Row& r : rows) {
    INFO(r.value);
    CHECK(to_f16_bits(r.value) == r.bits);
  }
  CHECK(to_f16_bits(-kInf) == 0xfc00);
  CHECK(std::isnan(f16_round(std::nanf(""))));
  CHECK(from_f16_bits(0x3555) == 0.333251953125f);
  CHECK(from_f16_bits(0x0001) == 0x1p-24f);
  CHECK(from_f16_bits(0x7bff) == 65504.0f);
  CHECK(std::isinf(from_f16_bits(0xfc00)));
  // Every finite f16 survives the round trip through float.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7c00) == 0x7c00) continue;
    if (to_f16_bits(from_f16_bits(uint16_t(b))) != b) FAIL("f16 bits " << b);
  }
}

TEST_CASE("round_to_dtype rounds once, from the double", "[ir][elementwise]") {
  // Through float first, 1 + 2^-8 + 2^-30 becomes the tie 1 + 2^-8 and then
  // rounds down; directly it is above the tie.
  CHECK(round_to_dtype(1.0 + 0x1p-8 + 0x1p-30, DType::BF16) == 1.0078125);
  CHECK(round_to_dtype(1.0 + 0x1p-8, DType::BF16) == 1.0);
  CHECK(round_to_dtype(1.0 + 0x1p-11 + 0x1p-40, DType::F16) == 1.0 + 0x1p-10);
  CHECK(round_to_dtype(0.1, DType::F32) == double(0.1f));
  CHECK(round_to_dtype(0.1, DType::F64) == 0.1);
  CHECK(round_to_dtype(-3.9, DType::I32) == -3);
  CHECK(round_to_dtype(300, DType::U8) == 255);
  CHECK(round_to_dtype(0.25, DType::Bool) == 1);
}

TEST_CASE("conversions: truncate, saturate, NaN to 0, wrap", "[ir][elementwise]") {
  CHECK(convert<int32_t>(3.9f) == 3);
  CHECK(convert<int32_t>(-3.9) == -3);
  CHECK(convert<int32_t>(kNaN) == 0);
  CHECK(convert<int32_t>(1e10) == 2147483647);
  CHECK(convert<int32_t>(-1e10) == -2147483647 - 1);
  CHECK(convert<int64_t>(0x1p63) == std::numeric_limits<int64_t>::max());
  CHECK(convert<uint8_t>(-5.0) == 0);
  CHECK(convert<uint8_t>(300.0f) == 255);
  CHECK(convert<uint8_t>(int32_t(300)) == 44);
  CHECK(convert<int32_t>(int64_t(0x100000005)) == 5);
  CHECK(convert<bool>(0.5) == true);
  CHECK(convert<bool>(int32_t(0)) == false);
  CHECK(convert<float>(true) == 1.0f);
}

TEST_CASE("unary ops on floats", "[ir][elementwise]") {
  CHECK(apply_unary(Op::Neg, 2.0) == -2.0);
  CHECK(apply_unary(Op::Abs, -3.5) == 3.5);
  CHECK(apply_unary(Op::Square, -3.0) == 9.0);
  CHECK(apply_unary(Op::Sign, -0.5) == -1.0);
  CHECK(apply_unary(Op::Sign, 0.0) == 0.0);
  CHECK(std::isnan(apply_unary(Op::Sign, kNaN)));
  CHECK(apply_unary(Op::Relu, -1.0) == 0.0);
  CHECK(std::isnan(apply_unary(Op::Relu, kNaN)));
  CHECK(apply_unary(Op::Floor, -1.5) == -2.0);
  CHECK(apply_unary(Op::Ceil, -1.5) == -1.0);
  CHECK(apply_unary(Op::Round, 2.5) == 2.0);  // half to even
  CHECK(apply_unary(Op::Round, 3.5) == 4.0);
  CHECK(apply_unary(Op::Round, -2.5) == -2.0);
  CHECK(apply_unary(Op::Round, 2.6) == 3.0);
  CHECK(apply_unary(Op::Rsqrt, 4.0) == 0.5);
  CHECK(apply_unary(Op::Reciprocal, 4.0) == 0.25);
  CHECK(apply_unary(Op::Sigmoid, 2.0) == Approx(0.8807970779778823));
  CHECK(apply_unary(Op::Sigmoid, -1000.0) == 0.0);
  CHECK(apply_unary(Op::Sigmoid, 1000.0) == 1.0);
  CHECK(apply_unary(Op::Silu, 2.0) == Approx(1.7615941559557646));
  CHECK(apply_unary(Op::Softplus, 2.0) == Approx(2.1269280110429727));
  CHECK(apply_unary(Op::Softplus, 100.0) == 100.0);
  CHECK(apply_unary(Op::Softplus, -100.0) == Approx(3.720075976020836e-44));
  CHECK(apply_unary(Op::Softplus, 0.0f) == Approx(std::log(2.0)));
  CHECK(apply_unary(Op::Gelu, 1.0) == Approx(0.8413447460685429));
  CHECK(apply_unary(Op::Gelu, -2.0) == Approx(-0.04550026389635842));
  CHECK(apply_unary(Op::GeluTanh, 1.0) == Approx(0.8411919906082768));
  CHECK(apply_unary(Op::GeluTanh, -2.0f) == Approx(-0.04540230591222494));
  CHECK(apply_unary(Op::Sigmoid, -2.0f) == Approx(0.11920292202211755));
  CHECK(apply_unary(Op::Log1p, 1e-20) == 1e-20);
  CHECK(apply_unary(Op::StopGradient, 7.0) == 7.0);
  CHECK(apply_predicate(Op::IsFinite, kInf) == false);
  CHECK(apply_predicate(Op::IsFinite, 1.0f) == true);
  CHECK(apply_predicate(Op::LogicalNot, 0.0) == true);
  CHECK(apply_predicate(Op::LogicalNot, int32_t(3)) == false);
}

TEST_CASE("unary ops on integers wrap", "[ir][elementwise]") {
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  CHECK(apply_unary(Op::Neg, kMin) == kMin);
  CHECK(apply_unary(Op::Abs, kMin) == kMin);
  CHECK(apply_unary(Op::Abs, int32_t(-4)) == 4);
  CHECK(apply_unary(Op::Neg, uint8_t(1)) == 255);
  CHECK(apply_unary(Op::Square, int32_t(65536)) == 0);
  CHECK(apply_unary(Op::Square, uint16_t(300)) == uint16_t(90000 % 65536));
  CHECK(apply_unary(Op::Sign, int64_t(-9)) == -1);
  CHECK(apply_unary(Op::Relu, int32_t(-9)) == 0);
  CHECK(apply_unary(Op::Round, int32_t(7)) == 7);
  CHECK(apply_unary(Op::Abs, true) == true);
  CHECK_THROWS_AS(apply_unary(Op::Add, 1.0), std::logic_error);
}

TEST_CASE("binary ops", "[ir][elementwise]") {
  CHECK(apply_binary(Op::Add, int32_t(2147483647), int32_t(1)) == -2147483647 - 1);
  CHECK(apply_binary(Op::Add, uint8_t(200), uint8_t(100)) == 44);
  CHECK(apply_binary(Op::Sub, uint8_t(1), uint8_t(2)) == 255);
  CHECK(apply_binary(Op::Mul, int32_t(65536), int32_t(65536)) == 0);
  CHECK(apply_binary(Op::Mul, uint16_t(65535), uint16_t(65535)) == 1);
  CHECK(apply_binary(Op::Add, true, true) == true);
  CHECK(apply_binary(Op::Div, 1.0, 4.0) == 0.25);
  CHECK(apply_binary(Op::Pow, int32_t(3), int32_t(4)) == 81);
  CHECK(apply_binary(Op::Pow, int64_t(3), int64_t(40)) == -6289078614652622815);  // 3^40 - 2^64
  CHECK(apply_binary(Op::Pow, int32_t(2), int32_t(-1)) == 0);
  CHECK(apply_binary(Op::Pow, int32_t(-1), int32_t(-3)) == -1);
  CHECK(apply_binary(Op::Pow, int32_t(0), int32_t(0)) == 1);
  CHECK(apply_binary(Op::Pow, 2.0, 0.5) == Approx(1.4142135623730951));
  CHECK(apply_binary(Op::Maximum, 1.0, 2.0) == 2.0);
  CHECK(std::isnan(apply_binary(Op::Maximum, 1.0, kNaN)));
  CHECK(std::isnan(apply_binary(Op::Minimum, kNaN, 1.0)));
  CHECK(apply_binary(Op::Minimum, int32_t(-1), int32_t(2)) == -1);
  CHECK(apply_binary(Op::Atan2, 1.0, -1.0) == Approx(2.356194490192345));
  // Floored mod: the sign of the divisor.
  CHECK(apply_binary(Op::Mod, int32_t(-7), int32_t(3)) == 2);
  CHECK(apply_binary(Op::Mod, int32_t(7), int32_t(-3)) == -2);
  CHECK(apply_binary(Op::Mod, int32_t(-6), int32_t(3)) == 0);
  CHECK(apply_binary(Op::Mod, int32_t(5), int32_t(0)) == 0);
  CHECK(apply_binary(Op::Mod, std::numeric_limits<int32_t>::min(), int32_t(-1)) == 0);
  CHECK(apply_binary(Op::Mod, uint8_t(250), uint8_t(7)) == 5);
  CHECK(apply_binary(Op::Mod, -7.5, 2.0) == 0.5);
  CHECK(apply_binary(Op::Mod, 5.5, -2.0) == -0.5);
  CHECK(std::isnan(apply_binary(Op::Mod, 1.0, 0.0)));
  CHECK_THROWS_AS(apply_binary(Op::Exp, 1.0, 1.0), std::logic_error);
}

TEST_CASE("comparisons, where, clamp", "[ir][elementwise]") {
  CHECK(apply_compare(Op::Lt, 1.0, 2.0));
  CHECK_FALSE(apply_compare(Op::Lt, kNaN, 2.0));
  CHECK(apply_compare(Op::Ne, kNaN, kNaN));
  CHECK_FALSE(apply_compare(Op::Eq, kNaN, kNaN));
  CHECK(apply_compare(Op::Ge, int32_t(2), int32_t(2)));
  CHECK(apply_compare(Op::LogicalAnd, 2.0, -1.0));
  CHECK_FALSE(apply_compare(Op::LogicalAnd, 2.0, 0.0));
  CHECK(apply_compare(Op::LogicalOr, false, true));
  CHECK(apply_where(true, 1.0, 2.0) == 1.0);
  CHECK(apply_where(false, 1.0, 2.0) == 2.0);
  CHECK(apply_clamp(5.0, 0.0, 3.0) == 3.0);
  CHECK(apply_clamp(-5.0, 0.0, 3.0) == 0.0);
  CHECK(apply_clamp(0.5, 2.0, 1.0) == 1.0);  // lo > hi: hi, as PyTorch
  CHECK(std::isnan(apply_clamp(kNaN, 0.0, 1.0)));
  CHECK(apply_clamp(int32_t(9), int32_t(0), int32_t(3)) == 3);
}

TEST_CASE("every elementwise row has a scalar meaning", "[ir][elementwise]") {
  for (const OpInfo& oi : kOps) {
    INFO(oi.ir_name);
    switch (oi.rule) {
      case Rule::UnarySame:
      case Rule::UnaryFloat:
        CHECK_NOTHROW(apply_unary(oi.op, 0.5));
        CHECK_NOTHROW(apply_unary(oi.op, int32_t(2)));
        break;
      case Rule::UnaryBool: CHECK_NOTHROW(apply_predicate(oi.op, 0.5)); break;
      case Rule::BinaryPromote:
      case Rule::BinaryFloat:
        CHECK_NOTHROW(apply_binary(oi.op, 0.5, 2.0));
        CHECK_NOTHROW(apply_binary(oi.op, int64_t(5), int64_t(2)));
        break;
      case Rule::Compare: CHECK_NOTHROW(apply_compare(oi.op, 0.5, 2.0)); break;
      default: break;
    }
  }
}
