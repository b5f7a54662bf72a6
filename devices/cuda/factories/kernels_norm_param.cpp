// layer_norm_param_grad's factory (ops.def): x and g [..., C] viewed as
// [rows, C], `eps` with devices/cpu/kernels_nn.cpp's default, resolved into
// the kernels of norm_param.cu and the scratch they need. Operands arrive
// in f32 or f64 (lower.h); the lowering may also hand over x and g stored
// in bf16 or f16 instead of casting them to f32, which the kernels widen as
// they load them. Linked to the layer_norm_grad of the same operands
// (program_plan.cpp), it only adds up the partial sums that kernel left.
#include <string>

#include "cuda/check.h"
#include "cuda/kernels/nn_launch.h"
#include "cuda/kernels/norm_param_launch.h"
#include "kernel.h"
#include "plan/geometry.h"

namespace sexpgpu::cuda {
namespace {

using ir::DType;

NormParamStorage storage_of(DType d) {
  switch (d) {
    case DType::F64: return NormParamStorage::F64;
    case DType::BF16: return NormParamStorage::BF16;
    case DType::F16: return NormParamStorage::F16;
    default: return NormParamStorage::F32;
  }
}

// How layer_norm_grad's kernels (nn_launch.h) see an operand stored as d.
Storage nn_storage_of(DType d) {
  switch (d) {
    case DType::F64: return Storage::F64;
    case DType::BF16: return Storage::BF16;
    case DType::F16: return Storage::F16;
    default: return Storage::F32;
  }
}

// Whether an operand stored as `stored` can feed a kernel computing in
// `compute` (its result's dtype): the same dtype, or bf16/f16 into f32.
bool readable(DType stored, DType compute) {
  return stored == compute ||
         (compute == DType::F32 && (stored == DType::BF16 || stored == DType::F16));
}

// " stored=bf16,f32" when x or g is stored in half, else "".
std::string storage_text(DType x, DType g, DType compute) {
  if (x == compute && g == compute) return "";
  return " stored=" + std::string(ir::ir_name(x)) + "," + std::string(ir::ir_name(g));
}

// The kernel that adds the `parts` partials a linked layer_norm_grad left
// in the link ([parts, 2, dim] f32) into the result.
Kernel linked_kernel(const KernelRequest& r, NormParamGradParams p, int64_t parts) {
  p.parts = parts;
  std::string name = kernel_label(r.op, r.output.dtype) + " rows=" + std::to_string(p.rows) +
                     " cols=" + std::to_string(p.dim) + " parts=" + std::to_string(parts) +
                     storage_text(r.inputs[0].dtype, r.inputs[1].dtype, r.output.dtype) + " linked";
  Kernel k;
  k.name = name;
  k.reads_link = true;
  k.launch = [p, name](const LaunchArgs& a) {
    return cuda_error(launch_norm_param_grad_finish(p, a.link, a.output, a.stream), name.c_str());
  };
  return k;
}

}  // namespace

KernelResult make_norm_param_kernel(const KernelRequest& r) {
  DType d = r.output.dtype;
  const DType x_dtype = r.inputs[0].dtype, g_dtype = r.inputs[1].dtype;
  if (d != DType::F32 && d != DType::F64)
    return no_kernel(r, "operands must be lowered to f32 or f64 first");
  if (!readable(x_dtype, d) || !readable(g_dtype, d))
    return no_kernel(r,
                     "operands must be lowered to the compute dtype (or bf16/f16 for f32) first");
  if ((x_dtype == DType::BF16 && g_dtype == DType::F16) ||
      (x_dtype == DType::F16 && g_dtype == DType::BF16))
    return no_kernel(r, "bf16 and f16 storage in one kernel");
  const ir::Shape& x = r.inputs[0].shape;
  int64_t dim = x[x.rank() - 1];
  int64_t rows = dim == 0 ? 0 : cpu::numel(x) / dim;
  NormParamGradParams p = plan_norm_param_grad(d == DType::F64, rows, dim,
                                               r.attrs.eps.value_or(1e-5), r.context.sm_count);
  p.x = storage_of(x_dtype);
  p.g = storage_of(g_dtype);
  // Linked to the layer_norm_grad of the same x, g and eps, which left the
  // partial sums in the link (asked only then): the last kernel alone.
  const int64_t link_parts =
      r.link ? layer_norm_grad_link_parts(rows, dim, nn_storage_of(x_dtype), nn_storage_of(g_dtype),
                                          r.context.sm_count)
             : 0;
  if (link_parts > 0) return linked_kernel(r, p, link_parts);
  std::string name =
      kernel_label(r.op, d) + " rows=" + std::to_string(rows) + " cols=" + std::to_string(dim) +
      (p.per_lane != 0 ? " one pass, " + std::to_string(p.per_lane) + " a lane" : " two passes") +
      " parts=" + std::to_string(p.parts) + storage_text(x_dtype, g_dtype, d);
  Kernel k;
  k.name = name;
  if (dim == 0) {  // a [2, 0] result: nothing to write
    k.launch = [](const LaunchArgs&) { return std::string(); };
    return k;
  }
  k.scratch_bytes = norm_param_grad_scratch_bytes(p);
  k.launch = [p, name](const LaunchArgs& a) {
    return cuda_error(
        launch_norm_param_grad(p, a.inputs[0], a.inputs[1], a.output, a.scratch, a.stream),
        name.c_str());
  };
  return k;
}

}  // namespace sexpgpu::cuda
