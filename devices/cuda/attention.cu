// Flash attention on CUDA cores (attention_launch.h): softmax(q k^T * scale +
// mask) v without the [Tq, Tk] score matrix ever reaching global memory.
// A block owns one (batch*head, tile of queries); tiles of keys and values
// pass through shared memory; each query row keeps a running max and sum
// (online softmax), so every score is computed once. Key tiles wholly above
// the causal diagonal are never visited.
//
// The block's 128 threads are 16 row groups x 8 column lanes: a thread owns
// kRowsPerThread query rows, kColsPerThread keys of each tile (strided by 8)
// and kD/8 output columns, and the 8 lanes sharing a row are an aligned
// group of one warp, so row maxima and sums are 3 shuffles and the
// probabilities a row writes to shared memory are read back by its own warp.
#include <cuda_runtime.h>

#include <cstdint>

#include "attention_launch.h"

namespace sexpgpu::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kColGroups = 8;                      // lanes sharing one query row
constexpr int kRowGroups = kThreads / kColGroups;  // thread rows of a block

template <class T, int kHeadDim, int kRowsPerThread, int kColsPerThread>
struct Tiling {
  using Element = T;
  static constexpr int kD = kHeadDim;
  static constexpr int kRM = kRowsPerThread;
  static constexpr int kRN = kColsPerThread;
  static constexpr int kVec = 16 / int(sizeof(T));  // elements of one 16-byte shared load
  static constexpr int kRows = kRowGroups * kRM;    // queries per block
  static constexpr int kKeys = kColGroups * kRN;    // keys per tile
  // 16 bytes of padding per row put the 8 rows a lane group reads at once
  // in 8 different bank quads.
  static constexpr int kRowStride = kD + kVec;
  static constexpr int kScoreStride = kKeys + kVec;
  static constexpr int kOutPerThread = kD / kColGroups;
  static constexpr size_t kSharedBytes =
      sizeof(T) * (size_t(kRows + 2 * kKeys) * kRowStride + size_t(kRows) * kScoreStride);
  static_assert(kD % (kColGroups * kVec) == 0, "output columns come in 16-byte packs per lane");
  static_assert(kKeys % kVec == 0, "probabilities are read in 16-byte packs");
};

template <class T>
struct alignas(16) Pack {
  T v[16 / sizeof(T)];
};

template <class T>
__device__ __forceinline__ Pack<T> load_pack(const T* p) {
  return *reinterpret_cast<const Pack<T>*>(p);
}

__device__ __forceinline__ float negative_infinity(float) {
  return __int_as_float(int(0xff800000u));
}
__device__ __forceinline__ double negative_infinity(double) {
  return __longlong_as_double(static_cast<long long>(0xfff0000000000000ull));
}

// exp2 is one special-function instruction; the scaling by log2(e) costs
// under 2e-6 relative for the exponents that carry weight (|x| < 20).
__device__ __forceinline__ float exp_of(float x) {
  return exp2f(x * 1.4426950408889634f);
}
__device__ __forceinline__ double exp_of(double x) {
  return exp(x);
}

// NaN-ignoring, as the CPU's max over a row.
__device__ __forceinline__ float max_of(float a, float b) {
  return fmaxf(a, b);
}
__device__ __forceinline__ double max_of(double a, double b) {
  return fmax(a, b);
}

// Over the 8 lanes of a row, in a fixed order.
template <class T>
__device__ __forceinline__ T row_group_max(T x) {
#pragma unroll
  for (int lane_mask = 1; lane_mask < kColGroups; lane_mask <<= 1)
    x = max_of(x, __shfl_xor_sync(0xffffffffu, x, lane_mask));
  return x;
}
template <class T>
__device__ __forceinline__ T row_group_sum(T x) {
#pragma unroll
  for (int lane_mask = 1; lane_mask < kColGroups; lane_mask <<= 1)
    x += __shfl_xor_sync(0xffffffffu, x, lane_mask);
  return x;
}

// Rows [row0, row0 + kTileRows) of a dense [rows, d] matrix into shared
// memory, zero past its edges, so padded keys and head columns add nothing.
template <class T, int kD, int kTileRows, int kStride>
__device__ void load_tile(T* tile, const T* src, int64_t row0, int64_t rows, int64_t d) {
  for (int i = threadIdx.x; i < kTileRows * kD; i += kThreads) {
    int r = i / kD, c = i % kD;
    int64_t row = row0 + r;
    tile[r * kStride + c] = row < rows && c < d ? src[row * d + c] : T(0);
  }
}

