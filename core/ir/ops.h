// The IR's ops, generated from ops.def, and the shape/dtype rule every op
// row names. A rule takes the operands' types and the op's attributes and
// gives the result type, or the message of an E-SHAPE / E-DTYPE (the caller
// adds the code and the position of the form that staged the op).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "ir/types.h"

namespace sexpgpu::ir {

enum class Op : uint16_t {
#define SG_OP(id, lisp, arity, rule, diff) id,
#include "ir/ops.def"
#undef SG_OP
};

// The rule families of ops.def's `rule` column.
enum class Rule : uint8_t {
  UnarySame,      // x -> x's type
  UnaryFloat,     // x -> x's shape; integer and boolean dtypes become f32
  UnaryBool,      // x -> x's shape, :bool
  BinaryPromote,  // broadcast shapes, promote dtypes
  BinaryFloat,    // as BinaryPromote, but an integer or boolean result becomes f32
  Compare,        // broadcast shapes, :bool
  Where,          // (cond a b): cond :bool; broadcast all three; promote a and b
  Clamp,          // (x lo hi): broadcast lo and hi to x's shape; x's dtype
  Cast,           // x's shape, the attribute dtype
  ReduceSame,     // reduce over axes; the dtype stays (a :bool sum/prod counts: :i32)
  ReduceFloat,    // reduce over axes; integer and boolean dtypes become f32
  ReduceIndex,    // reduce over one axis (or all); :i32 indices
  MatMul,         // NumPy matmul: batch broadcast, contract last of a with second-to-last of b
};

struct OpInfo {
  Op op;
  std::string_view lisp_name;
  int arity;  // -1: variadic
  Rule rule;
  bool differentiable;
};

inline constexpr OpInfo kOps[] = {
#define SG_OP(id, lisp, arity, rule, diff) {Op::id, lisp, arity, Rule::rule, diff},
#include "ir/ops.def"
#undef SG_OP
};
inline constexpr size_t kOpCount = std::size(kOps);

constexpr const OpInfo& info(Op op) { return kOps[static_cast<size_t>(op)]; }
std::optional<Op> op_by_lisp_name(std::string_view name);

// Attributes the rules read. Grows with the ops that need more.
struct OpAttrs {
  std::optional<Axes> axes;  // reductions: nullopt = all axes
  bool keepdims = false;
  std::optional<DType> dtype;  // cast
};

// The result type of `op` applied to operands of `inputs` types.
Result<TensorType> infer_type(Op op, std::span<const TensorType> inputs, const OpAttrs& attrs = {});

}  // namespace sexpgpu::ir
