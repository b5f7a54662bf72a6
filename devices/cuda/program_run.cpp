// Running a CUDA program: prepare() loads the generated kernels and
// allocates the arena and constants, enqueue() launches the steps,
// run() captures the second run of a binding as a CUDA graph and replays
// it (the graph cache), and SEXPGPU_CUDA_CHECK checks every step. Separate
// from the plan (program_plan.cpp): everything here talks to the GPU.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.h"
#include "collective.h"
#include "cuda/codegen/nvrtc_cache.h"
#include "cuda/plan/program_plan.h"
#include "profile.h"
#include "sexpgpu/sdk/log.h"

namespace sexpgpu::cuda::program_detail {
namespace {

constexpr size_t kGraphsPerProgram = 8;

// SEXPGPU_CUDA_CHECK=1: every step runs alone and its result is read back;
// the first step that writes a NaN or an infinity from finite operands
// fails the run, naming the step (docs/environment.md).
bool check_enabled() {
  const char* v = std::getenv("SEXPGPU_CUDA_CHECK");
  return v && std::string(v) == "1";
}

// How many of the float tensor's elements are NaN or infinite (0 for other
// dtypes), and the first one's index in `first`.
ir::Result<int64_t> non_finite(const void* device, const ir::TensorType& t, int64_t& first) {
  using R = ir::Result<int64_t>;
  size_t width = ir::size_bytes(t.dtype);
  bool is_float = t.dtype == ir::DType::F32 || t.dtype == ir::DType::F64 ||
                  t.dtype == ir::DType::BF16 || t.dtype == ir::DType::F16;
  int64_t n = t.shape.numel().value_or(0);
  if (!is_float || n == 0 || !device) return R(0);
  std::vector<unsigned char> host(size_t(n) * width);
  if (cudaError_t e = cudaMemcpy(host.data(), device, host.size(), cudaMemcpyDeviceToHost);
      e != cudaSuccess)
    return R::failure(cuda_error(e, "cudaMemcpy"));
  auto bad = [&](int64_t i) {
    const unsigned char* p = host.data() + size_t(i) * width;
    switch (t.dtype) {
      case ir::DType::F32: {
        float v;
        std::memcpy(&v, p, sizeof v);
        return !std::isfinite(v);
      }
      case ir::DType::F64: {
        double v;
        std::memcpy(&v, p, sizeof v);
        return !std::isfinite(v);
      }
      default: {  // bf16 and f16: all exponent bits set
        uint16_t bits;
        std::memcpy(&bits, p, sizeof bits);
        uint16_t exponent = t.dtype == ir::DType::BF16 ? 0x7f80 : 0x7c00;
        return (bits & exponent) == exponent;
      }
    }
  };
  int64_t count = 0;
  first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (bad(i)) {
      if (first < 0) first = i;
      ++count;
    }
  return R(count);
}

bool graphs_enabled() {
  const char* v = std::getenv("SEXPGPU_CUDA_GRAPHS");
  return !(v && std::string(v) == "0");
}

std::string memory_error(size_t need, const char* what) {
  size_t free_bytes = 0, total = 0;
  cudaMemGetInfo(&free_bytes, &total);
  return "E-MEMORY: the " + std::string(what) + " needs " + std::to_string(need) +
         " bytes and the device has " + std::to_string(free_bytes) + " free of " +
         std::to_string(total);
}

}  // namespace

std::string CudaProgram::prepare() {
  using clock = std::chrono::steady_clock;
  auto ms_since = [](clock::time_point t) {
    return std::chrono::duration<double, std::milli>(clock::now() - t).count();
  };
  auto start = clock::now();
  if (std::string e = ctx_.nvrtc->build(!ctx_.plan_only); !e.empty()) return e;
  const double nvrtc_ms = ms_since(start);
  size_t need = arena_bytes_ + constant_bytes_;
  if (ctx_.plan_only) {
    if (need <= ctx_.memory_bytes) return {};
    return "E-MEMORY: the memory plan of '" + fn_.name + "' needs " + std::to_string(need) +
           " bytes and the device (" + ctx_.name + ", assumed) has " +
           std::to_string(ctx_.memory_bytes);
  }
  start = clock::now();
  for (Step& s : steps_)
    if (s.kernel.prepare)
      if (std::string e = s.kernel.prepare(); !e.empty())
        return node_label(fn_, s.origin, s.op) + ": " + e;
  const double prepare_ms = ms_since(start);
  start = clock::now();
  if (arena_bytes_ > 0) {
    void* p = nullptr;
    if (cudaMalloc(&p, arena_bytes_) != cudaSuccess) {
      cudaGetLastError();
      return memory_error(arena_bytes_, ("memory plan of '" + fn_.name + "'").c_str());
    }
    arena_.reset(p);
  }
  if (constant_bytes_ > 0) {
    void* p = nullptr;
    if (cudaMalloc(&p, constant_bytes_) != cudaSuccess) {
      cudaGetLastError();
      return memory_error(constant_bytes_, "constants");
    }
    constants_.reset(p);
    for (auto& [offset, kernel] : constant_kernels_) {
      if (kernel.prepare)
        if (std::string e = kernel.prepare(); !e.empty()) return e;
      LaunchArgs args{nullptr, static_cast<char*>(p) + offset, nullptr, nullptr};
      if (std::string e = kernel.launch(args); !e.empty()) return e;
    }
    SG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(nullptr));
  }
  char line[200];
  std::snprintf(line, sizeof line,
                "'%s': generated kernels ready in %.1f ms, kernels prepared (matmul algorithms) "
                "in %.1f ms, arena and constants in %.1f ms",
                fn_.name.c_str(), nvrtc_ms, prepare_ms, ms_since(start));
  sdk::log(SG_LOG_INFO, line);
  return {};
}

