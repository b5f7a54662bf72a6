// Random kernels (random_launch.h): Philox-4x32-10 draws, element for
// element those of the CPU device (devices/cpu/kernels_random.cpp). The
// bits-to-numbers functions are core/ir/philox.h's own, written for host
// and device alike, so the layout (block i/4 or i/2, which words) and the
// Box-Muller arithmetic are one definition.
//
// Bit-exactness with the CPU:
//  - Philox, the key derivation and the uniforms are integer or exact float
//    arithmetic: identical everywhere.
//  - `lo + span*u` and `mean + stddev*z` use __fadd_rn/__fmul_rn (and the
//    f64 ones), so nvcc cannot contract them into an fma, which rounds once
//    where the CPU (x86-64 without FMA) rounds twice.
//  - Box-Muller runs in double as on the CPU, so an f32 normal is a double
//    rounded to float. CUDA's double log/sin/cos are within 1-2 ulp where
//    glibc's are within 1; such a difference changes the f32 result only if
//    the double lies within a few double ulps of a float rounding boundary
//    (about 2^-28 of draws; philox.h measured 4M draws identical). f64
//    normals may differ from the CPU's in the last bits.
//  - f32 to bf16/f16 are elementwise.h's round-to-nearest-even bit recipes,
//    ported below (NaN included).
#include <cuda_runtime.h>

#include <cstdint>

#include "ir/philox.h"
#include "random_launch.h"

namespace sexpgpu::cuda {
namespace {

using stage::PhiloxCounter;

constexpr int kThreads = 256;

// ---------------------------------------------------------------------------
// The draw's stream from the state buffer (stage::make_rng_stream and
// derive_philox_key, which run on the host for the CPU device).

struct SipState {
  uint64_t v0, v1, v2, v3;

  __device__ static uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }
  __device__ void round() {
    v0 += v1;
    v1 = rotl(v1, 13);
    v1 ^= v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl(v1, 17);
    v1 ^= v2;
    v2 = rotl(v2, 32);
  }
};

// SipHash-2-4 under key (seed, stream) of the empty message (philox.cpp):
// its one message word is 0 (no bytes, length 0 in the top byte).
__device__ stage::PhiloxKey philox_key(uint64_t seed, uint64_t stream) {
  SipState s{seed ^ 0x736f6d6570736575ull, stream ^ 0x646f72616e646f6dull,
             seed ^ 0x6c7967656e657261ull, stream ^ 0x7465646279746573ull};
  s.round();  // compressing the word 0: v3 ^= 0, two rounds, v0 ^= 0
  s.round();
  s.v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) s.round();
  uint64_t k = s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
  return stage::PhiloxKey{{uint32_t(k), uint32_t(k >> 32)}};
}

// False when the state's step or microbatch has no room in the counter.
__device__ bool rng_stream(const int64_t* state, uint64_t stream, stage::RngStream* s) {
  const int64_t seed = state[0], step = state[1], microbatch = state[2];
  if (step < 0 || uint64_t(step) > stage::kMaxRngStep || microbatch < 0 ||
      microbatch > int64_t(stage::kMaxRngMicrobatch))
    return false;
  s->key = philox_key(uint64_t(seed), stream);
  s->c2 = uint32_t(uint64_t(step));
  s->c3 = uint32_t(uint64_t(step) >> 32) | (uint32_t(microbatch) << 16);
  return true;
}

// ---------------------------------------------------------------------------
// f32 to the storage of a float dtype (ir::to_bf16_bits, ir::to_f16_bits).

