// Device, Buffer and Program over sg_device_api (device.h).
#include "train/device.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "ir/abi_dtype.h"
#include "util/log.h"

namespace sexpgpu::train {

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    if (device_ && handle_) device_->free_buffer(handle_);
    device_ = o.device_;
    handle_ = o.handle_;
    type_ = std::move(o.type_);
    o.device_ = nullptr;
    o.handle_ = nullptr;
  }
  return *this;
}

Buffer::~Buffer() {
  if (device_ && handle_) device_->free_buffer(handle_);
}

Program::~Program() {
  if (handle_) device_->destroy_program(handle_);
}

Result<std::unique_ptr<Device>> Device::open(const host::PluginHost& plugins,
                                             const std::string& name,
                                             const nlohmann::json& options) {
  const host::PluginRecord* record = plugins.find(name);
  if (!record)
    return fail("E-DEVICE", "no device plugin named '" + name + "' was found on the plugin path");
  if (!record->loaded)
    return fail("E-DEVICE", "the " + name + " plugin did not load: " + record->reason);
  const sg_device_api* api = plugins.device(name);
  if (!api) return fail("E-DEVICE", "plugin '" + name + "' is not a device");
  std::unique_ptr<Device> d(new Device(name, record->version, api));
  d->fill_ = host::device_fill_of(api);
  d->in_place_ = host::program_in_place_of(api);
  const char* probe = nullptr;
  size_t probe_len = 0;
  if (Status s = d->take(api->probe(&probe, &probe_len), "probe"); !s) return s.failed();
  d->probe_ = nlohmann::json::parse(probe, probe + probe_len, nullptr, false);
  // {"plan": true} asks an unavailable device to plan without running
  // (explain --device cuda where there is no GPU); its open decides.
  bool plan = options.is_object() && options.value("plan", false);
  if (!plan && d->probe_.is_object() && d->probe_.value("available", true) == false)
    return fail("E-DEVICE",
                "device " + name + " is not available: " + d->probe_.value("reason", ""));
  std::string opts = options.dump();
  log::Stopwatch took;
  if (Status s = d->take(api->open(opts.data(), opts.size(), &d->device_), "open"); !s)
    return s.failed();
  log::info("device: opened {} {} ({}) in {:.1f} ms", name, record->version, opts, took.ms());
  return d;
}

Device::~Device() {
  if (device_) (void)take(api_->close(device_), "close");
}

Status Device::take(sg_error* e, const char* call) {
  if (!e) return ok_status();
  return fail("E-DEVICE", name_ + " device: " + call + ": " + host::take_error(api_, e));
}

Result<Buffer> Device::alloc(const ir::TensorType& type) {
  sg_buffer* b = nullptr;
  auto dims = type.shape.dims();
  Status s = take(api_->alloc(device_, ir::abi_dtype(type.dtype), dims.data(), dims.size(), &b),
                  "alloc");
  if (!s) return s.failed();
  return Buffer(this, b, type);
}

Status Device::upload(const Buffer& b, const void* data, size_t bytes) {
  return take(api_->upload(b.handle(), data, bytes, 0), "upload");
}

Status Device::download(const Buffer& b, void* data, size_t bytes) {
  return take(api_->download(b.handle(), data, bytes, 0), "download");
}

Status Device::fill(const Buffer& b, std::span<const std::byte> element) {
  if (fill_) return take(fill_->fill(b.handle(), element.data(), element.size(), 0), "fill");
  if (element.size() != ir::size_bytes(b.type().dtype))
    return fail("E-DEVICE", name_ + " device: fill of " + b.type().to_string() + " with " +
                                std::to_string(element.size()) + " bytes");
  std::vector<std::byte> values(b.bytes());
  for (size_t at = 0; at < values.size(); at += element.size())
    std::memcpy(values.data() + at, element.data(), element.size());
  if (Status e = upload(b, values.data(), values.size()); !e) return e;
  return synchronize();  // the upload reads `values` until then
}

Status Device::synchronize() {
  return take(api_->synchronize(device_, 0), "synchronize");
}

Result<std::unique_ptr<Program>> Device::compile(const std::string& ir_json,
                                                 const ir::Function& fn) {
  sg_program* p = nullptr;
  const char* report = nullptr;
  size_t report_len = 0;
  uint64_t plan = 0;
  log::Stopwatch took;
  Status s = take(api_->compile(device_, ir_json.data(), ir_json.size(), fn.name.data(),
                                fn.name.size(), &p, &report, &report_len, &plan),
                  "compile");
  if (!s) return fail(s.code(), s.error() + " (function " + fn.name + ")");
  log::debug("lower: {} on {} in {:.1f} ms ({} nodes)", fn.name, name_, took.ms(), fn.nodes.size());
  return std::make_unique<Program>(this, p, fn, report ? std::string(report, report_len) : "",
                                   plan);
}

Status Device::run(const Program& p, std::span<sg_buffer* const> inputs,
                   std::span<sg_buffer* const> outputs) {
  Status s =
      take(api_->run(p.handle(), inputs.data(), inputs.size(), outputs.data(), outputs.size(), 0),
           "run");
  if (!s) return fail(s.code(), s.error() + " (function " + p.function().name + ")");
  return s;
}

bool Device::writes_in_place(const Program& p, size_t output, size_t input) {
  uint8_t yes = 0;
  if (!in_place_) return false;
  if (sg_error* e = in_place_->in_place(p.handle(), output, input, &yes)) {
    log::warn("device {}: in_place: {}", name_, host::take_error(api_, e));
    return false;
  }
  return yes != 0;
}

std::vector<int64_t> update_in_place(Device& device, const Program& update) {
  const ir::Function& fn = update.function();
  std::vector<int64_t> over(fn.outputs.size(), -1);
  // SEXPGPU_UPDATE_IN_PLACE=0: a spare of every parameter and state (the
  // memory's A/B, docs/devices.md).
  const char* env = std::getenv("SEXPGPU_UPDATE_IN_PLACE");
  if (env && std::string(env) == "0") return over;
  std::map<std::string, size_t> input_of;  // "param:P" and "state:S" -> input number
  for (size_t k = 0; k < fn.inputs.size(); ++k) {
    const ir::Node& n = fn.node(fn.inputs[k]);
    const std::string& name = n.attrs.name.value_or("");
    if (n.op == ir::Op::Param)
      input_of["param:" + name] = k;
    else if (name.starts_with("state:"))
      input_of[name] = k;
  }
  for (size_t j = 0; j < fn.outputs.size(); ++j) {
    auto it = input_of.find(fn.outputs[j].name);
    if (it == input_of.end() || fn.type(fn.outputs[j].node) != fn.type(fn.inputs[it->second]))
      continue;
    if (device.writes_in_place(update, j, it->second)) over[j] = int64_t(it->second);
  }
  return over;
}

nlohmann::json Device::memory_stats() {
  const char* json = nullptr;
  size_t len = 0;
  if (!take(api_->memory_stats(device_, &json, &len), "memory_stats") || !json) return nullptr;
  return nlohmann::json::parse(json, json + len, nullptr, false);
}

Status Device::all_reduce(const Buffer& b, bool mean) {
  sg_buffer* buffer = b.handle();
  return take(api_->all_reduce(&device_, &buffer, 1, mean ? SG_REDUCE_MEAN : SG_REDUCE_SUM, 0),
              "all_reduce");
}

void Device::free_buffer(sg_buffer* b) {
  (void)take(api_->free(b), "free");
}

void Device::destroy_program(sg_program* p) {
  api_->program_destroy(p);
}

}  // namespace sexpgpu::train
