// Random draws (ops.def, "Random"): Philox-4x32-10 keyed by (seed, `stream`)
// with the counter (step, microbatch, element block) of ir/philox.h. The
// operand is the RNG state i64[3] = (seed, step, microbatch), read at run
// time. Element i of a draw:
//   uniform f32/bf16/f16: low + (high - low) * u, u the top 24/8/11 bits of
//     word i%4 of block i/4, computed in f32 and rounded to the dtype;
//     f64: the 53-bit uniform of philox.h, in f64.
//   normal: mean + stddev * z, z = rng_normal_f32 (rounded from f32) or
//     rng_normal_f64 for f64.
//   bernoulli (any dtype): 1 when the 24-bit f32 uniform of element i is
//     below p, else 0.
#include "ir/philox.h"
#include "kernel.h"
#include "parallel.h"
#include "storage.h"

namespace sexpgpu::cpu {
namespace {

using ir::Op;

int uniform_bits(ir::DType d) {
  switch (d) {
    case ir::DType::BF16: return stage::kUniformBitsBF16;
    case ir::DType::F16: return stage::kUniformBitsF16;
    default: return stage::kUniformBitsF32;
  }
}

// value(stream, i) -> double or float, stored as D.
template <class D, class Value>
Kernel draw_kernel(int64_t n, uint64_t stream_id, int threads, Value value, std::string name) {
  KernelFn fn = [=](const void* const* in, void* out) -> std::string {
    const int64_t* state = static_cast<const int64_t*>(in[0]);
    std::optional<stage::RngStream> s;
    if (state[1] >= 0 && state[2] >= 0 && state[2] <= int64_t(stage::kMaxRngMicrobatch))
      s = stage::make_rng_stream(uint64_t(state[0]), stream_id, uint64_t(state[1]),
                                 uint32_t(state[2]));
    if (!s)
      return "the RNG state (seed " + std::to_string(state[0]) + ", step " +
             std::to_string(state[1]) + ", microbatch " + std::to_string(state[2]) +
             ") needs 0 <= step < 2^48 and 0 <= microbatch < 2^16";
    D* o = static_cast<D*>(out);
    const stage::RngStream stream = *s;
    parallel_range(n, 64, threads, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = convert<D>(value(stream, uint64_t(i)));
    });
    return {};
  };
  return Kernel{std::move(fn), std::move(name)};
}

}  // namespace

KernelResult make_random_kernel(const KernelRequest& r) {
  int64_t n = numel(r.output.shape);
  ir::DType d = r.output.dtype;
  uint64_t stream_id = uint64_t(r.attrs.stream.value_or(0));
  std::string name = kernel_label(r.op, d);
  bool f64 = d == ir::DType::F64;
  return dispatch_storage(d, [&](auto tag) -> KernelResult {
    using D = decltype(tag);
    switch (r.op) {
      case Op::RandomUniform: {
        double low = r.attrs.low.value_or(0.0), high = r.attrs.high.value_or(1.0);
        if (f64)
          return draw_kernel<D>(
              n, stream_id, r.threads,
              [=](const stage::RngStream& s, uint64_t i) {
                return low + (high - low) * stage::rng_uniform_f64(s, i);
              },
              name);
        int bits = uniform_bits(d);
        float lo = float(low), span = float(high - low);
        return draw_kernel<D>(
            n, stream_id, r.threads,
            [=](const stage::RngStream& s, uint64_t i) {
              return lo + span * stage::rng_uniform_f32(s, i, bits);
            },
            name);
      }
      case Op::RandomNormal: {
        double mean = r.attrs.mean.value_or(0.0), stddev = r.attrs.stddev.value_or(1.0);
        if (f64)
          return draw_kernel<D>(
              n, stream_id, r.threads,
              [=](const stage::RngStream& s, uint64_t i) {
                return mean + stddev * stage::rng_normal_f64(s, i);
              },
              name);
        float m = float(mean), sd = float(stddev);
        return draw_kernel<D>(
            n, stream_id, r.threads,
            [=](const stage::RngStream& s, uint64_t i) {
              return m + sd * stage::rng_normal_f32(s, i);
            },
            name);
      }
      case Op::RandomBernoulli: {
        double p = r.attrs.p.value_or(0.5);
        return draw_kernel<D>(
            n, stream_id, r.threads,
            [=](const stage::RngStream& s, uint64_t i) {
              return double(stage::rng_uniform_f32(s, i)) < p ? 1.0 : 0.0;
            },
            name);
      }
      default: return no_kernel(r, "not a random op");
    }
  });
}

}  // namespace sexpgpu::cpu
