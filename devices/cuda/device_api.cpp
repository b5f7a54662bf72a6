// The CUDA device behind sg_device_api (plugins.md), for the plugins built
// on it (device_api.h): libsexpgpu-cuda.so (plugin.cpp) and
// libsexpgpu-nccl.so (devices/nccl), which adds the peers of a run of
// several processes. It reads the IR JSON with its own copy of the IR
// library, compiles functions to cuda::Program, and keeps buffers in device
// memory. All work of a device goes on one stream, so runs, uploads and
// downloads happen in the order they are asked for; `synchronize` waits for
// it.
//
// Where no GPU is visible the plugin still loads (it links libcudart, so it
// needs the CUDA runtime to be installed): its probe says why it is
// unavailable, and `open` with {"plan": true} gives a device that plans for
// an H200 without running (explain --device cuda). Every entry point is
// behind an exception firewall.
#include "device_api.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "check.h"
#include "collective.h"
#include "context.h"
#include "cuda/codegen/nvrtc_cache.h"
#include "cuda/factories/kernel.h"
#include "cuda/kernels/creation_launch.h"
#include "ir/abi_dtype.h"
#include "ir/json.h"
#include "ir/passes/bucket_gradients.h"
#include "plan/in_place.h"
#include "plan/run_checks.h"
#include "program.h"
#include "roofline.h"
#include "sexpgpu/plugin.h"
#include "sexpgpu/sdk/errors.h"
#include "sexpgpu/sdk/log.h"
#include "sexpgpu/sdk/tables.h"

namespace cuda = sexpgpu::cuda;
namespace ir = sexpgpu::ir;

struct sg_buffer {
  sg_device* device;
  ir::TensorType type;
  void* data;  // device memory; null for an empty tensor
  size_t bytes;
  // Pinned host memory small transfers go through (made at the first one),
  // the event after the last upload from it, and the device's count of
  // stream synchronizes when that upload was enqueued: once the count has
  // moved on, the copy is known to be done without asking the event.
  void* staging = nullptr;
  cudaEvent_t staged = nullptr;
  uint64_t staged_at = 0;
  bool download_pending = false;
};

struct sg_program {
  sg_device* device;
  std::shared_ptr<cuda::Program> program;
  std::string report;
};

struct sg_device {
  std::mutex mutex;  // guards the sets and the counters
  cuda::Context context;
  std::unique_ptr<cuda::NvrtcCache> nvrtc;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t cublas = nullptr;
  void* workspace = nullptr;
  std::set<sg_program*> programs;
  std::set<sg_buffer*> buffers;
  uint64_t bytes_in_use = 0, peak_bytes_in_use = 0;
  // Completed waits for the whole stream (staging_ready, synchronize): work
  // enqueued before the count last moved is finished.
  uint64_t synchronized = 0;
  std::string stats_json;
  // Downloads through staging memory, copied out to the caller at
  // synchronize: (buffer, caller's memory).
  std::vector<std::pair<sg_buffer*, void*>> pending_downloads;
  // The other ranks of a run of several processes (the nccl flavour's);
  // null for a world of one.
  std::unique_ptr<cuda::Peers> peers;
  // The IR document of the last compile, read once: a run compiles all its
  // functions from one document (GPT-2's takes 60 ms to read).
  std::string ir_text;
  std::optional<ir::Module> ir_module;
};