std::string CudaProgram::enqueue(std::span<const void* const> inputs,
                                 std::span<void* const> outputs, cudaStream_t stream) {
  auto address = [&](const Slot& s) -> void* {
    switch (s.kind) {
      case Slot::Input: return const_cast<void*>(inputs[s.index]);
      case Slot::Output: return outputs[s.index];
      case Slot::Arena: return static_cast<char*>(arena_.get()) + s.index;
      case Slot::Constant: return static_cast<char*>(constants_.get()) + s.index;
      case Slot::None: return nullptr;
    }
    return nullptr;
  };
  std::vector<const void*> args;
  std::vector<void*> stores;
  // The results of forking steps (Kernel::forks) not yet joined, as byte
  // ranges: a step that reads into one joins first.
  std::vector<std::pair<const char*, size_t>> forked;
  auto reads_forked = [&] {
    for (const void* a : args)
      for (const auto& [begin, bytes] : forked)
        if (static_cast<const char*>(a) >= begin && static_cast<const char*>(a) < begin + bytes)
          return true;
    return false;
  };
  for (size_t k = 0; k < steps_.size(); ++k) {
    const Step& s = steps_[k];
    if (profile_)
      if (std::string e = profile_->mark(k, stream); !e.empty()) return e;
    args.clear();
    for (const Slot& in : s.inputs) args.push_back(address(in));
    if (!forked.empty() && reads_forked()) {
      if (std::string e = ctx_.collective->join(stream); !e.empty()) return e;
      forked.clear();
    }
    stores.clear();
    for (const Slot& out : s.stores) stores.push_back(address(out));
    LaunchArgs launch{args.data(), address(s.output), address(s.scratch),
                      stream,      address(s.link),   stores.data()};
    if (std::string e = s.kernel.launch(launch); !e.empty())
      return node_label(fn_, s.origin, s.op) + ": " + s.kernel.name + ": " + e;
    if (s.kernel.forks && ctx_.collective)
      forked.push_back({static_cast<const char*>(launch.output),
                        size_t(s.type.shape.numel().value_or(0)) * ir::size_bytes(s.type.dtype)});
    if (check_enabled())
      if (std::string e = check_step(k, launch, stream); !e.empty()) return e;
  }
  // Every stream forked in the run joins before it ends (a captured graph
  // must end on the stream it began on).
  if (ctx_.collective)
    if (std::string e = ctx_.collective->join(stream); !e.empty()) return e;
  if (profile_) return profile_->mark(steps_.size(), stream);
  return {};
}