__device__ uint16_t to_bf16_bits(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

__device__ uint32_t shift_round_even(uint32_t mant, uint32_t shift) {
  uint32_t kept = mant >> shift, rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

__device__ uint16_t to_f16_bits(float f) {
  uint32_t u = __float_as_uint(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to infinity
  if (a >= 0x38800000u) {                                 // a normal f16
    uint32_t exp = (a >> 23) - 127 + 15, mant = a & 0x7fffffu;
    return uint16_t(sign | shift_round_even((exp << 23) | mant, 13));
  }
  if (a <= 0x33000000u) return sign;
  uint32_t exp = a >> 23, mant = (a & 0x7fffffu) | 0x800000u;  // a subnormal f16
  return uint16_t(sign | shift_round_even(mant, 126 - exp));
}

template <FloatStorage S>
struct Stored {
  using type = uint16_t;  // BF16, F16: the bits
};
template <>
struct Stored<FloatStorage::F32> {
  using type = float;
};

template <FloatStorage S>
__device__ typename Stored<S>::type store(float f) {
  if constexpr (S == FloatStorage::F32)
    return f;
  else if constexpr (S == FloatStorage::BF16)
    return to_bf16_bits(f);
  else
    return to_f16_bits(f);
}

// ---------------------------------------------------------------------------
// Draws: the kPerBlock consecutive elements one Philox block gives.

template <FloatStorage S>
struct UniformF32 {
  static constexpr int kPerBlock = 4;
  using Out = typename Stored<S>::type;
  int bits;
  float lo, span;
  __device__ void operator()(const PhiloxCounter& w, Out* v) const {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      v[j] = store<S>(__fadd_rn(lo, __fmul_rn(span, stage::uniform_f32(w.v[j], bits))));
  }
};

struct UniformF64 {
  static constexpr int kPerBlock = 2;
  using Out = double;
  double lo, span;
  __device__ void operator()(const PhiloxCounter& w, Out* v) const {
#pragma unroll
    for (int j = 0; j < 2; ++j)
      v[j] = __dadd_rn(
          lo, __dmul_rn(span, stage::uniform_f64(stage::join_u64(w.v[2 * j], w.v[2 * j + 1]))));
  }
};

template <FloatStorage S>
struct NormalF32 {
  static constexpr int kPerBlock = 4;
  using Out = typename Stored<S>::type;
  float mean, stddev;
  __device__ void operator()(const PhiloxCounter& w, Out* v) const {
#pragma unroll
    for (int q = 0; q < 2; ++q) {  // words (2q, 2q+1): elements 2q (cosine), 2q+1 (sine)
      stage::NormalPair z = stage::box_muller_u32(w.v[2 * q], w.v[2 * q + 1]);
      v[2 * q] = store<S>(__fadd_rn(mean, __fmul_rn(stddev, static_cast<float>(z.z0))));
      v[2 * q + 1] = store<S>(__fadd_rn(mean, __fmul_rn(stddev, static_cast<float>(z.z1))));
    }
  }
};

struct NormalF64 {
  static constexpr int kPerBlock = 2;
  using Out = double;
  double mean, stddev;
  __device__ void operator()(const PhiloxCounter& w, Out* v) const {
    stage::NormalPair z =
        stage::box_muller_u64(stage::join_u64(w.v[0], w.v[1]), stage::join_u64(w.v[2], w.v[3]));
    v[0] = __dadd_rn(mean, __dmul_rn(stddev, z.z0));
    v[1] = __dadd_rn(mean, __dmul_rn(stddev, z.z1));
  }
};

template <class U>
struct Bernoulli {
  static constexpr int kPerBlock = 4;
  using Out = U;
  double p;
  U one;
  __device__ void operator()(const PhiloxCounter& w, Out* v) const {
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = double(stage::uniform_f32(w.v[j])) < p ? one : U(0);
  }
};

// Thread t of the grid-stride loop fills the elements of Philox block b.
// One thread per CUDA block derives the stream (a SipHash) for all.
template <class Draw>
__global__ void random_kernel(const int64_t* __restrict__ state, uint64_t stream_id,
                              typename Draw::Out* __restrict__ out, int64_t n, Draw draw,
                              typename Draw::Out invalid) {
  constexpr int k = Draw::kPerBlock;
  __shared__ stage::RngStream shared_stream;
  __shared__ bool valid;
  if (threadIdx.x == 0) valid = rng_stream(state, stream_id, &shared_stream);
  __syncthreads();
  const stage::RngStream s = shared_stream;
  const int64_t blocks = (n + k - 1) / k, stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks; b += stride) {
    typename Draw::Out v[k];
    if (valid) {
      draw(stage::rng_block(s, uint64_t(b)), v);
    } else {
#pragma unroll
      for (int j = 0; j < k; ++j) v[j] = invalid;
    }
    const int64_t i0 = b * k;
#pragma unroll
    for (int j = 0; j < k; ++j)
      if (i0 + j < n) out[i0 + j] = v[j];
  }
}

template <class Out>
Out from_bits(uint64_t bits) {
  Out o;
  __builtin_memcpy(&o, &bits, sizeof(Out));  // the low bytes (little-endian)
  return o;
}

template <class Draw>
cudaError_t launch_draw(const RandomParams& p, Draw draw, cudaStream_t stream) {
  using Out = typename Draw::Out;
  const int64_t threads = (p.n + Draw::kPerBlock - 1) / Draw::kPerBlock;
  const int64_t blocks = (threads + kThreads - 1) / kThreads;
  const int grid = int(blocks < p.max_blocks ? blocks : p.max_blocks);
  random_kernel<Draw><<<grid, kThreads, 0, stream>>>(p.state, p.stream, static_cast<Out*>(p.out),
                                                     p.n, draw, from_bits<Out>(p.invalid));
  return cudaGetLastError();
}

template <FloatStorage S>
cudaError_t launch_f32(const RandomParams& p, cudaStream_t stream) {
  if (p.draw == RandomDraw::UniformF32)
    return launch_draw(p, UniformF32<S>{p.uniform_bits, p.lo_f32, p.span_f32}, stream);
  return launch_draw(p, NormalF32<S>{p.mean_f32, p.stddev_f32}, stream);
}

}  // namespace

cudaError_t launch_random(const RandomParams& p, cudaStream_t stream) {
  switch (p.draw) {
    case RandomDraw::UniformF32:
    case RandomDraw::NormalF32:
      switch (p.storage) {
        case FloatStorage::F32: return launch_f32<FloatStorage::F32>(p, stream);
        case FloatStorage::BF16: return launch_f32<FloatStorage::BF16>(p, stream);
        case FloatStorage::F16: return launch_f32<FloatStorage::F16>(p, stream);
      }
      break;
    case RandomDraw::UniformF64: return launch_draw(p, UniformF64{p.lo, p.span}, stream);
    case RandomDraw::NormalF64: return launch_draw(p, NormalF64{p.mean, p.stddev}, stream);
    case RandomDraw::Bernoulli:
      switch (p.elem_bytes) {
        case 1: return launch_draw(p, Bernoulli<uint8_t>{p.p, uint8_t(p.one)}, stream);
        case 2: return launch_draw(p, Bernoulli<uint16_t>{p.p, uint16_t(p.one)}, stream);
        case 4: return launch_draw(p, Bernoulli<uint32_t>{p.p, uint32_t(p.one)}, stream);
        case 8: return launch_draw(p, Bernoulli<uint64_t>{p.p, p.one}, stream);
      }
      break;
  }
  return cudaErrorInvalidValue;
}

}  // namespace sexpgpu::cuda
