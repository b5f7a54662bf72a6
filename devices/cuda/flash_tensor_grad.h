// The tensor-core bodies of attention_grad's three kernels (bf16/f16, f32
// accumulation), built from flash_tensor.h's products, logits and key-tile
// loop; flash_backward.cu instantiates them. Include flash_mma.h (or a host
// emulation of it), attention_launch.h and flash_tensor.h first.
//
// p = exp2(logit - L) is recomputed from each query row's base-2
// log-sum-exp L, so no [Tq, Tk] matrix exists; every output element is
// accumulated by one warp in a fixed order: no atomics, results repeat bit
// for bit.
#pragma once

namespace sexpgpu::cuda::flash {

// attention_grad's row statistics (float scratch): per query row, the base-2
// log-sum-exp of its logits (-inf when it sees no key) at [bh*Tq + row],
// and rowsum(g * o) at [B*H*Tq + bh*Tq + row].
__device__ __forceinline__ float* row_lse(const AttentionGradParams& gp, int64_t bh) {
  return static_cast<float*>(gp.row_stats) + bh * gp.attention.tq;
}
__device__ __forceinline__ float* row_dot(const AttentionGradParams& gp, int64_t bh) {
  const AttentionParams& p = gp.attention;
  return static_cast<float*>(gp.row_stats) + (p.batch * p.heads + bh) * p.tq;
}

// One block of the row statistics: the forward's softmax pass without the
// values. Shared: the queries, then two buffers of keys.
template <class Half, class Tile>
__device__ __forceinline__ void row_stats_block(const AttentionGradParams& gp,
                                                unsigned char* shared) {
  constexpr int kM = Tile::kM, kK8 = Tile::kKeys / 8;
  const AttentionParams& p = gp.attention;
  uint16_t* qs = reinterpret_cast<uint16_t*>(shared);
  const int64_t bh = blockIdx.x;
  const int64_t q0 = int64_t(gridDim.y - 1 - blockIdx.y) * Tile::kRows;
  const int warp_row0 = warp_id() * 16 * kM;
  const uint16_t* q = static_cast<const uint16_t*>(p.q) + bh * p.tq * p.d;
  const uint16_t* k = static_cast<const uint16_t*>(p.k) + bh * p.tk * p.d;
  const Logits<Half> logits(p, bh);
  const bool copy_16 = can_copy_16(p.d, p.q, p.k, p.k);

  load_tile<Tile::kRows, Tile::kD>(qs, q, q0, p.tq, p.d, copy_16);
  float row_max[kM][2], row_sum[kM][2];
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) row_max[m][h] = negative_infinity(), row_sum[m][h] = 0;

  for_each_key_tile<Tile, false>(
      qs + Tile::kRows * Tile::kStride, k, k, key_end(p, q0 + Tile::kRows), p, copy_16,
      [&](const uint16_t* ks, const uint16_t*, int64_t k0) {
        float s[kM][kK8][4] = {};
        mma_rows_rows<Half, Tile::kStride, kM, kK8, Tile::kD>(s, qs, warp_row0, ks);
        to_logits<false>(s, logits, q0 + warp_row0, k0);
        float rescale[kM][2];
        online_softmax(s, row_max, row_sum, rescale);
      });

  float* lse = row_lse(gp, bh);
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float total = row_total(row_sum[m][h]);
      const int64_t row = q0 + warp_row0 + 16 * m + acc_row(2 * h);
      const bool sees_no_key = row_max[m][h] == negative_infinity();
      if (row < p.tq && lane_id() % 4 == 0)
        lse[row] = sees_no_key ? negative_infinity() : row_max[m][h] + log2f(total);
    }

  // rowsum(g * o): a warp per row, lanes striding the head columns, then a
  // fixed butterfly.
  const uint16_t* g = static_cast<const uint16_t*>(gp.g) + bh * p.tq * p.d;
  const uint16_t* o = static_cast<const uint16_t*>(gp.o) + bh * p.tq * p.d;
  float* dot = row_dot(gp, bh);
  for (int r = 0; r < 16 * kM; ++r) {
    const int64_t row = q0 + warp_row0 + r;
    if (row >= p.tq) break;
    float sum = 0;
    for (int64_t c = lane_id(); c < p.d; c += 32)
      sum += to_float<Half>(g[row * p.d + c]) * to_float<Half>(o[row * p.d + c]);
    for (int mask = 16; mask > 0; mask /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, mask);
    if (lane_id() == 0) dot[row] = sum;
  }
}

