// The types of the IR: dtypes (generated from dtypes.def), shapes, and the
// rules that combine them: dtype promotion, NumPy broadcasting, axis
// normalisation and the shapes of reductions (spec/tensors.md, "Dtypes" and
// "Broadcasting").
//
// Invariants: a Shape's dimensions are non-negative and their product fits in
// int64 when it was built through make_shape (the checked door from user
// input); the other constructors trust their caller. Functions that can fail
// on user input return a Result whose error is a message naming the things
// involved (shapes with dtypes, axes, ranks); the caller attaches the code
// (E-SHAPE, E-DTYPE) and the source span.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "util/result.h"

namespace sexpgpu::ir {

// Result: a value or why there is none (util/result.h), the one error type
// of the IR, the data library and the runtime.
template <class T>
using Result = sexpgpu::Result<T>;

// ---------------------------------------------------------------------------
// Dtypes

enum class DType : uint8_t {
#define SG_DTYPE(id, keyword, ir_name, bytes, category, is_signed) id,
#include "ir/dtypes.def"
#undef SG_DTYPE
};

// Ordered: promotion between categories goes to the later one.
enum class DTypeCategory : uint8_t { Bool, Int, Float };

struct DTypeInfo {
  std::string_view keyword;  // ":f32"
  std::string_view ir_name;  // "f32"
  uint8_t bytes;
  DTypeCategory category;
  bool is_signed;
};

inline constexpr DTypeInfo kDTypeInfo[] = {
#define SG_DTYPE(id, keyword, ir_name, bytes, category, is_signed) \
  {keyword, ir_name, bytes, DTypeCategory::category, is_signed},
#include "ir/dtypes.def"
#undef SG_DTYPE
};

inline constexpr DType kAllDTypes[] = {
#define SG_DTYPE(id, keyword, ir_name, bytes, category, is_signed) DType::id,
#include "ir/dtypes.def"
#undef SG_DTYPE
};

inline constexpr size_t kDTypeCount = std::size(kAllDTypes);
inline constexpr DType kDefaultDType = DType::F32;  // tensors.md: ":f32 (default)"

constexpr const DTypeInfo& info(DType d) {
  return kDTypeInfo[static_cast<size_t>(d)];
}
constexpr size_t size_bytes(DType d) {
  return info(d).bytes;
}
constexpr DTypeCategory category(DType d) {
  return info(d).category;
}
constexpr bool is_float(DType d) {
  return category(d) == DTypeCategory::Float;
}
constexpr bool is_int(DType d) {
  return category(d) == DTypeCategory::Int;
}
constexpr bool is_bool(DType d) {
  return category(d) == DTypeCategory::Bool;
}
constexpr bool is_signed(DType d) {
  return info(d).is_signed;
}
constexpr std::string_view ir_name(DType d) {
  return info(d).ir_name;
}
constexpr std::string_view lisp_keyword(DType d) {
  return info(d).keyword;
}

// A Lisp keyword's text: ":f32", "f32", ":F32" or "F32" (the reader may have
// upcased the symbol name). nullopt when it names no dtype.
std::optional<DType> parse_dtype(std::string_view text);
// The IR text/JSON name, exactly as printed ("f32").
std::optional<DType> parse_dtype_ir(std::string_view text);
// "unknown dtype :f8 (the dtypes are :f32 :bf16 ...)", for E-DTYPE.
std::string unknown_dtype_message(std::string_view text);

// The dtype of an elementwise operation on a and b (tensors.md, "Dtypes").
// Commutative and associative; bool is the identity.
//  - same dtype: itself.
//  - different categories (bool < int < float): the later category's dtype,
//    unwidened: i64 with f16 gives f16 ("integer and float give the float";
//    bool in arithmetic is 0/1 of the other operand's dtype).
//  - two floats: the wider; f16 with bf16, neither of which holds the other,
//    gives f32, the narrowest float that holds both (as PyTorch and JAX do).
//  - two ints of one signedness: the wider. Signed with unsigned: the
//    narrowest signed int that holds both (u8 with i32 gives i32, u16 with
//    i64 gives i64), as NumPy and PyTorch do.
DType promote(DType a, DType b);

// ---------------------------------------------------------------------------
// Shapes

using Dims = boost::container::small_vector<int64_t, 6>;

class Shape {
 public:
  Shape() = default;  // rank 0: a scalar
  Shape(std::initializer_list<int64_t> dims) : dims_(dims.begin(), dims.end()) {}
  explicit Shape(std::span<const int64_t> dims) : dims_(dims.begin(), dims.end()) {}
  explicit Shape(Dims dims) : dims_(std::move(dims)) {}

  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  bool is_scalar() const { return dims_.empty(); }
  // 0 <= axis < rank (normalise negative axes with normalize_axis first).
  int64_t operator[](int64_t axis) const {
    assert(axis >= 0 && axis < rank());
    return dims_[static_cast<size_t>(axis)];
  }
  int64_t& operator[](int64_t axis) {
    assert(axis >= 0 && axis < rank());
    return dims_[static_cast<size_t>(axis)];
  }
  std::span<const int64_t> dims() const { return {dims_.data(), dims_.size()}; }
  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + dims_.size(); }
  void push_back(int64_t d) { dims_.push_back(d); }

