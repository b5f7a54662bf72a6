// The reductions' factory entry points beyond kernel.h's make_reduce_kernel,
// for plans that feed a reduction something other than a node's value.
#pragma once

#include "kernel.h"

namespace sexpgpu::cuda {

// sum(square(x)) over the request's axes, reading x (request.inputs[0],
// f32 or f64) and squaring each element as it loads it: the same products
// summed in the same order as the sum of the materialised squares, so the
// result is bit for bit the same.
KernelResult make_sum_of_squares_kernel(const KernelRequest& request);

}  // namespace sexpgpu::cuda