namespace {

constexpr size_t kCublasWorkspaceBytes = size_t(64) << 20;  // Hopper kernels want 32 MiB+
// Transfers up to this size (a step's batch, its scalars) go through pinned
// staging memory of the buffer's own, so the copy engine runs them without
// holding the host; larger ones (parameters at the start and at
// checkpoints) go direct. Each staging buffer is a cudaHostAlloc of the
// buffer's size, made at its first transfer (pinning 1.49 GB took 0.76 s on
// the H200 machine, bench/probes/d2h.cu): at 16 MiB GPT-2's first
// checkpoint pinned 441 of its 444 tensors, 982 MiB; at 1 MiB only the
// norms and biases are staged.
constexpr size_t kStagedBytes = size_t(1) << 20;

std::string g_probe_json;

namespace sdk = sexpgpu::sdk;

// The plugin this copy of the device serves (device_plugin sets it once).
const cuda::Flavor* g_flavor = nullptr;
const char* name() {
  return g_flavor ? g_flavor->name : "cuda";
}

sg_error* make_error(sg_error_code code, const std::string& message) {
  return sdk::make_error(code, name(), message);
}

template <class F>
sg_error* firewall(F&& body) noexcept {
  return sdk::firewall(name(), std::forward<F>(body));
}

sg_error* cuda_failure(const std::string& message) {
  return message.empty() ? nullptr : make_error(SG_ERROR_INTERNAL, message);
}

// ---- Devices

std::string driver_version() {
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess || v == 0) return "";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// Why no GPU can serve, or "" when one can; `count` is set when it can.
std::string visible_gpus(int& count) {
  count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaSuccess && count > 0) return {};
  cudaGetLastError();
  if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || e == cudaSuccess)
    return e == cudaErrorInsufficientDriver
               ? "no NVIDIA driver is loaded (cudaErrorInsufficientDriver): this machine has no "
                 "usable GPU, or its driver is older than the CUDA runtime the plugin was built "
                 "with"
               : "no CUDA GPU is visible (cudaErrorNoDevice; check CUDA_VISIBLE_DEVICES)";
  return cuda::cuda_error(e, "cudaGetDeviceCount");
}

sg_error* probe(const char** out_json, size_t* out_len) {
  return firewall([&]() -> sg_error* {
    int count = 0;
    std::string reason = visible_gpus(count);
    nlohmann::json devices = nlohmann::json::array();
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
      nlohmann::json d = {
          {"name", p.name},
          {"memory_bytes", p.totalGlobalMem},
          {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
          {"driver", driver_version()},
          {"multiprocessors", p.multiProcessorCount}};
      // The datasheet peaks the trainer's mfu series divides by, for the
      // GPUs whose datasheet roofline.h knows.
      cuda::Context named;
      named.name = p.name;
      cuda::Roofline r = cuda::roofline_of(named);
      if (std::string(p.name).find("H100") != std::string::npos ||
          std::string(p.name).find("H200") != std::string::npos)
        d["peak_flops"] = {{"bf16", r.tensor_bf16}, {"tf32", r.tensor_tf32}, {"f32", r.fp32}};
      devices.push_back(std::move(d));
    }
    nlohmann::json probe = {
        {"available", reason.empty()}, {"reason", reason}, {"devices", devices}, {"count", count}};
    if (g_flavor && g_flavor->describe) g_flavor->describe(probe);
    g_probe_json = probe.dump();
    *out_json = g_probe_json.data();
    *out_len = g_probe_json.size();
    return nullptr;
  });
}

// The context of a device that plans for an H200 without one.
void assume_h200(cuda::Context& c) {
  c.plan_only = true;
  c.name = "NVIDIA H200";
  c.memory_bytes = size_t(143771) << 20;
  c.sm_count = 132;
  c.compute_capability = 90;
  c.shared_memory_per_block = 227 * 1024;
}

std::string open_gpu(sg_device& d) {
  cuda::Context& c = d.context;
  SG_CUDA_RETURN_IF_ERROR(cudaSetDevice(c.ordinal));
  cudaDeviceProp p{};
  SG_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&p, c.ordinal));
  c.name = p.name;
  c.memory_bytes = p.totalGlobalMem;
  c.sm_count = p.multiProcessorCount;
  c.compute_capability = p.major * 10 + p.minor;
  c.shared_memory_per_block = p.sharedMemPerBlockOptin;
  SG_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking));
  if (cublasStatus_t s = cublasLtCreate(&d.cublas); s != CUBLAS_STATUS_SUCCESS)
    return std::string("cublasLtCreate: ") + cublasLtGetStatusName(s);
  SG_CUDA_RETURN_IF_ERROR(cudaMalloc(&d.workspace, kCublasWorkspaceBytes));
  c.cublas_lt = d.cublas;
  c.cublas_workspace = d.workspace;
  c.cublas_workspace_bytes = kCublasWorkspaceBytes;
  return {};
}

void release(sg_device* d) {
  d->peers.reset();  // before the stream its work was enqueued on
  for (sg_program* p : d->programs) delete p;
  for (sg_buffer* b : d->buffers) {
    if (b->data) cudaFree(b->data);
    if (b->staging) cudaFreeHost(b->staging);
    if (b->staged) cudaEventDestroy(b->staged);
    delete b;
  }
  d->nvrtc.reset();
  if (d->workspace) cudaFree(d->workspace);
  if (d->cublas) cublasLtDestroy(d->cublas);
  if (d->stream) cudaStreamDestroy(d->stream);
  delete d;
}