  // The number of elements (1 for a scalar, 0 when any dimension is 0);
  // nullopt when it overflows int64.
  std::optional<int64_t> numel() const;
  // "[128,10]"; "[]" for a scalar.
  std::string to_string() const;

  friend bool operator==(const Shape& a, const Shape& b) { return a.dims_ == b.dims_; }

 private:
  Dims dims_;
};

// The checked way in from user input: every dimension non-negative and the
// element count representable in int64.
Result<Shape> make_shape(std::span<const int64_t> dims);

// A dtype with a shape: what every IR value has.
struct TensorType {
  DType dtype = kDefaultDType;
  Shape shape;

  // "f32[128,10]", as in IR text.
  std::string to_string() const;
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

// Parses IR text's "f32[128,10]" (no spaces; "bool[]" for a scalar).
Result<TensorType> parse_tensor_type(std::string_view text);

// ---------------------------------------------------------------------------
// Broadcasting (NumPy rules: align from the right, a 1 stretches)

// The broadcast shape of a and b; nullopt when some aligned pair of
// dimensions differs with neither being 1.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);
// Why broadcast_shapes(a, b) failed, naming both operands, e.g.
// "cannot broadcast f32[3,4] with f32[5]: at axis -1 the sizes are 4 and 5,
// and neither is 1". Precondition: broadcast_shapes(a.shape, b.shape) failed.
std::string broadcast_error(const TensorType& a, const TensorType& b);

// Whether `from` stretches to exactly `to` (expand, broadcast-to): `from` has
// no more axes, and each of its dimensions equals the target's or is 1.
bool broadcastable_to(const Shape& from, const Shape& to);
// "cannot broadcast f32[3,4] to [3,5]: at axis -1 the size is 4, the target
// is 5". Precondition: broadcastable_to(from.shape, to) is false.
std::string broadcast_to_error(const TensorType& from, const Shape& to);

// ---------------------------------------------------------------------------
// Axes and reductions

using Axes = boost::container::small_vector<int64_t, 6>;

// An axis in [-rank, rank) as a non-negative one (negative counts from the
// end). Operations that insert an axis (unsqueeze, stack) pass rank + 1.
Result<int64_t> normalize_axis(int64_t axis, int64_t rank);
// Several axes, normalised, sorted and checked for repeats (1 and -1 of a
// rank-2 tensor are the same axis).
Result<Axes> normalize_axes(std::span<const int64_t> axes, int64_t rank);
// 0, 1, ..., rank-1: a reduction's default ("default all").
Axes all_axes(int64_t rank);

// The shape left by reducing `shape` over `axes` (normalised, sorted, unique):
// those dimensions are dropped, or kept as 1 with keepdims.
Shape reduce_shape(const Shape& shape, std::span<const int64_t> axes, bool keepdims);
// The same from user input: no axes means all of them; axes are normalised
// and checked (an explicit empty list reduces over nothing).
Result<Shape> reduction_shape(const Shape& shape, std::optional<std::span<const int64_t>> axes,
                              bool keepdims);

}  // namespace sexpgpu::ir
