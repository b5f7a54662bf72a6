// The conv2d factory (ops.def, "Neural"): conv2d, conv2d_grad_input and
// conv2d_grad_weight on NCHW, with stride, padding, dilation and groups as
// PyTorch's, resolved into the direct kernels of conv.cu. The dtypes are
// the CPU's (devices/cpu/kernels_conv.cpp): any compute dtype after
// lowering, integers wrapping.
#include <algorithm>
#include <climits>

#include "cuda/check.h"
#include "cuda/kernels/conv_launch.h"
#include "kernel.h"

namespace sexpgpu::cuda {
namespace {

using ir::Op;

int64_t pair_at(const std::optional<ir::Dims>& v, size_t i, int64_t fallback) {
  return v && v->size() > i ? (*v)[i] : fallback;
}

ConvGeometry conv_geometry(const ir::Shape& x, const ir::Shape& w, const ir::Attrs& a) {
  ConvGeometry g{};
  g.N = x[0];
  g.C = x[1];
  g.H = x[2];
  g.W = x[3];
  g.O = w[0];
  g.KH = w[2];
  g.KW = w[3];
  g.sh = pair_at(a.stride, 0, 1);
  g.sw = pair_at(a.stride, 1, 1);
  g.ph = pair_at(a.padding, 0, 0);
  g.pw = pair_at(a.padding, 1, 0);
  g.dh = pair_at(a.dilation, 0, 1);
  g.dw = pair_at(a.dilation, 1, 1);
  g.groups = a.groups.value_or(1);
  g.OH = (g.H + 2 * g.ph - g.dh * (g.KH - 1) - 1) / g.sh + 1;
  g.OW = (g.W + 2 * g.pw - g.dw * (g.KW - 1) - 1) / g.sw + 1;
  return g;
}

std::optional<ConvDType> conv_dtype(ir::DType d) {
  switch (d) {
    case ir::DType::F32: return ConvDType::F32;
    case ir::DType::F64: return ConvDType::F64;
    case ir::DType::I32: return ConvDType::I32;
    case ir::DType::I64: return ConvDType::I64;
    case ir::DType::U8: return ConvDType::U8;
    case ir::DType::U16: return ConvDType::U16;
    default: return std::nullopt;
  }
}

// What the weight-gradient kernel's 32-bit spatial arithmetic needs.
bool spatial_fits_32_bits(const ConvGeometry& g) {
  auto fits = [](int64_t v) { return v < INT_MAX; };
  return fits(g.H + 2 * g.ph) && fits(g.W + 2 * g.pw) && fits(g.H * g.W) && fits(g.OH * g.OW) &&
         fits(g.KH * g.dh) && fits(g.KW * g.dw) && fits(g.OH * g.sh) && fits(g.OW * g.sw);
}

// The weight gradient's blocks per image slice.
int64_t grad_weight_blocks(const ConvGeometry& g) {
  return g.O * (g.C / g.groups) * ((g.KH * g.KW + kConvGradWeightTaps - 1) / kConvGradWeightTaps);
}

// How many image slices the weight gradient sums separately: enough blocks
// for about four per multiprocessor, at most one slice per image.
int64_t grad_weight_slices(const ConvGeometry& g, int sm_count) {
  int64_t blocks = std::max<int64_t>(1, grad_weight_blocks(g));
  int64_t wanted = 4 * int64_t(sm_count > 0 ? sm_count : 132);
  int64_t most = std::max<int64_t>(1, std::min(g.N, kConvMaxSlices));
  return std::clamp<int64_t>((wanted + blocks - 1) / blocks, 1, most);
}

int64_t numel(const ir::Shape& s) {
  return s.numel().value_or(0);
}

}  // namespace

KernelResult make_conv_kernel(const KernelRequest& r) {
  ir::DType d = r.output.dtype;
  std::optional<ConvDType> dtype = conv_dtype(d);
  if (!dtype || r.inputs.size() != 2 || r.inputs[0].dtype != d || r.inputs[1].dtype != d)
    return no_kernel(r, "operands must be lowered to the compute dtype first");
  for (const ir::TensorType& t : r.inputs)
    if (t.shape.rank() != 4) return no_kernel(r, "conv2d works on 4-D NCHW tensors");
  if (r.output.shape.rank() != 4) return no_kernel(r, "conv2d works on 4-D NCHW tensors");

  // Which operand is which: conv2d (x, w) -> y; grad_input (gy, w) -> gx;
  // grad_weight (x, gy) -> gw.
  ConvOp op = r.op == Op::Conv2d            ? ConvOp::Forward
              : r.op == Op::Conv2dGradInput ? ConvOp::GradInput
                                            : ConvOp::GradWeight;
  const ir::Shape& x = op == ConvOp::GradInput ? r.output.shape : r.inputs[0].shape;
  const ir::Shape& w = op == ConvOp::GradWeight ? r.output.shape : r.inputs[1].shape;
  ConvParams params;
  params.op = op;
  params.dtype = *dtype;
  params.g = conv_geometry(x, w, r.attrs);

  Kernel kernel;
  kernel.name = kernel_label(r.op, d) + " direct";
  if (numel(r.output.shape) == 0) {
    kernel.launch = [](const LaunchArgs&) { return std::string(); };
    return kernel;
  }
  const ConvGeometry& g = params.g;
  if (op == ConvOp::GradWeight) {
    if (grad_weight_blocks(g) > INT_MAX)
      return no_kernel(r, "too many weights for the weight-gradient kernel's grid");
    if (!spatial_fits_32_bits(g))
      return no_kernel(r, "images too large for the weight-gradient kernel's 32-bit coordinates");
    params.slices = grad_weight_slices(g, r.context.sm_count);
    kernel.scratch_bytes = conv_grad_weight_scratch_bytes(params);
    kernel.name += " slices=" + std::to_string(params.slices);
  }
  kernel.launch = [params](const LaunchArgs& a) -> std::string {
    ConvParams p = params;
    p.a = a.inputs[0];
    p.b = a.inputs[1];
    p.out = a.output;
    p.scratch = a.scratch;
    return cuda_error(launch_conv(p, a.stream), "conv2d kernel");
  };
  return kernel;
}

}  // namespace sexpgpu::cuda
