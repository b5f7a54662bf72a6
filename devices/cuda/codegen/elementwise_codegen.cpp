// The scalar pieces of generated elementwise kernels (elementwise_codegen.h):
// register and storage types, loads, stores, constants, and each op's
// expression over its operands' registers, which elementwise_prelude.cuh
// gives meaning to.
#include "elementwise_codegen.h"

#include <cstdio>

#include "cuda/kernels/creation_launch.h"

namespace sexpgpu::cuda {

namespace codegen {

using ir::DType;
using ir::Op;
using ir::Rule;

const char* value_type(DType d) {
  switch (d) {
    case DType::F32:
    case DType::BF16:
    case DType::F16: return "float";
    case DType::F64: return "double";
    case DType::I32: return "int";
    case DType::I64: return "long long";
    case DType::U8: return "unsigned char";
    case DType::U16: return "unsigned short";
    case DType::Bool: return "bool";
  }
  return "float";
}

const char* storage_type(DType d) {
  switch (d) {
    case DType::BF16:
    case DType::F16: return "unsigned short";
    case DType::Bool: return "unsigned char";
    default: return value_type(d);
  }
}

std::string load(DType d, const std::string& element) {
  switch (d) {
    case DType::BF16: return "sg_from_bf16(" + element + ")";
    case DType::F16: return "sg_from_f16(" + element + ")";
    case DType::Bool: return "(" + element + " != 0)";
    default: return element;
  }
}

std::string store(DType d, const std::string& value) {
  switch (d) {
    case DType::BF16: return "sg_to_bf16(" + value + ")";
    case DType::F16: return "sg_to_f16(" + value + ")";
    case DType::Bool: return "(unsigned char)(" + value + ")";
    default: return value;
  }
}

std::string raw_constant(double value, DType d) {
  unsigned long long bits = storage_bits(value, d);
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llxull", bits);
  if (d == DType::F32) return "__uint_as_float((unsigned int)" + std::string(hex) + ")";
  if (d == DType::F64) return "__longlong_as_double((long long)" + std::string(hex) + ")";
  return "(" + std::string(storage_type(d)) + ")" + hex;
}

std::string constant(double value, DType d) {
  return load(d, raw_constant(value, d));
}

namespace {

// `value` (of dtype `from`) as dtype `to`, with elementwise.h's conversion.
std::string convert(const std::string& value, DType from, DType to) {
  if (from == to) return value;
  if (to == DType::BF16) return "sg_round_bf16(" + value + ")";
  if (to == DType::F16) return "sg_round_f16(" + value + ")";
  if (std::string(value_type(from)) == value_type(to)) return value;  // bf16/f16 -> f32
  return std::string("sg_convert<") + value_type(to) + ">(" + value + ")";
}

ir::Result<std::string> float_unary(Op op, const std::string& x, const std::string& t,
                                    bool approximate_tanh) {
  if (approximate_tanh && t == "float") {
    if (op == Op::Tanh) return "sg_tanh_approx(" + x + ")";
    if (op == Op::GeluTanh) return "sg_gelu_tanh_approx(" + x + ")";
  }
  switch (op) {
    case Op::Neg: return "(-" + x + ")";
    case Op::Abs: return "sg_fabs(" + x + ")";
    case Op::Square: return "(" + x + " * " + x + ")";
    case Op::Sign: return "sg_fsign(" + x + ")";
    case Op::Relu: return "sg_frelu(" + x + ")";
    case Op::Floor: return "sg_floor(" + x + ")";
    case Op::Ceil: return "sg_ceil(" + x + ")";
    case Op::Round:
      return "sg_rint(" + x + ")";
      // The rows of core/ir/float_unary.def, which the prelude defines.
      // clang-format off
#define SG_FLOAT_PRIMITIVE(id, fn) case Op::id: return "sg_" #fn "(" + x + ")";
#define SG_FLOAT_UNARY(id, fn, ...) case Op::id: return "sg_" #fn "(" + x + ")";
#include "ir/float_unary.def"
#undef SG_FLOAT_PRIMITIVE
#undef SG_FLOAT_UNARY
      // clang-format on
    default: return ir::Result<std::string>::failure("not a float unary op");
  }
}

ir::Result<std::string> int_unary(Op op, const std::string& x, const std::string& t) {
  switch (op) {
    case Op::Neg: return "sg_ineg<" + t + ">(" + x + ")";
    case Op::Abs: return "sg_iabs<" + t + ">(" + x + ")";
    case Op::Square: return "sg_isquare<" + t + ">(" + x + ")";
    case Op::Sign: return "sg_isign<" + t + ">(" + x + ")";
    case Op::Relu: return "sg_irelu<" + t + ">(" + x + ")";
    case Op::Floor:
    case Op::Ceil:
    case Op::Round: return x;
    default: return ir::Result<std::string>::failure("computes in floats, not " + t);
  }
}

ir::Result<std::string> binary(Op op, bool floating, const std::string& a, const std::string& b,
                               const std::string& t) {
  std::string args = "(" + a + ", " + b + ")";
  if (floating) {
    switch (op) {
      case Op::Add: return "(" + a + " + " + b + ")";
      case Op::Sub: return "(" + a + " - " + b + ")";
      case Op::Mul: return "(" + a + " * " + b + ")";
      case Op::Div: return "(" + a + " / " + b + ")";
      case Op::Pow: return "sg_pow" + args;
      case Op::Maximum: return "sg_fmaximum<" + t + ">" + args;
      case Op::Minimum: return "sg_fminimum<" + t + ">" + args;
      case Op::Atan2: return "sg_atan2" + args;
      case Op::Mod: return "sg_fmod<" + t + ">" + args;
      default: break;
    }
  } else {
    switch (op) {
      case Op::Add: return "sg_iadd<" + t + ">" + args;
      case Op::Sub: return "sg_isub<" + t + ">" + args;
      case Op::Mul: return "sg_imul<" + t + ">" + args;
      case Op::Pow: return "sg_int_pow<" + t + ">" + args;
      case Op::Maximum: return "sg_imaximum<" + t + ">" + args;
      case Op::Minimum: return "sg_iminimum<" + t + ">" + args;
      case Op::Mod: return "sg_int_mod<" + t + ">" + args;
      default: break;
    }
  }
  return ir::Result<std::string>::failure("no " + t + " form");
}

ir::Result<std::string> compare(Op op, const std::string& a, const std::string& b,
                                const std::string& t) {
  switch (op) {
    case Op::Lt: return "(" + a + " < " + b + ")";
    case Op::Le: return "(" + a + " <= " + b + ")";
    case Op::Gt: return "(" + a + " > " + b + ")";
    case Op::Ge: return "(" + a + " >= " + b + ")";
    case Op::Eq: return "(" + a + " == " + b + ")";
    case Op::Ne: return "(" + a + " != " + b + ")";
    case Op::LogicalAnd: return "(" + a + " != (" + t + ")0 && " + b + " != (" + t + ")0)";
    case Op::LogicalOr: return "(" + a + " != (" + t + ")0 || " + b + " != (" + t + ")0)";
    default: return ir::Result<std::string>::failure("not a comparison");
  }
}

}  // namespace

ir::Result<std::string> expression(const GroupNode& node, const std::vector<Operand>& in,
                                   DType result) {
  using R = ir::Result<std::string>;
  DType d = node.dtype;
  std::string t = value_type(d);
  // Operand i as the node's compute type `as`.
  auto arg = [&](size_t i, DType as) { return convert(in[i].name, in[i].dtype, as); };
  switch (ir::info(node.op).rule) {
    case Rule::UnarySame:
    case Rule::UnaryFloat:
      if (d == DType::Bool) return R::failure("bool arithmetic must be lowered to u8 first");
      if (ir::is_float(d)) return float_unary(node.op, arg(0, d), t, result == DType::BF16);
      return int_unary(node.op, arg(0, d), t);
    case Rule::UnaryBool: {
      DType od = in[0].dtype;
      std::string ot = value_type(od);
      if (node.op == Op::LogicalNot) return "(" + in[0].name + " == (" + ot + ")0)";
      return ir::is_float(od) ? "(bool)isfinite(" + in[0].name + ")" : std::string("true");
    }
    case Rule::BinaryPromote:
    case Rule::BinaryFloat:
      if (d == DType::Bool) return R::failure("bool arithmetic must be lowered to u8 first");
      return binary(node.op, ir::is_float(d), arg(0, d), arg(1, d), t);
    case Rule::Compare: {
      DType od = in[0].dtype;
      return compare(node.op, in[0].name, arg(1, od), value_type(od));
    }
    case Rule::Where: {
      std::string cond = in[0].dtype == DType::Bool
                             ? in[0].name
                             : "(" + in[0].name + " != (" + value_type(in[0].dtype) + ")0)";
      return "(" + cond + " ? " + arg(1, d) + " : " + arg(2, d) + ")";
    }
    case Rule::Clamp:
      return "sg_clamp<" + t + ">(" + arg(0, d) + ", " + arg(1, d) + ", " + arg(2, d) + ")";
    case Rule::Cast: return convert(in[0].name, in[0].dtype, d);
    default: return R::failure("not an elementwise op");
  }
}

}  // namespace codegen

}  // namespace sexpgpu::cuda
