// Creation kernels (ops.def, "Creation") on the CUDA device: full is a fill
// kernel with the element's bits; constant and arange are computed here, on
// the host, with the CPU device's conversion of each double to the dtype,
// uploaded once (prepare) into device memory the kernel owns, and copied
// into the output at each launch. So every dtype matches the CPU bit for
// bit.
#include <bit>
#include <cstring>
#include <memory>
#include <vector>

#include "cuda/check.h"
#include "cuda/kernels/creation_launch.h"
#include "ir/elementwise.h"
#include "kernel.h"
#include "plan/geometry.h"

namespace sexpgpu::cuda {

uint64_t storage_bits(double value, ir::DType dtype) {
  switch (dtype) {
    case ir::DType::F32: return std::bit_cast<uint32_t>(float(value));
    case ir::DType::F64: return std::bit_cast<uint64_t>(value);
    // Through f32 rounded to odd, so the second rounding is a correct one.
    case ir::DType::BF16: return ir::to_bf16_bits(ir::detail::round_to_odd_float(value));
    case ir::DType::F16: return ir::to_f16_bits(ir::detail::round_to_odd_float(value));
    case ir::DType::I32: return uint32_t(ir::convert<int32_t>(value));
    case ir::DType::I64: return uint64_t(ir::convert<int64_t>(value));
    case ir::DType::U8: return ir::convert<uint8_t>(value);
    case ir::DType::U16: return ir::convert<uint16_t>(value);
    case ir::DType::Bool: return value != 0 ? 1 : 0;
  }
  return 0;  // unreachable: -Werror=switch covers every dtype
}

namespace {

KernelResult full(const KernelRequest& r, std::string name) {
  if (!r.attrs.value) return no_kernel(r, "the `value` attribute is missing");
  const int64_t n = cpu::numel(r.output.shape);
  const int elem = int(ir::size_bytes(r.output.dtype));
  const uint64_t bits = storage_bits(*r.attrs.value, r.output.dtype);
  const int blocks = max_blocks(r.context);
  LaunchFn launch = [n, elem, bits, blocks](const LaunchArgs& a) -> std::string {
    if (n == 0) return {};
    return cuda_error(launch_fill(a.output, n, elem, bits, blocks, a.stream), "launch_fill");
  };
  return kernel_of(std::move(launch), std::move(name));
}

// A kernel whose output is `values` (one double per element) stored as the
// output's dtype: converted now, uploaded by prepare (factories must not
// touch the GPU), copied into the output by each launch.
Kernel precomputed(const KernelRequest& r, const std::vector<double>& values, std::string name) {
  const size_t elem = ir::size_bytes(r.output.dtype), bytes = values.size() * elem;
  if (bytes == 0)
    return kernel_of([](const LaunchArgs&) { return std::string(); }, std::move(name) + " (empty)");
  std::vector<unsigned char> host(bytes);
  for (size_t i = 0; i < values.size(); ++i) {
    uint64_t bits = storage_bits(values[i], r.output.dtype);
    std::memcpy(host.data() + i * elem, &bits, elem);  // the low bytes (little-endian)
  }
  auto data = std::make_shared<DeviceBuffer>();
  LaunchFn launch = [data, bytes](const LaunchArgs& a) -> std::string {
    return cuda_error(
        cudaMemcpyAsync(a.output, data->ptr, bytes, cudaMemcpyDeviceToDevice, a.stream),
        "cudaMemcpyAsync");
  };
  Kernel k = kernel_of(std::move(launch), std::move(name) + " " + std::to_string(bytes) + " bytes");
  k.resources = data;
  k.prepare = [data, host = std::move(host)]() -> std::string {
    if (data->ptr) return {};
    SG_CUDA_RETURN_IF_ERROR(cudaMalloc(&data->ptr, host.size()));
    data->bytes = host.size();
    SG_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(data->ptr, host.data(), host.size(), cudaMemcpyHostToDevice));
    return {};
  };
  return k;
}

}  // namespace

KernelResult make_creation_kernel(const KernelRequest& r) {
  std::string name = kernel_label(r.op, r.output.dtype);
  const int64_t n = cpu::numel(r.output.shape);
  switch (r.op) {
    case ir::Op::Full: return full(r, std::move(name));
    case ir::Op::Constant:
      if (!r.attrs.data || int64_t(r.attrs.data->size()) != n)
        return no_kernel(r, "`data` needs one number per element");
      return precomputed(r, *r.attrs.data, std::move(name));
    case ir::Op::Arange: {
      const double start = r.attrs.start.value_or(0.0), step = r.attrs.step.value_or(1.0);
      std::vector<double> values(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) values[size_t(i)] = start + double(i) * step;
      return precomputed(r, values, std::move(name));
    }
    default: return no_kernel(r, "not a creation op");
  }
}

}  // namespace sexpgpu::cuda
