// The CPU device's executable form of an IR function: a plan of kernel
// calls over one arena laid out by a static, liveness-based memory plan.
// The plugin (plugin.cpp) wraps this behind sg_device_api; tests (gradient
// checks, conformance) use it directly.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace sexpgpu::cpu {

// A dense row-major host array.
struct HostTensor {
  ir::TensorType type;
  std::vector<std::byte> bytes;  // numel * size_bytes(dtype)

  static HostTensor zeros(const ir::TensorType& type);
  // Converts each double to the dtype (bf16/f16 round to nearest even).
  static HostTensor from_doubles(const ir::TensorType& type, std::span<const double> values);
  std::vector<double> to_doubles() const;
};

class Collective;  // collective.h

struct Options {
  int threads = 0;  // 0: every core the machine has
  // The other processes of the run, for the all_reduce op; null: a world
  // of one, where all_reduce only packs its operands.
  std::shared_ptr<Collective> collective;
};

class Program {
 public:
  // Verifies `fn` of `module` and plans it. The error names the node when an
  // op has no kernel for its dtypes.
  static ir::Result<std::shared_ptr<Program>> compile(const ir::Module& module, std::string_view fn,
                                                      const Options& options = {});
  virtual ~Program() = default;

  // Inputs in Function::inputs order, outputs in Function::outputs order,
  // each a caller-owned dense array of the declared type. An output may be
  // an input's array only where writes_in_place says so: each is written as
  // soon as it is computed (the plugin stages the others through a scratch
  // copy). Run-time errors (an id out of range in take) come back as the
  // message. Runs of one Program take turns (they share its arena).
  virtual std::string run(std::span<const void* const> inputs, std::span<void* const> outputs) = 0;
  // Whether output `output` may be input `input`'s own array: the plan
  // reads every element of the input before writing it (plan/in_place.h).
  virtual bool writes_in_place(size_t output, size_t input) const = 0;
  // The same with host tensors (checks their types; allocates the outputs).
  ir::Result<std::vector<HostTensor>> run(std::span<const HostTensor> inputs);

  virtual size_t arena_bytes() const = 0;       // the memory plan's size
  virtual std::string report_json() const = 0;  // lowering report: per-node kernel, offsets
  virtual const ir::Function& function() const = 0;
};

}  // namespace sexpgpu::cpu
