// libsexpgpu-cpu.so: the CPU device behind sg_device_api (plugins.md). It
// reads the IR JSON with its own copy of the IR library, compiles functions
// to cpu::Program, and keeps buffers in host memory; runs are synchronous,
// so streams and synchronize are no-ops. Every entry point is behind the
// plugin SDK's exception firewall (plugins/sdk): a C++ exception becomes an
// sg_error, never crosses; the SDK also owns the error objects and fills
// the table's struct_size and error functions. A device opened with a
// "world" of several processes reaches the other ranks through Gloo
// (collective_gloo.h): the ABI's all_reduce and broadcast, and the IR's
// all_reduce op in its programs.
#include "sexpgpu/plugin.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cpu/collective_gloo.h"
#include "ir/abi_dtype.h"
#include "ir/json.h"
#include "ir/passes/bucket_gradients.h"
#include "plan/geometry.h"
#include "plan/in_place.h"
#include "plan/run_checks.h"
#include "program.h"
#include "sexpgpu/sdk/errors.h"
#include "sexpgpu/sdk/host_store.h"
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
  // The other ranks of the run; null in a world of one process.
  std::shared_ptr<sexpgpu::cpu::Collective> collective;
  std::set<sg_program*> programs;
  std::set<sg_buffer*> buffers;
  uint64_t bytes_in_use = 0, peak_bytes_in_use = 0;
  std::string stats_json;
};

// OpenBLAS's own report of its build and of the kernel it chose for this
// processor at load time. Weak: another BLAS leaves them null.
extern "C" char* openblas_get_config(void) __attribute__((weak));
extern "C" char* openblas_get_corename(void) __attribute__((weak));
extern "C" void openblas_set_num_threads(int threads) __attribute__((weak));

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

// When OpenBLAS does not know the processor it runs its generic kernels
// (Debian 12's 0.3.21 takes a Sapphire Rapids Xeon for a "Prescott"), far
// slower than what the processor's vector units allow: said, with the
// override, so that the choice is made knowingly ("" when it is fine).
std::string blas_note() {
  if (!openblas_get_corename || std::getenv("OPENBLAS_CORETYPE")) return "";  // chosen already
  const std::string core = openblas_get_corename();
  if (core != "Prescott" && core != "Core2" && core != "Nehalem") return "";
  __builtin_cpu_init();
  const char* better = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                       : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                         : nullptr;
  if (!better) return "";
  return "OpenBLAS does not know this processor and runs its generic " + core +
         " kernels although it has " + (std::string(better) == "SkylakeX" ? "AVX-512" : "AVX2") +
         ": OPENBLAS_CORETYPE=" + better + " selects faster ones (docs/devices.md)";
}

sg_error* probe(const char** out_json, size_t* out_len) {
  return firewall([&]() -> sg_error* {
    nlohmann::json device = {{"name", "cpu"},
                             {"memory_bytes", physical_memory()},
                             {"compute_capability", ""},
                             {"driver", blas_name()},
                             {"cores", sysconf(_SC_NPROCESSORS_ONLN)}};
    if (std::string note = blas_note(); !note.empty()) device["blas_note"] = note;
    g_probe_json = nlohmann::json{
        {"available", true},
        {"reason", ""},
        {"devices", nlohmann::json::array({device})},
        {"count", 1},
        {"collectives",
         "gloo"}}.dump();
    *out_json = g_probe_json.data();
    *out_len = g_probe_json.size();
    return nullptr;
  });
}

// An integer member of "world" in [lo, hi], or an error naming it.
sg_error* world_integer(const nlohmann::json& world, const char* key, int64_t lo, int64_t hi,
                        int64_t& out) {
  const nlohmann::json& v = world[key];
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    return make_error(SG_ERROR_INVALID_ARGUMENT,
                      std::string("option \"world\": \"") + key + "\" must be an integer from " +
                          std::to_string(lo) + " to " + std::to_string(hi) + ", not " + v.dump());
  out = v.get<int64_t>();
  return nullptr;
}

