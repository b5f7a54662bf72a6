// The reductions' factory entry points beyond kernel.h's make_reduce_kernel,
// for plans that feed a reduction something other than a node's value.
#pragma once

#include <span>

#include "cuda/kernels/reduce_launch.h"
#include "kernel.h"

namespace sexpgpu::cuda {

// sum(square(x)) over the request's axes, reading x (request.inputs[0],
// f32 or f64) and squaring each element as it loads it: the same products
// summed in the same order as the sum of the materialised squares, so the
// result is bit for bit the same.
KernelResult make_sum_of_squares_kernel(const KernelRequest& request);

// Whether the sum of squares `request` (as make_sum_of_squares_kernel takes
// it) can be one of make_multi_sum_of_squares_kernel's tensors: a sum over
// the trailing axes (or all) of a non-empty f32 or f64 tensor.
bool joins_multi_sum_of_squares(const KernelRequest& request);

// The sums of squares of the requests (each one joins, all of one dtype, at
// most kMultiReduceMaxTensors of reduce_launch.h) in one kernel: its launch
// reads LaunchArgs::inputs as x0, out0, x1, out1, ... and writes each out
// bit for bit as make_sum_of_squares_kernel's kernel would; LaunchArgs::output is unused.
KernelResult make_multi_sum_of_squares_kernel(std::span<const KernelRequest> requests);

}  // namespace sexpgpu::cuda