// The peers of options' "world" (plugin.h, open), through the flavour's
// join: a world above one on a flavour without one (the plain cuda device)
// is refused; the nccl flavour joins every world, a world of one included.
sg_error* join_world(sg_device& d, const nlohmann::json& options) {
  nlohmann::json world = options.value("world", nlohmann::json::object());
  if (!world.is_object())
    return make_error(SG_ERROR_INVALID_ARGUMENT, "\"world\" is not an object");
  int64_t size = world.value("size", int64_t(1));
  if (!g_flavor || !g_flavor->join) {
    if (size <= 1) return nullptr;
    return make_error(SG_ERROR_UNIMPLEMENTED,
                      "a run of " + std::to_string(size) +
                          " processes on CUDA needs the nccl device (--device nccl), which "
                          "reaches the other ranks' GPUs");
  }
  if (d.context.plan_only) return nullptr;  // planning joins no one
  ir::Result<std::unique_ptr<cuda::Peers>> peers = g_flavor->join(world, d.context, d.stream);
  if (!peers) return make_error(SG_ERROR_UNAVAILABLE, peers.error());
  d.peers = std::move(peers).value();
  d.context.collective = d.peers->collective();
  return nullptr;
}

sg_error* open_device(const char* options_json, size_t options_len, sg_device** out_device) {
  return firewall([&]() -> sg_error* {
    nlohmann::json options = nlohmann::json::object();
    if (options_len > 0) {
      options = nlohmann::json::parse(options_json, options_json + options_len, nullptr, false);
      if (options.is_discarded() || !options.is_object())
        return make_error(SG_ERROR_INVALID_ARGUMENT, "the options are not a JSON object");
    }
    auto device = std::unique_ptr<sg_device, void (*)(sg_device*)>(new sg_device, release);
    cuda::Context& c = device->context;
    c.ordinal = options.value("ordinal", 0);
    c.deterministic = options.value("deterministic", false);
    std::string precision = options.value("precision", std::string("f32"));
    c.precision = precision == "tf32"   ? cuda::Precision::TF32
                  : precision == "bf16" ? cuda::Precision::BF16
                                        : cuda::Precision::F32;
    int count = 0;
    std::string reason = visible_gpus(count);
    if (!reason.empty() && options.value("plan", false)) {
      assume_h200(c);
    } else if (!reason.empty()) {
      return make_error(SG_ERROR_UNAVAILABLE, reason);
    } else if (c.ordinal < 0 || c.ordinal >= count) {
      return make_error(SG_ERROR_INVALID_ARGUMENT, "cuda:" + std::to_string(c.ordinal) +
                                                       " does not exist: " + std::to_string(count) +
                                                       " GPU(s) are visible");
    } else if (std::string e = open_gpu(*device); !e.empty()) {
      return make_error(SG_ERROR_UNAVAILABLE,
                        "opening cuda:" + std::to_string(c.ordinal) + ": " + e);
    }
    device->nvrtc = std::make_unique<cuda::NvrtcCache>(c.compute_capability);
    c.nvrtc = device->nvrtc.get();
    if (sg_error* e = join_world(*device, options)) return e;
    *out_device = device.release();
    return nullptr;
  });
}

sg_error* close_device(sg_device* device) {
  return firewall([&]() -> sg_error* {
    if (device->stream) cudaStreamSynchronize(device->stream);
    release(device);
    return nullptr;
  });
}

