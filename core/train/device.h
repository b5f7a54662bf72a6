// A device plugin as the training loop drives it: the C table of
// sg_device_api behind small C++ owners (Device, Buffer, Program), each
// call's error turned into a failed Result (code E-DEVICE) whose message
// names the call.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "host/plugin_host.h"
#include "ir/graph.h"
#include "sexpgpu/plugin.h"
#include "util/result.h"

namespace sexpgpu::train {

class Device;

// A buffer on the device, freed with it.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Device* device, sg_buffer* handle, ir::TensorType type)
      : device_(device), handle_(handle), type_(std::move(type)) {}
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  sg_buffer* handle() const { return handle_; }
  const ir::TensorType& type() const { return type_; }
  size_t bytes() const {
    return size_t(type_.shape.numel().value_or(0)) * ir::size_bytes(type_.dtype);
  }

 private:
  Device* device_ = nullptr;
  sg_buffer* handle_ = nullptr;
  ir::TensorType type_;
};

// One compiled IR function.
class Program {
 public:
  Program(Device* device, sg_program* handle, const ir::Function& fn, std::string report,
          uint64_t plan_bytes)
      : device_(device),
        handle_(handle),
        fn_(fn),
        report_(std::move(report)),
        plan_bytes_(plan_bytes) {}
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  const ir::Function& function() const { return fn_; }
  sg_program* handle() const { return handle_; }
  const std::string& report() const { return report_; }
  uint64_t plan_bytes() const { return plan_bytes_; }

 private:
  Device* device_;
  sg_program* handle_;
  ir::Function fn_;
  std::string report_;
  uint64_t plan_bytes_;
};

class Device {
 public:
  // Opens device `name` (a loaded device plugin) with its options; the
  // error says why not (plugin missing, not loaded, or open failed).
  static Result<std::unique_ptr<Device>> open(const host::PluginHost& plugins,
                                              const std::string& name,
                                              const nlohmann::json& options);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  // The plugin's probe: {"available", "reason", "devices": [...], "count"}.
  const nlohmann::json& probe() const { return probe_; }

  // Each fails with the plugin's message and the call that failed.
  Result<Buffer> alloc(const ir::TensorType& type);
  Status upload(const Buffer& b, const void* data, size_t bytes);
  Status download(const Buffer& b, void* data, size_t bytes);
  // Every element of `b` set to `element` (one element of its dtype): on the
  // device where the plugin has sg_device_fill (ABI 1.2), otherwise as an
  // upload of the repeated element, synchronised before it returns.
  Status fill(const Buffer& b, std::span<const std::byte> element);
  Status synchronize();
  Result<std::unique_ptr<Program>> compile(const std::string& ir_json, const ir::Function& fn);
  Status run(const Program& p, std::span<sg_buffer* const> inputs,
             std::span<sg_buffer* const> outputs);
  // Whether `run` writes output `output` straight over input `input` when
  // given one buffer for both (ABI 1.3's sg_program_in_place); false for a
  // plugin without it, which may stage the output through a temporary.
  bool writes_in_place(const Program& p, size_t output, size_t input);
  nlohmann::json memory_stats();
  // Every rank's `b` summed (or averaged) into every rank's `b`, on the
  // default stream (the ABI's all_reduce: outside a step's own collectives).
  Status all_reduce(const Buffer& b, bool mean);

  // For the owners above.
  void free_buffer(sg_buffer* b);
  void destroy_program(sg_program* p);

 private:
  Device(std::string name, std::string version, const sg_device_api* api)
      : name_(std::move(name)), version_(std::move(version)), api_(api) {}
  // The failure of call `call` (E-DEVICE), or success when `e` is null.
  Status take(sg_error* e, const char* call);

  std::string name_, version_;
  const sg_device_api* api_;
  sg_device* device_ = nullptr;
  const sg_device_fill* fill_ = nullptr;           // on the table's chain, or none
  const sg_program_in_place* in_place_ = nullptr;  // likewise
  nlohmann::json probe_;
};

// Per output of the update, the input it is written over in place (the
// parameter or state it updates) where the device writes it so, -1
// elsewhere: the trainer then holds one buffer for both, not two. None
// under SEXPGPU_UPDATE_IN_PLACE=0.
std::vector<int64_t> update_in_place(Device& device, const Program& update);

}  // namespace sexpgpu::train
