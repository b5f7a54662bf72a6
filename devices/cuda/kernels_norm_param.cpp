// layer_norm_param_grad's factory (ops.def): x and g [..., C] viewed as
// [rows, C], `eps` with devices/cpu/kernels_nn.cpp's default, resolved into
// the kernels of norm_param.cu and the scratch they need. Operands arrive
// in f32 or f64 (lower.h).
#include <string>

#include "check.h"
#include "geometry.h"
#include "kernel.h"
#include "norm_param_launch.h"

namespace sexpgpu::cuda {

KernelResult make_norm_param_kernel(const KernelRequest& r) {
  ir::DType d = r.output.dtype;
  if (d != ir::DType::F32 && d != ir::DType::F64)
    return no_kernel(r, "operands must be lowered to f32 or f64 first");
  if (r.inputs[0].dtype != d || r.inputs[1].dtype != d)
    return no_kernel(r, "operands must be lowered to the compute dtype first");
  const ir::Shape& x = r.inputs[0].shape;
  int64_t dim = x[x.rank() - 1];
  int64_t rows = dim == 0 ? 0 : cpu::numel(x) / dim;
  NormParamGradParams p = plan_norm_param_grad(d == ir::DType::F64, rows, dim,
                                               r.attrs.eps.value_or(1e-5), r.context.sm_count);
  std::string name =
      kernel_label(r.op, d) + " rows=" + std::to_string(rows) + " cols=" + std::to_string(dim) +
      (p.per_lane != 0 ? " one pass, " + std::to_string(p.per_lane) + " a lane" : " two passes") +
      " parts=" + std::to_string(p.parts);
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