// One block of dq: queries [q0, q0 + Tile::kRows) of one batch*head against
// every key they see: p from the row statistics, dp = g v^T, ds = p (dp -
// rowsum(g o)), dq = ds k * scale. Shared: the queries and their g, then two
// buffers of keys and values.
template <class Half, class Tile>
__device__ __forceinline__ void dq_block(const AttentionGradParams& gp, unsigned char* shared) {
  constexpr int kM = Tile::kM, kD8 = Tile::kD / 8, kK8 = Tile::kKeys / 8;
  const AttentionParams& p = gp.attention;
  uint16_t* qs = reinterpret_cast<uint16_t*>(shared);
  uint16_t* gs = qs + Tile::kRows * Tile::kStride;
  const int64_t bh = blockIdx.x;
  const int64_t q0 = int64_t(gridDim.y - 1 - blockIdx.y) * Tile::kRows;
  const int warp_row0 = warp_id() * 16 * kM;
  const uint16_t* q = static_cast<const uint16_t*>(p.q) + bh * p.tq * p.d;
  const uint16_t* k = static_cast<const uint16_t*>(p.k) + bh * p.tk * p.d;
  const uint16_t* v = static_cast<const uint16_t*>(p.v) + bh * p.tk * p.d;
  const uint16_t* g = static_cast<const uint16_t*>(gp.g) + bh * p.tq * p.d;
  const Logits<Half> logits(p, bh);
  const bool copy_16 = can_copy_16(p.d, p.q, p.k, p.v) && can_copy_16(p.d, gp.g, gp.g, gp.g);

  load_tile<Tile::kRows, Tile::kD>(qs, q, q0, p.tq, p.d, copy_16);
  load_tile<Tile::kRows, Tile::kD>(gs, g, q0, p.tq, p.d, copy_16);
  float lse[kM][2], dot[kM][2];  // of this lane's rows
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = q0 + warp_row0 + 16 * m + acc_row(2 * h);
      lse[m][h] = row < p.tq ? row_lse(gp, bh)[row] : 0.0f;
      dot[m][h] = row < p.tq ? row_dot(gp, bh)[row] : 0.0f;
    }
  float dq[kM][kD8][4] = {};

  for_each_key_tile<Tile, true>(
      gs + Tile::kRows * Tile::kStride, k, v, key_end(p, q0 + Tile::kRows), p, copy_16,
      [&](const uint16_t* ks, const uint16_t* vs, int64_t k0) {
        float s[kM][kK8][4] = {}, ds[kM][kK8][4] = {};
        mma_rows_rows<Half, Tile::kStride, kM, kK8, Tile::kD>(s, qs, warp_row0, ks);
        to_logits<false>(s, logits, q0 + warp_row0, k0);
        mma_rows_rows<Half, Tile::kStride, kM, kK8, Tile::kD>(ds, gs, warp_row0, vs);
#pragma unroll
        for (int m = 0; m < kM; ++m)
#pragma unroll
          for (int n = 0; n < kK8; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const float x = s[m][n][e];
              const float prob = x == negative_infinity() ? 0.0f : exp2f(x - lse[m][e / 2]);
              ds[m][n][e] = prob * (ds[m][n][e] - dot[m][e / 2]);
            }
        mma_acc_rows<Half, Tile::kStride, kM, kD8, kK8>(dq, ds, ks);
      });

  uint16_t* out = static_cast<uint16_t*>(gp.out) + bh * (p.tq + 2 * p.tk) * p.d;
  store_rows<Half>(out, dq, q0 + warp_row0, p.tq, p.d, float(p.scale));
}

// The tiling of the dk/dv kernel: 16*kM keys per warp, tiles of kQueries.
template <int kD_, int kM_, int kQueries_>
struct KeyTiling {
  static constexpr int kD = kD_, kM = kM_, kQueries = kQueries_;
  static constexpr int kStride = HeadTile<kD>::kStride;
  static constexpr int kKeys = kWarps * 16 * kM;  // keys per block
  // A buffer of queries: q and g tiles, then the rows' two statistics.
  static constexpr int kQueryBuffer = 2 * kQueries * kStride + 2 * kQueries * 2;
};

