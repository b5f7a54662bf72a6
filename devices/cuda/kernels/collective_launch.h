// The collective kernels' launch interface (collective.cu), plain enough for
// nvcc: the scale that turns an all_reduce bucket's sum over ranks into
// their mean (kernels_collective.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sexpgpu::cuda {

// How the bucket's elements are stored; half storage is scaled in f32 and
// rounded to nearest even, as the CPU device does.
enum class ScaleStorage : int32_t { F32, F64, BF16, F16 };

// data[i] *= k for the n > 0 elements of data.
cudaError_t launch_scale(void* data, int64_t n, ScaleStorage storage, double k, int max_blocks,
                         cudaStream_t stream);

}  // namespace sexpgpu::cuda