sg_error* compile(sg_device* device, const char* ir_json, size_t ir_len, const char* fn,
                  size_t fn_len, sg_program** out_program, const char** out_report_json,
                  size_t* out_report_len, uint64_t* out_memory_plan_bytes) {
  return firewall([&]() -> sg_error* {
    const auto start = std::chrono::steady_clock::now();
    auto ms_since = [](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t)
          .count();
    };
    std::string_view text(ir_json, ir_len);
    std::optional<ir::Module> module;
    {
      std::lock_guard<std::mutex> lock(device->mutex);
      if (device->ir_module && device->ir_text == text) module = *device->ir_module;
    }
    if (!module) {
      ir::Result<ir::Module> read = ir::module_from_json(text);
      if (!read) return make_error(SG_ERROR_INVALID_ARGUMENT, "reading the IR: " + read.error());
      module = std::move(read).value();
      std::lock_guard<std::mutex> lock(device->mutex);
      device->ir_text = std::string(text);
      device->ir_module = *module;
    }
    const double read_ms = ms_since(start);
    // Without other ranks a bucket's all_reduce is the identity: the
    // gradients stay where the backward writes them (ir::elide_buckets).
    if (!device->context.collective)
      module = ir::without_buckets(std::move(module).value(), std::string_view(fn, fn_len));
    std::lock_guard<std::mutex> lock(device->mutex);  // one NVRTC unit at a time
    if (!device->context.plan_only) cudaSetDevice(device->context.ordinal);
    auto compiled = cuda::Program::compile(*module, std::string_view(fn, fn_len), device->context);
    if (!compiled) {
      bool memory = compiled.error().rfind("E-MEMORY", 0) == 0;
      return make_error(memory ? SG_ERROR_OUT_OF_MEMORY : SG_ERROR_INVALID_ARGUMENT,
                        "compiling '" + std::string(fn, fn_len) + "': " + compiled.error());
    }
    // The start-up's breakdown, through the host's log (bench/startup.py).
    char line[200];
    std::snprintf(line, sizeof line, "compiled '%.*s' in %.1f ms (IR read in %.1f ms)", int(fn_len),
                  fn, ms_since(start), read_ms);
    sdk::log(SG_LOG_INFO, line);
    auto program = std::make_unique<sg_program>(sg_program{device, *compiled, {}});
    program->report = program->program->report_json();
    *out_report_json = program->report.data();
    *out_report_len = program->report.size();
    *out_memory_plan_bytes = program->program->arena_bytes();
    device->bytes_in_use += program->program->arena_bytes() + program->program->constant_bytes();
    device->peak_bytes_in_use = std::max(device->peak_bytes_in_use, device->bytes_in_use);
    *out_program = program.get();
    device->programs.insert(program.release());
    return nullptr;
  });
}

void program_destroy(sg_program* program) {
  if (!program) return;
  sg_device* d = program->device;
  std::lock_guard<std::mutex> lock(d->mutex);
  d->programs.erase(program);
  d->bytes_in_use -= program->program->arena_bytes() + program->program->constant_bytes();
  delete program;
}

// ---- Buffers

sg_error* alloc(sg_device* device, sg_dtype dtype, const int64_t* shape, size_t rank,
                sg_buffer** out_buffer) {
  return firewall([&]() -> sg_error* {
    if (device->context.plan_only)
      return make_error(SG_ERROR_UNAVAILABLE, "the device was opened to plan only (no GPU)");
    std::optional<ir::DType> d = ir::dtype_of_abi(dtype);
    if (!d)
      return make_error(SG_ERROR_INVALID_ARGUMENT, "unknown dtype " + std::to_string(int(dtype)));
    ir::Result<ir::Shape> s = ir::make_shape(std::span<const int64_t>(shape, rank));
    if (!s) return make_error(SG_ERROR_INVALID_ARGUMENT, "bad shape: " + s.error());
    ir::TensorType type{*d, *s};
    size_t bytes = size_t(s->numel().value_or(0)) * ir::size_bytes(*d);
    void* data = nullptr;
    if (bytes > 0) {
      if (cudaMalloc(&data, bytes) != cudaSuccess) {
        cudaGetLastError();
        size_t free_bytes = 0, total = 0;
        cudaMemGetInfo(&free_bytes, &total);
        return make_error(SG_ERROR_OUT_OF_MEMORY,
                          "E-MEMORY: a buffer of " + type.to_string() + " needs " +
                              std::to_string(bytes) + " bytes and the device has " +
                              std::to_string(free_bytes) + " free of " + std::to_string(total));
      }
      // Zeros, as the CPU device's buffers start.
      if (sg_error* e = cuda_failure(cuda::cuda_error(
              cudaMemsetAsync(data, 0, bytes, device->stream), "cudaMemsetAsync"))) {
        cudaFree(data);
        return e;
      }
    }
    auto buffer = std::make_unique<sg_buffer>(sg_buffer{device, type, data, bytes});
    std::lock_guard<std::mutex> lock(device->mutex);
    device->bytes_in_use += bytes;
    device->peak_bytes_in_use = std::max(device->peak_bytes_in_use, device->bytes_in_use);
    *out_buffer = buffer.get();
    device->buffers.insert(buffer.release());
    return nullptr;
  });
}

