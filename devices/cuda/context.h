// What every kernel factory may consult about the device it compiles for:
// one Context per opened device (plugin.cpp owns it), alive as long as any
// program compiled on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

// Opaque library handles, so that factories not using them need no headers.
struct cublasLtContext;

namespace sexpgpu::cuda {

class NvrtcCache;  // elementwise.cpp: generated kernels compiled once per device

// The run's precision mode (run-file.md :precision): which matrix units f32
// matrix products may use. bf16 operands always use the bf16 units.
enum class Precision { F32, TF32, BF16 };

class Collective;  // collective.h

struct Context {
  // No GPU behind it: the device was opened to plan (explain --device cuda
  // on a machine without one), assuming an H200. Factories must not touch
  // the GPU; Kernel::prepare is never called.
  bool plan_only = false;
  int ordinal = 0;
  std::string name;  // "NVIDIA H200"
  size_t memory_bytes = 0;
  int sm_count = 0;                    // multiprocessors, for grid sizing
  int compute_capability = 0;          // 90 for an H100/H200
  size_t shared_memory_per_block = 0;  // the opt-in maximum, bytes
  // --deterministic: results repeat bit for bit, so no kernel may use
  // floating-point atomics or an algorithm whose summation order varies.
  bool deterministic = false;
  Precision precision = Precision::F32;
  cublasLtContext* cublas_lt = nullptr;  // shared by every matmul of the device (null: plan_only)
  void* cublas_workspace = nullptr;      // device memory every cuBLASLt call may use
  size_t cublas_workspace_bytes = 0;
  NvrtcCache* nvrtc = nullptr;
  // The other ranks of the run (collective.h): the nccl plugin's
  // communicator; null for the plain cuda device, a world of one.
  Collective* collective = nullptr;
};

}  // namespace sexpgpu::cuda
