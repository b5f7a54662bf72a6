// The pooling factory (ops.def, "Neural"): max_pool2d, avg_pool2d and their
// gradients on NCHW, resolved into the kernels of pool.cu. Windows of
// `kernel` every `stride` (default: the kernel) over the input padded by
// `padding`, as devices/cpu/kernels_pool.cpp; f32 or f64 after lowering.
#include "cuda/check.h"
#include "cuda/kernels/pool_launch.h"
#include "kernel.h"

namespace sexpgpu::cuda {
namespace {

using ir::Op;

PoolGeometry pool_geometry(const ir::Shape& x, const ir::Shape& y, const ir::Attrs& a) {
  auto at = [](const std::optional<ir::Dims>& v, size_t i, int64_t fallback) {
    return v && v->size() > i ? (*v)[i] : fallback;
  };
  int64_t kh = at(a.kernel, 0, 1), kw = at(a.kernel, 1, 1);
  return PoolGeometry{x[0] * x[1],
                      x[2],
                      x[3],
                      y[2],
                      y[3],
                      kh,
                      kw,
                      at(a.stride, 0, kh),
                      at(a.stride, 1, kw),
                      at(a.padding, 0, 0),
                      at(a.padding, 1, 0)};
}

PoolOp pool_op(Op op) {
  switch (op) {
    case Op::MaxPool2d: return PoolOp::Max;
    case Op::AvgPool2d: return PoolOp::Avg;
    case Op::MaxPool2dGrad: return PoolOp::MaxGrad;
    default: return PoolOp::AvgGrad;
  }
}

}  // namespace

KernelResult make_pool_kernel(const KernelRequest& r) {
  ir::DType d = r.output.dtype;
  if (d != ir::DType::F32 && d != ir::DType::F64)
    return no_kernel(r, "pooling computes in f32 or f64");
  for (const ir::TensorType& t : r.inputs)
    if (t.dtype != d || t.shape.rank() != 4)
      return no_kernel(r, "pooling works on 4-D NCHW tensors of the compute dtype");
  PoolOp op = pool_op(r.op);
  if (r.inputs.size() != (op == PoolOp::MaxGrad ? 2u : 1u) || r.output.shape.rank() != 4)
    return no_kernel(r, "pooling works on 4-D NCHW tensors of the compute dtype");

  // The input's shape: x's for the forward ops and max's gradient, `shape`
  // (the output) for avg's gradient; the pooled shape is the other one.
  const ir::Shape& x = op == PoolOp::AvgGrad ? r.output.shape : r.inputs[0].shape;
  const ir::Shape& y = op == PoolOp::Max || op == PoolOp::Avg ? r.output.shape
                       : op == PoolOp::MaxGrad                ? r.inputs[1].shape
                                                              : r.inputs[0].shape;
  PoolParams params;
  params.op = op;
  params.f64 = d == ir::DType::F64;
  params.g = pool_geometry(x, y, r.attrs);

  Kernel kernel;
  kernel.name = kernel_label(r.op, d);
  if (r.output.shape.numel().value_or(0) == 0) {
    kernel.launch = [](const LaunchArgs&) { return std::string(); };
    return kernel;
  }
  kernel.launch = [params](const LaunchArgs& a) -> std::string {
    PoolParams p = params;
    p.a = a.inputs[0];
    if (p.op == PoolOp::MaxGrad) p.b = a.inputs[1];
    p.out = a.output;
    return cuda_error(launch_pool(p, a.stream), "pooling kernel");
  };
  return kernel;
}

}  // namespace sexpgpu::cuda
