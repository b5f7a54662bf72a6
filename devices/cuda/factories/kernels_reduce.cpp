// The reductions' factory (ops.def, "Reductions": sum prod max min mean var
// std logsumexp norm argmax argmin over `axes`, absent: all). It collapses
// the input's axes into alternating runs of kept and reduced ones and picks
// the kernel of reduce.cu that reads them best:
//   - reduced axes trailing (or all): a warp or a block per output, the
//     sequence contiguous; few long sequences are cut into chunks so that
//     the whole GPU works on them (a full reduction of a parameter);
//   - one reduced block followed by kept axes (bias gradients, [N, C] -> [C]):
//     32 adjacent outputs per block (128 for a sum of f32, 16-byte loads),
//     so every load is coalesced, chunked down the reduced axis when there
//     are few outputs;
//   - anything else: a warp or a block per output through precomputed strides.
// Chunks' partial results live in scratch and are combined in a fixed order
// by a second kernel, so every result repeats bit for bit.
#include "kernels_reduce.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "cuda/check.h"
#include "cuda/kernels/reduce_launch.h"
#include "kernel.h"
#include "plan/geometry.h"

namespace sexpgpu::cuda {
namespace {

using ir::DType;
using ir::Op;

constexpr int kWarp = 32;
constexpr int64_t kWarpCountLimit = 1024;  // sequences up to this long: a warp each
constexpr int64_t kMinPerThread = 16;      // a chunk gives each thread at least this many
// Column sums (a bias gradient: [16384, 768] -> [768]) have few tiles of
// columns, so they split the rows finer and into two waves of blocks: a
// thread's few rows load at once, where 16 rows a thread left each block
// waiting on four round trips to memory (the H200 profile had them at a
// third of the bandwidth).
constexpr int64_t kMinPerColumnThread = 4;
constexpr int64_t kColumnWaves = 2;
constexpr int64_t kMaxSplits = 4096;
constexpr int64_t kMaxGrid = 2147483647;  // gridDim.x
// Columns narrower than this waste most of a 32-wide tile: gather them instead.
constexpr int64_t kMinColumnWidth = 8;

std::optional<ReduceOp> reduce_op_of(Op op) {
  switch (op) {
    case Op::Sum: return ReduceOp::Sum;
    case Op::Prod: return ReduceOp::Prod;
    case Op::Max: return ReduceOp::Max;
    case Op::Min: return ReduceOp::Min;
    case Op::Mean: return ReduceOp::Mean;
    case Op::Var: return ReduceOp::Var;
    case Op::Std: return ReduceOp::Std;
    case Op::LogSumExp: return ReduceOp::LogSumExp;
    case Op::Norm: return ReduceOp::Norm;
    case Op::ArgMax: return ReduceOp::ArgMax;
    case Op::ArgMin: return ReduceOp::ArgMin;
    default: return std::nullopt;
  }
}

std::optional<ReduceType> reduce_type_of(DType d) {
  switch (d) {
    case DType::F32: return ReduceType::F32;
    case DType::F64: return ReduceType::F64;
    case DType::I32: return ReduceType::I32;
    case DType::I64: return ReduceType::I64;
    case DType::U8: return ReduceType::U8;
    case DType::U16: return ReduceType::U16;
    default: return std::nullopt;
  }
}

bool is_index_op(ReduceOp op) {
  return op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
}

bool needs_float(ReduceOp op) {
  return op == ReduceOp::Mean || op == ReduceOp::Var || op == ReduceOp::Std ||
         op == ReduceOp::LogSumExp || op == ReduceOp::Norm;
}

// Adjacent input axes that are all kept or all reduced.
struct Run {
  int64_t size;
  bool reduced;
};

// The input's axes as alternating runs: axes of size 1 are dropped (they
// move no offset) and neighbours of one kind merged (row-major, they index
// one contiguous range).
std::vector<Run> runs_of(const ir::Shape& x, const ir::Attrs& attrs) {
  int64_t rank = x.rank();
  std::vector<bool> reduced(size_t(rank), !attrs.axes);
  if (attrs.axes)
    for (int64_t a : *attrs.axes) reduced[size_t(cpu::norm_axis(a, rank))] = true;
  std::vector<Run> runs;
  for (int64_t a = 0; a < rank; ++a) {
    bool r = reduced[size_t(a)];
    if (x[a] == 1) continue;
    if (!runs.empty() && runs.back().reduced == r)
      runs.back().size *= x[a];
    else
      runs.push_back({x[a], r});
  }
  return runs;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// How many chunks `blocks` blocks of work should become so that the GPU
// has about `target` blocks, each thread still reading kMinPerThread.
int splits_for(int64_t blocks, int64_t target, int64_t count, int64_t threads_per_sequence,
               int64_t min_per_thread = kMinPerThread) {
  if (blocks >= target) return 1;
  int64_t want = ceil_div(target, std::max<int64_t>(blocks, 1));
  int64_t most = ceil_div(count, threads_per_sequence * min_per_thread);
  return int(std::clamp<int64_t>(std::min(want, most), 1, kMaxSplits));
}

// Fills p's layout, outputs, count and splits from the runs; "" or why not.
std::string plan(const std::vector<Run>& runs, int64_t target_blocks, ReduceParams& p) {
  p.outputs = 1;
  p.count = 1;
  int reduced_runs = 0;
  for (const Run& r : runs) {
    (r.reduced ? p.count : p.outputs) *= r.size;
    reduced_runs += r.reduced ? 1 : 0;
  }
  int64_t after = 1;  // kept elements after the (single) reduced run
  for (size_t i = runs.size(); i-- > 0 && !runs[i].reduced;) after *= runs[i].size;
  if (reduced_runs == 0) {  // nothing to combine: each output is one element
    p.layout = ReduceLayout::Columns;
    p.inner = p.outputs;
  } else if (reduced_runs == 1 && after == 1) {
    p.layout = ReduceLayout::Rows;
  } else if (reduced_runs == 1 && after >= kMinColumnWidth) {
    p.layout = ReduceLayout::Columns;
    p.inner = after;
  } else {
    p.layout = ReduceLayout::Gathered;
    std::vector<int64_t> strides(runs.size());
    int64_t stride = 1;
    for (size_t i = runs.size(); i-- > 0;) {
      strides[i] = stride;
      stride *= runs[i].size;
    }
    for (size_t i = 0; i < runs.size(); ++i) {
      int& rank = runs[i].reduced ? p.reduced_rank : p.kept_rank;
      if (rank == kReduceMaxRuns) return "more than 8 alternating runs of kept and reduced axes";
      (runs[i].reduced ? p.reduced_dims : p.kept_dims)[rank] = runs[i].size;
      (runs[i].reduced ? p.reduced_strides : p.kept_strides)[rank] = strides[i];
      ++rank;
    }
  }
  if (p.layout == ReduceLayout::Columns) {
    const int64_t vector = reduce_column_vector(p.storage);
    p.vector_columns = p.op == ReduceOp::Sum && p.type == ReduceType::F32 && !p.square_input &&
                       p.inner % vector == 0;
    int64_t columns = p.vector_columns ? p.inner / vector : p.inner;  // per thread
    int64_t tiles = (p.outputs / p.inner) * ceil_div(columns, kReduceColumnTile);
    if (tiles > kMaxGrid) return "too many outputs for one grid";
    p.splits = splits_for(tiles, kColumnWaves * target_blocks, p.count,
                          kReduceBlock / kReduceColumnTile, kMinPerColumnThread);
  } else {
    p.threads_per_output = p.count <= kWarpCountLimit ? kWarp : kReduceBlock;
    int64_t per_block = kReduceBlock / p.threads_per_output;
    if (ceil_div(p.outputs, per_block) > kMaxGrid) return "too many outputs for one grid";
    p.splits = p.threads_per_output == kWarp
                   ? 1
                   : splits_for(p.outputs, target_blocks, p.count, p.threads_per_output);
  }
  return "";
}

const char* layout_name(ReduceLayout layout) {
  switch (layout) {
    case ReduceLayout::Rows: return "rows";
    case ReduceLayout::Columns: return "columns";
    case ReduceLayout::Gathered: return "gathered";
  }
  return "";
}

std::optional<ReduceStorage> half_storage_of(DType d) {
  if (d == DType::BF16) return ReduceStorage::BF16;
  if (d == DType::F16) return ReduceStorage::F16;
  return std::nullopt;
}

// Fills p's op and type for reduction r; "" or why it has no kernel. With
// square_input (a sum of f32 or f64), each element is squared as it is
// loaded. A sum of bf16/f16 into f32 widens each element as it loads it
// (absorb_casts plans it so).
std::string check(const KernelRequest& r, bool square_input, ReduceParams& p) {
  std::optional<ReduceOp> op = reduce_op_of(r.op);
  if (!op) return "not a reduction";
  if (std::optional<ReduceStorage> half = half_storage_of(r.inputs[0].dtype)) {
    if (*op != ReduceOp::Sum || square_input || r.output.dtype != DType::F32)
      return "only a plain sum into f32 reads half-precision storage";
    p.op = *op;
    p.type = ReduceType::F32;
    p.storage = *half;
    return "";
  }
  std::optional<ReduceType> type = reduce_type_of(r.inputs[0].dtype);
  if (!type) return "operands must be lowered to a compute dtype first";
  if (needs_float(*op) && *type != ReduceType::F32 && *type != ReduceType::F64)
    return "this reduction needs its operand lowered to f32 or f64";
  DType out = is_index_op(*op) ? DType::I32 : r.inputs[0].dtype;
  if (r.output.dtype != out) return "the output dtype is not the compute dtype";
  if (square_input &&
      (*op != ReduceOp::Sum || (*type != ReduceType::F32 && *type != ReduceType::F64)))
    return "only a sum of f32 or f64 squares its elements on load";
  p.op = *op;
  p.type = *type;
  p.square_input = square_input;
  p.correction = r.attrs.correction.value_or(1);
  return "";
}

// Fills the rest of p for the checked reduction r (its output not empty).
std::string plan_of(const KernelRequest& r, ReduceParams& p) {
  // 8 blocks of 256 threads fill a multiprocessor (an H200 has 132).
  int64_t target_blocks = 8 * int64_t(r.context.sm_count > 0 ? r.context.sm_count : 132);
  return plan(runs_of(r.inputs[0].shape, r.attrs), target_blocks, p);
}

// p for reduction r (its output not empty); "" or why it has no kernel.
std::string params_of(const KernelRequest& r, bool square_input, ReduceParams& p) {
  if (std::string why = check(r, square_input, p); !why.empty()) return why;
  return plan_of(r, p);
}

std::string name_of(const KernelRequest& r, const ReduceParams& p) {
  const bool stored_half = p.storage != ReduceStorage::Same;
  return kernel_label(r.op, stored_half ? DType::F32 : r.inputs[0].dtype) +
         (p.square_input ? " of squares " : " ") + layout_name(p.layout) +
         " outputs=" + std::to_string(p.outputs) + " count=" + std::to_string(p.count) +
         " splits=" + std::to_string(p.splits) +
         (p.vector_columns ? " x" + std::to_string(reduce_column_vector(p.storage)) : "") +
         (stored_half ? " stored=" + std::string(ir::ir_name(r.inputs[0].dtype)) : "");
}

KernelResult make_reduction(const KernelRequest& r, bool square_input) {
  ReduceParams p;
  if (std::string why = check(r, square_input, p); !why.empty()) return no_kernel(r, why);
  if (cpu::numel(r.output.shape) == 0) {
    Kernel k;
    k.name = kernel_label(r.op, r.inputs[0].dtype) + " (empty)";
    k.launch = [](const LaunchArgs&) { return std::string(); };
    return k;
  }
  if (std::string why = plan_of(r, p); !why.empty()) return no_kernel(r, why);
  std::string name = name_of(r, p);
  Kernel k;
  k.name = name;
  k.scratch_bytes = reduce_scratch_bytes(p);
  k.launch = [p, name](const LaunchArgs& a) {
    return cuda_error(launch_reduce(p, a.inputs[0], a.output, a.scratch, a.stream), name.c_str());
  };
  return k;
}

}  // namespace

KernelResult make_reduce_kernel(const KernelRequest& r) {
  return make_reduction(r, false);
}

KernelResult make_sum_of_squares_kernel(const KernelRequest& r) {
  return make_reduction(r, true);
}

bool joins_multi_sum_of_squares(const KernelRequest& r) {
  ReduceParams p;
  return cpu::numel(r.output.shape) > 0 && params_of(r, true, p).empty() &&
         p.layout == ReduceLayout::Rows;
}

KernelResult make_multi_sum_of_squares_kernel(std::span<const KernelRequest> requests) {
  if (requests.empty() || requests.size() > size_t(kMultiReduceMaxTensors))
    return KernelResult::failure("a multi-tensor sum of squares takes 1 to " +
                                 std::to_string(kMultiReduceMaxTensors) + " tensors");
  MultiReduceParams m;
  int64_t blocks = 0, finish_blocks = 0, partials = 0;
  for (const KernelRequest& r : requests) {
    ReduceParams p;
    if (std::string why = params_of(r, true, p); !why.empty()) return no_kernel(r, why);
    if (p.layout != ReduceLayout::Rows || p.outputs == 0)
      return no_kernel(r, "only sums of squares of whole rows join a multi-tensor launch");
    if (m.tensors > 0 && p.type != m.type)
      return no_kernel(r, "a multi-tensor sum of squares takes tensors of one dtype");
    MultiReduceTensor& t = m.tensor[m.tensors++];
    m.type = p.type;
    t.outputs = p.outputs;
    t.count = p.count;
    t.splits = p.splits;
    t.threads_per_output = p.threads_per_output;
    t.partials = partials;
    t.first_block = int32_t(blocks);
    t.first_finish_block = int32_t(finish_blocks);
    blocks += ceil_div(p.outputs, kReduceBlock / p.threads_per_output) * p.splits;
    if (p.splits > 1) {
      finish_blocks += ceil_div(p.outputs, kReduceBlock / kWarp);
      partials += p.outputs * p.splits;
    }
    if (blocks > kMaxGrid || finish_blocks > kMaxGrid)
      return no_kernel(r, "too many blocks for one multi-tensor grid");
  }
  m.blocks = int32_t(blocks);
  m.finish_blocks = int32_t(finish_blocks);
  size_t element = m.type == ReduceType::F64 ? sizeof(double) : sizeof(float);
  std::string name = "multi-tensor x" + std::to_string(m.tensors) + " " +
                     kernel_label(requests[0].op, requests[0].inputs[0].dtype) +
                     " of squares rows blocks=" + std::to_string(blocks) +
                     " finish_blocks=" + std::to_string(finish_blocks);
  Kernel k;
  k.name = name;
  k.scratch_bytes = size_t(partials) * element;
  k.launch = [m, name](const LaunchArgs& a) {
    MultiReduceBuffers b{};
    for (int t = 0; t < m.tensors; ++t) {
      b.input[t] = a.inputs[2 * t];
      b.output[t] = const_cast<void*>(a.inputs[2 * t + 1]);
    }
    return cuda_error(launch_multi_sum_of_squares(m, b, a.scratch, a.stream), name.c_str());
  };
  return k;
}

}  // namespace sexpgpu::cuda
