// Flash attention on CUDA cores (attention_launch.h): softmax(q k^T * scale +
// mask) v without the [Tq, Tk] score matrix ever reaching global memory.
// A block owns one (batch*head, tile of queries); tiles of keys and values
// pass through shared memory; each query row keeps a running max and sum
// (online softmax), so every score is computed once. Key tiles wholly above
// the causal diagonal are never visited.
//
// The thread layout and the tile products are flash_cores.h's: a thread owns
// kRowsPerThread query rows, kColsPerThread keys of each tile and kD/8
// output columns.
#include <cuda_runtime.h>

#include <cstdint>

#include "attention_launch.h"
#include "flash_cores.h"

namespace sexpgpu::cuda {
namespace {

using namespace cores;

template <class Tile>
__global__ void __launch_bounds__(kThreads) flash_attention(AttentionParams p) {
  using T = typename Tile::Element;
  constexpr int kRM = Tile::kRM, kRN = Tile::kRN, kOut = Tile::kOutPerThread;
  extern __shared__ __align__(16) unsigned char shared[];
  T* qs = reinterpret_cast<T*>(shared);
  T* ks = qs + Tile::kRows * Tile::kRowStride;
  T* vs = ks + Tile::kKeys * Tile::kRowStride;
  T* ps = vs + Tile::kKeys * Tile::kRowStride;

  const int tx = threadIdx.x % kColGroups, ty = threadIdx.x / kColGroups;
  const int64_t bh = blockIdx.x;
  // The last query tiles see the most keys under causality: they go first.
  const int64_t q0 = int64_t(gridDim.y - 1 - blockIdx.y) * Tile::kRows;
  const T* q = static_cast<const T*>(p.q) + bh * p.tq * p.d;
  const T* k = static_cast<const T*>(p.k) + bh * p.tk * p.d;
  const T* v = static_cast<const T*>(p.v) + bh * p.tk * p.d;
  T* out = static_cast<T*>(p.out) + bh * p.tq * p.d;
  const ScoreRule<T> score(p, bh);
  const T hidden = negative_infinity(T());

  int64_t key_end = p.tk;
  if (p.causal) key_end = min(key_end, q0 + Tile::kRows + score.shift);

  load_tile<T, Tile::kD, Tile::kRows, Tile::kRowStride>(qs, q, q0, p.tq, p.d);

  T acc[kRM][kOut];
  T row_max[kRM], row_sum[kRM];  // row_sum: this lane's share of the row's sum
#pragma unroll
  for (int i = 0; i < kRM; ++i) {
    row_max[i] = hidden;
    row_sum[i] = T(0);
#pragma unroll
    for (int c = 0; c < kOut; ++c) acc[i][c] = T(0);
  }

  for (int64_t k0 = 0; k0 < key_end; k0 += Tile::kKeys) {
    __syncthreads();  // the previous tile's keys, values and probabilities are consumed
    load_tile<T, Tile::kD, Tile::kKeys, Tile::kRowStride>(ks, k, k0, p.tk, p.d);
    load_tile<T, Tile::kD, Tile::kKeys, Tile::kRowStride>(vs, v, k0, p.tk, p.d);
    __syncthreads();

    T s[kRM][kRN];
    tile_dots<Tile>(qs, ks, ty, tx, s);
#pragma unroll
    for (int i = 0; i < kRM; ++i) {
      const int local_row = ty * kRM + i;
      const int64_t row = q0 + local_row;
      T tile_max = hidden;
#pragma unroll
      for (int j = 0; j < kRN; ++j) {
        s[i][j] = score(s[i][j], row, k0 + tx + kColGroups * j);
        tile_max = max_of(tile_max, s[i][j]);
      }
      const T new_max = max_of(row_max[i], row_group_max(tile_max));
      // A row that has seen no key yet keeps max -inf, sum and acc 0.
      T rescale = T(1), tile_sum = T(0);
      if (new_max != hidden) {
        rescale = exp_of(row_max[i] - new_max);
#pragma unroll
        for (int j = 0; j < kRN; ++j) {
          s[i][j] = exp_of(s[i][j] - new_max);
          tile_sum += s[i][j];
        }
      }
      row_max[i] = new_max;
      row_sum[i] = row_sum[i] * rescale + tile_sum;
#pragma unroll
      for (int c = 0; c < kOut; ++c) acc[i][c] *= rescale;
#pragma unroll
      for (int j = 0; j < kRN; ++j)
        ps[local_row * Tile::kScoreStride + tx + kColGroups * j] =
            new_max != hidden ? s[i][j] : T(0);
    }
    __syncwarp();  // a row's probabilities are read only by its own lane group
    accumulate_values<Tile>(ps, vs, ty, tx, acc);
  }

#pragma unroll
  for (int i = 0; i < kRM; ++i) {
    const T total = row_group_sum(row_sum[i]);
    const int64_t row = q0 + ty * kRM + i;
    if (row >= p.tq) continue;
    const bool sees_no_key = row_max[i] == hidden;  // the CPU's choice: zeros
    T* out_row = out + row * p.d;
#pragma unroll
    for (int n = 0; n < kOut / Tile::kVec; ++n)
#pragma unroll
      for (int e = 0; e < Tile::kVec; ++e) {
        int64_t col = Tile::kVec * tx + kColGroups * Tile::kVec * n + e;
        if (col < p.d) out_row[col] = sees_no_key ? T(0) : acc[i][n * Tile::kVec + e] / total;
      }
  }
}

// Calls f(Tile{}) with the tiling for p's dtype and head dimension, the
// fastest measured on an H200 for f32 d=64 and d=128 (d=128 with 64x64
// tiles needs 254 registers and 119 KB: one block per SM, half the speed);
// narrower for f64 and the widest heads so the accumulators stay in registers.
template <class F>
auto with_tiling(const AttentionParams& p, F&& f) {
  if (p.dtype == AttentionDType::F32) {
    if (p.d <= 32) return f(Tiling<float, 32, 4, 8>{});
    if (p.d <= 64) return f(Tiling<float, 64, 4, 8>{});
    if (p.d <= 128) return f(Tiling<float, 128, 4, 4>{});
    return f(Tiling<float, 256, 2, 4>{});
  }
  if (p.d <= 32) return f(Tiling<double, 32, 2, 4>{});
  if (p.d <= 64) return f(Tiling<double, 64, 2, 4>{});
  if (p.d <= 128) return f(Tiling<double, 128, 2, 4>{});
  return f(Tiling<double, 256, 1, 4>{});
}

}  // namespace

AttentionTiling attention_tiling(const AttentionParams& p) {
  return with_tiling(p, [](auto tile) {
    using Tile = decltype(tile);
    return AttentionTiling{Tile::kRows, Tile::kKeys, Tile::kD, Tile::kSharedBytes};
  });
}

cudaError_t prepare_attention(const AttentionParams& p) {
  return with_tiling(p, [](auto tile) {
    using Tile = decltype(tile);
    if (Tile::kSharedBytes <= 48 * 1024) return cudaSuccess;
    return cudaFuncSetAttribute(flash_attention<Tile>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                int(Tile::kSharedBytes));
  });
}

cudaError_t launch_attention(const AttentionParams& p, cudaStream_t stream) {
  return with_tiling(p, [&](auto tile) {
    using Tile = decltype(tile);
    dim3 grid(unsigned(p.batch * p.heads), unsigned((p.tq + Tile::kRows - 1) / Tile::kRows));
    flash_attention<Tile><<<grid, kThreads, Tile::kSharedBytes, stream>>>(p);
    return cudaGetLastError();
  });
}

}  // namespace sexpgpu::cuda
