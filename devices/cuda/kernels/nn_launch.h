// The plain interface between the fused neural ops' factory
// (kernels_nn.cpp) and their kernels (softmax.cu, cross_entropy.cu,
// norm.cu): softmax and log_softmax over one axis, cross_entropy and its
// gradient, layer_norm (and its gradient with respect to x) and rms_norm.
//
// They compute in f32 or f64. Operands stored in bf16 or f16 are read as
// f32 (exactly) and results stored in them are rounded to nearest even, so
// a half-storage kernel gives the bits of its f32 kernel on converted
// operands followed by a cast: the training path needs no cast kernels
// around them. f64 kernels take f64 operands only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace sexpgpu::cuda {

// How an operand or result is stored. Half storage is read and written as
// f32; one kernel never mixes BF16 with F16, nor F64 with anything else.
enum class Storage : int32_t { F32, F64, BF16, F16 };

// Threads per block of the kernels here, unless said otherwise.
inline constexpr int kNnBlock = 256;
// Rows of up to this many elements are held in registers: a group of 32 to
// kNnBlock threads per row (several groups to a block when small), each
// holding kNnRowChunks chunks of 8 adjacent elements.
inline constexpr int64_t kNnRegisterRowLimit = 8192;
inline constexpr int kNnRowChunks = 4;
// Longer softmax rows get a block of this many threads each.
inline constexpr int kNnWideBlock = 1024;
// cross_entropy: rows of up to this many classes get a warp each.
inline constexpr int64_t kNnWarpRowLimit = 1024;

// x viewed as [outer, count, inner] around the axis. inner == 1: a row
// kernel (a group or a block per row); otherwise a thread per (outer,
// inner) column, reading coalesced across the inner axis. Half storage
// (in or out) only for register rows (inner == 1, count up to
// kNnRegisterRowLimit).
struct SoftmaxParams {
  Storage in = Storage::F32, out = Storage::F32;
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

// logits [rows, classes], targets [rows]; the loss is stored in the compute
// dtype (f64 for F64 logits, else f32). A target outside [0, classes) that
// is not ignore_index gives a NaN loss (the CPU stops with an error, which a
// kernel inside a CUDA graph cannot), and counts in the mean.
struct CrossEntropyParams {
  Storage logits = Storage::F32;
  TargetType target_type = TargetType::I64;
  Reduction reduction = Reduction::Mean;
  int64_t rows = 0, classes = 0;
  bool has_ignore = false;
  int64_t ignore_index = 0;
};

// Sum and mean keep each row's loss in scratch, then one block adds them
// up in a fixed order.
size_t cross_entropy_scratch_bytes(const CrossEntropyParams& params);

// The link from cross_entropy to its cross_entropy_grad (kernel.h): each
// row's settled softmax state (maximum, sum of exp(x - maximum)), two
// compute values a row, exactly as the gradient computes it unlinked.
size_t cross_entropy_link_bytes(Storage logits, int64_t rows);

// link: cross_entropy_link_bytes to write, or null.
cudaError_t launch_cross_entropy(const CrossEntropyParams& params, const void* logits,
                                 const void* targets, void* out, void* scratch, void* link,
                                 cudaStream_t stream);

// cross_entropy_grad: logits [rows, classes], targets [rows], g in the
// compute dtype (one value, or one per row for Reduction::None) -> d loss /
// d logits [rows, classes] stored as `out`. A group per row reads the row
// once when the forward's link holds its softmax state, else twice (the
// state, then the output). "mean" first has one block count the rows not
// ignored into scratch (the row scale g / max(count, 1)), so nothing is
// added up atomically.
struct CrossEntropyGradParams {
  Storage logits = Storage::F32, out = Storage::F32;
  TargetType target_type = TargetType::I64;
  Reduction reduction = Reduction::Mean;
  int64_t rows = 0, classes = 0;
  bool has_ignore = false;
  int64_t ignore_index = 0;
};

size_t cross_entropy_grad_scratch_bytes(const CrossEntropyGradParams& params);

// link: what cross_entropy left there (cross_entropy_link_bytes), or null.
cudaError_t launch_cross_entropy_grad(const CrossEntropyGradParams& params, const void* logits,
                                      const void* targets, const void* g, const void* link,
                                      void* out, void* scratch, cudaStream_t stream);

// x [rows, dim] normalised over dim; layer_norm subtracts the mean and adds
// the bias, rms_norm does neither (bias is null). weight and bias are in
// the compute dtype. Half storage only for dim up to kNnRegisterRowLimit.
struct NormParams {
  Storage x = Storage::F32, out = Storage::F32;
  bool layer = true;
  int64_t rows = 0, dim = 0;
  double eps = 1e-5;
  int sm_count = 0;  // multiprocessors, to size the grid of resident blocks (0: unknown)
};

cudaError_t launch_norm(const NormParams& params, const void* x, const void* weight,
                        const void* bias, void* out, cudaStream_t stream);

// layer_norm_grad: x and g [rows, dim], weight [dim] in the compute dtype
// -> dx [rows, dim]. Rows of up to kNnRegisterRowLimit are held in
// registers (x and g read once); longer ones get a block each and are read
// again per pass, in f32 or f64 storage only.
struct LayerNormGradParams {
  Storage x = Storage::F32, g = Storage::F32, out = Storage::F32;
  int64_t rows = 0, dim = 0;
  double eps = 1e-5;
  int sm_count = 0;  // multiprocessors, to size the grid of resident blocks (0: unknown)
};

// The link from layer_norm_grad to the layer_norm_param_grad of the same
// x, g and eps (kernel.h): the partial column sums [parts, 2, dim] in f32
// of g xhat and of g that layer_norm_param_grad's last kernel adds up
// (norm_param_launch.h), one per block of the layer_norm_grad kernel.
// Both factories ask here, so they agree: the parts for x and g [rows,
// dim] stored as x and g on sm_count multiprocessors, or 0 where the
// kernel cannot leave them (f64, rows longer than a register row, or too
// many registers a row).
int64_t layer_norm_grad_link_parts(int64_t rows, int64_t dim, Storage x, Storage g, int sm_count);

// link: layer_norm_grad_link_parts(...) * 2 * dim floats to write, or null.
cudaError_t launch_layer_norm_grad(const LayerNormGradParams& params, const void* x,
                                   const void* weight, const void* g, void* out, void* link,
                                   cudaStream_t stream);

}  // namespace sexpgpu::cuda
