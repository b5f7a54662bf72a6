// The CUDA-core flash-attention building blocks (f32/f64) shared by the
// forward (attention.cu) and attention_grad (flash_grad_cores.h): the
// thread layout, shared-tile loads, the CPU's score rule, and the two
// register-tiled products of a tile in shared memory. Include
// attention_launch.h (and cuda_runtime.h, or a host emulation of CUDA's
// built-ins) first.
//
// The block's 128 threads are 16 row groups x 8 column lanes: a thread owns
// kRowsPerThread rows, kColsPerThread columns of each tile (strided by 8)
// and kD/8 output columns, and the 8 lanes sharing a row are an aligned
// group of one warp, so row maxima and sums are 3 shuffles and the
// probabilities a row writes to shared memory are read back by its own warp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sexpgpu::cuda::cores {

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
  // The forward's shared memory: queries, keys, values, probabilities.
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

}  // namespace sexpgpu::cuda::cores