sg_error* free_buffer(sg_buffer* buffer) {
  return firewall([&]() -> sg_error* {
    sg_device* device = buffer->device;
    std::lock_guard<std::mutex> lock(device->mutex);
    if (!device->buffers.erase(buffer))
      return make_error(SG_ERROR_INVALID_ARGUMENT, "free of a buffer this device does not hold");
    device->bytes_in_use -= buffer->bytes;
    // The stream may still read it: wait before handing the memory back.
    cudaStreamSynchronize(device->stream);
    auto& pending = device->pending_downloads;
    pending.erase(std::remove_if(pending.begin(), pending.end(),
                                 [&](const auto& p) { return p.first == buffer; }),
                  pending.end());
    if (buffer->data) cudaFree(buffer->data);
    if (buffer->staging) cudaFreeHost(buffer->staging);
    if (buffer->staged) cudaEventDestroy(buffer->staged);
    delete buffer;
    return nullptr;
  });
}

sg_error* check_size(const sg_buffer* buffer, size_t bytes, const char* what) {
  if (bytes == buffer->bytes) return nullptr;
  return make_error(SG_ERROR_INVALID_ARGUMENT, std::string(what) + " of " + std::to_string(bytes) +
                                                   " bytes to a buffer of " +
                                                   buffer->type.to_string() + " (" +
                                                   std::to_string(buffer->bytes) + " bytes)");
}

// Copies every pending download out of its staging memory, once the
// stream is done with them.
void deliver_downloads(sg_device* d) {
  d->synchronized++;
  for (auto& [buffer, host] : d->pending_downloads) {
    std::memcpy(host, buffer->staging, buffer->bytes);
    buffer->download_pending = false;
  }
  d->pending_downloads.clear();
}

// The buffer's staging memory, free to write: made at its first use, and
// the last copy from or into it finished. A download pending in it is
// first delivered by a wait for the stream, which every download gets
// before its memory is read, so downloads record no event; an upload's
// event is asked only when no wait for the stream came after it (the
// trainer's step uploads its batch and scalars after the last step's wait).
std::string staging_ready(sg_buffer* b) {
  if (!b->staging) {
    SG_CUDA_RETURN_IF_ERROR(cudaHostAlloc(&b->staging, b->bytes, cudaHostAllocDefault));
    SG_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&b->staged, cudaEventDisableTiming));
    return {};
  }
  sg_device* d = b->device;
  if (b->download_pending) {
    SG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(d->stream));
    deliver_downloads(d);
  }
  if (b->staged_at < d->synchronized) return {};
  return cuda::cuda_error(cudaEventSynchronize(b->staged), "cudaEventSynchronize (staging)");
}

sg_error* upload(sg_buffer* buffer, const void* host_data, size_t bytes, uint32_t) {
  return firewall([&]() -> sg_error* {
    if (sg_error* e = check_size(buffer, bytes, "upload")) return e;
    if (bytes == 0) return nullptr;
    cudaStream_t stream = buffer->device->stream;
    if (bytes > kStagedBytes)
      return cuda_failure(cuda::cuda_error(
          cudaMemcpyAsync(buffer->data, host_data, bytes, cudaMemcpyHostToDevice, stream),
          "upload (cudaMemcpyAsync)"));
    if (sg_error* e = cuda_failure(staging_ready(buffer))) return e;
    std::memcpy(buffer->staging, host_data, bytes);
    std::string e = cuda::cuda_error(
        cudaMemcpyAsync(buffer->data, buffer->staging, bytes, cudaMemcpyHostToDevice, stream),
        "upload (cudaMemcpyAsync)");
    if (e.empty()) e = cuda::cuda_error(cudaEventRecord(buffer->staged, stream), "cudaEventRecord");
    buffer->staged_at = buffer->device->synchronized;
    return cuda_failure(e);
  });
}

