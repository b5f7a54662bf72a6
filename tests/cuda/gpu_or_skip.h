// What the CUDA tests that need a GPU share: why there is none to run on,
// and how a test says it skipped.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "catch.hpp"

// Catch2 v3.3+ skips a test; older versions can only say so and return.
#ifdef SKIP
#define SG_SKIP_TEST(message) SKIP(message)
#else
#define SG_SKIP_TEST(message)       \
  do {                              \
    WARN("SKIPPED: " << (message)); \
    return;                         \
  } while (0)
#endif

namespace sexpgpu::cuda::testing {

// Why there is no GPU to run on, or "".
inline std::string gpu_missing() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(e);
  if (count == 0) return "no CUDA device";
  return "";
}

}  // namespace sexpgpu::cuda::testing
