// The plain interface between the fused neural ops' factory
// (kernels_nn.cpp) and their kernels (nn.cu): softmax and log_softmax over
// one axis, cross_entropy and its gradient, layer_norm (and its gradient
// with respect to x) and rms_norm, in f32 or f64.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace sexpgpu::cuda {

// Threads per block of the kernels here, unless said otherwise.
inline constexpr int kNnBlock = 256;
// Rows of up to this many elements are held in registers, 8 per thread, by
// a group of 32 to 1024 threads (several groups to a block when small).
inline constexpr int64_t kNnRegisterRowLimit = 8192;
// Longer rows get a block of this many threads each.
inline constexpr int kNnWideBlock = 1024;
// cross_entropy: rows of up to this many classes get a warp each.
inline constexpr int64_t kNnWarpRowLimit = 1024;

// x viewed as [outer, count, inner] around the axis. inner == 1: a row
// kernel (a warp or a block per row); otherwise a thread per (outer, inner)
// column, reading coalesced across the inner axis.
struct SoftmaxParams {
  bool f64 = false;
  bool log = false;  // log_softmax
  int64_t outer = 0, count = 0, inner = 1;
  // Rows longer than kNnRegisterRowLimit are kept in this much shared
  // memory between their two passes, so they are read from memory once
  // (0: they are read twice).
  size_t cache_bytes = 0;
};

// Once per program, before the first launch: lets the cached kernel have
// cache_bytes of shared memory.
cudaError_t prepare_softmax(const SoftmaxParams& params);

cudaError_t launch_softmax(const SoftmaxParams& params, const void* x, void* out,
                           cudaStream_t stream);

enum class TargetType : int32_t { I32, I64, U8, U16 };
enum class Reduction : int32_t { None, Sum, Mean };

// logits [rows, classes], targets [rows]. A target outside [0, classes) that
// is not ignore_index gives a NaN loss (the CPU stops with an error, which a
// kernel inside a CUDA graph cannot), and counts in the mean.
struct CrossEntropyParams {
  bool f64 = false;
  TargetType target_type = TargetType::I64;
  Reduction reduction = Reduction::Mean;
  int64_t rows = 0, classes = 0;
  bool has_ignore = false;
  int64_t ignore_index = 0;
};

// Sum and mean keep each row's loss in scratch, then one block adds them
// up in a fixed order.
size_t cross_entropy_scratch_bytes(const CrossEntropyParams& params);

cudaError_t launch_cross_entropy(const CrossEntropyParams& params, const void* logits,
                                 const void* targets, void* out, void* scratch,
                                 cudaStream_t stream);

// cross_entropy_grad: logits [rows, classes], targets [rows], g (one value,
// or one per row for Reduction::None) -> d loss / d logits [rows, classes].
// A block per row reads the row twice (its softmax state, then the output).
// "mean" first has one block count the rows not ignored into scratch (the
// row scale g / max(count, 1)), so nothing is added up atomically.
struct CrossEntropyGradParams {
  bool f64 = false;
  TargetType target_type = TargetType::I64;
  Reduction reduction = Reduction::Mean;
  int64_t rows = 0, classes = 0;
  bool has_ignore = false;
  int64_t ignore_index = 0;
};

size_t cross_entropy_grad_scratch_bytes(const CrossEntropyGradParams& params);

cudaError_t launch_cross_entropy_grad(const CrossEntropyGradParams& params, const void* logits,
                                      const void* targets, const void* g, void* out, void* scratch,
                                      cudaStream_t stream);

// x [rows, dim] normalised over dim; layer_norm subtracts the mean and adds
// the bias, rms_norm does neither (bias is null).
struct NormParams {
  bool f64 = false;
  bool layer = true;
  int64_t rows = 0, dim = 0;
  double eps = 1e-5;
};

cudaError_t launch_norm(const NormParams& params, const void* x, const void* weight,
                        const void* bias, void* out, cudaStream_t stream);

// layer_norm_grad: x and g [rows, dim], weight [dim] -> dx [rows, dim]. Rows
// of up to kNnRegisterRowLimit are held in registers (x and g read once);
// longer ones get a block each and are read again per pass.
struct LayerNormGradParams {
  bool f64 = false;
  int64_t rows = 0, dim = 0;
  double eps = 1e-5;
};

cudaError_t launch_layer_norm_grad(const LayerNormGradParams& params, const void* x,
                                   const void* weight, const void* g, void* out,
                                   cudaStream_t stream);

}  // namespace sexpgpu::cuda
