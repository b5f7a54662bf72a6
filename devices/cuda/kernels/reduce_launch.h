// The plain interface between the reductions' factory (kernels_reduce.cpp)
// and their kernels (reduce.cu): what to reduce, how the input is laid out
// around the reduced axes, and how the work is split over the GPU, all
// decided at compile time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace sexpgpu::cuda {

enum class ReduceOp : int32_t {
  Sum,
  Prod,
  Max,
  Min,
  Mean,
  Var,
  Std,
  LogSumExp,
  Norm,
  ArgMax,
  ArgMin,
};

// The input's compute dtype (the output has it too, except argmax/argmin: i32).
enum class ReduceType : int32_t { F32, F64, I32, I64, U8, U16 };

// How the input is stored: in its compute dtype, or (a sum of F32 only) in
// half precision, each element widened to f32 exactly as it is loaded.
enum class ReduceStorage : int32_t { Same, BF16, F16 };

// Where element k of output o's sequence lies in the input.
enum class ReduceLayout : int32_t {
  Rows,      // o*count + k: the reduced axes are the trailing ones (or all)
  Columns,   // (o / inner)*count*inner + k*inner + o % inner: one block in the middle
  Gathered,  // base(o) + offset(k) through the dims and strides below
};

inline constexpr int kReduceMaxRuns = 8;

struct ReduceParams {
  ReduceOp op = ReduceOp::Sum;
  ReduceType type = ReduceType::F32;
  ReduceLayout layout = ReduceLayout::Rows;
  int64_t outputs = 0;  // output elements
  int64_t count = 0;    // elements reduced into each (K)
  int64_t inner = 1;    // Columns: the kept elements after the reduced block
  // Gathered: the output index, row-major over kept_dims, gives the base
  // offset; the sequence index, row-major over reduced_dims, the offset.
  int kept_rank = 0, reduced_rank = 0;
  int64_t kept_dims[kReduceMaxRuns] = {}, kept_strides[kReduceMaxRuns] = {};
  int64_t reduced_dims[kReduceMaxRuns] = {}, reduced_strides[kReduceMaxRuns] = {};
  int64_t correction = 1;  // var, std
  // Sum of f32 or f64: each element is squared (rounded) as it is loaded,
  // so the sum of a square nothing else reads needs no materialised square.
  bool square_input = false;
  ReduceStorage storage = ReduceStorage::Same;
  // Rows and Gathered: 32 (a warp per output, 8 outputs per block) or 256
  // (a block per output).
  int threads_per_output = 32;
  // Each sequence is cut into `splits` chunks reduced by separate blocks;
  // above 1, their partial results go to scratch and a second kernel
  // combines them in a fixed order.
  int splits = 1;
  // Columns, a sum of f32 (not squared) with inner a multiple of the
  // vector (4 f32 or 8 half elements: reduce_column_vector): each thread
  // sums that many adjacent columns with 16-byte loads (when the input is
  // 16-byte aligned; otherwise the plain kernel runs with the same splits).
  bool vector_columns = false;
};

// Elements of a 16-byte load of the stored input.
inline constexpr int64_t reduce_column_vector(ReduceStorage storage) {
  return storage == ReduceStorage::Same ? 4 : 8;
}

// Threads per block of every reduction kernel.
inline constexpr int kReduceBlock = 256;
// Columns: a block covers this many adjacent outputs (one warp's width),
// or with vector_columns this many vectors.
inline constexpr int kReduceColumnTile = 32;

// Scratch bytes the launch needs: the partial results when splits > 1.
size_t reduce_scratch_bytes(const ReduceParams& params);

cudaError_t launch_reduce(const ReduceParams& params, const void* input, void* output,
                          void* scratch, cudaStream_t stream);

// Sums of squares of many tensors (an optimizer's gradient norms), Rows
// layout, in one reducing launch and one finishing launch. Each tensor
// keeps the split plan, block shape and summation tree that launch_reduce
// gives its own ReduceParams, so its result is bit for bit the same.
inline constexpr int kMultiReduceMaxTensors = 48;  // the parameters stay under 4 KiB

struct MultiReduceTensor {
  int64_t outputs = 0, count = 0;
  int64_t partials = 0;  // its first partial in scratch, in elements
  int32_t splits = 1;
  int32_t threads_per_output = 32;
  int32_t first_block = 0;         // its first block of the reducing launch
  int32_t first_finish_block = 0;  // and of the finishing one (none when splits is 1)
};

struct MultiReduceParams {
  ReduceType type = ReduceType::F32;  // F32 or F64
  int32_t tensors = 0;
  int32_t blocks = 0, finish_blocks = 0;  // of all tensors
  MultiReduceTensor tensor[kMultiReduceMaxTensors];
};

// The tensors' buffers, known at launch: tensor t reads input[t], writes output[t].
struct MultiReduceBuffers {
  const void* input[kMultiReduceMaxTensors];
  void* output[kMultiReduceMaxTensors];
};

cudaError_t launch_multi_sum_of_squares(const MultiReduceParams& params,
                                        const MultiReduceBuffers& buffers, void* scratch,
                                        cudaStream_t stream);

}  // namespace sexpgpu::cuda
