// libsexpgpu-cpu.so: the CPU device behind sg_device_api (plugins.md). It
// reads the IR JSON with its own copy of the IR library, compiles functions
// to cpu::Program, and keeps buffers in host memory; runs are synchronous,
// so streams and synchronize are no-ops. Every entry point is behind the
// plugin SDK's exception firewall (plugins/sdk): a C++ exception becomes an
// sg_error, never crosses; the SDK also owns the error objects and fills
// the table's struct_size and error functions.
#include "sexpgpu/plugin.h"

#include <unistd.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "ir/abi_dtype.h"
#include "ir/json.h"
#include "plan/geometry.h"
#include "program.h"
#include "sexpgpu/sdk/errors.h"
#include "sexpgpu/sdk/tables.h"
#include "storage.h"

using sexpgpu::cpu::HostTensor;
using sexpgpu::cpu::Program;
namespace ir = sexpgpu::ir;

struct sg_buffer {
  sg_device* device;
  ir::TensorType type;
  std::vector<std::byte> bytes;
};

struct sg_program {
  sg_device* device;
  std::shared_ptr<Program> program;
  std::string report;
};

struct sg_device {
  std::mutex mutex;  // guards the sets and the counters
  int threads = 0;
  std::set<sg_program*> programs;
  std::set<sg_buffer*> buffers;
  uint64_t bytes_in_use = 0, peak_bytes_in_use = 0;
  std::string stats_json;
};

// OpenBLAS's own report of its build and of the kernel it chose for this
// processor at load time. Weak: another BLAS leaves them null.
extern "C" char* openblas_get_config(void) __attribute__((weak));
extern "C" char* openblas_get_corename(void) __attribute__((weak));

