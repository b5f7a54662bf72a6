// A host emulation of the CUDA built-ins and of flash_mma.h's warp
// primitives (devices/cuda/), so the tensor-core attention bodies
// (flash_tensor.h, flash_tensor_grad.h) run on the CPU (test_flash_host.cpp);
// include it instead of flash_mma.h. exp2f, log2f, fmaxf and fmaf are the C
// library's. One block at a time: each CUDA
// thread is a fiber (ucontext) on one OS thread, switched round-robin;
// __syncthreads and the warp collectives (shuffles, ldmatrix, mma) are
// barriers over the block or the warp. The fragment layouts are written
// from the PTX ISA ("Matrix Fragments for mma.m16n8k16", "ldmatrix"), not
// from the kernels, so a wrong index in a kernel shows as a wrong result.
// cp.async copies land at the issuing thread's cp_async_wait_all, so a
// read before the wait sees stale data.
#pragma once

#define __device__
#define __global__
#define __launch_bounds__(...)
// Blocks run one at a time and a block's threads are fibers of one OS
// thread: a function's static is shared by the block's threads, as CUDA's
// __shared__ is.
#define __shared__ static

#include <cuda_runtime_api.h>
#include <ucontext.h>
#include <vector_types.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>

struct HostDim {
  unsigned x = 0, y = 0, z = 0;
};
inline HostDim threadIdx, blockIdx, gridDim, blockDim;

inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline float __uint_as_float(unsigned i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline unsigned float_bits(float f) {
  unsigned i;
  std::memcpy(&i, &f, 4);
  return i;
}

namespace host {

// The fibers of one block and the barriers between them.
struct Block {
  struct Fiber {
    ucontext_t context;
    std::unique_ptr<char[]> stack;
    bool done = false;
  };
  std::vector<Fiber> fibers;
  ucontext_t scheduler;
  int current = -1;
  std::function<void()> body;
  // Per barrier group (the block: index 0, warp w: 1 + w): arrivals and generation.
  std::vector<int> arrived;
  std::vector<long> generation;
  // The warp collectives' exchange: per warp, per lane, up to 8 words in.
  std::vector<std::vector<std::array<uint64_t, 8>>> slots;
  // Deferred cp.async copies per thread: destination, source bytes (empty: zeros).
  std::vector<std::vector<std::pair<void*, std::array<unsigned char, 16>>>> pending;
};
inline Block* block = nullptr;

inline void yield() {
  Block& b = *block;
  swapcontext(&b.fibers[b.current].context, &b.scheduler);
}

inline int live_threads(int group) {
  Block& b = *block;
  int n = 0;
  if (group == 0) {
    for (auto& f : b.fibers) n += !f.done;
    return n;
  }
  for (int t = 32 * (group - 1); t < 32 * group; ++t) n += !b.fibers[t].done;
  return n;
}

inline void barrier(int group) {
  Block& b = *block;
  const long gen = b.generation[group];
  if (++b.arrived[group] == live_threads(group)) {
    b.arrived[group] = 0;
    ++b.generation[group];
    return;
  }
  while (b.generation[group] == gen) yield();
}

inline int thread() {
  return block->current;
}
inline int lane() {
  return thread() % 32;
}
inline int warp() {
  return thread() / 32;
}

// Every lane of the warp deposits `in`, then `compute` reads the others'.
template <class Compute>
inline void warp_exchange(const std::array<uint64_t, 8>& in, Compute&& compute) {
  Block& b = *block;
  if (live_threads(1 + warp()) != 32) throw std::logic_error("warp collective with exited lanes");
  b.slots[warp()][lane()] = in;
  barrier(1 + warp());
  compute(b.slots[warp()]);
  barrier(1 + warp());
}

inline void trampoline() {
  Block& b = *block;
  b.body();
  b.fibers[b.current].done = true;
  // Threads waiting at a barrier now count one fewer.
  for (size_t g = 0; g < b.arrived.size(); ++g)
    if (b.arrived[g] > 0 && b.arrived[g] == live_threads(int(g))) {
      b.arrived[g] = 0;
      ++b.generation[g];
    }
  swapcontext(&b.fibers[b.current].context, &b.scheduler);
}

// Runs body as `threads` CUDA threads of block (x, y) of a grid.
inline void run_block(HostDim grid, HostDim index, int threads, const std::function<void()>& body) {
  Block b;
  b.body = body;
  b.fibers.resize(threads);
  b.arrived.assign(1 + threads / 32, 0);
  b.generation.assign(1 + threads / 32, 0);
  b.slots.assign(threads / 32, std::vector<std::array<uint64_t, 8>>(32));
  b.pending.resize(threads);
  block = &b;
  gridDim = grid;
  blockIdx = index;
  blockDim = {unsigned(threads), 1, 1};
  constexpr size_t kStack = 256 * 1024;
  for (int t = 0; t < threads; ++t) {
    Block::Fiber& f = b.fibers[t];
    f.stack.reset(new char[kStack]);
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack.get();
    f.context.uc_stack.ss_size = kStack;
    f.context.uc_link = nullptr;
    makecontext(&f.context, trampoline, 0);
  }
  for (bool any = true; any;) {
    any = false;
    for (int t = 0; t < threads; ++t) {
      if (b.fibers[t].done) continue;
      any = true;
      b.current = t;
      threadIdx = {unsigned(t), 0, 0};
      swapcontext(&b.scheduler, &b.fibers[t].context);
    }
  }
  for (auto& p : b.pending)
    if (!p.empty()) throw std::logic_error("cp.async copies never waited for");
  block = nullptr;
}

inline void run_grid(HostDim grid, int threads, const std::function<void()>& body) {
  for (unsigned y = 0; y < grid.y; ++y)
    for (unsigned x = 0; x < grid.x; ++x) run_block(grid, {x, y, 0}, threads, body);
}

}  // namespace host

inline void __syncthreads() {
  host::barrier(0);
}

inline float __shfl_xor_sync(unsigned mask, float value, int lane_mask) {
  if (mask != 0xffffffffu) throw std::logic_error("partial shuffle");
  float result = 0;
  host::warp_exchange({float_bits(value)}, [&](const auto& slots) {
    result = __uint_as_float(unsigned(slots[host::lane() ^ lane_mask][0]));
  });
  return result;
}

inline float __shfl_sync(unsigned mask, float value, int source_lane) {
  if (mask != 0xffffffffu) throw std::logic_error("partial shuffle");
  float result = 0;
  host::warp_exchange({float_bits(value)}, [&](const auto& slots) {
    result = __uint_as_float(unsigned(slots[source_lane % 32][0]));
  });
  return result;
}

namespace sexpgpu::cuda::flash {

struct Bf16 {};
struct F16 {};

inline float negative_infinity() {
  return -INFINITY;
}
inline float fast_exp2(float x) {
  return std::exp2(x);
}

template <class Half>
float to_float(uint16_t bits);
template <>
inline float to_float<Bf16>(uint16_t bits) {
  return __uint_as_float(uint32_t(bits) << 16);
}
template <>
inline float to_float<F16>(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return float(h);
}

template <class Half>
uint16_t to_bits(float x);
template <>
inline uint16_t to_bits<Bf16>(float x) {
  const uint32_t u = float_bits(x);
  if (std::isnan(x)) return uint16_t((u >> 16) | 0x40);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}
template <>
inline uint16_t to_bits<F16>(float x) {
  const _Float16 h = _Float16(x);  // round to nearest even
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

template <class Half>
inline uint32_t pack_pair(float lo, float hi) {
  return uint32_t(to_bits<Half>(lo)) | uint32_t(to_bits<Half>(hi)) << 16;
}

inline float half_lo(uint64_t w, bool f16) {
  return f16 ? to_float<F16>(uint16_t(w)) : to_float<Bf16>(uint16_t(w));
}

// c += a b, m16n8k16: a row-major 16x16, b 16x8 ("col"), per the PTX ISA:
// lane l, g = l/4, t = l%4: a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..),
// a3 (g+8, 2t+8..); b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g); c0,c1 (g, 2t..),
// c2,c3 (g+8, 2t..). The low half of a register is the lower column (or k).
template <class Half>
inline void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  constexpr bool kF16 = std::is_same_v<Half, F16>;
  host::warp_exchange({a[0], a[1], a[2], a[3], b0, b1}, [&](const auto& slots) {
    float A[16][16], B[16][8];
    for (int l = 0; l < 32; ++l) {
      const int g = l / 4, t = l % 4;
      for (int i = 0; i < 4; ++i) {
        const int row = g + 8 * (i % 2), col = 2 * t + 8 * (i / 2);
        A[row][col] = half_lo(slots[l][i], kF16);
        A[row][col + 1] = half_lo(slots[l][i] >> 16, kF16);
      }
      for (int i = 0; i < 2; ++i) {
        B[2 * t + 8 * i][g] = half_lo(slots[l][4 + i], kF16);
        B[2 * t + 8 * i + 1][g] = half_lo(slots[l][4 + i] >> 16, kF16);
      }
    }
    const int g = host::lane() / 4, t = host::lane() % 4;
    for (int e = 0; e < 4; ++e) {
      const int row = g + 8 * (e / 2), col = 2 * t + e % 2;
      double sum = 0;
      for (int k = 0; k < 16; ++k) sum += double(A[row][k]) * B[k][col];
      c[e] = float(double(c[e]) + sum);
    }
  });
}

// Lanes 8i..8i+7 give matrix i's row addresses; lane l receives in r[i]
// matrix i's row l/4, columns 2(l%4), 2(l%4)+1 (trans: rows 2(l%4),
// 2(l%4)+1 of column l/4).
inline void ldmatrix(uint32_t (&r)[4], const uint16_t* row, bool trans) {
  host::warp_exchange({reinterpret_cast<uint64_t>(row)}, [&](const auto& slots) {
    const int l = host::lane();
    for (int i = 0; i < 4; ++i) {
      auto at = [&](int mrow, int mcol) {
        return reinterpret_cast<const uint16_t*>(slots[8 * i + mrow][0])[mcol];
      };
      uint16_t lo, hi;
      if (!trans) {
        lo = at(l / 4, 2 * (l % 4));
        hi = at(l / 4, 2 * (l % 4) + 1);
      } else {
        lo = at(2 * (l % 4), l / 4);
        hi = at(2 * (l % 4) + 1, l / 4);
      }
      r[i] = uint32_t(lo) | uint32_t(hi) << 16;
    }
  });
}
inline void ldmatrix_x4(uint32_t (&r)[4], const uint16_t* row) {
  if (reinterpret_cast<uintptr_t>(row) % 16)
    throw std::logic_error("ldmatrix row not 16-byte aligned");
  ldmatrix(r, row, false);
}
inline void ldmatrix_x4_trans(uint32_t (&r)[4], const uint16_t* row) {
  if (reinterpret_cast<uintptr_t>(row) % 16)
    throw std::logic_error("ldmatrix row not 16-byte aligned");
  ldmatrix(r, row, true);
}

inline void cp_async_16(uint16_t* shared, const uint16_t* global, bool fill) {
  if (reinterpret_cast<uintptr_t>(shared) % 16 ||
      (fill && reinterpret_cast<uintptr_t>(global) % 16))
    throw std::logic_error("cp.async not 16-byte aligned");
  std::array<unsigned char, 16> bytes{};
  if (fill) std::memcpy(bytes.data(), global, 16);
  host::block->pending[host::thread()].push_back({shared, bytes});
}
inline void cp_async_commit() {}
inline void cp_async_wait_all() {
  for (auto& [dst, bytes] : host::block->pending[host::thread()])
    std::memcpy(dst, bytes.data(), 16);
  host::block->pending[host::thread()].clear();
}

}  // namespace sexpgpu::cuda::flash
