// The IR's dtype, shape, broadcasting and axis rules (see types.h). Messages
// built here are the text of E-SHAPE and E-DTYPE diagnostics: they name both
// operands with their dtypes and shapes and say which axis disagrees.
#include "ir/types.h"

#include <algorithm>
#include <charconv>

namespace sexpgpu::ir {

// ---------------------------------------------------------------------------
// Dtypes

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

DType promote_floats(DType a, DType b) {
  if (a == DType::F64 || b == DType::F64) return DType::F64;
  if (size_bytes(a) != size_bytes(b)) return size_bytes(a) > size_bytes(b) ? a : b;
  // Same width, different formats (f16 and bf16): neither holds the other.
  return DType::F32;
}

DType promote_ints(DType a, DType b) {
  if (is_signed(a) == is_signed(b)) return size_bytes(a) >= size_bytes(b) ? a : b;
  DType s = is_signed(a) ? a : b;
  DType u = is_signed(a) ? b : a;
  // The narrowest signed int that holds every value of both.
  DType best = s;
  bool found = false;
  for (DType d : kAllDTypes) {
    if (!is_int(d) || !is_signed(d)) continue;
    if (size_bytes(d) <= size_bytes(u) || size_bytes(d) < size_bytes(s)) continue;
    if (!found || size_bytes(d) < size_bytes(best)) best = d, found = true;
  }
  // Every unsigned dtype of dtypes.def is narrower than i64, so one is found;
  // a u64 row would need a rule here (NumPy falls back to f64, JAX to f32).
  assert(found);
  return best;
}

}  // namespace

std::optional<DType> parse_dtype(std::string_view text) {
  if (!text.empty() && text.front() == ':') text.remove_prefix(1);
  for (DType d : kAllDTypes)
    if (iequals(text, lisp_keyword(d).substr(1))) return d;
  return std::nullopt;
}

std::optional<DType> parse_dtype_ir(std::string_view text) {
  for (DType d : kAllDTypes)
    if (text == ir_name(d)) return d;
  return std::nullopt;
}

std::string unknown_dtype_message(std::string_view text) {
  std::string m = "unknown dtype ";
  m += text;
  m += " (the dtypes are";
  for (DType d : kAllDTypes) {
    m += ' ';
    m += lisp_keyword(d);
  }
  m += ')';
  return m;
}

DType promote(DType a, DType b) {
  if (a == b) return a;
  DTypeCategory ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  switch (ca) {
    case DTypeCategory::Float: return promote_floats(a, b);
    case DTypeCategory::Int: return promote_ints(a, b);
    case DTypeCategory::Bool: return a;  // one bool dtype: a == b, handled above
  }
  return a;
}

// ---------------------------------------------------------------------------
// Shapes

std::optional<int64_t> Shape::numel() const {
  // A zero anywhere means no elements, however large the rest (and the answer
  // must not depend on the order of the dimensions).
  if (std::find(dims_.begin(), dims_.end(), 0) != dims_.end()) return 0;
  int64_t n = 1;
  for (int64_t d : dims_)
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(dims_[i]);
  }
  s += ']';
  return s;
}

Result<Shape> make_shape(std::span<const int64_t> dims) {
  Shape shape(dims);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0)
      return Result<Shape>::failure("invalid shape " + shape.to_string() + ": dimension " +
                                    std::to_string(i) + " is negative");
  }
  if (!shape.numel())
    return Result<Shape>::failure("invalid shape " + shape.to_string() +
                                  ": it has more elements than fit in a 64-bit integer");
  return shape;
}

std::string TensorType::to_string() const {
  std::string s(ir_name(dtype));
  s += shape.to_string();
  return s;
}

Result<TensorType> parse_tensor_type(std::string_view text) {
  auto fail = [&](std::string_view why) {
    return Result<TensorType>::failure("invalid tensor type \"" + std::string(text) +
                                       "\": " + std::string(why));
  };
  size_t open = text.find('[');
  if (open == std::string_view::npos || text.back() != ']')
    return fail("expected a dtype then [dims], as in f32[128,10]");
  std::optional<DType> dtype = parse_dtype_ir(text.substr(0, open));
  if (!dtype) return fail("unknown dtype");
  std::string_view body = text.substr(open + 1, text.size() - open - 2);
  Dims dims;
  while (!body.empty()) {
    int64_t d = 0;
    auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), d);
    if (ec != std::errc() || d < 0) return fail("a dimension is not a non-negative integer");
    dims.push_back(d);
    body.remove_prefix(static_cast<size_t>(end - body.data()));
    if (body.empty()) break;
    if (body.front() != ',' || body.size() == 1) return fail("dimensions are separated by ','");
    body.remove_prefix(1);
  }
  Result<Shape> shape = make_shape({dims.data(), dims.size()});
  if (!shape) return fail(shape.error());
  return TensorType{*dtype, std::move(shape).value()};
}

// ---------------------------------------------------------------------------
// Broadcasting

