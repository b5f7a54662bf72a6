// The other processes of a run as the CPU device's kernels reach them: the
// IR's all_reduce op (a gradient bucket) and the ABI's all_reduce and
// broadcast go through this. The plugin makes one from its open options'
// "world" (collective_gloo.cpp: Gloo over the host's store); a device of
// one process has none, and all_reduce is then the identity on its data.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "ir/types.h"

namespace sexpgpu::cpu {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Sums `count` elements of `dtype` at `data` over every rank, in place;
  // every rank ends with the same values. "" or why it failed (a rank gone,
  // the timeout passed), which the trainer reports as E-RANK.
  virtual std::string all_reduce_sum(void* data, size_t count, ir::DType dtype) = 0;
  // Copies `bytes` at `data` from rank `root` into every other rank's.
  virtual std::string broadcast(void* data, size_t bytes, int root) = 0;
};

}  // namespace sexpgpu::cpu