// What the CPU's score for (row, col) is before the softmax: the scaled dot
// product, -inf when causality hides the key, then the mask applied.
template <class T>
struct ScoreRule {
  T scale;
  int64_t tq, tk, shift;  // causal: query i sees keys j <= i + shift
  bool causal;
  AttentionMask mask_kind;
  const void* mask;
  int64_t mask_base, row_stride, col_stride;

  __device__ ScoreRule(const AttentionParams& p, int64_t bh)
      : scale(T(p.scale)),
        tq(p.tq),
        tk(p.tk),
        shift(p.tk - p.tq),
        causal(p.causal),
        mask_kind(p.mask_kind),
        mask(p.mask),
        mask_base((bh / p.heads) * p.mask_strides[0] + (bh % p.heads) * p.mask_strides[1]),
        row_stride(p.mask_strides[2]),
        col_stride(p.mask_strides[3]) {}

  __device__ T operator()(T dot, int64_t row, int64_t col) const {
    const T hidden = negative_infinity(T());
    if (row >= tq || col >= tk) return hidden;
    T x = causal && col > row + shift ? hidden : dot * scale;
    if (mask_kind == AttentionMask::None) return x;
    int64_t at = mask_base + row * row_stride + col * col_stride;
    if (mask_kind == AttentionMask::Bool) return static_cast<const uint8_t*>(mask)[at] ? x : hidden;
    return x + static_cast<const T*>(mask)[at];
  }
};

// s[i][j] = q row (ty*kRM + i) . key (tx + 8j) over the tile.
template <class Tile, class T = typename Tile::Element>
__device__ __forceinline__ void tile_dots(const T* qs, const T* ks, int ty, int tx,
                                          T (&s)[Tile::kRM][Tile::kRN]) {
#pragma unroll
  for (int i = 0; i < Tile::kRM; ++i)
#pragma unroll
    for (int j = 0; j < Tile::kRN; ++j) s[i][j] = T(0);
#pragma unroll 4
  for (int d = 0; d < Tile::kD; d += Tile::kVec) {
    Pack<T> qv[Tile::kRM], kv[Tile::kRN];
#pragma unroll
    for (int i = 0; i < Tile::kRM; ++i)
      qv[i] = load_pack(qs + (ty * Tile::kRM + i) * Tile::kRowStride + d);
#pragma unroll
    for (int j = 0; j < Tile::kRN; ++j)
      kv[j] = load_pack(ks + (tx + kColGroups * j) * Tile::kRowStride + d);
#pragma unroll
    for (int e = 0; e < Tile::kVec; ++e)
#pragma unroll
      for (int i = 0; i < Tile::kRM; ++i)
#pragma unroll
        for (int j = 0; j < Tile::kRN; ++j) s[i][j] = fma(qv[i].v[e], kv[j].v[e], s[i][j]);
  }
}

// acc[i][c] += sum over the tile's keys of p[row i][key] * v[key][column c],
// the thread's columns being 16-byte packs at kVec*tx + 8*kVec*n.
template <class Tile, class T = typename Tile::Element>
__device__ __forceinline__ void accumulate_values(const T* ps, const T* vs, int ty, int tx,
                                                  T (&acc)[Tile::kRM][Tile::kOutPerThread]) {
  constexpr int kVec = Tile::kVec, kPacks = Tile::kOutPerThread / kVec;
#pragma unroll 2
  for (int c = 0; c < Tile::kKeys; c += kVec) {
    Pack<T> pv[Tile::kRM];
#pragma unroll
    for (int i = 0; i < Tile::kRM; ++i)
      pv[i] = load_pack(ps + (ty * Tile::kRM + i) * Tile::kScoreStride + c);
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const T* value_row = vs + (c + e) * Tile::kRowStride + kVec * tx;
#pragma unroll
      for (int n = 0; n < kPacks; ++n) {
        Pack<T> vv = load_pack(value_row + kColGroups * kVec * n);
#pragma unroll
        for (int i = 0; i < Tile::kRM; ++i)
#pragma unroll
          for (int ee = 0; ee < kVec; ++ee)
            acc[i][n * kVec + ee] = fma(pv[i].v[e], vv.v[ee], acc[i][n * kVec + ee]);
      }
    }
  }
}

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
