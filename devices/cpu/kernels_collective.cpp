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
  if (r.op != ir::Op::AllReduce) return no_kernel(r, "not a collective op");
  if (!ir::is_float(r.output.dtype)) return no_kernel(r, "all_reduce sums floats only");
  if (!r.attrs.reduction || (*r.attrs.reduction != "mean" && *r.attrs.reduction != "sum"))
    return no_kernel(r, "the `reduction` is not \"mean\" or \"sum\"");
  const ir::DType dtype = r.output.dtype;
  const size_t element = ir::size_bytes(dtype);
  std::vector<size_t> bytes;
  size_t total = 0;
  for (const ir::TensorType& t : r.inputs) {
    bytes.push_back(size_t(t.shape.numel().value_or(0)) * element);
    total += bytes.back();
  }
  const bool mean = *r.attrs.reduction == "mean";
  Collective* collective = r.collective;
  KernelFn fn = [bytes, total, element, dtype, mean, collective](const void* const* inputs,
                                                                 void* output) -> std::string {
    auto* out = static_cast<std::byte*>(output);
    for (size_t i = 0, at = 0; i < bytes.size(); at += bytes[i], ++i)
      if (bytes[i] > 0) std::memcpy(out + at, inputs[i], bytes[i]);
    if (!collective || collective->world_size() <= 1) return "";
    const size_t count = total / element;
    if (std::string e = collective->all_reduce_sum(output, count, dtype); !e.empty()) return e;
    if (mean) scale(output, count, dtype, 1.0 / double(collective->world_size()));
    return "";
  };
  std::string name = kernel_label(r.op, dtype) + " " + std::to_string(r.inputs.size()) +
                     " operands" + (collective ? "" : " (a world of one: packs)");
  return Kernel{std::move(fn), std::move(name)};
}

}  // namespace sexpgpu::cpu
