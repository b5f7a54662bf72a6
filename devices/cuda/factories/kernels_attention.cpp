// The attention factory (ops.def, "Neural"): resolves the shapes, the scale,
// causality and the mask's broadcast strides of one attention or
// attention_grad node into the kernels of attention_launch.h: f32 and f64 on
// CUDA cores, bf16 and f16 on tensor cores (f32 accumulation and softmax).
// Semantics as the CPU device's (devices/cpu/kernels_attention.cpp): a
// query that sees no key gives zeros and contributes nothing to gradients.
#include <climits>
#include <cmath>
#include <optional>
#include <string>

#include "cuda/check.h"
#include "cuda/kernels/attention_launch.h"
#include "kernel.h"
#include "plan/geometry.h"

namespace sexpgpu::cuda {
namespace {

std::optional<AttentionDType> attention_dtype(ir::DType d) {
  switch (d) {
    case ir::DType::F32: return AttentionDType::F32;
    case ir::DType::F64: return AttentionDType::F64;
    case ir::DType::BF16: return AttentionDType::BF16;
    case ir::DType::F16: return AttentionDType::F16;
    default: return std::nullopt;
  }
}

bool is_half(AttentionDType d) {
  return d == AttentionDType::BF16 || d == AttentionDType::F16;
}

// The operand checks the CPU factory makes, plus the head-dimension limit.
// `values`: how many leading operands are [B,H,T,D] of the compute dtype.
std::string unsupported(const KernelRequest& r, size_t values, bool float_mask) {
  const std::string op = r.op == ir::Op::AttentionGrad ? "attention_grad" : "attention";
  if (r.inputs.size() < values || r.inputs.size() > values + 1)
    return op + " takes " + std::to_string(values) + " value operands and an optional mask";
  ir::DType d = r.output.dtype;
  if (!attention_dtype(d)) return op + " computes in f32, f64, bf16 or f16";
  for (size_t i = 0; i < values; ++i)
    if (r.inputs[i].dtype != d || r.inputs[i].shape.rank() != 4)
      return "the value operands must be [B,H,T,D] of the compute dtype";
  if (r.inputs[2].shape[3] != r.inputs[0].shape[3]) return "v's D must equal q's";
  if (r.inputs.size() > values) {
    ir::DType mask = r.inputs[values].dtype;
    if (mask != ir::DType::Bool && !(float_mask && mask == d))
      return float_mask ? "the mask must be bool or of the compute dtype" : "the mask must be bool";
  }
  if (r.inputs[0].shape[3] > kAttentionMaxHeadDim)
    return "head dimension D=" + std::to_string(r.inputs[0].shape[3]) + " is above the " +
           std::to_string(kAttentionMaxHeadDim) + " the flash-attention kernels keep in registers";
  return {};
}

// q, k, v and the mask (operand `mask_input`, when there) of a request.
AttentionParams attention_params(const KernelRequest& r, size_t mask_input) {
  const ir::Shape &q = r.inputs[0].shape, &k = r.inputs[1].shape;
  AttentionParams p;
  p.batch = q[0];
  p.heads = q[1];
  p.tq = q[2];
  p.tk = k[2];
  p.d = q[3];
  p.scale = r.attrs.scale.value_or(1.0 / std::sqrt(double(q[3])));
  p.causal = r.attrs.causal.value_or(false);
  p.dtype = *attention_dtype(r.output.dtype);
  if (r.inputs.size() > mask_input) {
    const ir::TensorType& mask = r.inputs[mask_input];
    p.mask_kind = mask.dtype == ir::DType::Bool ? AttentionMask::Bool : AttentionMask::Additive;
    ir::Dims strides = cpu::broadcast_strides(mask.shape, ir::Shape{p.batch, p.heads, p.tq, p.tk});
    for (size_t a = 0; a < 4; ++a) p.mask_strides[a] = strides[a];
  }
  return p;
}

// The request with each operand viewed in place (KernelRequest::views)
// typed as its logical [B,H,T,D]: what the checks and sizes read.
struct Logical {
  std::vector<ir::TensorType> types;
  KernelRequest request;
  explicit Logical(const KernelRequest& r) : types(r.inputs.begin(), r.inputs.end()), request(r) {
    if (r.views)
      for (size_t i = 0; i < types.size(); ++i)
        if (const std::optional<HeadView>& v = r.views->operand(i)) types[i].shape = v->shape;
    request.inputs = types;
  }
};

bool any_view(const KernelRequest& r) {
  if (!r.views) return false;
  if (r.views->output || !r.views->output_parts.empty()) return true;
  for (const std::optional<HeadView>& v : r.views->operands)
    if (v) return true;
  return false;
}

HeadStrides strides_of(const std::optional<HeadView>& v) {
  return v ? HeadStrides{v->batch, v->head, v->row} : HeadStrides{};
}

// Where a viewed operand's element (0,0,0,0) is, in bytes from its buffer.
std::vector<size_t> byte_offsets(const KernelRequest& r, size_t element) {
  std::vector<size_t> offsets(r.inputs.size(), 0);
  if (r.views)
    for (size_t i = 0; i < offsets.size(); ++i)
      if (const std::optional<HeadView>& v = r.views->operand(i))
        offsets[i] = size_t(v->offset) * element;
  return offsets;
}

const void* at(const void* buffer, size_t offset) {
  return static_cast<const char*>(buffer) + offset;
}

// The tensor-core kernels step rows with 32-bit offsets (flash_tensor.h).
bool rows_fit_32_bits(const HeadStrides& s, int64_t rows) {
  return rows * s.row < (int64_t(1) << 31);
}
bool rows_fit_32_bits(const AttentionParams& params) {
  const AttentionParams p = with_dense_strides(params);
  return rows_fit_32_bits(p.q_strides, p.tq) && rows_fit_32_bits(p.k_strides, p.tk) &&
         rows_fit_32_bits(p.v_strides, p.tk) && rows_fit_32_bits(p.out_strides, p.tq);
}
bool rows_fit_32_bits(const AttentionGradParams& params) {
  const AttentionGradParams p = with_dense_strides(params);
  const int64_t tq = p.attention.tq, tk = p.attention.tk;
  return rows_fit_32_bits(p.attention) && rows_fit_32_bits(p.o_strides, tq) &&
         rows_fit_32_bits(p.g_strides, tq) && rows_fit_32_bits(p.dq_strides, tq + 2 * tk);
}

std::string kernel_name(const KernelRequest& r, const AttentionParams& p, const std::string& how) {
  std::string name = kernel_label(r.op, r.output.dtype) + " " + how + " d=" + std::to_string(p.d);
  if (p.causal) name += " causal";
  if (p.mask_kind == AttentionMask::Bool) name += " bool-mask";
  if (p.mask_kind == AttentionMask::Additive) name += " float-mask";
  if (any_view(r)) name += " strided";
  return name;
}

Kernel empty_kernel(std::string name) {
  Kernel kernel;
  kernel.launch = [](const LaunchArgs&) { return std::string(); };
  kernel.name = name + " (empty)";
  return kernel;
}

// The grid limits (B*H blocks along x, tiles along y) and shared memory.
std::string beyond_device(const KernelRequest& r, const AttentionParams& p, int64_t tiles,
                          size_t shared_bytes) {
  if (shared_bytes > r.context.shared_memory_per_block)
    return "the kernels need " + std::to_string(shared_bytes) +
           " bytes of shared memory per block, the device allows " +
           std::to_string(r.context.shared_memory_per_block);
  if (p.batch * p.heads > INT_MAX || tiles > 65535) return "B*H or T is beyond the kernels' grid";
  return {};
}

KernelResult make_forward_kernel(const KernelRequest& request) {
  const Logical logical(request);
  const KernelRequest& r = logical.request;
  if (std::string why = unsupported(r, 3, true); !why.empty()) return no_kernel(r, why);
  AttentionParams params = attention_params(r, 3);
  const bool half = is_half(params.dtype);
  if (any_view(r)) {
    if (!half) return no_kernel(r, "only the tensor-core kernels read strided operands");
    params.q_strides = strides_of(r.views->operand(0));
    params.k_strides = strides_of(r.views->operand(1));
    params.v_strides = strides_of(r.views->operand(2));
    params.out_strides = strides_of(r.views->output);
    if (r.views->output && r.views->output->offset != 0)
      return no_kernel(r, "a strided result starts its buffer");
  }
  if (half && !rows_fit_32_bits(params))
    return no_kernel(r, "a head's rows span 2^31 elements or more");
  const std::vector<size_t> offsets = byte_offsets(r, ir::size_bytes(r.output.dtype));
  const AttentionTiling tiling = half ? flash_attention_tiling(params) : attention_tiling(params);
  std::string name = kernel_name(r, params,
                                 std::string(half ? "tensor-core flash " : "flash ") +
                                     std::to_string(tiling.queries_per_block) + "x" +
                                     std::to_string(tiling.keys_per_tile));
  if (params.batch * params.heads == 0 || params.tq == 0 || params.d == 0)
    return empty_kernel(name);
  int64_t query_tiles = (params.tq + tiling.queries_per_block - 1) / tiling.queries_per_block;
  if (std::string why = beyond_device(r, params, query_tiles, tiling.shared_bytes); !why.empty())
    return no_kernel(r, why);

  Kernel kernel;
  // Linked to its attention_grad: the row statistics go to the link.
  const bool writes_lse = r.link && attention_writes_lse(params);
  if (writes_lse) {
    kernel.link_bytes = size_t(params.batch * params.heads * params.tq) * sizeof(float);
    name += " +lse";
  }
  kernel.launch = [params, half, writes_lse, offsets](const LaunchArgs& a) -> std::string {
    AttentionParams p = params;
    p.q = at(a.inputs[0], offsets[0]);
    p.k = at(a.inputs[1], offsets[1]);
    p.v = at(a.inputs[2], offsets[2]);
    if (p.mask_kind != AttentionMask::None) p.mask = a.inputs[3];
    p.out = a.output;
    if (writes_lse) p.lse = static_cast<float*>(a.link);
    return cuda_error(half ? launch_flash_attention(p, a.stream) : launch_attention(p, a.stream),
                      "attention kernel");
  };
  kernel.prepare = [params, half] {
    return cuda_error(half ? prepare_flash_attention(params) : prepare_attention(params),
                      "attention setup");
  };
  kernel.name = std::move(name);
  return kernel;
}

// attention_grad of bf16/f16 with a head dimension above the tensor-core
// kernels': q, k, v, o and g widened to f32 in the scratch, the f32 kernels,
// the f32 result narrowed into the output. Scratch: the row statistics,
// then the five f32 operands and the f32 result, each 256-byte aligned.
// launch takes p with the mask already set.
struct Widening {
  AttentionDType half;
  int64_t numel[6];  // q, k, v, o, g, the result
  size_t offset[7];  // of each in the scratch, after the statistics; [6]: the total

