// Reading the arguments of tensor builtins: shapes, axes, dtypes and
// keyword options, with E-TYPE / E-SHAPE / E-DTYPE at the user's form.
#pragma once

#include <optional>
#include <string_view>

#include "stage/stager.h"

namespace sexpgpu::stage {

// A shape: a list of non-negative integers, or one integer for a 1-D shape.
ir::Shape arg_shape(Interp& in, Value v, std::string_view what);
// Integers of a list (or one integer), unchecked beyond being integers.
ir::Dims arg_ints(Interp& in, Value v, std::string_view what);
int64_t arg_int(Interp& in, Value v, std::string_view what);
double arg_number(Interp& in, Value v, std::string_view what);
// A dtype keyword (:f32 ...); `fallback` when v is nil.
ir::DType arg_dtype(Interp& in, Value v, ir::DType fallback);
// An axis of a tensor of `rank` (negative counts from the end), normalised.
int64_t arg_axis(Interp& in, Value v, int64_t rank, std::string_view what);
// :axis of a reduction: nil (all), an integer or a list of integers.
std::optional<ir::Axes> arg_reduce_axes(Interp& in, Value v, int64_t rank);

// A symbol's name as IR text spells it: "LAYER-NORM" -> "layer-norm".
std::string lower_name(std::string_view name);

// Dims from a Shape, for attributes.
inline ir::Dims dims_of(const ir::Shape& s) {
  return ir::Dims(s.begin(), s.end());
}

}  // namespace sexpgpu::stage
