// The CUDA device's executable form of an IR function: the same plan as
// the CPU device's (devices/cpu/program.h: lowering, liveness, one arena),
// with kernels that enqueue work on a stream, replayed as a CUDA graph once
// the buffers a run binds repeat.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "context.h"
#include "ir/graph.h"

namespace sexpgpu::cuda {

class Program {
 public:
  // Verifies and plans `fn`; unless context.plan_only, also prepares it on
  // the GPU (generated kernels loaded, library algorithms chosen, the arena
  // and constants allocated). The error names the node or says E-MEMORY.
  static ir::Result<std::shared_ptr<Program>> compile(const ir::Module& module, std::string_view fn,
                                                      Context& context);
  virtual ~Program() = default;

  // Enqueues one run on `stream`: inputs and outputs are device pointers in
  // Function::inputs / outputs order, an output the same as an input only
  // where writes_in_place says so (the plugin stages the others through a
  // temporary). Runs of one Program must not overlap in time (they share
  // its arena).
  virtual std::string run(std::span<const void* const> inputs, std::span<void* const> outputs,
                          cudaStream_t stream) = 0;
  // Whether output `output` may be input `input`'s own memory: the plan
  // reads every element of the input before writing it (plan/in_place.h).
  virtual bool writes_in_place(size_t output, size_t input) const = 0;

  virtual size_t arena_bytes() const = 0;     // the memory plan's size
  virtual size_t constant_bytes() const = 0;  // creation ops' values, on the device
  virtual std::string report_json() const = 0;
  virtual const ir::Function& function() const = 0;
};

}  // namespace sexpgpu::cuda