  explicit Widening(const AttentionGradParams& p32, AttentionDType half_dtype) : half(half_dtype) {
    const AttentionParams& a = p32.attention;
    const int64_t bh = a.batch * a.heads;
    const int64_t rows[6] = {a.tq, a.tk, a.tk, a.tq, a.tq, a.tq + 2 * a.tk};
    offset[0] = pointer_aligned(attention_grad_stats_bytes(p32));
    for (size_t i = 0; i < 6; ++i) {
      numel[i] = bh * rows[i] * a.d;
      offset[i + 1] = offset[i] + pointer_aligned(sizeof(float) * size_t(numel[i]));
    }
  }

  std::string launch(AttentionGradParams p, const LaunchArgs& a) const {
    char* scratch = static_cast<char*>(a.scratch);
    float* f32[6];
    for (size_t i = 0; i < 6; ++i) f32[i] = reinterpret_cast<float*>(scratch + offset[i]);
    for (size_t i = 0; i < 5; ++i)
      if (numel[i] > 0)
        SG_CUDA_RETURN_IF_ERROR(launch_widen_to_f32(a.inputs[i], f32[i], numel[i], half, a.stream));
    p.attention.q = f32[0];
    p.attention.k = f32[1];
    p.attention.v = f32[2];
    p.o = f32[3];
    p.g = f32[4];
    p.out = f32[5];
    p.row_stats = scratch;
    SG_CUDA_RETURN_IF_ERROR(launch_attention_grad(p, a.stream));
    return cuda_error(launch_narrow_from_f32(f32[5], a.output, numel[5], half, a.stream),
                      "attention_grad narrowing");
  }
};

KernelResult make_backward_kernel(const KernelRequest& request) {
  const Logical logical(request);
  const KernelRequest& r = logical.request;
  if (std::string why = unsupported(r, 5, false); !why.empty()) return no_kernel(r, why);
  for (size_t i = 3; i < 5; ++i)
    if (!(r.inputs[i].shape == r.inputs[0].shape)) return no_kernel(r, "o and g must be q's shape");
  AttentionGradParams params;
  params.attention = attention_params(r, 5);
  const AttentionDType dtype = params.attention.dtype;
  const bool tensor_cores = is_half(dtype) && params.attention.d <= kFlashGradMaxHeadDim;
  std::optional<Widening> widening;
  if (is_half(dtype) && !tensor_cores) {
    params.attention.dtype = AttentionDType::F32;
    widening.emplace(params, dtype);
  }
  if (any_view(r)) {
    if (!tensor_cores) return no_kernel(r, "only the tensor-core kernels read strided operands");
    if (r.views->output) return no_kernel(r, "attention_grad writes a dense result");
    params.attention.q_strides = strides_of(r.views->operand(0));
    params.attention.k_strides = strides_of(r.views->operand(1));
    params.attention.v_strides = strides_of(r.views->operand(2));
    params.o_strides = strides_of(r.views->operand(3));
    params.g_strides = strides_of(r.views->operand(4));
    const std::vector<HeadView>& parts = r.views->output_parts;
    if (!parts.empty()) {
      if (parts.size() != 3) return no_kernel(r, "attention_grad writes dq, dk and dv");
      HeadStrides* strides[3] = {&params.dq_strides, &params.dk_strides, &params.dv_strides};
      for (size_t i = 0; i < 3; ++i) {
        *strides[i] = strides_of(parts[i]);
        params.part_offsets[i] = parts[i].offset;
      }
    }
  }
  if (tensor_cores && !rows_fit_32_bits(params))
    return no_kernel(r, "a head's rows span 2^31 elements or more");
  const std::vector<size_t> offsets = byte_offsets(r, ir::size_bytes(r.output.dtype));
  const AttentionParams& a = params.attention;
  const AttentionGradPlan plan =
      tensor_cores ? flash_attention_grad_plan(params) : attention_grad_plan(params);
  std::string name = kernel_name(r, a,
                                 tensor_cores ? "tensor-core flash"
                                 : widening   ? "flash via f32"
                                              : "flash");
  if (a.batch * a.heads == 0 || a.d == 0 || a.tq + a.tk == 0) return empty_kernel(name);
  if (std::string why = beyond_device(r, a, plan.largest_grid_y, plan.shared_bytes); !why.empty())
    return no_kernel(r, why);

  Kernel kernel;
  kernel.scratch_bytes = widening ? widening->offset[6] : attention_grad_stats_bytes(params);
  // The forward left its row statistics in the link (asked only then).
  const bool reads_lse = r.link && !widening && attention_grad_reads_lse(params);
  kernel.reads_link = reads_lse;
  if (reads_lse) name += " lse linked";
  kernel.launch = [params, tensor_cores, widening, reads_lse,
                   offsets](const LaunchArgs& args) -> std::string {
    AttentionGradParams p = params;
    if (p.attention.mask_kind != AttentionMask::None) p.attention.mask = args.inputs[5];
    if (widening) return widening->launch(p, args);
    if (reads_lse) p.lse = static_cast<const float*>(args.link);
    p.attention.q = at(args.inputs[0], offsets[0]);
    p.attention.k = at(args.inputs[1], offsets[1]);
    p.attention.v = at(args.inputs[2], offsets[2]);
    p.o = at(args.inputs[3], offsets[3]);
    p.g = at(args.inputs[4], offsets[4]);
    p.out = args.output;
    p.row_stats = args.scratch;
    return cuda_error(tensor_cores ? launch_flash_attention_grad(p, args.stream)
                                   : launch_attention_grad(p, args.stream),
                      "attention_grad kernels");
  };
  kernel.prepare = [params, tensor_cores] {
    return cuda_error(
        tensor_cores ? prepare_flash_attention_grad(params) : prepare_attention_grad(params),
        "attention_grad setup");
  };
  kernel.name = std::move(name);
  return kernel;
}

}  // namespace

KernelResult make_attention_kernel(const KernelRequest& r) {
  return r.op == ir::Op::AttentionGrad ? make_backward_kernel(r) : make_forward_kernel(r);
}

}  // namespace sexpgpu::cuda
