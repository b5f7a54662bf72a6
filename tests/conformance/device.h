// One device plugin, driven only through its C table (sg_device_api):
// compile the case's IR JSON, allocate, upload, run, synchronize, download.
// Nothing here knows which device it is, so a new plugin is judged as is.
#pragma once

#include <string>
#include <vector>

#include "cpu/program.h"
#include "ir/graph.h"
#include "sexpgpu/plugin.h"

namespace conformance {

class Device {
 public:
  // Opens the plugin's device 0 with `options_json`; check error() after.
  Device(std::string name, const sg_device_api* api, const std::string& options_json);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const std::string& name() const { return name_; }
  // Why the device did not open ("" when it did).
  const std::string& error() const { return error_; }

  // Runs function "f" of the document (`fn` is its parsed form, for the
  // output types) on `inputs`; the error is the plugin's message with the
  // step that failed.
  sexpgpu::ir::Result<std::vector<sexpgpu::cpu::HostTensor>> run(
      const std::string& ir_json, const sexpgpu::ir::Function& fn,
      const std::vector<sexpgpu::cpu::HostTensor>& inputs);

  // Whether the table has sg_device_fill (ABI 1.2); a plugin without it is
  // conformant (the core uploads instead).
  bool has_fill() const;
  // The table's sg_device_fill at every dtype, on a length its doubling or
  // block loops end on a partial part of, and with a value of the wrong
  // size: "" when it holds, else what failed. Only when has_fill().
  std::string check_fill();

  // Runs with an output buffer that is also an input's (an optimizer's
  // update in place, and an input a later step still reads) give what
  // separate buffers give, bit for bit, whatever sg_program_in_place (ABI
  // 1.3) answers, and it answers 0 out of range: "" when that holds, else
  // what failed. `said` gets what the plugin answered, for the summary.
  std::string check_in_place(std::string& said);

 private:
  // run() with output k given input aliases[k]'s buffer where aliases[k] >= 0.
  sexpgpu::ir::Result<std::vector<sexpgpu::cpu::HostTensor>> run_with(
      const std::string& ir_json, const sexpgpu::ir::Function& fn,
      const std::vector<sexpgpu::cpu::HostTensor>& inputs, const std::vector<int>& aliases,
      std::vector<int>* in_place);
  std::string take(sg_error* e);
  sg_buffer* alloc(const sexpgpu::ir::TensorType& type, std::string& error);

  std::string name_;
  const sg_device_api* api_;
  sg_device* device_ = nullptr;
  std::string error_;
};

}  // namespace conformance
