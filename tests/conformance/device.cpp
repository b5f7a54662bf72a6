// Device: a case through sg_device_api, with every handle freed on every path.
#include "device.h"

#include <memory>

#include "ir/abi_dtype.h"
#include "host/plugin_host.h"

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

}  // namespace conformance
