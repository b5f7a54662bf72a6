// attention_grad on CUDA cores (f32/f64): the bodies of its three kernels,
// built from flash_cores.h's tiles and products (flash_grad_cores.cu
// instantiates them; they use only CUDA built-ins, so a host emulation of
// those can run them too). Include attention_launch.h and flash_cores.h
// first.
//
// p = exp(s - L) is recomputed from each query row's log-sum-exp L, so no
// [Tq, Tk] matrix exists and every output element is summed by one thread
// in a fixed order: no atomics, results repeat bit for bit.
//   row_stats_rows: per query row L and rowsum(g o) into the scratch.
//   dq_rows:        a block per tile of queries: ds = p (g v^T - rowsum(g o))
//                   per key tile, dq += ds k; times scale at the end.
//   dkdv_rows:      a block per tile of keys, the same products transposed
//                   (a Tiling whose rows are keys and whose columns are
//                   queries): dv += p^T g, dk += ds^T q.
#pragma once

namespace sexpgpu::cuda::cores {

__device__ __forceinline__ float log_of(float x) {
  return logf(x);
}
__device__ __forceinline__ double log_of(double x) {
  return log(x);
}

// The row statistics (scratch of the compute type): L of query row i at
// [bh*Tq + i], rowsum(g o) at [B*H*Tq + bh*Tq + i].
template <class T>
__device__ __forceinline__ T* row_lse(const AttentionGradParams& gp, int64_t bh) {
  return static_cast<T*>(gp.row_stats) + bh * gp.attention.tq;
}
template <class T>
__device__ __forceinline__ T* row_dot(const AttentionGradParams& gp, int64_t bh) {
  const AttentionParams& p = gp.attention;
  return static_cast<T*>(gp.row_stats) + (p.batch * p.heads + bh) * p.tq;
}

// The probability of a score given its row's L: 0 where the key is hidden
// (and so for every key of a row that sees none, whose L is -inf).
template <class T>
__device__ __forceinline__ T probability(T score, T lse) {
  return score == negative_infinity(T()) ? T(0) : exp_of(score - lse);
}

// The causal end of the keys that queries below q_end see (all Tk otherwise).
__device__ __forceinline__ int64_t visible_keys(const AttentionParams& p, int64_t q_end) {
  if (!p.causal) return p.tk;
  const int64_t end = q_end + p.tk - p.tq;
  return end < 0 ? 0 : end < p.tk ? end : p.tk;
}

// Shared: queries [kRows], keys [kKeys].
template <class Tile>
__device__ __forceinline__ void row_stats_rows(const AttentionGradParams& gp,
                                               unsigned char* shared) {
  using T = typename Tile::Element;
  constexpr int kRM = Tile::kRM, kRN = Tile::kRN;
  const AttentionParams& p = gp.attention;
  T* qs = reinterpret_cast<T*>(shared);
  T* ks = qs + Tile::kRows * Tile::kRowStride;
  const int tx = int(threadIdx.x) % kColGroups, ty = int(threadIdx.x) / kColGroups;
  const int64_t bh = blockIdx.x;
  const int64_t q0 = int64_t(gridDim.y - 1 - blockIdx.y) * Tile::kRows;
  const T* q = static_cast<const T*>(p.q) + bh * p.tq * p.d;
  const T* k = static_cast<const T*>(p.k) + bh * p.tk * p.d;
  const ScoreRule<T> score(p, bh);
  const T hidden = negative_infinity(T());

  load_tile<T, Tile::kD, Tile::kRows, Tile::kRowStride>(qs, q, q0, p.tq, p.d);
  T row_max[kRM], row_sum[kRM];  // row_sum: this lane's share
#pragma unroll
  for (int i = 0; i < kRM; ++i) row_max[i] = hidden, row_sum[i] = T(0);

  const int64_t key_end = visible_keys(p, q0 + Tile::kRows);
  for (int64_t k0 = 0; k0 < key_end; k0 += Tile::kKeys) {
    __syncthreads();  // the previous tile's keys are consumed
    load_tile<T, Tile::kD, Tile::kKeys, Tile::kRowStride>(ks, k, k0, p.tk, p.d);
    __syncthreads();
    T s[kRM][kRN];
    tile_dots<Tile>(qs, ks, ty, tx, s);
#pragma unroll
    for (int i = 0; i < kRM; ++i) {
      const int64_t row = q0 + ty * kRM + i;
      T tile_max = hidden;
#pragma unroll
      for (int j = 0; j < kRN; ++j) {
        s[i][j] = score(s[i][j], row, k0 + tx + kColGroups * j);
        tile_max = max_of(tile_max, s[i][j]);
      }
      const T new_max = max_of(row_max[i], row_group_max(tile_max));
      if (new_max == hidden) continue;  // nothing seen yet: max -inf, sum 0
      T tile_sum = T(0);
#pragma unroll
      for (int j = 0; j < kRN; ++j) tile_sum += exp_of(s[i][j] - new_max);
      row_sum[i] = row_sum[i] * exp_of(row_max[i] - new_max) + tile_sum;
      row_max[i] = new_max;
    }
  }

  const T* g = static_cast<const T*>(gp.g) + bh * p.tq * p.d;
  const T* o = static_cast<const T*>(gp.o) + bh * p.tq * p.d;
#pragma unroll
  for (int i = 0; i < kRM; ++i) {
    const T total = row_group_sum(row_sum[i]);
    const int64_t row = q0 + ty * kRM + i;
    T dot = T(0);
    for (int64_t c = tx; row < p.tq && c < p.d; c += kColGroups)
      dot = fma(g[row * p.d + c], o[row * p.d + c], dot);
    dot = row_group_sum(dot);
    if (row >= p.tq || tx != 0) continue;
    row_lse<T>(gp, bh)[row] = row_max[i] == hidden ? hidden : row_max[i] + log_of(total);
    row_dot<T>(gp, bh)[row] = dot;
  }
}

// Rows [row0, row0 + kRows) of a thread group's [rows][kD] accumulators,
// times `factor`, into a dense [rows, d] matrix (rows below `rows`); the
// thread's columns are 16-byte packs at kVec*tx + 8*kVec*n, as
// accumulate_values leaves them.
template <class Tile, class T = typename Tile::Element>
__device__ __forceinline__ void store_accumulators(T* dst,
                                                   const T (&acc)[Tile::kRM][Tile::kOutPerThread],
                                                   int64_t row0, int ty, int tx, int64_t rows,
                                                   int64_t d, T factor) {
#pragma unroll
  for (int i = 0; i < Tile::kRM; ++i) {
    const int64_t row = row0 + ty * Tile::kRM + i;
    if (row >= rows) continue;
#pragma unroll
    for (int n = 0; n < Tile::kOutPerThread / Tile::kVec; ++n)
#pragma unroll
      for (int e = 0; e < Tile::kVec; ++e) {
        const int64_t col = Tile::kVec * tx + kColGroups * Tile::kVec * n + e;
        if (col < d) dst[row * d + col] = acc[i][n * Tile::kVec + e] * factor;
      }
  }
}

// Shared: queries and g [kRows], keys and values [kKeys], ds [kRows][kScoreStride].
template <class Tile>
__device__ __forceinline__ void dq_rows(const AttentionGradParams& gp, unsigned char* shared) {
  using T = typename Tile::Element;
  constexpr int kRM = Tile::kRM, kRN = Tile::kRN;
  const AttentionParams& p = gp.attention;
  T* qs = reinterpret_cast<T*>(shared);
  T* gs = qs + Tile::kRows * Tile::kRowStride;
  T* ks = gs + Tile::kRows * Tile::kRowStride;
  T* vs = ks + Tile::kKeys * Tile::kRowStride;
  T* dss = vs + Tile::kKeys * Tile::kRowStride;
  const int tx = int(threadIdx.x) % kColGroups, ty = int(threadIdx.x) / kColGroups;
  const int64_t bh = blockIdx.x;
  const int64_t q0 = int64_t(gridDim.y - 1 - blockIdx.y) * Tile::kRows;
  const T* q = static_cast<const T*>(p.q) + bh * p.tq * p.d;
  const T* k = static_cast<const T*>(p.k) + bh * p.tk * p.d;
  const T* v = static_cast<const T*>(p.v) + bh * p.tk * p.d;
  const T* g = static_cast<const T*>(gp.g) + bh * p.tq * p.d;
  const ScoreRule<T> score(p, bh);

  load_tile<T, Tile::kD, Tile::kRows, Tile::kRowStride>(qs, q, q0, p.tq, p.d);
  load_tile<T, Tile::kD, Tile::kRows, Tile::kRowStride>(gs, g, q0, p.tq, p.d);
  T lse[kRM], dot[kRM], acc[kRM][Tile::kOutPerThread];
#pragma unroll
  for (int i = 0; i < kRM; ++i) {
    const int64_t row = q0 + ty * kRM + i;
    lse[i] = row < p.tq ? row_lse<T>(gp, bh)[row] : T(0);
    dot[i] = row < p.tq ? row_dot<T>(gp, bh)[row] : T(0);
#pragma unroll
    for (int c = 0; c < Tile::kOutPerThread; ++c) acc[i][c] = T(0);
  }

  const int64_t key_end = visible_keys(p, q0 + Tile::kRows);
  for (int64_t k0 = 0; k0 < key_end; k0 += Tile::kKeys) {
    __syncthreads();  // the previous tile's keys, values and ds are consumed
    load_tile<T, Tile::kD, Tile::kKeys, Tile::kRowStride>(ks, k, k0, p.tk, p.d);
    load_tile<T, Tile::kD, Tile::kKeys, Tile::kRowStride>(vs, v, k0, p.tk, p.d);
    __syncthreads();
    T s[kRM][kRN], dp[kRM][kRN];
    tile_dots<Tile>(qs, ks, ty, tx, s);
    tile_dots<Tile>(gs, vs, ty, tx, dp);
#pragma unroll
    for (int i = 0; i < kRM; ++i) {
      const int64_t row = q0 + ty * kRM + i;
#pragma unroll
      for (int j = 0; j < kRN; ++j) {
        const int col = tx + kColGroups * j;
        const T prob = probability(score(s[i][j], row, k0 + col), lse[i]);
        dss[(ty * kRM + i) * Tile::kScoreStride + col] = prob * (dp[i][j] - dot[i]);
      }
    }
    __syncwarp();  // a row's ds is read only by its own lane group
    accumulate_values<Tile>(dss, ks, ty, tx, acc);
  }

  T* out = static_cast<T*>(gp.out) + bh * (p.tq + 2 * p.tk) * p.d;
  store_accumulators<Tile>(out, acc, q0, ty, tx, p.tq, p.d, T(p.scale));
}

// Tile's rows are keys and its columns queries. Shared: keys and values
// [kRows], queries and g [kKeys], p^T and ds^T [kRows][kScoreStride], the
// queries' L and rowsum(g o) [kKeys] each.
template <class Tile>
__device__ __forceinline__ void dkdv_rows(const AttentionGradParams& gp, unsigned char* shared) {
  using T = typename Tile::Element;
  constexpr int kRM = Tile::kRM, kRN = Tile::kRN, kQueries = Tile::kKeys;
  const AttentionParams& p = gp.attention;
  T* ks = reinterpret_cast<T*>(shared);
  T* vs = ks + Tile::kRows * Tile::kRowStride;
  T* qs = vs + Tile::kRows * Tile::kRowStride;
  T* gs = qs + kQueries * Tile::kRowStride;
  T* pts = gs + kQueries * Tile::kRowStride;
  T* dsts = pts + Tile::kRows * Tile::kScoreStride;
  T* lse_s = dsts + Tile::kRows * Tile::kScoreStride;
  T* dot_s = lse_s + kQueries;
  const int tx = int(threadIdx.x) % kColGroups, ty = int(threadIdx.x) / kColGroups;
  const int64_t bh = blockIdx.x;
  const int64_t k0 = int64_t(blockIdx.y) * Tile::kRows;
  const T* q = static_cast<const T*>(p.q) + bh * p.tq * p.d;
  const T* k = static_cast<const T*>(p.k) + bh * p.tk * p.d;
  const T* v = static_cast<const T*>(p.v) + bh * p.tk * p.d;
  const T* g = static_cast<const T*>(gp.g) + bh * p.tq * p.d;
  const ScoreRule<T> score(p, bh);

  load_tile<T, Tile::kD, Tile::kRows, Tile::kRowStride>(ks, k, k0, p.tk, p.d);
  load_tile<T, Tile::kD, Tile::kRows, Tile::kRowStride>(vs, v, k0, p.tk, p.d);
  T dk[kRM][Tile::kOutPerThread], dv[kRM][Tile::kOutPerThread];
#pragma unroll
  for (int i = 0; i < kRM; ++i)
#pragma unroll
    for (int c = 0; c < Tile::kOutPerThread; ++c) dk[i][c] = T(0), dv[i][c] = T(0);

  // The first query that sees key k0 under causality (query i sees j <= i + Tk - Tq).
  int64_t begin = p.causal ? k0 - (p.tk - p.tq) : 0;
  if (begin < 0) begin = 0;
  for (int64_t q0 = begin; q0 < p.tq; q0 += kQueries) {
    __syncthreads();  // the previous queries, g, p^T and ds^T are consumed
    load_tile<T, Tile::kD, kQueries, Tile::kRowStride>(qs, q, q0, p.tq, p.d);
    load_tile<T, Tile::kD, kQueries, Tile::kRowStride>(gs, g, q0, p.tq, p.d);
    for (int i = int(threadIdx.x); i < kQueries; i += kThreads) {
      const bool inside = q0 + i < p.tq;
      lse_s[i] = inside ? row_lse<T>(gp, bh)[q0 + i] : T(0);
      dot_s[i] = inside ? row_dot<T>(gp, bh)[q0 + i] : T(0);
    }
    __syncthreads();
    T st[kRM][kRN], dpt[kRM][kRN];  // [key][query]
    tile_dots<Tile>(ks, qs, ty, tx, st);
    tile_dots<Tile>(vs, gs, ty, tx, dpt);
#pragma unroll
    for (int i = 0; i < kRM; ++i) {
      const int64_t key = k0 + ty * kRM + i;
#pragma unroll
      for (int j = 0; j < kRN; ++j) {
        const int col = tx + kColGroups * j;
        const T prob = probability(score(st[i][j], q0 + col, key), lse_s[col]);
        pts[(ty * kRM + i) * Tile::kScoreStride + col] = prob;
        dsts[(ty * kRM + i) * Tile::kScoreStride + col] = prob * (dpt[i][j] - dot_s[col]);
      }
    }
    __syncwarp();  // a key's p^T and ds^T are read only by its own lane group
    accumulate_values<Tile>(pts, gs, ty, tx, dv);
    accumulate_values<Tile>(dsts, qs, ty, tx, dk);
  }

  T* out = static_cast<T*>(gp.out) + bh * (p.tq + 2 * p.tk) * p.d;
  store_accumulators<Tile>(out + p.tq * p.d, dk, k0, ty, tx, p.tk, p.d, T(p.scale));
  store_accumulators<Tile>(out + (p.tq + p.tk) * p.d, dv, k0, ty, tx, p.tk, p.d, T(1));
}

}  // namespace sexpgpu::cuda::cores
