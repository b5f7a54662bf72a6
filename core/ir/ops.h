// The IR's ops, generated from ops.def, and the shape/dtype rule every op
// row names. A rule takes the operands' types and the op's attributes and
// gives the result type, or the message of an E-SHAPE / E-DTYPE (the caller
// adds the code and the position of the form that staged the op).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/types.h"

namespace sexpgpu::ir {

enum class Op : uint16_t {
#define SG_OP(id, ir, lisp, arity, rule, diff) id,
#include "ir/ops.def"
#undef SG_OP
};

// The rule families of ops.def's `rule` column.
enum class Rule : uint8_t {
  UnarySame,           // x -> x's type
  UnaryFloat,          // x -> x's shape; integer and boolean dtypes become f32
  UnaryBool,           // x -> x's shape, :bool
  BinaryPromote,       // broadcast shapes, promote dtypes
  BinaryFloat,         // as BinaryPromote, but an integer or boolean result becomes f32
  Compare,             // broadcast shapes, :bool
  Where,               // (cond a b): cond :bool; broadcast all three; promote a and b
  Clamp,               // (x lo hi): broadcast lo and hi to x's shape; x's dtype
  Cast,                // x's shape, the attribute dtype
  ReduceSame,          // reduce over axes; the dtype stays (a :bool sum/prod counts: :i32)
  ReduceFloat,         // reduce over axes; integer and boolean dtypes become f32
  ReduceIndex,         // reduce over one axis (or all); :i32 indices
  MatMul,              // NumPy matmul: batch broadcast, contract last of a with second-to-last of b
  FromAttrs,           // no operands: `dtype` and `shape` (leaves, creation)
  Random,              // the i64[3] RNG state -> `dtype`, `shape`
  Reshape,             // same numel, `shape`
  Permute,             // `axes` a permutation of the input's axes
  Expand,              // broadcastable_to `shape`
  Concat,              // one or more, same dtype, equal but along `axis`
  Slice,               // `starts` `ends` `steps` per axis
  Take,                // (x, integer ids) along `axis`
  IndexAdd,            // (g, integer ids) -> `shape`, g's dtype
  Pad,                 // `pads`: (before, after) per axis
  Flip,                // `axes` valid and distinct; x's type
  AxisSameFloat,       // `axis` valid; x's shape, float dtype
  CrossEntropy,        // (logits [..., C], integer targets [...]) by `reduction`
  Norm,                // (x, weight [, bias]) with weight/bias of shape [last]; float
  Attention,           // (q, k, v [, mask]) of [B,H,T,D]
  AttentionGrad,       // (q, k, v, o, g [, bool mask]) -> [B,H,Tq+2Tk,D]: dq, dk, dv
  CrossEntropyGrad,    // (logits, integer targets, g) -> logits' type
  LayerNormGrad,       // (x, weight, g) -> x's type: d layer_norm / d x
  LayerNormParamGrad,  // (x, g) -> [2, last]: d layer_norm / d weight, d bias
  Conv2d,              // (x NCHW, w OIHW) with stride, padding, dilation, groups
  Conv2dGrad,          // -> `shape`, the promoted dtype of both operands
  Pool2d,              // x NCHW with kernel, stride, padding
  Pool2dGrad,          // -> `shape` (x's), g's dtype
};

struct OpInfo {
  Op op;
  std::string_view ir_name;
  std::string_view lisp_name;
  int arity;  // -1: variadic
  Rule rule;
  bool differentiable;
};

inline constexpr OpInfo kOps[] = {
#define SG_OP(id, ir, lisp, arity, rule, diff) {Op::id, ir, lisp, arity, Rule::rule, diff},
#include "ir/ops.def"
#undef SG_OP
};
inline constexpr size_t kOpCount = std::size(kOps);

constexpr const OpInfo& info(Op op) {
  return kOps[static_cast<size_t>(op)];
}
std::optional<Op> op_by_lisp_name(std::string_view name);
std::optional<Op> op_by_ir_name(std::string_view name);

// The kinds of attrs.def's `kind` column, as C++ types.
using AttrInt = int64_t;
using AttrFloat = double;
using AttrBool = bool;
using AttrStr = std::string;
using AttrInts = Dims;
using AttrFloats = std::vector<double>;
using AttrDType = DType;

// A node's attributes, one optional field per row of attrs.def (absent
// fields are not printed and do not take part in equality).
struct Attrs {
#define SG_ATTR(name, kind) std::optional<Attr##kind> name;
#include "ir/attrs.def"
#undef SG_ATTR
  friend bool operator==(const Attrs&, const Attrs&) = default;
};

// The result type of `op` applied to operands of `inputs` types.
Result<TensorType> infer_type(Op op, std::span<const TensorType> inputs, const Attrs& attrs = {});

}  // namespace sexpgpu::ir
