// Random draws (ops.def, "Random") on the CUDA device: the draw, its
// constants and its storage resolved here as the CPU device resolves them
// (devices/cpu/kernels_random.cpp: f32 arithmetic for f32/bf16/f16, f64 for
// f64, bernoulli by element size); the kernels (random.cu) read the RNG
// state from its device buffer at run time, so a captured graph replays
// with each step's state.
#include <limits>
#include <optional>

#include "cuda/check.h"
#include "cuda/kernels/creation_launch.h"
#include "cuda/kernels/random_launch.h"
#include "ir/philox.h"
#include "kernel.h"
#include "plan/geometry.h"

namespace sexpgpu::cuda {
namespace {

using ir::DType;
using ir::Op;

FloatStorage float_storage(DType d) {
  switch (d) {
    case DType::BF16: return FloatStorage::BF16;
    case DType::F16: return FloatStorage::F16;
    default: return FloatStorage::F32;
  }
}

int uniform_bits(DType d) {
  switch (d) {
    case DType::BF16: return stage::kUniformBitsBF16;
    case DType::F16: return stage::kUniformBitsF16;
    default: return stage::kUniformBitsF32;
  }
}

// The draw's element for each op, its constants rounded as the CPU rounds
// them; nullopt for a dtype the op does not draw.
std::optional<RandomParams> random_params(const KernelRequest& r) {
  const DType d = r.output.dtype;
  const bool f64 = d == DType::F64;
  RandomParams p;
  switch (r.op) {
    case Op::RandomUniform: {
      if (!ir::is_float(d)) return std::nullopt;
      double low = r.attrs.low.value_or(0.0), high = r.attrs.high.value_or(1.0);
      p.draw = f64 ? RandomDraw::UniformF64 : RandomDraw::UniformF32;
      p.lo = low;
      p.span = high - low;
      p.lo_f32 = float(low);
      p.span_f32 = float(high - low);
      p.uniform_bits = uniform_bits(d);
      break;
    }
    case Op::RandomNormal: {
      if (!ir::is_float(d)) return std::nullopt;
      double mean = r.attrs.mean.value_or(0.0), stddev = r.attrs.stddev.value_or(1.0);
      p.draw = f64 ? RandomDraw::NormalF64 : RandomDraw::NormalF32;
      p.mean = mean;
      p.stddev = stddev;
      p.mean_f32 = float(mean);
      p.stddev_f32 = float(stddev);
      break;
    }
    case Op::RandomBernoulli:
      p.draw = RandomDraw::Bernoulli;
      p.p = r.attrs.p.value_or(0.5);
      p.one = storage_bits(1.0, d);
      break;
    default: return std::nullopt;
  }
  p.storage = float_storage(d);
  p.elem_bytes = int(ir::size_bytes(d));
  p.n = cpu::numel(r.output.shape);
  p.stream = uint64_t(r.attrs.stream.value_or(0));
  p.invalid = ir::is_float(d) ? storage_bits(std::numeric_limits<double>::quiet_NaN(), d) : 0;
  p.max_blocks = max_blocks(r.context);
  return p;
}

}  // namespace

KernelResult make_random_kernel(const KernelRequest& r) {
  std::optional<RandomParams> params = random_params(r);
  if (!params) return no_kernel(r, "not a random op at a dtype it draws");
  std::string name = kernel_label(r.op, r.output.dtype);
  if (params->n == 0)
    return kernel_of([](const LaunchArgs&) { return std::string(); }, std::move(name) + " (empty)");
  LaunchFn launch = [p = *params](const LaunchArgs& a) -> std::string {
    RandomParams q = p;
    q.state = static_cast<const int64_t*>(a.inputs[0]);
    q.out = a.output;
    return cuda_error(launch_random(q, a.stream), "launch_random");
  };
  return kernel_of(std::move(launch), std::move(name));
}

}  // namespace sexpgpu::cuda
