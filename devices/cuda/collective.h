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
  // Enqueues the sum (or, with `mean`, the mean) of `count` elements of
  // `dtype` at device pointer `data` over every rank, in place, forked from
  // `stream` onto a stream of its own so that it overlaps what follows;
  // join() then makes `stream` wait for every one enqueued so far (the
  // program joins before the first step that reads a reduced bucket, and
  // at its end). Callable during stream capture. "" or why not.
  virtual std::string reduce_bucket(void* data, size_t count, ir::DType dtype, bool mean,
                                    cudaStream_t stream) = 0;
  virtual std::string join(cudaStream_t stream) = 0;
};

}  // namespace sexpgpu::cuda
