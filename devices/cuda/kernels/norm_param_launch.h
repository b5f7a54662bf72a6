// The plain interface between layer_norm_param_grad's factory
// (kernels_norm_param.cpp) and its kernels (norm_param.cu): x and g [rows,
// dim] -> [2, dim], the column sums of g xhat and of g, in f32 or f64. An
// f32 kernel may read x and g stored in bf16 or f16 (not both in one
// kernel): exactly their f32 values, so it gives the bits of the f32
// kernel on operands cast to f32 first.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace sexpgpu::cuda {

// Rows of up to 32 * this many elements take the one-pass kernel (a row
// in a warp's registers, this many elements a lane); longer ones take the
// two-pass path (the row statistics to scratch, then a thread per column).
inline constexpr int kNormParamMaxPerLaneF32 = 32;
inline constexpr int kNormParamMaxPerLaneF64 = 16;

// How x or g is stored: f64 kernels read F64 only, f32 ones the rest.
enum class NormParamStorage : int32_t { F32, F64, BF16, F16 };

struct NormParamGradParams {
  bool f64 = false;
  NormParamStorage x = NormParamStorage::F32, g = NormParamStorage::F32;
  int64_t rows = 0, dim = 0;
  double eps = 1e-5;
  // One pass: each lane's share of a row (8, 16, 24 or 32), 0 for the
  // two-pass path.
  int per_lane = 0;
  // The partial sums, [parts, 2, dim] in scratch, that the last kernel adds
  // in order: one per block of the one-pass kernel, one per split of the
  // rows in the two-pass path (0 when there are no rows: zeros).
  int64_t parts = 0;
  int64_t rows_per_part = 0;  // the two-pass path's splits
};

// The launch plan for x [rows, dim] on a GPU of `sm_count`
// multiprocessors; rows * dim > 0 or dim > 0 with no rows.
NormParamGradParams plan_norm_param_grad(bool f64, int64_t rows, int64_t dim, double eps,
                                         int sm_count);

size_t norm_param_grad_scratch_bytes(const NormParamGradParams& params);

// Enqueues the kernels; scratch holds norm_param_grad_scratch_bytes.
cudaError_t launch_norm_param_grad(const NormParamGradParams& params, const void* x, const void* g,
                                   void* out, void* scratch, cudaStream_t stream);

// The last kernel alone: out [2, dim] = the sum in order over p <
// params.parts of partials [parts, 2, dim] in the compute dtype, as
// another kernel left them (a linked layer_norm_grad, nn_launch.h). Only
// f64, parts and dim of params are read.
cudaError_t launch_norm_param_grad_finish(const NormParamGradParams& params, const void* partials,
                                          void* out, cudaStream_t stream);

}  // namespace sexpgpu::cuda
