// The IR's ops, generated from ops.def: the shape/dtype rule, the kernel
// family and the required attributes every op row names. A rule takes the
// operands' types and the op's attributes and gives the result type, or the
// message of an E-SHAPE / E-DTYPE (the caller adds the code and the position
// of the form that staged the op).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/types.h"

namespace sexpgpu::ir {

enum class Op : uint16_t {
#define SG_OP(id, ir, lisp, arity, rule, diff, family, needs) id,
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
  LinearCrossEntropy,  // (x [..., C], w [C, V], integer targets [...], g []) -> packed loss, dx, dw
  LayerNormGrad,       // (x, weight, g) -> x's type: d layer_norm / d x
  LayerNormParamGrad,  // (x, g) -> [2, last]: d layer_norm / d weight, d bias
  Conv2d,              // (x NCHW, w OIHW) with stride, padding, dilation, groups
  Conv2dGrad,          // -> `shape`, the promoted dtype of both operands
  Pool2d,              // x NCHW with kernel, stride, padding
  Pool2dGrad,          // -> `shape` (x's), g's dtype
  AllReduce,           // one or more of one float dtype -> 1-D [sum of numels]; `reduction`
};

// The kernel families of ops.def's `family` column. Each switch over ops
// that picks a kernel factory, a conformance case list or a gradient rule
// group switches over these instead (-Werror=switch keeps it complete), so
// a new op of an existing family touches none of them.
enum class Family : uint8_t {
  Elementwise,  // unary, binary, comparisons, where, clamp: fusable, one scalar each
  Cast,         // dtype conversion
  Reduce,       // reductions over axes
  MatMul,       // matrix products
  Leaf,         // inputs and parameters: the caller's buffers
  Creation,     // full, constant, arange
  Random,       // Philox draws
  Shape,        // moves elements: reshape .. flip, stop_gradient's copy
  Nn,           // softmax, cross entropy, the norms, and their fused gradients
  Attention,    // attention and its fused gradient
  Conv,         // conv2d and its gradients
  Pool,         // pools and their gradients
  Collective,   // all_reduce: the processes of a data-parallel run
};

// The attributes of attrs.def, as an enumeration for the `needs` column.
enum class AttrId : uint8_t {
#define SG_ATTR(name, kind) name,
#include "ir/attrs.def"
#undef SG_ATTR
};
inline constexpr std::string_view kAttrNames[] = {
#define SG_ATTR(name, kind) #name,
#include "ir/attrs.def"
#undef SG_ATTR
};
inline constexpr size_t kAttrCount = std::size(kAttrNames);

constexpr std::string_view attr_name(AttrId id) {
  return kAttrNames[size_t(id)];
}
constexpr std::optional<AttrId> attr_by_name(std::string_view name) {
  for (size_t i = 0; i < kAttrCount; ++i)
    if (kAttrNames[i] == name) return AttrId(i);
  return std::nullopt;
}

// The words of a `needs` cell ("shape dtype value"), in order.
constexpr std::vector<AttrId> parse_needs(std::string_view needs) {
  std::vector<AttrId> out;
  while (!needs.empty()) {
    size_t start = needs.find_first_not_of(' ');
    if (start == std::string_view::npos) break;
    needs.remove_prefix(start);
    size_t end = std::min(needs.find(' '), needs.size());
    std::optional<AttrId> id = attr_by_name(needs.substr(0, end));
    // In a constant expression this is a compile error: a misspelt
    // attribute in ops.def does not build (kNeedsSpelled below).
    if (!id) throw "ops.def: a `needs` word is not an attribute of attrs.def";
    out.push_back(*id);
    needs.remove_prefix(end);
  }
  return out;
}

struct OpInfo {
  Op op;
  std::string_view ir_name;
  std::string_view lisp_name;
  int arity;  // -1: variadic
  Rule rule;
  bool differentiable;
  Family family;
  std::string_view needs;  // the required attributes, space-separated (parse_needs)
};

inline constexpr OpInfo kOps[] = {
#define SG_OP(id, ir, lisp, arity, rule, diff, family, needs) \
  {Op::id, ir, lisp, arity, Rule::rule, diff, Family::family, needs},
#include "ir/ops.def"
#undef SG_OP
};
inline constexpr size_t kOpCount = std::size(kOps);

// Every `needs` cell names attributes of attrs.def (checked as the build
// compiles this header).
inline constexpr bool kNeedsSpelled = [] {
  for (const OpInfo& oi : kOps) parse_needs(oi.needs);
  return true;
}();
static_assert(kNeedsSpelled);

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
