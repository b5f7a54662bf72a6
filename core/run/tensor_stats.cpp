// tensor_stats (see tensor_stats.h).
#include "run/tensor_stats.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace sexpgpu::run {

namespace {

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

double from_bf16(uint16_t bits) {
  uint32_t f = static_cast<uint32_t>(bits) << 16;
  float v;
  std::memcpy(&v, &f, 4);
  return v;
}

// IEEE half: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
double from_f16(uint16_t bits) {
  int sign = bits >> 15, exp = (bits >> 10) & 0x1f, mant = bits & 0x3ff;
  double v = exp == 0    ? std::ldexp(mant, -24)
             : exp == 31 ? (mant ? std::numeric_limits<double>::quiet_NaN()
                                 : std::numeric_limits<double>::infinity())
                         : std::ldexp(mant + 1024, exp - 25);
  return sign ? -v : v;
}

}  // namespace

double element_value(ir::DType dtype, const std::byte* p) {
  switch (dtype) {
    case ir::DType::F32: return load<float>(p);
    case ir::DType::BF16: return from_bf16(load<uint16_t>(p));
    case ir::DType::F16: return from_f16(load<uint16_t>(p));
    case ir::DType::F64: return load<double>(p);
    case ir::DType::I32: return load<int32_t>(p);
    case ir::DType::I64: return static_cast<double>(load<int64_t>(p));
    case ir::DType::U8: return load<uint8_t>(p);
    case ir::DType::U16: return load<uint16_t>(p);
    case ir::DType::Bool: return load<uint8_t>(p) != 0;
  }
  return 0;
}

TensorStats tensor_stats(ir::DType dtype, std::span<const std::byte> data) {
  TensorStats s;
  size_t width = ir::size_bytes(dtype);
  s.count = static_cast<int64_t>(data.size() / width);
  double sum = 0, sum_sq = 0;
  int64_t finite = 0;
  for (size_t i = 0; i + width <= data.size(); i += width) {
    double v = element_value(dtype, data.data() + i);
    if (!std::isfinite(v)) {
      ++s.nonfinite;
      continue;
    }
    s.min = finite ? std::min(s.min, v) : v;
    s.max = finite ? std::max(s.max, v) : v;
    sum += v;
    sum_sq += v * v;
    ++finite;
  }
  if (finite) {
    s.mean = sum / static_cast<double>(finite);
    s.rms = std::sqrt(sum_sq / static_cast<double>(finite));
  }
  return s;
}

}  // namespace sexpgpu::run