// "world": {"rank","size","local_rank","master":"host:port","timeout_ms"}
// (plugin.h). Every member present is checked; a world of one process
// (or none) leaves `world.size` 1 and needs no master.
sg_error* parse_world(const nlohmann::json& world, sexpgpu::cpu::GlooWorld& out) {
  if (!world.is_object())
    return make_error(SG_ERROR_INVALID_ARGUMENT, "option \"world\" must be a JSON object");
  for (const auto& [key, _] : world.items())
    if (key != "rank" && key != "size" && key != "local_rank" && key != "master" &&
        key != "timeout_ms")
      return make_error(SG_ERROR_INVALID_ARGUMENT,
                        "option \"world\": unknown member \"" + key +
                            "\" (rank, size, local_rank, master, timeout_ms)");
  for (const char* key : {"rank", "size"})
    if (!world.contains(key))
      return make_error(SG_ERROR_INVALID_ARGUMENT,
                        std::string("option \"world\" has no \"") + key + "\"");
  int64_t size = 0, rank = 0, local_rank = 0, timeout_ms = out.timeout.count();
  if (sg_error* e = world_integer(world, "size", 1, 65536, size)) return e;
  if (sg_error* e = world_integer(world, "rank", 0, size - 1, rank)) return e;
  if (world.contains("local_rank"))
    if (sg_error* e = world_integer(world, "local_rank", 0, size - 1, local_rank)) return e;
  if (world.contains("timeout_ms"))
    if (sg_error* e = world_integer(world, "timeout_ms", 1, 86'400'000, timeout_ms)) return e;
  out.size = int(size);
  out.rank = int(rank);
  out.local_rank = int(local_rank);
  out.timeout = std::chrono::milliseconds(timeout_ms);
  const char* form = "option \"world\": \"master\" must be \"host:port\" (port 1 to 65535)";
  if (!world.contains("master") && size == 1) return nullptr;  // nobody to meet
  if (!world.contains("master") || !world["master"].is_string())
    return make_error(SG_ERROR_INVALID_ARGUMENT, form);
  std::string master = world["master"].get<std::string>();
  size_t colon = master.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == master.size() ||
      master.size() - colon - 1 > 5 ||
      master.find_first_not_of("0123456789", colon + 1) != std::string::npos)
    return make_error(SG_ERROR_INVALID_ARGUMENT, std::string(form) + ", not \"" + master + "\"");
  int port = std::stoi(master.substr(colon + 1));
  if (port < 1 || port > 65535)
    return make_error(SG_ERROR_INVALID_ARGUMENT, std::string(form) + ", not \"" + master + "\"");
  std::string host = master.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')  // "[::1]:29500"
    host = host.substr(1, host.size() - 2);
  out.master_host = host;
  out.master_port = port;
  return nullptr;
}