namespace {

namespace sdk = sexpgpu::sdk;

constexpr const char* kName = "cpu";
std::string g_probe_json;

sg_error* make_error(sg_error_code code, const std::string& message) {
  return sdk::make_error(code, kName, message);
}

template <class F>
sg_error* firewall(F&& body) noexcept {
  return sdk::firewall(kName, std::forward<F>(body));
}

uint64_t physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

// ---- Devices

// The CPU's "driver" is the BLAS: its matrix products are the ones whose
// results depend on the machine (OpenBLAS picks a kernel per processor, and
// kernels of other vector widths add in other orders), so `doctor` names it.
std::string blas_name() {
  if (!openblas_get_config) return "a BLAS other than OpenBLAS";
  std::string name = openblas_get_config();
  while (!name.empty() && name.back() == ' ') name.pop_back();
  if (openblas_get_corename) name += " (kernel " + std::string(openblas_get_corename()) + ")";
  return name;
}

sg_error* probe(const char** out_json, size_t* out_len) {
  return firewall([&]() -> sg_error* {
    nlohmann::json device = {{"name", "cpu"},
                             {"memory_bytes", physical_memory()},
                             {"compute_capability", ""},
                             {"driver", blas_name()},
                             {"cores", sysconf(_SC_NPROCESSORS_ONLN)}};
    g_probe_json = nlohmann::json{
        {"available", true},
        {"reason", ""},
        {"devices", nlohmann::json::array({device})},
        {"count", 1}}.dump();
    *out_json = g_probe_json.data();
    *out_len = g_probe_json.size();
    return nullptr;
  });
}

sg_error* open_device(const char* options_json, size_t options_len, sg_device** out_device) {
  return firewall([&]() -> sg_error* {
    auto device = std::make_unique<sg_device>();
    if (options_len > 0) {
      nlohmann::json options =
          nlohmann::json::parse(options_json, options_json + options_len, nullptr, false);
      if (options.is_discarded() || !options.is_object())
        return make_error(SG_ERROR_INVALID_ARGUMENT, "the options are not a JSON object");
      if (options.contains("threads")) {
        if (!options["threads"].is_number_integer() || options["threads"].get<int>() < 0)
          return make_error(SG_ERROR_INVALID_ARGUMENT,
                            "option \"threads\" must be an integer >= 0");
        device->threads = options["threads"].get<int>();
      }
    }
    *out_device = device.release();
    return nullptr;
  });
}

sg_error* close_device(sg_device* device) {
  return firewall([&]() -> sg_error* {
    for (sg_program* p : device->programs) delete p;
    for (sg_buffer* b : device->buffers) delete b;
    delete device;
    return nullptr;
  });
}

sg_error* compile(sg_device* device, const char* ir_json, size_t ir_len, const char* fn,
                  size_t fn_len, sg_program** out_program, const char** out_report_json,
                  size_t* out_report_len, uint64_t* out_memory_plan_bytes) {
  return firewall([&]() -> sg_error* {
    ir::Result<ir::Module> module = ir::module_from_json(std::string_view(ir_json, ir_len));
    if (!module) return make_error(SG_ERROR_INVALID_ARGUMENT, "reading the IR: " + module.error());
    sexpgpu::cpu::Options options;
    options.threads = device->threads;
    auto compiled = Program::compile(*module, std::string_view(fn, fn_len), options);
    if (!compiled)
      return make_error(SG_ERROR_INVALID_ARGUMENT,
                        "compiling '" + std::string(fn, fn_len) + "': " + compiled.error());
    auto program = std::make_unique<sg_program>(sg_program{device, *compiled, {}});
    program->report = program->program->report_json();
    *out_report_json = program->report.data();
    *out_report_len = program->report.size();
    *out_memory_plan_bytes = program->program->arena_bytes();
    std::lock_guard<std::mutex> lock(device->mutex);
    *out_program = program.get();
    device->programs.insert(program.release());
    return nullptr;
  });
}

void program_destroy(sg_program* program) {
  if (!program) return;
  std::lock_guard<std::mutex> lock(program->device->mutex);
  program->device->programs.erase(program);
  delete program;
}

// ---- Buffers

sg_error* alloc(sg_device* device, sg_dtype dtype, const int64_t* shape, size_t rank,
                sg_buffer** out_buffer) {
  return firewall([&]() -> sg_error* {
    std::optional<ir::DType> d = ir::dtype_of_abi(dtype);
    if (!d)
      return make_error(SG_ERROR_INVALID_ARGUMENT, "unknown dtype " + std::to_string(int(dtype)));
    ir::Result<ir::Shape> s = ir::make_shape(std::span<const int64_t>(shape, rank));
    if (!s) return make_error(SG_ERROR_INVALID_ARGUMENT, "bad shape: " + s.error());
    ir::TensorType type{*d, *s};
    HostTensor zeros = HostTensor::zeros(type);
    auto buffer = std::make_unique<sg_buffer>(sg_buffer{device, type, std::move(zeros.bytes)});
    std::lock_guard<std::mutex> lock(device->mutex);
    device->bytes_in_use += buffer->bytes.size();
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
    device->bytes_in_use -= buffer->bytes.size();
    delete buffer;
    return nullptr;
  });
}

sg_error* check_size(const sg_buffer* buffer, size_t bytes, const char* what) {
  if (bytes == buffer->bytes.size()) return nullptr;
  return make_error(SG_ERROR_INVALID_ARGUMENT,
                    std::string(what) + " of " + std::to_string(bytes) + " bytes to a buffer of " +
                        buffer->type.to_string() + " (" + std::to_string(buffer->bytes.size()) +
                        " bytes)");
}

sg_error* upload(sg_buffer* buffer, const void* host_data, size_t bytes, uint32_t) {
  return firewall([&]() -> sg_error* {
    if (sg_error* e = check_size(buffer, bytes, "upload")) return e;
    if (bytes > 0) std::memcpy(buffer->bytes.data(), host_data, bytes);
    return nullptr;
  });
}

sg_error* download(sg_buffer* buffer, void* out_host_data, size_t bytes, uint32_t) {
  return firewall([&]() -> sg_error* {
    if (sg_error* e = check_size(buffer, bytes, "download")) return e;
    if (bytes > 0) std::memcpy(out_host_data, buffer->bytes.data(), bytes);
    return nullptr;
  });
}

// ---- Running

sg_error* check_buffer(const ir::TensorType& want, const sg_buffer* b, const std::string& what) {
  if (!b) return make_error(SG_ERROR_INVALID_ARGUMENT, what + " is NULL");
  if (b->type == want) return nullptr;
  return make_error(SG_ERROR_INVALID_ARGUMENT, what + " is " + b->type.to_string() +
                                                   ", the function needs " + want.to_string());
}

sg_error* run(sg_program* program, sg_buffer* const* inputs, size_t input_count,
              sg_buffer* const* outputs, size_t output_count, uint32_t) {
  return firewall([&]() -> sg_error* {
    const ir::Function& fn = program->program->function();
    if (input_count != fn.inputs.size() || output_count != fn.outputs.size())
      return make_error(SG_ERROR_INVALID_ARGUMENT,
                        "'" + fn.name + "' takes " + std::to_string(fn.inputs.size()) +
                            " inputs and " + std::to_string(fn.outputs.size()) +
                            " outputs, given " + std::to_string(input_count) + " and " +
                            std::to_string(output_count));
    std::vector<const void*> in;
    std::vector<void*> out;
    std::set<const sg_buffer*> read(inputs, inputs + input_count);
    for (size_t k = 0; k < input_count; ++k) {
      if (sg_error* e =
              check_buffer(fn.type(fn.inputs[k]), inputs[k], "input " + std::to_string(k)))
        return e;
      in.push_back(inputs[k]->bytes.data());
    }
    // The program writes an output as soon as it is computed, while later
    // steps may still read the inputs: an output that is also an input (an
    // in-place update) is written to a scratch copy and moved in at the end.
    std::vector<std::pair<size_t, std::vector<std::byte>>> scratch;
    for (size_t j = 0; j < output_count; ++j) {
      if (sg_error* e =
              check_buffer(fn.type(fn.outputs[j].node), outputs[j],
                           "output " + std::to_string(j) + " ('" + fn.outputs[j].name + "')"))
        return e;
      if (read.count(outputs[j])) {
        scratch.push_back({j, std::vector<std::byte>(outputs[j]->bytes.size())});
        out.push_back(scratch.back().second.data());
      } else {
        out.push_back(outputs[j]->bytes.data());
      }
    }
    std::string e = program->program->run(in, out);
    if (!e.empty()) return make_error(SG_ERROR_INVALID_ARGUMENT, "running '" + fn.name + "': " + e);
    for (auto& [j, bytes] : scratch) outputs[j]->bytes = std::move(bytes);
    return nullptr;
  });
}

sg_error* synchronize(sg_device*, uint32_t) {
  return nullptr;
}

sg_error* memory_stats(sg_device* device, const char** out_json, size_t* out_len) {
  return firewall([&]() -> sg_error* {
    std::lock_guard<std::mutex> lock(device->mutex);
    device->stats_json = nlohmann::json{
        {"bytes_in_use", device->bytes_in_use},
        {"peak_bytes_in_use", device->peak_bytes_in_use},
        {"bytes_limit",
         physical_memory()}}.dump();
    *out_json = device->stats_json.data();
    *out_len = device->stats_json.size();
    return nullptr;
  });
}

// ---- Collectives over several cpu devices' buffers

sg_error* check_same(sg_buffer* const* buffers, size_t count) {
  if (count == 0) return make_error(SG_ERROR_INVALID_ARGUMENT, "no buffers");
  for (size_t i = 0; i < count; ++i) {
    if (!buffers[i])
      return make_error(SG_ERROR_INVALID_ARGUMENT, "buffer " + std::to_string(i) + " is NULL");
    if (!(buffers[i]->type == buffers[0]->type))
      return make_error(SG_ERROR_INVALID_ARGUMENT,
                        "buffer " + std::to_string(i) + " is " + buffers[i]->type.to_string() +
                            ", buffer 0 is " + buffers[0]->type.to_string());
  }
  return nullptr;
}

sg_error* all_reduce(sg_device* const*, sg_buffer* const* buffers, size_t count, sg_reduce_op op,
                     uint32_t) {
  return firewall([&]() -> sg_error* {
    if (sg_error* e = check_same(buffers, count)) return e;
    if (op != SG_REDUCE_SUM && op != SG_REDUCE_MEAN)
      return make_error(SG_ERROR_INVALID_ARGUMENT, "unknown reduce op " + std::to_string(int(op)));
    const ir::TensorType& type = buffers[0]->type;
    int64_t n = sexpgpu::cpu::numel(type.shape);
    sexpgpu::cpu::dispatch_storage(type.dtype, [&](auto tag) {
      using S = decltype(tag);
      for (int64_t i = 0; i < n; ++i) {
        double acc = 0;
        for (size_t b = 0; b < count; ++b)
          acc +=
              double(sexpgpu::cpu::widen(reinterpret_cast<const S*>(buffers[b]->bytes.data())[i]));
        if (op == SG_REDUCE_MEAN) acc /= double(count);
        S v = sexpgpu::cpu::convert<S>(acc);
        for (size_t b = 0; b < count; ++b) reinterpret_cast<S*>(buffers[b]->bytes.data())[i] = v;
      }
    });
    return nullptr;
  });
}

sg_error* broadcast(sg_device* const*, sg_buffer* const* buffers, size_t count, size_t root,
                    uint32_t) {
  return firewall([&]() -> sg_error* {
    if (sg_error* e = check_same(buffers, count)) return e;
    if (root >= count)
      return make_error(SG_ERROR_INVALID_ARGUMENT, "root " + std::to_string(root) + " of " +
                                                       std::to_string(count) + " buffers");
    for (size_t b = 0; b < count; ++b)
      if (b != root) buffers[b]->bytes = buffers[root]->bytes;
    return nullptr;
  });
}

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
                                                        .broadcast = broadcast});

constexpr sg_plugin kPlugin = sdk::describe(SG_PLUGIN_DEVICE, kName, "0.1.0", &kDeviceApi);

}  // namespace

SEXPGPU_SDK_ENTRY(kPlugin)
