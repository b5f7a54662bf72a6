// The random kernels' launch interface (random.cu), plain enough for nvcc:
// what kernels_random.cpp resolves at compile time, and the launcher of the
// Philox draws (core/ir/philox.h, devices/cpu/kernels_random.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sexpgpu::cuda {

// What element i is, by the op and the output's dtype (as on the CPU):
//   UniformF32: lo + span*u in f32, u the top `uniform_bits` bits of word
//     i%4 of block i/4 (24 for f32, 8 for bf16, 11 for f16), then rounded
//     to the storage (F32, BF16, F16).
//   UniformF64: lo + span*u in f64, u the 53-bit uniform of philox.h.
//   NormalF32: mean + stddev*z in f32, z = rng_normal_f32, then rounded.
//   NormalF64: mean + stddev*z in f64, z = rng_normal_f64.
//   Bernoulli: `one` when the 24-bit f32 uniform of element i is below p,
//     else zero; any dtype, by element size.
enum class RandomDraw : int { UniformF32, UniformF64, NormalF32, NormalF64, Bernoulli };
enum class FloatStorage : int { F32, BF16, F16 };

struct RandomParams {
  const int64_t* state = nullptr;  // device i64[3]: (seed, step, microbatch)
  void* out = nullptr;
  int64_t n = 0;  // > 0
  uint64_t stream = 0;
  RandomDraw draw = RandomDraw::UniformF32;
  FloatStorage storage = FloatStorage::F32;  // UniformF32, NormalF32
  int uniform_bits = 24;
  float lo_f32 = 0, span_f32 = 1, mean_f32 = 0, stddev_f32 = 1;
  double lo = 0, span = 1, mean = 0, stddev = 1, p = 0.5;
  int elem_bytes = 4;    // Bernoulli
  uint64_t one = 1;      // Bernoulli: the bits of 1 in the dtype
  uint64_t invalid = 0;  // every element's bits when the state is out of range (below)
  int max_blocks = 1024;
};

// A state with step outside [0, 2^48) or microbatch outside [0, 2^16) has
// no Philox counter: the CPU reports it; a kernel cannot, so it writes
// `invalid` (a NaN for float dtypes) to every element.
cudaError_t launch_random(const RandomParams& p, cudaStream_t stream);

}  // namespace sexpgpu::cuda