// One block of dk and dv: keys [k0, k0 + Tile::kKeys) of one batch*head
// against every query that sees them, each warp's 16*kM keys as the rows of
// the transposed products: p^T from the row statistics, dv += p^T g,
// dp^T = v g^T, ds^T = p^T (dp^T - rowsum(g o)), dk += ds^T q (times scale
// at the end). Shared: keys and values, then two buffers of queries.
template <class Half, class Tile>
__device__ __forceinline__ void dkdv_block(const AttentionGradParams& gp, unsigned char* shared) {
  constexpr int kM = Tile::kM, kD8 = Tile::kD / 8, kQ8 = Tile::kQueries / 8;
  constexpr int kTile = Tile::kQueries * Tile::kStride;
  const AttentionParams& p = gp.attention;
  uint16_t* ks = reinterpret_cast<uint16_t*>(shared);
  uint16_t* vs = ks + Tile::kKeys * Tile::kStride;
  uint16_t* buffers = vs + Tile::kKeys * Tile::kStride;
  const int64_t bh = blockIdx.x;
  const int64_t k0 = int64_t(blockIdx.y) * Tile::kKeys;
  const int warp_row0 = warp_id() * 16 * kM;
  const uint16_t* q = static_cast<const uint16_t*>(p.q) + bh * p.tq * p.d;
  const uint16_t* k = static_cast<const uint16_t*>(p.k) + bh * p.tk * p.d;
  const uint16_t* v = static_cast<const uint16_t*>(p.v) + bh * p.tk * p.d;
  const uint16_t* g = static_cast<const uint16_t*>(gp.g) + bh * p.tq * p.d;
  const float* lse = row_lse(gp, bh);
  const float* dot = row_dot(gp, bh);
  const Logits<Half> logits(p, bh);
  const bool copy_16 = can_copy_16(p.d, p.q, p.k, p.v) && can_copy_16(p.d, gp.g, gp.g, gp.g);

  auto load_queries = [&](int64_t q0, int buffer) {
    uint16_t* qb = buffers + buffer * Tile::kQueryBuffer;
    load_tile<Tile::kQueries, Tile::kD>(qb, q, q0, p.tq, p.d, copy_16);
    load_tile<Tile::kQueries, Tile::kD>(qb + kTile, g, q0, p.tq, p.d, copy_16);
    float* stats = reinterpret_cast<float*>(qb + 2 * kTile);
    for (int i = int(threadIdx.x); i < Tile::kQueries; i += kThreads) {
      const bool inside = q0 + i < p.tq;
      stats[i] = inside ? lse[q0 + i] : 0.0f;
      stats[Tile::kQueries + i] = inside ? dot[q0 + i] : 0.0f;
    }
    cp_async_commit();
  };

  // The first query that sees key k0 under causality (query i sees j <= i + Tk - Tq).
  int64_t begin = p.causal ? k0 - (p.tk - p.tq) : 0;
  if (begin < 0) begin = 0;
  load_tile<Tile::kKeys, Tile::kD>(ks, k, k0, p.tk, p.d, copy_16);
  load_tile<Tile::kKeys, Tile::kD>(vs, v, k0, p.tk, p.d, copy_16);
  if (begin < p.tq) load_queries(begin, 0);
  float dk[kM][kD8][4] = {}, dv[kM][kD8][4] = {};

  int buffer = 0;
  for (int64_t q0 = begin; q0 < p.tq; q0 += Tile::kQueries, buffer ^= 1) {
    cp_async_wait_all();
    __syncthreads();  // these queries are in; every warp is done with the other buffer
    if (q0 + Tile::kQueries < p.tq) load_queries(q0 + Tile::kQueries, buffer ^ 1);
    const uint16_t* qs = buffers + buffer * Tile::kQueryBuffer;
    const uint16_t* gs = qs + kTile;
    const float* lse_s = reinterpret_cast<const float*>(qs + 2 * kTile);
    const float* dot_s = lse_s + Tile::kQueries;

    float pt[kM][kQ8][4] = {}, dst[kM][kQ8][4] = {};
    mma_rows_rows<Half, Tile::kStride, kM, kQ8, Tile::kD>(pt, ks, warp_row0, qs);
    to_logits<true>(pt, logits, k0 + warp_row0, q0);
#pragma unroll
    for (int m = 0; m < kM; ++m)
#pragma unroll
      for (int n = 0; n < kQ8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float x = pt[m][n][e];
          pt[m][n][e] = x == negative_infinity() ? 0.0f : exp2f(x - lse_s[8 * n + acc_col(e)]);
        }
    mma_acc_rows<Half, Tile::kStride, kM, kD8, kQ8>(dv, pt, gs);
    mma_rows_rows<Half, Tile::kStride, kM, kQ8, Tile::kD>(dst, vs, warp_row0, gs);
#pragma unroll
    for (int m = 0; m < kM; ++m)
#pragma unroll
      for (int n = 0; n < kQ8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          dst[m][n][e] = pt[m][n][e] * (dst[m][n][e] - dot_s[8 * n + acc_col(e)]);
    mma_acc_rows<Half, Tile::kStride, kM, kD8, kQ8>(dk, dst, qs);
  }
  cp_async_wait_all();  // nothing left in flight when no query sees these keys

  uint16_t* out = static_cast<uint16_t*>(gp.out) + bh * (p.tq + 2 * p.tk) * p.d;
  store_rows<Half>(out + p.tq * p.d, dk, k0 + warp_row0, p.tk, p.d, float(p.scale));
  store_rows<Half>(out + (p.tq + p.tk) * p.d, dv, k0 + warp_row0, p.tk, p.d, 1.0f);
}

}  // namespace sexpgpu::cuda::flash
