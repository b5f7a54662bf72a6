// The collective kernel (ops.def, "Collective"): all_reduce, a gradient
// bucket. It packs its operands in order into the 1-D output, then sums the
// output over the run's processes through the request's Collective (none: a
// world of one, where packing is all), and for reduction "mean" divides by
// the number of processes, in the operands' dtype.
#include <cstddef>
#include <cstring>
#include <vector>

#include "collective.h"
#include "ir/elementwise.h"
#include "kernel.h"
#include "plan/bucket_layout.h"

namespace sexpgpu::cpu {
namespace {

// Multiplies `count` elements of float dtype `dtype` at `data` by `k`,
// rounding each to the dtype (bf16/f16 through f32, as their kernels compute).
void scale(void* data, size_t count, ir::DType dtype, double k) {
  switch (dtype) {
    case ir::DType::F64: {
      auto* p = static_cast<double*>(data);
      for (size_t i = 0; i < count; ++i) p[i] *= k;
      return;
    }
    case ir::DType::F32: {
      auto* p = static_cast<float*>(data);
      const float kf = float(k);
      for (size_t i = 0; i < count; ++i) p[i] *= kf;
      return;
    }
    case ir::DType::BF16: {
      auto* p = static_cast<uint16_t*>(data);
      const float kf = float(k);
      for (size_t i = 0; i < count; ++i) p[i] = ir::to_bf16_bits(ir::from_bf16_bits(p[i]) * kf);
      return;
    }
    case ir::DType::F16: {
      auto* p = static_cast<uint16_t*>(data);
      const float kf = float(k);
      for (size_t i = 0; i < count; ++i) p[i] = ir::to_f16_bits(ir::from_f16_bits(p[i]) * kf);
      return;
    }
    default: return;  // the shape rule admits floats only
  }
}

}  // namespace

KernelResult make_collective_kernel(const KernelRequest& r) {
  sexpgpu::plan::BucketLayout layout;
  if (std::string why =
          sexpgpu::plan::bucket_layout(r.op, r.output.dtype, r.attrs, r.inputs, layout);
      !why.empty())
    return no_kernel(r, why);
  const ir::DType dtype = r.output.dtype;
  Collective* collective = r.collective;
  KernelFn fn = [layout, dtype, collective](const void* const* inputs,
                                            void* output) -> std::string {
    auto* out = static_cast<std::byte*>(output);
    for (size_t i = 0, at = 0; i < layout.bytes.size(); at += layout.bytes[i], ++i)
      if (layout.bytes[i] > 0) std::memcpy(out + at, inputs[i], layout.bytes[i]);
    if (!collective || collective->world_size() <= 1) return "";
    if (std::string e = collective->all_reduce_sum(output, layout.count(), dtype); !e.empty())
      return e;
    if (layout.mean) scale(output, layout.count(), dtype, 1.0 / double(collective->world_size()));
    return "";
  };
  std::string name = kernel_label(r.op, dtype) + " " + std::to_string(r.inputs.size()) +
                     " operands" + (collective ? "" : " (a world of one: packs)");
  return Kernel{std::move(fn), std::move(name)};
}

}  // namespace sexpgpu::cpu
