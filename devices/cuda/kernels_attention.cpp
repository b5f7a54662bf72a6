// The attention factory (ops.def, "Neural"): resolves the shapes, the scale,
// causality and the mask's broadcast strides of one attention node into the
// flash-attention kernel of attention.cu. Semantics as the CPU device's
// (devices/cpu/kernels_attention.cpp): a query that sees no key gives zeros.
#include <climits>
#include <cmath>

#include "attention_launch.h"
#include "check.h"
#include "geometry.h"
#include "kernel.h"

namespace sexpgpu::cuda {
namespace {

// The operand checks the CPU factory makes, plus the head-dimension limit.
std::string unsupported(const KernelRequest& r) {
  ir::DType d = r.output.dtype;
  if (r.inputs.size() < 3 || r.inputs.size() > 4)
    return "attention takes q, k, v and an optional mask";
  if (d != ir::DType::F32 && d != ir::DType::F64) return "attention computes in f32 or f64";
  for (size_t i = 0; i < 3; ++i)
    if (r.inputs[i].dtype != d || r.inputs[i].shape.rank() != 4)
      return "q, k and v must be [B,H,T,D] of the compute dtype";
  if (r.inputs[2].shape[3] != r.inputs[0].shape[3]) return "v's D must equal q's";
  if (r.inputs.size() == 4 && r.inputs[3].dtype != ir::DType::Bool && r.inputs[3].dtype != d)
    return "the mask must be bool or of the compute dtype";
  if (r.inputs[0].shape[3] > kAttentionMaxHeadDim)
    return "head dimension D=" + std::to_string(r.inputs[0].shape[3]) + " is above the " +
           std::to_string(kAttentionMaxHeadDim) + " the flash-attention kernel keeps in registers";
  return {};
}

AttentionParams attention_params(const KernelRequest& r) {
  const ir::Shape &q = r.inputs[0].shape, &k = r.inputs[1].shape;
  AttentionParams p;
  p.batch = q[0];
  p.heads = q[1];
  p.tq = q[2];
  p.tk = k[2];
  p.d = q[3];
  p.scale = r.attrs.scale.value_or(1.0 / std::sqrt(double(q[3])));
  p.causal = r.attrs.causal.value_or(false);
  p.dtype = r.output.dtype == ir::DType::F64 ? AttentionDType::F64 : AttentionDType::F32;
  if (r.inputs.size() == 4) {
    const ir::TensorType& mask = r.inputs[3];
    p.mask_kind = mask.dtype == ir::DType::Bool ? AttentionMask::Bool : AttentionMask::Additive;
    ir::Dims strides = cpu::broadcast_strides(mask.shape, ir::Shape{p.batch, p.heads, p.tq, p.tk});
    for (size_t a = 0; a < 4; ++a) p.mask_strides[a] = strides[a];
  }
  return p;
}

std::string kernel_name(const KernelRequest& r, const AttentionParams& p,
                        const AttentionTiling& t) {
  std::string name = kernel_label(ir::Op::Attention, r.output.dtype) + " flash " +
                     std::to_string(t.queries_per_block) + "x" + std::to_string(t.keys_per_tile) +
                     " d=" + std::to_string(p.d);
  if (p.causal) name += " causal";
  if (p.mask_kind == AttentionMask::Bool) name += " bool-mask";
  if (p.mask_kind == AttentionMask::Additive) name += " float-mask";
  return name;
}

}  // namespace

KernelResult make_attention_kernel(const KernelRequest& r) {
  if (std::string why = unsupported(r); !why.empty()) return no_kernel(r, why);
  const AttentionParams params = attention_params(r);
  const AttentionTiling tiling = attention_tiling(params);
  std::string name = kernel_name(r, params, tiling);
  Kernel kernel;
  if (params.batch * params.heads == 0 || params.tq == 0 || params.d == 0) {
    kernel.launch = [](const LaunchArgs&) { return std::string(); };
    kernel.name = name + " (empty)";
    return kernel;
  }

  if (tiling.shared_bytes > r.context.shared_memory_per_block)
    return no_kernel(r, "the kernel needs " + std::to_string(tiling.shared_bytes) +
                            " bytes of shared memory per block, the device allows " +
                            std::to_string(r.context.shared_memory_per_block));
  int64_t query_tiles = (params.tq + tiling.queries_per_block - 1) / tiling.queries_per_block;
  if (params.batch * params.heads > INT_MAX || query_tiles > 65535)
    return no_kernel(r, "B*H or Tq is beyond the kernel's grid");

  kernel.launch = [params](const LaunchArgs& a) -> std::string {
    AttentionParams p = params;
    p.q = a.inputs[0];
    p.k = a.inputs[1];
    p.v = a.inputs[2];
    if (p.mask_kind != AttentionMask::None) p.mask = a.inputs[3];
    p.out = a.output;
    return cuda_error(launch_attention(p, a.stream), "attention kernel");
  };
  kernel.prepare = [params] { return cuda_error(prepare_attention(params), "attention setup"); };
  kernel.name = std::move(name);
  return kernel;
}

}  // namespace sexpgpu::cuda
