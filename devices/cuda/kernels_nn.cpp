// The fused neural ops' factory (ops.def, "Neural"): softmax and
// log_softmax over `axis`, cross_entropy and cross_entropy_grad
// (`ignore_index`, `reduction`), layer_norm, its gradient with respect to
// x and rms_norm over the last axis (`eps`), with the geometry and
// defaults of devices/cpu/kernels_nn.cpp, resolved into the kernels of
// nn.cu. Operands arrive in f32 or f64 (lower.h), cross_entropy's targets
// in their integer dtype.
#include <optional>
#include <string>

#include "check.h"
#include "geometry.h"
#include "kernel.h"
#include "nn_launch.h"

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

KernelResult softmax_kernel(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  int64_t axis = cpu::norm_axis(r.attrs.axis.value_or(-1), x.rank());
  SoftmaxParams p;
  p.f64 = r.output.dtype == DType::F64;
  p.log = r.op == Op::LogSoftmax;
  p.outer = 1;
  p.count = 1;
  for (int64_t a = 0; a < x.rank(); ++a)
    (a < axis ? p.outer : a == axis ? p.count : p.inner) *= x[a];
  std::string name = kernel_label(r.op, r.output.dtype) +
                     (p.inner == 1 ? rows_text(p.outer, p.count)
                                   : " strided outer=" + std::to_string(p.outer) +
                                         " count=" + std::to_string(p.count) +
                                         " inner=" + std::to_string(p.inner));
  if (cpu::numel(x) == 0) return empty_kernel(name);
  if (p.inner == 1 && !rows_fit(p.outer)) return no_kernel(r, "too many rows for one grid");
  size_t row_bytes = size_t(p.count) * (p.f64 ? sizeof(double) : sizeof(float));
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

// What cross_entropy and its gradient share: the targets' dtype, the
// reduction, the rows and ignore_index; an error message or "".
template <class Params>
std::string cross_entropy_params(const KernelRequest& r, Params& p) {
  std::optional<TargetType> targets = target_type(r.inputs[1].dtype);
  if (!targets) return "the targets need an integer dtype";
  std::string reduction = r.attrs.reduction.value_or("mean");
  std::optional<Reduction> reduce = reduction_of(reduction);
  if (!reduce) return "unknown reduction \"" + reduction + "\"";
  p.target_type = *targets;
  p.reduction = *reduce;
  const ir::Shape& logits = r.inputs[0].shape;
  p.f64 = r.output.dtype == DType::F64;
  p.classes = logits.rank() == 0 ? 1 : logits[logits.rank() - 1];
  p.rows = p.classes == 0 ? 0 : cpu::numel(logits) / p.classes;
  p.has_ignore = r.attrs.ignore_index.has_value();
  p.ignore_index = r.attrs.ignore_index.value_or(0);
  return "";
}

KernelResult cross_entropy_kernel(const KernelRequest& r) {
  CrossEntropyParams p;
  if (std::string why = cross_entropy_params(r, p); !why.empty()) return no_kernel(r, why);
  std::string reduction = r.attrs.reduction.value_or("mean");
  std::string name =
      kernel_label(r.op, r.output.dtype) + " " + reduction + rows_text(p.rows, p.classes);
  if (p.reduction == Reduction::None) {
    if (cpu::numel(r.output.shape) == 0) return empty_kernel(name);
    if (p.classes == 0)  // the CPU leaves such rows' losses unwritten
      return no_kernel(r, "per-row losses of rows with no classes");
  }
  if (!rows_fit(p.rows)) return no_kernel(r, "too many rows for one grid");
  Kernel k;
  k.name = name;
  k.scratch_bytes = cross_entropy_scratch_bytes(p);
  k.launch = [p, name](const LaunchArgs& a) {
    return cuda_error(
        launch_cross_entropy(p, a.inputs[0], a.inputs[1], a.output, a.scratch, a.stream),
        name.c_str());
  };
  return k;
}

KernelResult cross_entropy_grad_kernel(const KernelRequest& r) {
  CrossEntropyGradParams p;
  if (std::string why = cross_entropy_params(r, p); !why.empty()) return no_kernel(r, why);
  std::string name = kernel_label(r.op, r.output.dtype) + " " + r.attrs.reduction.value_or("mean") +
                     rows_text(p.rows, p.classes);
  if (cpu::numel(r.output.shape) == 0) return empty_kernel(name);
  if (!rows_fit(p.rows)) return no_kernel(r, "too many rows for one grid");
  Kernel k;
  k.name = name;
  k.scratch_bytes = cross_entropy_grad_scratch_bytes(p);
  k.launch = [p, name](const LaunchArgs& a) {
    return cuda_error(launch_cross_entropy_grad(p, a.inputs[0], a.inputs[1], a.inputs[2], a.output,
                                                a.scratch, a.stream),
                      name.c_str());
  };
  return k;
}

KernelResult norm_kernel(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  NormParams p;
  p.f64 = r.output.dtype == DType::F64;
  p.layer = r.op == Op::LayerNorm;
  p.dim = x.rank() == 0 ? 1 : x[x.rank() - 1];
  p.rows = p.dim == 0 ? 0 : cpu::numel(x) / p.dim;
  p.eps = r.attrs.eps.value_or(p.layer ? 1e-5 : 1e-6);
  std::string name = kernel_label(r.op, r.output.dtype) + rows_text(p.rows, p.dim);
  if (p.rows == 0) return empty_kernel(name);
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

bool is_cross_entropy(Op op) {
  return op == Op::CrossEntropy || op == Op::CrossEntropyGrad;
}

KernelResult layer_norm_grad_kernel(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  LayerNormGradParams p;
  p.f64 = r.output.dtype == DType::F64;
  p.dim = x[x.rank() - 1];
  p.rows = p.dim == 0 ? 0 : cpu::numel(x) / p.dim;
  p.eps = r.attrs.eps.value_or(1e-5);
  std::string name = kernel_label(r.op, r.output.dtype) + rows_text(p.rows, p.dim);
  if (p.rows == 0) return empty_kernel(name);
  if (!rows_fit(p.rows)) return no_kernel(r, "too many rows for one grid");
  Kernel k;
  k.name = name;
  k.launch = [p, name](const LaunchArgs& a) {
    return cuda_error(
        launch_layer_norm_grad(p, a.inputs[0], a.inputs[1], a.inputs[2], a.output, a.stream),
        name.c_str());
  };
  return k;
}

}  // namespace

KernelResult make_nn_kernel(const KernelRequest& r) {
  DType d = r.output.dtype;
  if (d != DType::F32 && d != DType::F64)
    return no_kernel(r, "operands must be lowered to f32 or f64 first");
  for (size_t i = 0; i < r.inputs.size(); ++i)
    if (!(is_cross_entropy(r.op) && i == 1) && r.inputs[i].dtype != d)
      return no_kernel(r, "operands must be lowered to the compute dtype first");
  switch (r.op) {
    case Op::Softmax:
    case Op::LogSoftmax: return softmax_kernel(r);
    case Op::CrossEntropy: return cross_entropy_kernel(r);
    case Op::CrossEntropyGrad: return cross_entropy_grad_kernel(r);
    case Op::LayerNorm:
    case Op::RmsNorm: return norm_kernel(r);
    case Op::LayerNormGrad: return layer_norm_grad_kernel(r);
    default: return no_kernel(r, "not a fused neural op");
  }
}

}  // namespace sexpgpu::cuda
