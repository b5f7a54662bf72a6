// Kernels generated while a program compiles (the elementwise groups of
// elementwise.h), compiled by NVRTC for the device's architecture. A build
// splits its kernels into a few translation units, compiled on as many
// threads (NVRTC is single-threaded within one program) and loaded as one
// CUDA library each. Compiled images are cached on disk (disk_cache.h), so a
// second run of the same step starts in milliseconds; the key covers the
// unit's source, the architecture and NVRTC's version, and the split depends
// only on the kernels, never on the machine, so every machine finds the
// same entries.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

namespace sexpgpu::cuda {

// One generated __global__ function; `function` is set by NvrtcCache::build
// (null until then, and always in plan-only mode).
struct GeneratedKernel {
  std::string name;  // its extern "C" symbol
  cudaKernel_t function = nullptr;
};

struct NvrtcStats {
  int builds = 0, cache_hits = 0;  // units compiled and units read from the cache
  int kernels = 0;
  double compile_ms = 0;  // wall time of the compiling, all builds
};

class NvrtcCache {
 public:
  // `arch` is the compute capability as 90 for sm_90.
  explicit NvrtcCache(int arch) : arch_(arch) {}
  ~NvrtcCache();
  NvrtcCache(const NvrtcCache&) = delete;
  NvrtcCache& operator=(const NvrtcCache&) = delete;

  // Registers a kernel: `source` defines extern "C" __global__ `name` and
  // may use the prelude (elementwise_prelude.cuh); an empty `source` says
  // that the source of the kernel added just before defines `name` too. The
  // same name twice is one kernel.
  std::shared_ptr<GeneratedKernel> add(const std::string& name, const std::string& source);
  // Compiles every kernel added since the last build; with `load`, loads
  // them and sets each kernel's function. "" or the first failure (with
  // NVRTC's log).
  std::string build(bool load);
  const NvrtcStats& stats() const { return stats_; }

  // The source every generated unit starts with.
  static const std::string& prelude();

 private:
  int arch_;
  std::vector<std::shared_ptr<GeneratedKernel>> pending_;
  std::vector<std::string> pending_sources_;
  std::vector<std::shared_ptr<GeneratedKernel>> all_;
  std::vector<cudaLibrary_t> libraries_;
  NvrtcStats stats_;
};

}  // namespace sexpgpu::cuda