// ABI 1.2's sg_device_fill: the kernel `full` lowers to (creation.cu).
sg_error* fill(sg_buffer* buffer, const void* value, size_t value_bytes, uint32_t) {
  return firewall([&]() -> sg_error* {
    if (std::string e = sexpgpu::plan::fill_value_problem(buffer, value_bytes); !e.empty())
      return make_error(SG_ERROR_INVALID_ARGUMENT, e);
    const int64_t n = buffer->type.shape.numel().value_or(0);
    if (n == 0) return nullptr;
    uint64_t bits = 0;
    std::memcpy(&bits, value, value_bytes);
    sg_device* d = buffer->device;
    return cuda_failure(cuda::cuda_error(cuda::launch_fill(buffer->data, n, int(value_bytes), bits,
                                                           cuda::max_blocks(d->context), d->stream),
                                         "fill (launch_fill)"));
  });
}

sg_error* download(sg_buffer* buffer, void* out_host_data, size_t bytes, uint32_t) {
  return firewall([&]() -> sg_error* {
    if (sg_error* e = check_size(buffer, bytes, "download")) return e;
    if (bytes == 0) return nullptr;
    sg_device* d = buffer->device;
    if (bytes > kStagedBytes)
      return cuda_failure(cuda::cuda_error(
          cudaMemcpyAsync(out_host_data, buffer->data, bytes, cudaMemcpyDeviceToHost, d->stream),
          "download (cudaMemcpyAsync)"));
    if (sg_error* e = cuda_failure(staging_ready(buffer))) return e;
    std::string e = cuda::cuda_error(
        cudaMemcpyAsync(buffer->staging, buffer->data, bytes, cudaMemcpyDeviceToHost, d->stream),
        "download (cudaMemcpyAsync)");
    if (!e.empty()) return cuda_failure(e);
    buffer->download_pending = true;
    d->pending_downloads.push_back({buffer, out_host_data});
    return nullptr;
  });
}

// ---- Running

sg_error* run(sg_program* program, sg_buffer* const* inputs, size_t input_count,
              sg_buffer* const* outputs, size_t output_count, uint32_t) {
  return firewall([&]() -> sg_error* {
    const ir::Function& fn = program->program->function();
    sg_device* device = program->device;
    if (std::string e =
            sexpgpu::plan::run_buffers_problem(fn, inputs, input_count, outputs, output_count);
        !e.empty())
      return make_error(SG_ERROR_INVALID_ARGUMENT, e);
    std::vector<const void*> in;
    std::vector<void*> out;
    std::set<const sg_buffer*> read(inputs, inputs + input_count);
    for (size_t k = 0; k < input_count; ++k) {
      in.push_back(inputs[k]->data);
    }
    // An output that is also an input (an in-place update) is written to a
    // temporary and copied in at the end, as later steps may still read it,
    // unless the plan reads every element of it before writing it.
    std::vector<std::pair<size_t, void*>> temporaries;
    auto free_temporaries = [&] {
      for (auto& [j, p] : temporaries) cudaFreeAsync(p, device->stream);
    };
    for (size_t j = 0; j < output_count; ++j) {
      if (read.count(outputs[j]) && outputs[j]->bytes > 0 &&
          !sexpgpu::plan::run_writes_in_place(*program->program, inputs, input_count, outputs, j)) {
        void* p = nullptr;
        if (std::string e = cuda::cuda_error(cudaMallocAsync(&p, outputs[j]->bytes, device->stream),
                                             "cudaMallocAsync");
            !e.empty()) {
          free_temporaries();
          return make_error(SG_ERROR_OUT_OF_MEMORY, e);
        }
        temporaries.push_back({j, p});
        out.push_back(p);
      } else {
        out.push_back(outputs[j]->data);
      }
    }
    std::string e = program->program->run(in, out, device->stream);
    for (auto& [j, p] : temporaries)
      if (e.empty())
        e = cuda::cuda_error(cudaMemcpyAsync(outputs[j]->data, p, outputs[j]->bytes,
                                             cudaMemcpyDeviceToDevice, device->stream),
                             "cudaMemcpyAsync");
    free_temporaries();
    if (!e.empty()) return make_error(SG_ERROR_INTERNAL, "running '" + fn.name + "': " + e);
    return nullptr;
  });
}

