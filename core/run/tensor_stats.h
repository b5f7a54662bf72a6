// Summary numbers of a stored tensor, for `sexpgpu checkpoint show`:
// min, max, mean and RMS over the finite values (in f64), and how many are
// not finite. bf16 and f16 are widened exactly; bool counts as 0 and 1.
#pragma once

#include <cstdint>
#include <span>

#include "ir/types.h"

namespace sexpgpu::run {

struct TensorStats {
  int64_t count = 0;                           // elements
  int64_t nonfinite = 0;                       // NaN or infinite (floats only)
  double min = 0, max = 0, mean = 0, rms = 0;  // over the finite ones; 0 when none
};

TensorStats tensor_stats(ir::DType dtype, std::span<const std::byte> data);

// The value of one little-endian element.
double element_value(ir::DType dtype, const std::byte* p);

}  // namespace sexpgpu::run