sg_error* open_device(const char* options_json, size_t options_len, sg_device** out_device) {
  return firewall([&]() -> sg_error* {
    // Products are split across the device's pool, OpenBLAS called on one
    // thread from each (gemm.h), whatever host loaded the plugin.
    if (openblas_set_num_threads) openblas_set_num_threads(1);
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
      if (options.contains("world")) {
        sexpgpu::cpu::GlooWorld world;
        if (sg_error* e = parse_world(options["world"], world)) return e;
        if (world.size > 1) {
          // Waits for every rank, at most the world's timeout.
          auto collective = sexpgpu::cpu::make_gloo_collective(
              world, sdk::host_store(sdk::served_host()));
          if (!collective) return make_error(SG_ERROR_IO, collective.error());
          device->collective = *collective;
        }
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
    // Without other ranks a bucket's all_reduce is the identity: the
    // gradients stay where the backward writes them (ir::elide_buckets).
    if (!device->collective)
      module = ir::without_buckets(std::move(module).value(), std::string_view(fn, fn_len));
    sexpgpu::cpu::Options options;
    options.threads = device->threads;
    options.collective = device->collective;
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

// ABI 1.2's sg_device_fill: the element's bytes repeated, doubling the
// filled part with each copy.
sg_error* fill(sg_buffer* buffer, const void* value, size_t value_bytes, uint32_t) {
  return firewall([&]() -> sg_error* {
    if (std::string e = sexpgpu::plan::fill_value_problem(buffer, value_bytes); !e.empty())
      return make_error(SG_ERROR_INVALID_ARGUMENT, e);
    std::byte* data = buffer->bytes.data();
    const size_t total = buffer->bytes.size();
    if (total == 0) return nullptr;
    std::memcpy(data, value, value_bytes);
    for (size_t done = value_bytes; done < total; done *= 2)
      std::memcpy(data + done, data, std::min(done, total - done));
    return nullptr;
  });
}

// ---- Running

sg_error* run(sg_program* program, sg_buffer* const* inputs, size_t input_count,
              sg_buffer* const* outputs, size_t output_count, uint32_t) {
  return firewall([&]() -> sg_error* {
    const ir::Function& fn = program->program->function();
    if (std::string e =
            sexpgpu::plan::run_buffers_problem(fn, inputs, input_count, outputs, output_count);
        !e.empty())
      return make_error(SG_ERROR_INVALID_ARGUMENT, e);
    std::vector<const void*> in;
    std::vector<void*> out;
    std::set<const sg_buffer*> read(inputs, inputs + input_count);
    for (size_t k = 0; k < input_count; ++k) {
      in.push_back(inputs[k]->bytes.data());
    }
    // The program writes an output as soon as it is computed, while later
    // steps may still read the inputs: an output that is also an input (an
    // in-place update) is written to a scratch copy and moved in at the
    // end, unless the plan reads every element of it before writing it.
    std::vector<std::pair<size_t, std::vector<std::byte>>> scratch;
    for (size_t j = 0; j < output_count; ++j) {
      if (read.count(outputs[j]) &&
          !sexpgpu::plan::run_writes_in_place(*program->program, inputs, input_count, outputs, j)) {
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

// The device of a world of several processes holds one buffer of a
// collective: the others are the other ranks'.
sg_error* check_one_per_rank(const sexpgpu::cpu::Collective& c, size_t count, const char* what) {
  if (count == 1) return nullptr;
  return make_error(SG_ERROR_INVALID_ARGUMENT,
                    std::string(what) + " on a device of rank " + std::to_string(c.rank()) +
                        " of " + std::to_string(c.world_size()) +
                        " takes its one buffer (the other ranks bring theirs), given " +
                        std::to_string(count));
}

// Every rank's buffer summed (and for the mean divided by the world size,
// on the sum every rank holds alike, so the ranks stay identical).
sg_error* all_reduce_ranks(sexpgpu::cpu::Collective& c, sg_buffer* buffer, sg_reduce_op op) {
  const ir::TensorType& type = buffer->type;
  size_t n = size_t(sexpgpu::cpu::numel(type.shape));
  std::string error = c.all_reduce_sum(buffer->bytes.data(), n, type.dtype);
  if (!error.empty()) return make_error(SG_ERROR_IO, error);
  if (op == SG_REDUCE_MEAN)
    sexpgpu::cpu::dispatch_storage(type.dtype, [&](auto tag) {
      using S = decltype(tag);
      S* values = reinterpret_cast<S*>(buffer->bytes.data());
      for (size_t i = 0; i < n; ++i)
        values[i] =
            sexpgpu::cpu::convert<S>(double(sexpgpu::cpu::widen(values[i])) / c.world_size());
    });
  return nullptr;
}

sg_error* all_reduce(sg_device* const*, sg_buffer* const* buffers, size_t count, sg_reduce_op op,
                     uint32_t) {
  return firewall([&]() -> sg_error* {
    if (sg_error* e = check_same(buffers, count)) return e;
    if (op != SG_REDUCE_SUM && op != SG_REDUCE_MEAN)
      return make_error(SG_ERROR_INVALID_ARGUMENT, "unknown reduce op " + std::to_string(int(op)));
    if (sexpgpu::cpu::Collective* c = buffers[0]->device->collective.get()) {
      if (sg_error* e = check_one_per_rank(*c, count, "all_reduce")) return e;
      return all_reduce_ranks(*c, buffers[0], op);
    }
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
    if (sexpgpu::cpu::Collective* c = buffers[0]->device->collective.get()) {
      if (sg_error* e = check_one_per_rank(*c, count, "broadcast")) return e;
      if (root >= size_t(c->world_size()))
        return make_error(SG_ERROR_INVALID_ARGUMENT, "broadcast from rank " + std::to_string(root) +
                                                         " of a world of " +
                                                         std::to_string(c->world_size()));
      std::string error =
          c->broadcast(buffers[0]->bytes.data(), buffers[0]->bytes.size(), int(root));
      return error.empty() ? nullptr : make_error(SG_ERROR_IO, error);
    }
    if (root >= count)
      return make_error(SG_ERROR_INVALID_ARGUMENT, "root " + std::to_string(root) + " of " +
                                                       std::to_string(count) + " buffers");
    for (size_t b = 0; b < count; ++b)
      if (b != root) buffers[b]->bytes = buffers[root]->bytes;
    return nullptr;
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

constexpr sg_plugin kPlugin = sdk::describe(SG_PLUGIN_DEVICE, kName, "0.1.0", &kDeviceApi);

}  // namespace

SEXPGPU_SDK_ENTRY(kPlugin)