sg_error* synchronize(sg_device* device, uint32_t) {
  return firewall([&]() -> sg_error* {
    if (device->context.plan_only) return nullptr;
    // With peers, the wait watches them too: a rank gone or silent past the
    // timeout fails it instead of hanging in the collective.
    if (device->peers) {
      if (std::string e = device->peers->synchronize(device->stream); !e.empty())
        return make_error(SG_ERROR_UNAVAILABLE, e);
    } else if (sg_error* e = cuda_failure(cuda::cuda_error(cudaStreamSynchronize(device->stream),
                                                           "cudaStreamSynchronize"))) {
      return e;
    }
    deliver_downloads(device);
    return nullptr;
  });
}

sg_error* memory_stats(sg_device* device, const char** out_json, size_t* out_len) {
  return firewall([&]() -> sg_error* {
    std::lock_guard<std::mutex> lock(device->mutex);
    device->stats_json = nlohmann::json{{"bytes_in_use", device->bytes_in_use},
                                        {"peak_bytes_in_use", device->peak_bytes_in_use},
                                        {"bytes_limit", device->context.memory_bytes}}
                             .dump();
    *out_json = device->stats_json.data();
    *out_len = device->stats_json.size();
    return nullptr;
  });
}

// One buffer per process: with peers, over every rank (the nccl
// flavour's); without, a world of one, where both are the identity.
// Several GPUs in one process are not served yet.
sg_error* all_reduce(sg_device* const* devices, sg_buffer* const* buffers, size_t count,
                     sg_reduce_op op, uint32_t) {
  return firewall([&]() -> sg_error* {
    if (count != 1 || !buffers[0] || (op != SG_REDUCE_SUM && op != SG_REDUCE_MEAN))
      return make_error(SG_ERROR_UNIMPLEMENTED,
                        "all_reduce takes one buffer per process (several GPUs in one process "
                        "are not served yet)");
    sg_device* d = devices && devices[0] ? devices[0] : buffers[0]->device;
    if (!d->peers) return nullptr;
    sg_buffer* b = buffers[0];
    std::string e = d->peers->all_reduce(b->data, size_t(b->type.shape.numel().value_or(0)),
                                         b->type.dtype, op == SG_REDUCE_MEAN, d->stream);
    return e.empty() ? nullptr : make_error(SG_ERROR_UNAVAILABLE, e);
  });
}

sg_error* broadcast(sg_device* const* devices, sg_buffer* const* buffers, size_t count, size_t root,
                    uint32_t) {
  return firewall([&]() -> sg_error* {
    if (count != 1 || !buffers[0])
      return make_error(SG_ERROR_UNIMPLEMENTED,
                        "broadcast takes one buffer per process (several GPUs in one process "
                        "are not served yet)");
    sg_device* d = devices && devices[0] ? devices[0] : buffers[0]->device;
    if (!d->peers)
      return root == 0
                 ? nullptr
                 : make_error(SG_ERROR_INVALID_ARGUMENT,
                              "broadcast from rank " + std::to_string(root) + " in a world of one");
    std::string e = d->peers->broadcast(buffers[0]->data, buffers[0]->bytes, int(root), d->stream);
    return e.empty() ? nullptr : make_error(SG_ERROR_UNAVAILABLE, e);
  });
}

// ABI 1.3's sg_program_in_place: the plan's answer (plan/in_place.h).
sg_error* in_place(sg_program* program, size_t output, size_t input, uint8_t* out) {
  return firewall([&]() -> sg_error* {
    *out = sexpgpu::plan::in_place_answer(*program->program, output, input);
    return nullptr;
  });
}

constexpr sg_program_in_place kInPlace = sdk::program_in_place(in_place);
constexpr sg_device_fill kFill = sdk::device_fill(fill, &kInPlace.base);
constexpr sg_device_api kDeviceApi = sdk::device_table({.probe = probe,
                                                        .open = open_device,
                                                        .close = close_device,
                                                        .compile = compile,
                                                        .program_destroy = program_destroy,
                                                        .alloc = alloc,
                                                        .free = free_buffer,
                                                        .upload = upload,
                                                        .download = download,
                                                        .run = run,
                                                        .synchronize = synchronize,
                                                        .memory_stats = memory_stats,
                                                        .all_reduce = all_reduce,
                                                        .broadcast = broadcast},
                                                       &kFill.base);

}  // namespace

const sg_plugin& sexpgpu::cuda::device_plugin(const Flavor* flavor) {
  g_flavor = flavor;
  static const sg_plugin plugin =
      sdk::describe(SG_PLUGIN_DEVICE, flavor->name, "0.1.0", &kDeviceApi);
  return plugin;
}