std::string CudaProgram::check_step(size_t k, const LaunchArgs& launch, cudaStream_t stream) const {
  const Step& s = steps_[k];
  SG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  if (s.output.kind == Slot::None) return {};  // a multi-tensor launch: its outputs are inputs
  int64_t first = -1;
  for (size_t j = 0; j < s.input_types.size(); ++j) {
    ir::Result<int64_t> bad = non_finite(launch.inputs[j], s.input_types[j], first);
    if (!bad) return bad.error();
    if (bad.value() > 0) return {};  // not this step's doing
  }
  ir::Result<int64_t> bad = non_finite(launch.output, s.type, first);
  if (!bad) return bad.error();
  if (bad.value() == 0) return {};
  return "SEXPGPU_CUDA_CHECK: step " + std::to_string(k) + " of '" + fn_.name + "' (" +
         node_label(fn_, s.origin, s.op) + ", kernel " + s.kernel.name + ") wrote " +
         std::to_string(bad.value()) + " non-finite values of " +
         std::to_string(s.type.shape.numel().value_or(0)) + " (the first at element " +
         std::to_string(first) + ") from finite operands";
}

std::string CudaProgram::run(std::span<const void* const> inputs, std::span<void* const> outputs,
                             cudaStream_t stream) {
  if (ctx_.plan_only) return "the device was opened to plan only (no GPU): it cannot run";
  if (inputs.size() != fn_.inputs.size() || outputs.size() != fn_.outputs.size())
    return "'" + fn_.name + "' takes " + std::to_string(fn_.inputs.size()) + " inputs and " +
           std::to_string(fn_.outputs.size()) + " outputs, given " + std::to_string(inputs.size()) +
           " and " + std::to_string(outputs.size());
  if (profile_) {
    if (std::string e = enqueue(inputs, outputs, stream); !e.empty()) return e;
    return profile_->collect();
  }
  if (!graphs_enabled() || check_enabled()) return enqueue(inputs, outputs, stream);
  std::vector<const void*> key(inputs.begin(), inputs.end());
  key.insert(key.end(), outputs.begin(), outputs.end());
  for (auto it = graphs_.begin(); it != graphs_.end(); ++it) {
    if (it->key != key) continue;
    graphs_.splice(graphs_.begin(), graphs_, it);
    return cuda_error(cudaGraphLaunch(graphs_.front().exec, stream), "cudaGraphLaunch");
  }
  // The first run of a binding goes eagerly (its errors name the step); the
  // second is captured.
  if (std::find(seen_once_.begin(), seen_once_.end(), key) == seen_once_.end()) {
    seen_once_.push_back(key);
    if (seen_once_.size() > 4 * kGraphsPerProgram) seen_once_.erase(seen_once_.begin());
    return enqueue(inputs, outputs, stream);
  }
  SG_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  std::string failed = enqueue(inputs, outputs, stream);
  cudaGraph_t graph = nullptr;
  cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (!failed.empty()) {
    if (graph) cudaGraphDestroy(graph);
    return failed;
  }
  SG_CUDA_RETURN_IF_ERROR(ended);
  cudaGraphExec_t exec = nullptr;
  cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  SG_CUDA_RETURN_IF_ERROR(made);
  graphs_.emplace_front();
  graphs_.front().key = std::move(key);
  graphs_.front().exec = exec;
  if (graphs_.size() > kGraphsPerProgram) graphs_.pop_back();
  return cuda_error(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
}

}  // namespace sexpgpu::cuda::program_detail
