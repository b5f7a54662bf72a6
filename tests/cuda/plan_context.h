// The CUDA tests' device without a GPU: a Context planned for an H200
// (what the factories read of it), and, when NVRTC is to compile for real,
// a fresh, empty kernel cache for it; and the kernel names of a function's
// plan on that device.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda/codegen/nvrtc_cache.h"
#include "cuda/context.h"
#include "cuda/program.h"

namespace sexpgpu::cuda::testing {

// Points $SEXPGPU_CACHE at an empty directory of this process's own.
inline void fresh_kernel_cache() {
  static std::string dir = [] {
    char name[] = "/tmp/sexpgpu-cuda-test-XXXXXX";
    return std::string(mkdtemp(name) ? name : "/tmp");
  }();
  std::filesystem::remove_all(dir + "/cuda");
  setenv("SEXPGPU_CACHE", dir.c_str(), 1);
}

// With `cache`, its generated kernels compile into a fresh cache.
inline Context plan_context(NvrtcCache* cache = nullptr) {
  Context c;
  c.plan_only = true;
  c.name = "NVIDIA H200";
  c.sm_count = 132;
  c.compute_capability = 90;
  c.shared_memory_per_block = 232448;
  c.memory_bytes = size_t(143771) << 20;
  if (cache) {
    fresh_kernel_cache();
    c.nvrtc = cache;
  }
  return c;
}

// The kernel names of a compiled program's steps, in order.
inline std::vector<std::string> step_kernels(const Program& program) {
  nlohmann::json report = nlohmann::json::parse(program.report_json());
  std::vector<std::string> kernels;
  for (const auto& s : report["steps"]) kernels.push_back(s["kernel"]);
  return kernels;
}

// Kernel names one a line, for a test's message.
inline std::string joined(const std::vector<std::string>& kernels) {
  std::string all;
  for (const std::string& k : kernels) all += k + "\n";
  return all;
}

// The kernel names of `fn`'s plan for an H200, in step order.
inline std::vector<std::string> planned_kernels(ir::Module& module, const std::string& fn) {
  NvrtcCache cache(90);
  Context ctx = plan_context(&cache);
  auto program = Program::compile(module, fn, ctx);
  INFO(program.error());
  REQUIRE(program.ok());
  return step_kernels(**program);
}

}  // namespace sexpgpu::cuda::testing