namespace {

// The dimension of `s` at `from_right` axes from its end (0 = last), or 1
// where `s` has no such axis: NumPy's implicit leading ones.
int64_t dim_from_right(const Shape& s, int64_t from_right) {
  int64_t axis = s.rank() - 1 - from_right;
  return axis >= 0 ? s[axis] : 1;
}

// The first axis (counted from the right) where a and b conflict; -1 if none.
int64_t first_conflict(const Shape& a, const Shape& b) {
  int64_t n = std::max(a.rank(), b.rank());
  for (int64_t i = 0; i < n; ++i) {
    int64_t x = dim_from_right(a, i), y = dim_from_right(b, i);
    if (x != y && x != 1 && y != 1) return i;
  }
  return -1;
}

}  // namespace

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  int64_t n = std::max(a.rank(), b.rank());
  Dims out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t x = dim_from_right(a, i), y = dim_from_right(b, i);
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[static_cast<size_t>(n - 1 - i)] = x == 1 ? y : x;
  }
  return Shape(std::move(out));
}

std::string broadcast_error(const TensorType& a, const TensorType& b) {
  std::string m = "cannot broadcast " + a.to_string() + " with " + b.to_string();
  int64_t i = first_conflict(a.shape, b.shape);
  if (i < 0) return m;  // precondition broken; still name both operands
  m += ": at axis " + std::to_string(-1 - i) + " the sizes are " +
       std::to_string(dim_from_right(a.shape, i)) + " and " +
       std::to_string(dim_from_right(b.shape, i)) + ", and neither is 1";
  return m;
}

bool broadcastable_to(const Shape& from, const Shape& to) {
  if (from.rank() > to.rank()) return false;
  for (int64_t i = 0; i < from.rank(); ++i) {
    int64_t x = dim_from_right(from, i);
    if (x != 1 && x != dim_from_right(to, i)) return false;
  }
  return true;
}

std::string broadcast_to_error(const TensorType& from, const Shape& to) {
  std::string m = "cannot broadcast " + from.to_string() + " to " + to.to_string();
  if (from.shape.rank() > to.rank())
    return m + ": it has " + std::to_string(from.shape.rank()) + " axes, the target only " +
           std::to_string(to.rank());
  for (int64_t i = 0; i < from.shape.rank(); ++i) {
    int64_t x = dim_from_right(from.shape, i), y = dim_from_right(to, i);
    if (x != 1 && x != y)
      return m + ": at axis " + std::to_string(-1 - i) + " the size is " + std::to_string(x) +
             ", the target is " + std::to_string(y) + " (only a size of 1 stretches)";
  }
  return m;
}

// ---------------------------------------------------------------------------
// Axes and reductions

namespace {

std::string axis_range(int64_t rank) {
  if (rank == 0) return "a tensor of rank 0 has no axes";
  return "valid axes for rank " + std::to_string(rank) + " are " + std::to_string(-rank) + " to " +
         std::to_string(rank - 1);
}

}  // namespace

Result<int64_t> normalize_axis(int64_t axis, int64_t rank) {
  assert(rank >= 0);
  if (axis < -rank || axis >= rank)
    return Result<int64_t>::failure("axis " + std::to_string(axis) + " is out of range (" +
                                    axis_range(rank) + ")");
  return axis < 0 ? axis + rank : axis;
}

Result<Axes> normalize_axes(std::span<const int64_t> axes, int64_t rank) {
  Axes out;
  for (size_t i = 0; i < axes.size(); ++i) {
    Result<int64_t> a = normalize_axis(axes[i], rank);
    if (!a) return Result<Axes>::failure(a.error());
    for (size_t j = 0; j < i; ++j) {
      if (out[j] == *a) {
        std::string same =
            axes[j] == axes[i] ? "" : " (the same axis as " + std::to_string(axes[j]) + ")";
        return Result<Axes>::failure("axis " + std::to_string(axes[i]) + " is given twice" + same);
      }
    }
    out.push_back(*a);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Axes all_axes(int64_t rank) {
  Axes out;
  for (int64_t i = 0; i < rank; ++i) out.push_back(i);
  return out;
}

Shape reduce_shape(const Shape& shape, std::span<const int64_t> axes, bool keepdims) {
  Shape out;
  size_t next = 0;  // axes are sorted: walk them alongside the dimensions
  for (int64_t i = 0; i < shape.rank(); ++i) {
    bool reduced = next < axes.size() && axes[next] == i;
    if (reduced) ++next;
    if (!reduced)
      out.push_back(shape[i]);
    else if (keepdims)
      out.push_back(1);
  }
  assert(next == axes.size());
  return out;
}

Result<Shape> reduction_shape(const Shape& shape, std::optional<std::span<const int64_t>> axes,
                              bool keepdims) {
  if (!axes) {
    Axes all = all_axes(shape.rank());
    return reduce_shape(shape, {all.data(), all.size()}, keepdims);
  }
  Result<Axes> norm = normalize_axes(*axes, shape.rank());
  if (!norm) return Result<Shape>::failure(norm.error());
  return reduce_shape(shape, {norm->data(), norm->size()}, keepdims);
}

}  // namespace sexpgpu::ir
