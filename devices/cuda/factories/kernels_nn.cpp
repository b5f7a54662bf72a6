// The fused neural ops' factory (ops.def, "Neural"): softmax and
// log_softmax over `axis`, cross_entropy and cross_entropy_grad
// (`ignore_index`, `reduction`), layer_norm, its gradient with respect to
// x and rms_norm over the last axis (`eps`; layer_norm_param_grad goes to
// kernels_norm_param.cpp), with the geometry and
// defaults of devices/cpu/kernels_nn.cpp, resolved into the kernels of
// softmax.cu, cross_entropy.cu and norm.cu. Operands arrive in f32 or f64
// (lower.h), cross_entropy's targets in their integer dtype; the lowering
// may also hand over the values (logits, x, g) and the result stored in
// bf16 or f16 instead of casting them, which the kernels read and write in
// place (nn_launch.h) while computing in f32.
#include <initializer_list>
#include <optional>
#include <string>

#include "cuda/check.h"
#include "cuda/kernels/nn_launch.h"
#include "kernel.h"
#include "plan/geometry.h"

namespace sexpgpu::cuda {
namespace {

using ir::DType;
using ir::Op;

constexpr int64_t kMaxGrid = 2147483647;  // gridDim.x
// Shared memory the softmax row kernel declares itself, besides the cached row.
constexpr size_t kStaticSharedBytes = 2048;

// Whether a row kernel over `rows` rows fits in one grid (at least one row
// a block).
bool rows_fit(int64_t rows) {
  return rows <= kMaxGrid;
}

std::string rows_text(int64_t rows, int64_t length) {
  return " rows=" + std::to_string(rows) + " cols=" + std::to_string(length);
}

Kernel empty_kernel(std::string name) {
  Kernel k;
  k.name = std::move(name);
  k.launch = [](const LaunchArgs&) { return std::string(); };
  return k;
}

// ---------------------------------------------------------------------------
// Storage

Storage storage_of(DType d) {
  switch (d) {
    case DType::F64: return Storage::F64;
    case DType::BF16: return Storage::BF16;
    case DType::F16: return Storage::F16;
    default: return Storage::F32;
  }
}

// The dtype the kernels compute a stored dtype in.
DType compute_of(DType d) {
  return is_half(d) ? DType::F32 : d;
}

// "" when the values stored in `stored` (read or written as f32 when half)
// and the operands in `exact` (weights, g: the compute dtype itself) form a
// mix the kernels are built for (nn_launch.h Storage), else why not.
std::string storage_mix_error(std::initializer_list<DType> stored,
                              std::initializer_list<DType> exact) {
  const DType compute = compute_of(*stored.begin());
  if (compute != DType::F32 && compute != DType::F64)
    return "operands must be lowered to f32 or f64 (or stored in bf16/f16) first";
  bool bf16 = false, f16 = false;
  for (DType d : stored) {
    if (compute_of(d) != compute) return "operands must be lowered to one compute dtype first";
    bf16 |= d == DType::BF16;
    f16 |= d == DType::F16;
  }
  if (bf16 && f16) return "bf16 and f16 storage in one kernel";
  for (DType d : exact)
    if (d != compute) return "operands must be lowered to the compute dtype first";
  return "";
}

bool any_half(std::initializer_list<DType> stored) {
  for (DType d : stored)
    if (is_half(d)) return true;
  return false;
}

// " stored=bf16,bf16->bf16" for a kernel with half storage, else "".
std::string storage_text(std::initializer_list<DType> inputs, DType output) {
  if (!any_half(inputs) && !is_half(output)) return "";
  std::string text;
  for (DType d : inputs) text += (text.empty() ? " stored=" : ",") + std::string(ir::ir_name(d));
  return text + "->" + std::string(ir::ir_name(output));
}

// ---------------------------------------------------------------------------
// Factories

KernelResult softmax_kernel(const KernelRequest& r) {
  const DType in = r.inputs[0].dtype, out = r.output.dtype;
  if (std::string why = storage_mix_error({in, out}, {}); !why.empty()) return no_kernel(r, why);
  const ir::Shape& x = r.inputs[0].shape;
  int64_t axis = cpu::norm_axis(r.attrs.axis.value_or(-1), x.rank());
  SoftmaxParams p;
  p.in = storage_of(in);
  p.out = storage_of(out);
  p.log = r.op == Op::LogSoftmax;
  p.outer = 1;
  p.count = 1;
  for (int64_t a = 0; a < x.rank(); ++a)
    (a < axis ? p.outer : a == axis ? p.count : p.inner) *= x[a];
  std::string name = kernel_label(r.op, compute_of(out)) +
                     (p.inner == 1 ? rows_text(p.outer, p.count)
                                   : " strided outer=" + std::to_string(p.outer) +
                                         " count=" + std::to_string(p.count) +
                                         " inner=" + std::to_string(p.inner)) +
                     storage_text({in}, out);
  if (cpu::numel(x) == 0) return empty_kernel(name);
  if (any_half({in, out}) && (p.inner != 1 || p.count > kNnRegisterRowLimit))
    return no_kernel(r, "bf16/f16 storage only for last-axis rows of up to " +
                            std::to_string(kNnRegisterRowLimit));
  if (p.inner == 1 && !rows_fit(p.outer)) return no_kernel(r, "too many rows for one grid");
  size_t row_bytes = size_t(p.count) * ir::size_bytes(in);
  if (p.inner == 1 && p.count > kNnRegisterRowLimit &&
      row_bytes + kStaticSharedBytes <= r.context.shared_memory_per_block)
    p.cache_bytes = row_bytes;
  Kernel k;
  k.name = name + (p.cache_bytes ? " cached" : "");
  k.prepare = [p] { return cuda_error(prepare_softmax(p), "softmax shared memory setup"); };
  k.launch = [p, name](const LaunchArgs& a) {
    return cuda_error(launch_softmax(p, a.inputs[0], a.output, a.stream), name.c_str());
  };
  return k;
}

std::optional<TargetType> target_type(DType d) {
  switch (d) {
    case DType::I32: return TargetType::I32;
    case DType::I64: return TargetType::I64;
    case DType::U8: return TargetType::U8;
    case DType::U16: return TargetType::U16;
    default: return std::nullopt;
  }
}

std::optional<Reduction> reduction_of(const std::string& reduction) {
  if (reduction == "none") return Reduction::None;
  if (reduction == "sum") return Reduction::Sum;
  if (reduction == "mean") return Reduction::Mean;
  return std::nullopt;
}

// What cross_entropy and its gradient share: the logits' storage, the
// targets' dtype, the reduction, the rows and ignore_index; an error
// message or "".
template <class Params>
std::string cross_entropy_params(const KernelRequest& r, Params& p) {
  std::optional<TargetType> targets = target_type(r.inputs[1].dtype);
  if (!targets) return "the targets need an integer dtype";
  std::string reduction = r.attrs.reduction.value_or("mean");
  std::optional<Reduction> reduce = reduction_of(reduction);
  if (!reduce) return "unknown reduction \"" + reduction + "\"";
  p.logits = storage_of(r.inputs[0].dtype);
  p.target_type = *targets;
  p.reduction = *reduce;
  const ir::Shape& logits = r.inputs[0].shape;
  p.classes = logits.rank() == 0 ? 1 : logits[logits.rank() - 1];
  p.rows = p.classes == 0 ? 0 : cpu::numel(logits) / p.classes;
  p.has_ignore = r.attrs.ignore_index.has_value();
  p.ignore_index = r.attrs.ignore_index.value_or(0);
  return "";
}

KernelResult cross_entropy_kernel(const KernelRequest& r) {
  const DType logits = r.inputs[0].dtype;
  if (std::string why = storage_mix_error({logits}, {r.output.dtype}); !why.empty())
    return no_kernel(r, why);
  CrossEntropyParams p;
  if (std::string why = cross_entropy_params(r, p); !why.empty()) return no_kernel(r, why);
  std::string reduction = r.attrs.reduction.value_or("mean");
  std::string name = kernel_label(r.op, r.output.dtype) + " " + reduction +
                     rows_text(p.rows, p.classes) + storage_text({logits}, r.output.dtype);
  if (p.reduction == Reduction::None) {
    if (cpu::numel(r.output.shape) == 0) return empty_kernel(name);
    if (p.classes == 0)  // the CPU leaves such rows' losses unwritten
      return no_kernel(r, "per-row losses of rows with no classes");
  }
  if (!rows_fit(p.rows)) return no_kernel(r, "too many rows for one grid");
  // Linked to its gradient: each row's softmax state goes to the link.
  const bool writes_link = r.link && p.rows > 0;
  Kernel k;
  k.name = name + (writes_link ? " linked" : "");
  k.scratch_bytes = cross_entropy_scratch_bytes(p);
  if (writes_link) k.link_bytes = cross_entropy_link_bytes(p.logits, p.rows);
  k.launch = [p, name, writes_link](const LaunchArgs& a) {
    void* link = writes_link ? a.link : nullptr;
    return cuda_error(
        launch_cross_entropy(p, a.inputs[0], a.inputs[1], a.output, a.scratch, link, a.stream),
        name.c_str());
  };
  return k;
}

KernelResult cross_entropy_grad_kernel(const KernelRequest& r) {
  const DType logits = r.inputs[0].dtype, out = r.output.dtype;
  if (std::string why = storage_mix_error({logits, out}, {r.inputs[2].dtype}); !why.empty())
    return no_kernel(r, why);
  CrossEntropyGradParams p;
  if (std::string why = cross_entropy_params(r, p); !why.empty()) return no_kernel(r, why);
  p.out = storage_of(out);
  std::string name = kernel_label(r.op, compute_of(out)) + " " +
                     r.attrs.reduction.value_or("mean") + rows_text(p.rows, p.classes) +
                     storage_text({logits}, out);
  if (cpu::numel(r.output.shape) == 0) return empty_kernel(name);
  if (!rows_fit(p.rows)) return no_kernel(r, "too many rows for one grid");
  // The forward left each row's softmax state in the link (asked only then).
  const bool reads_link = r.link;
  Kernel k;
  k.name = name + (reads_link ? " linked" : "");
  k.scratch_bytes = cross_entropy_grad_scratch_bytes(p);
  k.reads_link = reads_link;
  k.launch = [p, name, reads_link](const LaunchArgs& a) {
    const void* link = reads_link ? a.link : nullptr;
    return cuda_error(launch_cross_entropy_grad(p, a.inputs[0], a.inputs[1], a.inputs[2], link,
                                                a.output, a.scratch, a.stream),
                      name.c_str());
  };
  return k;
}

// Half storage is for register rows only (nn_launch.h).
std::string norm_half_error(std::initializer_list<DType> stored, int64_t dim) {
  if (any_half(stored) && dim > kNnRegisterRowLimit)
    return "bf16/f16 storage only for rows of up to " + std::to_string(kNnRegisterRowLimit);
  return "";
}

KernelResult norm_kernel(const KernelRequest& r) {
  const DType x_dtype = r.inputs[0].dtype, out = r.output.dtype;
  const bool layer = r.op == Op::LayerNorm;
  std::string why = layer
                        ? storage_mix_error({x_dtype, out}, {r.inputs[1].dtype, r.inputs[2].dtype})
                        : storage_mix_error({x_dtype, out}, {r.inputs[1].dtype});
  if (!why.empty()) return no_kernel(r, why);
  const ir::Shape& x = r.inputs[0].shape;
  NormParams p;
  p.x = storage_of(x_dtype);
  p.out = storage_of(out);
  p.layer = layer;
  p.dim = x.rank() == 0 ? 1 : x[x.rank() - 1];
  p.rows = p.dim == 0 ? 0 : cpu::numel(x) / p.dim;
  p.eps = r.attrs.eps.value_or(p.layer ? 1e-5 : 1e-6);
  p.sm_count = r.context.sm_count;
  std::string name =
      kernel_label(r.op, compute_of(out)) + rows_text(p.rows, p.dim) + storage_text({x_dtype}, out);
  if (p.rows == 0) return empty_kernel(name);
  if (std::string half = norm_half_error({x_dtype, out}, p.dim); !half.empty())
    return no_kernel(r, half);
  if (!rows_fit(p.rows)) return no_kernel(r, "too many rows for one grid");
  Kernel k;
  k.name = name;
  k.launch = [p, name](const LaunchArgs& a) {
    const void* bias = p.layer ? a.inputs[2] : nullptr;
    return cuda_error(launch_norm(p, a.inputs[0], a.inputs[1], bias, a.output, a.stream),
                      name.c_str());
  };
  return k;
}

KernelResult layer_norm_grad_kernel(const KernelRequest& r) {
  const DType x_dtype = r.inputs[0].dtype, g = r.inputs[2].dtype, out = r.output.dtype;
  if (std::string why = storage_mix_error({x_dtype, g, out}, {r.inputs[1].dtype}); !why.empty())
    return no_kernel(r, why);
  const ir::Shape& x = r.inputs[0].shape;
  LayerNormGradParams p;
  p.x = storage_of(x_dtype);
  p.g = storage_of(g);
  p.out = storage_of(out);
  p.dim = x[x.rank() - 1];
  p.rows = p.dim == 0 ? 0 : cpu::numel(x) / p.dim;
  p.eps = r.attrs.eps.value_or(1e-5);
  p.sm_count = r.context.sm_count;
  std::string name = kernel_label(r.op, compute_of(out)) + rows_text(p.rows, p.dim) +
                     storage_text({x_dtype, g}, out);
  if (p.rows == 0) return empty_kernel(name);
  if (std::string half = norm_half_error({x_dtype, g, out}, p.dim); !half.empty())
    return no_kernel(r, half);
  if (!rows_fit(p.rows)) return no_kernel(r, "too many rows for one grid");
  // Linked to its layer_norm_param_grad: each block's column sums go to
  // the link, where the kernel can leave them.
  const int64_t parts =
      r.link ? layer_norm_grad_link_parts(p.rows, p.dim, p.x, p.g, p.sm_count) : 0;
  const bool writes_link = parts > 0;
  Kernel k;
  k.name = name + (writes_link ? " linked" : "");
  if (writes_link) k.link_bytes = size_t(parts) * 2 * size_t(p.dim) * sizeof(float);
  k.launch = [p, name, writes_link](const LaunchArgs& a) {
    void* link = writes_link ? a.link : nullptr;
    return cuda_error(
        launch_layer_norm_grad(p, a.inputs[0], a.inputs[1], a.inputs[2], a.output, link, a.stream),
        name.c_str());
  };
  return k;
}

}  // namespace

KernelResult make_nn_kernel(const KernelRequest& r) {
  switch (r.op) {
    case Op::Softmax:
    case Op::LogSoftmax: return softmax_kernel(r);
    case Op::CrossEntropy: return cross_entropy_kernel(r);
    case Op::CrossEntropyGrad: return cross_entropy_grad_kernel(r);
    case Op::LinearCrossEntropy: return make_linear_cross_entropy_kernel(r);
    case Op::LayerNorm:
    case Op::RmsNorm: return norm_kernel(r);
    case Op::LayerNormGrad: return layer_norm_grad_kernel(r);
    case Op::LayerNormParamGrad: return make_norm_param_kernel(r);  // kernels_norm_param.cpp
    default: return no_kernel(r, "not a fused neural op");
  }
}

}  // namespace sexpgpu::cuda
