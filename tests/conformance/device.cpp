// Device: a case through sg_device_api, with every handle freed on every path.
#include "device.h"

#include <cstring>
#include <memory>

#include "host/plugin_host.h"
#include "ir/abi_dtype.h"

namespace conformance {

using sexpgpu::cpu::HostTensor;
namespace ir = sexpgpu::ir;

Device::Device(std::string name, const sg_device_api* api, const std::string& options_json)
    : name_(std::move(name)), api_(api) {
  error_ = take(api_->open(options_json.data(), options_json.size(), &device_));
  if (error_.empty() && !device_) error_ = "open returned no device";
}

Device::~Device() {
  if (device_) take(api_->close(device_));
}

std::string Device::take(sg_error* e) {
  return sexpgpu::host::take_error(api_, e);
}

sg_buffer* Device::alloc(const ir::TensorType& type, std::string& error) {
  sg_buffer* b = nullptr;
  auto dims = type.shape.dims();
  error = take(
      api_->alloc(device_, sexpgpu::ir::abi_dtype(type.dtype), dims.data(), dims.size(), &b));
  return b;
}

namespace {

// The buffers and program of one run, freed when it ends.
struct Handles {
  const sg_device_api* api;
  sg_program* program = nullptr;
  std::vector<sg_buffer*> buffers;
  ~Handles() {
    for (sg_buffer* b : buffers)
      if (b) sexpgpu::host::take_error(api, api->free(b));
    if (program) api->program_destroy(program);
  }
};

}  // namespace

ir::Result<std::vector<HostTensor>> Device::run(const std::string& ir_json, const ir::Function& fn,
                                                const std::vector<HostTensor>& inputs) {
  using R = ir::Result<std::vector<HostTensor>>;
  Handles h{api_, nullptr, {}};
  const char* report = nullptr;
  size_t report_len = 0;
  uint64_t plan_bytes = 0;
  std::string e =
      take(api_->compile(device_, ir_json.data(), ir_json.size(), fn.name.data(), fn.name.size(),
                         &h.program, &report, &report_len, &plan_bytes));
  if (!e.empty()) return R::failure("compile: " + e);

  std::vector<sg_buffer*> in, out;
  for (const HostTensor& t : inputs) {
    in.push_back(alloc(t.type, e));
    h.buffers.push_back(in.back());
    if (!e.empty()) return R::failure("alloc: " + e);
    e = take(api_->upload(in.back(), t.bytes.data(), t.bytes.size(), 0));
    if (!e.empty()) return R::failure("upload: " + e);
  }
  std::vector<HostTensor> results;
  for (const ir::Output& o : fn.outputs) {
    results.push_back(HostTensor::zeros(fn.type(o.node)));
    out.push_back(alloc(results.back().type, e));
    h.buffers.push_back(out.back());
    if (!e.empty()) return R::failure("alloc: " + e);
  }
  e = take(api_->run(h.program, in.data(), in.size(), out.data(), out.size(), 0));
  if (e.empty()) e = take(api_->synchronize(device_, 0));
  if (!e.empty()) return R::failure("run: " + e);
  for (size_t k = 0; k < out.size(); ++k) {
    e = take(api_->download(out[k], results[k].bytes.data(), results[k].bytes.size(), 0));
    if (!e.empty()) return R::failure("download: " + e);
  }
  e = take(api_->synchronize(device_, 0));
  if (!e.empty()) return R::failure("synchronize: " + e);
  return results;
}

bool Device::has_fill() const {
  return sexpgpu::host::device_fill_of(api_) != nullptr;
}

std::string Device::check_fill() {
  const sg_device_fill* fill = sexpgpu::host::device_fill_of(api_);
  if (!fill) return "no sg_device_fill";
  // Odd, above one block of threads and one doubling step's power of two.
  constexpr int64_t kCount = 4099;
  for (ir::DType d : ir::kAllDTypes) {
    const std::string where = "fill " + std::string(ir::ir_name(d)) + ": ";
    Handles h{api_, nullptr, {}};
    std::string e;
    h.buffers.push_back(alloc(ir::TensorType{d, ir::Shape{kCount}}, e));
    if (!e.empty()) return where + "alloc: " + e;
    const size_t size = ir::size_bytes(d);
    // A pattern with every byte different, so a swapped or dropped byte shows.
    std::vector<std::byte> value(size);
    for (size_t k = 0; k < size; ++k) value[k] = std::byte(0x11 * (k + 1));
    if (d == ir::DType::Bool) value[0] = std::byte{1};
    e = take(fill->fill(h.buffers[0], value.data(), size, 0));
    if (!e.empty()) return where + e;
    std::vector<std::byte> got(size * kCount);
    e = take(api_->download(h.buffers[0], got.data(), got.size(), 0));
    if (e.empty()) e = take(api_->synchronize(device_, 0));
    if (!e.empty()) return where + "download: " + e;
    for (int64_t k = 0; k < kCount; ++k)
      if (std::memcmp(got.data() + k * size, value.data(), size) != 0)
        return where + "element " + std::to_string(k) + " differs from the value";
    sg_error* wrong = fill->fill(h.buffers[0], value.data(), size + 1, 0);
    if (!wrong) return where + "a value of " + std::to_string(size + 1) + " bytes was accepted";
    if (api_->error_code(wrong) != SG_ERROR_INVALID_ARGUMENT) {
      std::string m = take(wrong);
      return where + "a value of the wrong size gave not SG_ERROR_INVALID_ARGUMENT but: " + m;
    }
    take(wrong);
  }
  return "";
}

}  // namespace conformance
