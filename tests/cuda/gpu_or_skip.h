// What the CUDA tests that need a GPU share: why there is none to run on,
// how a test says it skipped, and a Context for the GPU there is.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "catch.hpp"
#include "cuda/context.h"

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

// A deterministic Context for GPU 0 (what the factories read of it), for
// tests that build kernels one by one.
inline Context gpu_context() {
  cudaDeviceProp prop{};
  REQUIRE(cudaGetDeviceProperties(&prop, 0) == cudaSuccess);
  Context c;
  c.name = prop.name;
  c.sm_count = prop.multiProcessorCount;
  c.compute_capability = prop.major * 10 + prop.minor;
  c.shared_memory_per_block = prop.sharedMemPerBlockOptin;
  c.deterministic = true;
  return c;
}

}  // namespace sexpgpu::cuda::testing
