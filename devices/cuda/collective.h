// The other GPUs of a run as the CUDA device's kernels reach them: the IR's
// all_reduce op (a gradient bucket) enqueues through this. The nccl plugin
// (devices/nccl) makes one from a NCCL communicator; the plain cuda device
// has none, and all_reduce is then the identity on its data (a world of
// one).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "ir/types.h"

namespace sexpgpu::cuda {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int world_size() const = 0;
  // Enqueues on `stream` the sum of `count` elements of `dtype` at device
  // pointer `data` over every rank, in place. Callable during stream
  // capture. "" or why it could not be enqueued.
  // A collective may run on a stream of its own, forked from `stream`, so
  // that it overlaps what follows; join() then makes `stream` wait for
  // every one enqueued so far. The program joins before the first step
  // that reads a reduced bucket, and at its end.
  virtual std::string all_reduce_sum(void* data, size_t count, ir::DType dtype,
                                     cudaStream_t stream) = 0;
  virtual std::string join(cudaStream_t stream) = 0;
};

}  // namespace sexpgpu::cuda
