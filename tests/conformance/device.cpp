// Device: a case through sg_device_api, with every handle freed on every path.
#include "device.h"

#include <cstring>
#include <memory>

#include "host/plugin_host.h"
#include "ir/abi_dtype.h"
#include "ir/json.h"

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
  return run_with(ir_json, fn, inputs, std::vector<int>(fn.outputs.size(), -1), nullptr);
}

ir::Result<std::vector<HostTensor>> Device::run_with(const std::string& ir_json,
                                                     const ir::Function& fn,
                                                     const std::vector<HostTensor>& inputs,
                                                     const std::vector<int>& aliases,
                                                     std::vector<int>* in_place) {
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
  for (size_t k = 0; k < fn.outputs.size(); ++k) {
    results.push_back(HostTensor::zeros(fn.type(fn.outputs[k].node)));
    if (aliases[k] >= 0) {
      out.push_back(in[size_t(aliases[k])]);
      continue;
    }
    out.push_back(alloc(results.back().type, e));
    h.buffers.push_back(out.back());
    if (!e.empty()) return R::failure("alloc: " + e);
  }
  if (in_place)
    if (const sg_program_in_place* ext = sexpgpu::host::program_in_place_of(api_))
      for (size_t k = 0; k < aliases.size(); ++k) {
        if (aliases[k] < 0) continue;
        uint8_t yes = 0;
        e = take(ext->in_place(h.program, k, size_t(aliases[k]), &yes));
        if (!e.empty()) return R::failure("in_place: " + e);
        in_place->push_back(yes);
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

std::string Device::check_in_place(std::string& said) {
  const ir::TensorType t{ir::DType::F32, ir::Shape{{4099}}};
  auto module_of = [&](bool later_reader) {
    ir::Module m;
    ir::Function& fn = m.functions.emplace_back();
    fn.name = "f";
    ir::Builder b(fn);
    ir::NodeId p = b.input("p", t), moment = b.input("m", t), g = b.input("g", t);
    auto k = [&](double v) { return b.scalar(v, ir::DType::F32); };
    if (later_reader) {
      fn.outputs.push_back({"y", b.must(ir::Op::Add, {p, k(1.0)})});
      fn.outputs.push_back({"s", b.must(ir::Op::Sum, {b.must(ir::Op::Mul, {p, g})})});
      fn.outputs.push_back({"m", moment});
    } else {
      ir::NodeId m2 = b.must(ir::Op::Add, {b.must(ir::Op::Mul, {moment, k(0.9)}), g});
      fn.outputs.push_back({"p", b.must(ir::Op::Sub, {p, b.must(ir::Op::Mul, {m2, k(0.1)})})});
      fn.outputs.push_back({"m", m2});
    }
    return m;
  };
  std::vector<HostTensor> inputs;
  for (int k = 0; k < 3; ++k) {
    std::vector<double> v(4099);
    for (size_t i = 0; i < v.size(); ++i) v[i] = double((i * 7 + size_t(k) * 13) % 23) / 8.0 - 1.0;
    inputs.push_back(HostTensor::from_doubles(t, v));
  }
  const sg_program_in_place* ext = sexpgpu::host::program_in_place_of(api_);
  said = ext ? "" : "no sg_program_in_place (ABI 1.3); ";
  for (bool later_reader : {false, true}) {
    ir::Module m = module_of(later_reader);
    const ir::Function& fn = m.functions[0];
    const std::string json = ir::to_json(m).dump();
    const std::string where = later_reader ? "in place, a later reader: " : "in place, an update: ";
    auto apart = run(json, fn, inputs);
    if (!apart) return where + apart.error();
    // Output 0 over input 0; the update's moment over input 1 too.
    std::vector<int> aliases = later_reader ? std::vector<int>{0, -1, -1} : std::vector<int>{0, 1};
    std::vector<int> answers;
    auto together = run_with(json, fn, inputs, aliases, &answers);
    if (!together) return where + together.error();
    for (size_t k = 0; k < apart->size(); ++k)
      if ((*apart)[k].bytes != (*together)[k].bytes)
        return where + "output " + fn.outputs[k].name + " differs from the run with its own buffer";
    int yes = 0;
    for (int a : answers) yes += a;
    if (ext)
      said += std::string(later_reader ? "a later reader " : "an update ") + std::to_string(yes) +
              " of " + std::to_string(answers.size()) + " in place; ";
  }
  if (ext) {
    // Numbers out of range: 0, not a crash.
    ir::Module m = module_of(false);
    const std::string json = ir::to_json(m).dump();
    Handles h{api_, nullptr, {}};
    const char* report = nullptr;
    size_t report_len = 0;
    uint64_t plan_bytes = 0;
    std::string e = take(api_->compile(device_, json.data(), json.size(), "f", 1, &h.program,
                                       &report, &report_len, &plan_bytes));
    if (!e.empty()) return "in place: compile: " + e;
    for (auto [output, input] : {std::pair<size_t, size_t>{2, 0}, {0, 3}, {size_t(-1), 0}}) {
      uint8_t yes = 1;
      e = take(ext->in_place(h.program, output, input, &yes));
      if (!e.empty() || yes != 0)
        return "in place: output " + std::to_string(output) + " over input " +
               std::to_string(input) + " (out of range) answered " +
               (e.empty() ? std::to_string(yes) : e);
    }
  }
  said += "aliased runs agree";
  return "";
}

}  // namespace conformance
