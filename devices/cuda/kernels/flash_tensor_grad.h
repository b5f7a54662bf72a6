// The tensor-core bodies of attention_grad's three kernels (bf16/f16, f32
// accumulation), built from flash_tensor.h's products, logits and key-tile
// loop; flash_backward.cu instantiates them. Include flash_mma.h (or a host
// emulation of it), attention_launch.h and flash_tensor.h first.
//
// p = exp2(logit - L) is recomputed from each query row's base-2
// log-sum-exp L (the forward's, gp.lse, or the row statistics' of the
// scratch), so no [Tq, Tk] matrix exists; every output element is
// accumulated by one warp in a fixed order: no atomics, results repeat bit
// for bit.
#pragma once

namespace sexpgpu::cuda::flash {

// attention_grad's row statistics (float scratch): per query row, the base-2
// log-sum-exp of its logits (-inf when it sees no key) at [bh*Tq + row]
// unless the forward's gp.lse is given, and rowsum(g * o) at [B*H*Tq +
// bh*Tq + row] (written by dq, read by dk/dv after it).
__device__ __forceinline__ float* row_lse(const AttentionGradParams& gp, int64_t bh) {
  return static_cast<float*>(gp.row_stats) + bh * gp.attention.tq;
}
__device__ __forceinline__ const float* lse_rows(const AttentionGradParams& gp, int64_t bh) {
  return gp.lse ? gp.lse + bh * gp.attention.tq : row_lse(gp, bh);
}
__device__ __forceinline__ float* row_dot(const AttentionGradParams& gp, int64_t bh) {
  const AttentionParams& p = gp.attention;
  return static_cast<float*>(gp.row_stats) + (p.batch * p.heads + bh) * p.tq;
}

// The log-sum-exp a probability exp2(logit - L) subtracts: +inf for a row
// that sees no key (whose logits are all -inf), so that every hidden pair's
// probability is exp2(-inf) = 0 without a test per element.
__device__ __forceinline__ float lse_for_exp2(float lse) {
  return lse == negative_infinity() ? -negative_infinity() : lse;
}

// One block of the row statistics' log-sum-exp (when the forward's is not
// given): the forward's softmax pass without the values, on the forward's
// tiling, so the value is the forward's bit for bit. Shared: the queries,
// then two buffers of keys.
template <class Half, class Tile>
__device__ __forceinline__ void row_stats_block(const AttentionGradParams& gp,
                                                unsigned char* shared) {
  constexpr int kM = Tile::kM, kK8 = Tile::kKeys / 8;
  const AttentionParams& p = gp.attention;
  uint16_t* qs = reinterpret_cast<uint16_t*>(shared);
  const int64_t bh = blockIdx.x;
  const int64_t q0 = int64_t(gridDim.y - 1 - blockIdx.y) * Tile::kRows;
  const int warp_row0 = warp_id() * 16 * kM;
  __shared__ LoopRows rows;
  share_rows(rows, p, head_index(bh, p.heads));
  const Logits<Half> logits(p, bh);
  const bool copy_16 = rows_copy_16(p.d, rows.q) && rows_copy_16(p.d, rows.k);

  load_tile<Tile::kRows, Tile::kD>(qs, rows.q, q0, p.tq, p.d, copy_16);
  QueryFragments<Tile> queries;
  float row_max[kM][2], row_sum[kM][2];
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) row_max[m][h] = negative_infinity(), row_sum[m][h] = 0;

  auto visit = [&](const uint16_t* ks, const uint16_t*, int64_t k0) {
    if (k0 == 0) queries.load(qs, warp_row0);
    if (logits.all_hidden(q0 + warp_row0, 16 * kM, k0)) return;  // as in forward_block
    float s[kM][kK8][4] = {};
    queries.template times_rows<Half>(s, ks);
    softmax_tile(s, logits, q0 + warp_row0, k0, row_max, row_sum, [](const float(&)[kM][2]) {});
  };
  for_each_key_tile<Tile, false>(qs + Tile::kRows * Tile::kStride, rows,
                                 key_end(p, q0 + Tile::kRows), p, copy_16, visit);

  float* lse = row_lse(gp, bh);
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float total = row_total(row_sum[m][h]);
      const int64_t row = q0 + warp_row0 + 16 * m + acc_row(2 * h);
      if (row < p.tq && lane_id() % 4 == 0) lse[row] = log_sum_exp2(row_max[m][h], total);
    }
}

// rowsum(g * o) of the query rows [row0, row0 + 16*kM) of one batch*head,
// for the warp that owns them in dq: the 2/kM lanes of a row (lane / (2/kM)
// is its row) sum their 8-column chunks (16-byte loads when the operands
// allow) or single columns in a fixed order, then add their shares. Each
// lane returns its row's sum (0 past Tq), and a row's first lane stores it
// in the scratch for the dk/dv kernel that runs next.
template <class Half, int kM>
__device__ __forceinline__ float warp_row_dots(const AttentionGradParams& gp, const LoopRows& rows,
                                               int64_t bh, int64_t row0) {
  static_assert(kM == 1 || kM == 2, "a warp's 32 lanes share 16 or 32 rows");
  constexpr int kLanesPerRow = 2 / kM;
  const AttentionParams& p = gp.attention;
  const int64_t d = p.d, row = row0 + lane_id() / kLanesPerRow;
  const int part = lane_id() % kLanesPerRow;
  float sum = 0;
  if (row < p.tq) {
    const HeadRows<const uint16_t> g_rows = rows.g, o_rows = rows.o;
    const uint16_t* g = g_rows.first + int32_t(row) * g_rows.stride;
    const uint16_t* o = o_rows.first + int32_t(row) * o_rows.stride;
    if (rows_copy_16(d, g_rows) && rows_copy_16(d, o_rows)) {
      for (int64_t c = 8 * part; c < d; c += 8 * kLanesPerRow) {
        const uint4 gv = *reinterpret_cast<const uint4*>(g + c);
        const uint4 ov = *reinterpret_cast<const uint4*>(o + c);
        const uint32_t gw[4] = {gv.x, gv.y, gv.z, gv.w}, ow[4] = {ov.x, ov.y, ov.z, ov.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
          sum += to_float<Half>(uint16_t(gw[i])) * to_float<Half>(uint16_t(ow[i])) +
                 to_float<Half>(uint16_t(gw[i] >> 16)) * to_float<Half>(uint16_t(ow[i] >> 16));
      }
    } else {
      for (int64_t c = part; c < d; c += kLanesPerRow)
        sum += to_float<Half>(g[c]) * to_float<Half>(o[c]);
    }
  }
  if (kLanesPerRow == 2) sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  if (row < p.tq && part == 0) row_dot(gp, bh)[row] = sum;
  return sum;
}

// Thread 0 fills attention_grad's `rows` of batch*head bh (its strides
// resolved: dq, dk and dv as out[0..2]), then the block waits for them.
__device__ __forceinline__ void share_rows(LoopRows& rows, const AttentionGradParams& gp,
                                           int64_t bh) {
  const AttentionParams& p = gp.attention;
  if (threadIdx.x == 0) {
    const HeadIndex head = head_index(bh, p.heads);
    rows.k = read_rows(p.k, p.k_strides, head);
    rows.v = read_rows(p.v, p.v_strides, head);
    rows.q = read_rows(p.q, p.q_strides, head);
    rows.g = read_rows(gp.g, gp.g_strides, head);
    rows.o = read_rows(gp.o, gp.o_strides, head);
    const HeadStrides* strides[3] = {&gp.dq_strides, &gp.dk_strides, &gp.dv_strides};
    for (int part = 0; part < 3; ++part)
      rows.out[part] =
          head_rows(static_cast<uint16_t*>(gp.out) + gp.part_offsets[part], *strides[part], head);
  }
  __syncthreads();
}

// One block of dq: queries [q0, q0 + Tile::kRows) of one batch*head against
// every key they see: p from the log-sum-exp, dp = g v^T, ds = p (dp -
// rowsum(g o)), dq = ds k * scale; rowsum(g o) (warp_row_dots) also goes to
// the scratch for dk and dv. Shared: the queries and their g, then two
// buffers of keys and values.
template <class Half, class Tile>
__device__ __forceinline__ void dq_block(const AttentionGradParams& gp, unsigned char* shared) {
  constexpr int kM = Tile::kM, kD8 = Tile::kD / 8, kK8 = Tile::kKeys / 8;
  const AttentionParams& p = gp.attention;
  uint16_t* qs = reinterpret_cast<uint16_t*>(shared);
  uint16_t* gs = qs + Tile::kRows * Tile::kStride;
  const BlockTile block_tile = grouped_query_tile<Tile::kRows>(p);  // as the forward's
  const int64_t bh = block_tile.bh, q0 = block_tile.q0;
  const int warp_row0 = warp_id() * 16 * kM;
  __shared__ LoopRows rows;
  share_rows(rows, gp, bh);
  const Logits<Half> logits(p, bh);
  const bool copy_16 = rows_copy_16(p.d, rows.q) && rows_copy_16(p.d, rows.k) &&
                       rows_copy_16(p.d, rows.v) && rows_copy_16(p.d, rows.g);

  // Committed with the first key tile, so in shared memory at its visit.
  load_tile<Tile::kRows, Tile::kD>(qs, rows.q, q0, p.tq, p.d, copy_16);
  load_tile<Tile::kRows, Tile::kD>(gs, rows.g, q0, p.tq, p.d, copy_16);
  QueryFragments<Tile> queries, grads;
  const float warp_dot = warp_row_dots<Half, kM>(gp, rows, bh, q0 + warp_row0);
  float lse[kM][2], dot[kM][2];  // of this lane's rows
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = q0 + warp_row0 + 16 * m + acc_row(2 * h);
      lse[m][h] = row < p.tq ? lse_for_exp2(lse_rows(gp, bh)[row]) : 0.0f;
      dot[m][h] = __shfl_sync(0xffffffffu, warp_dot, (16 * m + acc_row(2 * h)) * (2 / kM));
    }
  float dq[kM][kD8][4] = {};

  auto visit = [&](const uint16_t* ks, const uint16_t* vs, int64_t k0) {
    if (k0 == 0) queries.load(qs, warp_row0), grads.load(gs, warp_row0);
    if (logits.all_hidden(q0 + warp_row0, 16 * kM, k0)) return;  // ds would be all 0
    float s[kM][kK8][4] = {}, ds[kM][kK8][4] = {};
    queries.template times_rows<Half>(s, ks);
    const float factor = to_scaled_logits<false>(s, logits, q0 + warp_row0, k0);
    grads.template times_rows<Half>(ds, vs);
#pragma unroll
    for (int m = 0; m < kM; ++m)
#pragma unroll
      for (int n = 0; n < kK8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          ds[m][n][e] =
              fast_exp2(fmaf(s[m][n][e], factor, -lse[m][e / 2])) * (ds[m][n][e] - dot[m][e / 2]);
    mma_acc_rows<Half, Tile::kStride, kM, kD8, kK8>(dq, ds, ks);
  };
  for_each_key_tile<Tile, true>(gs + Tile::kRows * Tile::kStride, rows,
                                key_end(p, q0 + Tile::kRows), p, copy_16, visit);

  store_rows<Half>(rows.out[0], dq, q0 + warp_row0, p.tq, p.d, float(p.scale));
}

// The tiling of the dk/dv kernel: 16*kM keys per warp, tiles of kQueries,
// kSteps tiles a copy into shared memory (one barrier a copy).
template <int kD_, int kM_, int kQueries_, int kSteps_ = 1>
struct KeyTiling {
  static constexpr int kD = kD_, kM = kM_, kQueries = kQueries_, kSteps = kSteps_;
  static constexpr int kQueriesPerLoad = kQueries * kSteps;
  static constexpr int kStride = HeadTile<kD>::kStride;
  static constexpr int kKeys = kWarps * 16 * kM;  // keys per block
  // A buffer of queries: q and g tiles, then the rows' two statistics.
  static constexpr int kQueryBuffer = 2 * kQueriesPerLoad * kStride + 2 * kQueriesPerLoad * 2;
};

// attention_grad's tilings of each compiled head dimension (d rounded up to
// 32, 64 or 128; the row statistics take the forward's): dk/dv and dq with
// 32 rows per warp (each shared-memory operand fragment feeds 4 products),
// narrower where the f32 accumulators would no longer fit in registers
// (ptxas -v: no spills), two tiles a copy where two blocks of 255 registers
// still fit an SM's shared memory.
template <int kD>
struct GradTilingFor;
template <>
struct GradTilingFor<32> {
  using Keys = KeyTiling<32, 2, 64, 2>;
  using Queries = QueryTiling<32, 2, 64, true, 2>;
};
template <>
struct GradTilingFor<64> {
  using Keys = KeyTiling<64, 2, 32, 2>;
  using Queries = QueryTiling<64, 2, 32, true, 2>;
};
template <>
struct GradTilingFor<128> {
  using Keys = KeyTiling<128, 1, 32, 2>;
  using Queries = QueryTiling<128, 1, 64>;
};

// One block of dk and dv: keys [k0, k0 + Tile::kKeys) of one batch*head
// against every query that sees them, each warp's 16*kM keys as the rows of
// the transposed products: p^T from the log-sum-exp, dv += p^T g, dp^T =
// v g^T, ds^T = p^T (dp^T - rowsum(g o)), dk += ds^T q (times scale at the
// end). Shared: keys and values, then two buffers of queries.
template <class Half, class Tile>
__device__ __forceinline__ void dkdv_block(const AttentionGradParams& gp, unsigned char* shared) {
  constexpr int kM = Tile::kM, kD8 = Tile::kD / 8, kQ8 = Tile::kQueries / 8;
  constexpr int kLoad = Tile::kQueriesPerLoad, kTile = kLoad * Tile::kStride;
  const AttentionParams& p = gp.attention;
  uint16_t* ks = reinterpret_cast<uint16_t*>(shared);
  uint16_t* vs = ks + Tile::kKeys * Tile::kStride;
  uint16_t* buffers = vs + Tile::kKeys * Tile::kStride;
  const int64_t bh = blockIdx.x;
  const int64_t k0 = int64_t(blockIdx.y) * Tile::kKeys;
  const int warp_row0 = warp_id() * 16 * kM;
  __shared__ LoopRows rows;
  share_rows(rows, gp, bh);
  const float* lse = lse_rows(gp, bh);
  const float* dot = row_dot(gp, bh);
  const Logits<Half> logits(p, bh);
  const bool copy_16 = rows_copy_16(p.d, rows.q) && rows_copy_16(p.d, rows.k) &&
                       rows_copy_16(p.d, rows.v) && rows_copy_16(p.d, rows.g);

  // Rows past Tq get L = +inf: their logits are -inf, their p 0.
  auto load_queries = [&](int64_t q0, int buffer) {
    uint16_t* qb = buffers + buffer * Tile::kQueryBuffer;
    load_tile<kLoad, Tile::kD>(qb, rows.q, q0, p.tq, p.d, copy_16);
    load_tile<kLoad, Tile::kD>(qb + kTile, rows.g, q0, p.tq, p.d, copy_16);
    float* stats = reinterpret_cast<float*>(qb + 2 * kTile);
    for (int i = int(threadIdx.x); i < kLoad; i += kThreads) {
      const bool inside = q0 + i < p.tq;
      stats[i] = inside ? lse_for_exp2(lse[q0 + i]) : -negative_infinity();
      stats[kLoad + i] = inside ? dot[q0 + i] : 0.0f;
    }
    cp_async_commit();
  };

  // The first query that sees key k0 under causality (query i sees j <= i + Tk - Tq).
  int64_t begin = p.causal ? k0 - (p.tk - p.tq) : 0;
  if (begin < 0) begin = 0;
  load_tile<Tile::kKeys, Tile::kD>(ks, rows.k, k0, p.tk, p.d, copy_16);
  load_tile<Tile::kKeys, Tile::kD>(vs, rows.v, k0, p.tk, p.d, copy_16);
  if (begin < p.tq) load_queries(begin, 0);
  float dk[kM][kD8][4] = {}, dv[kM][kD8][4] = {};
  const int64_t warp_visible_from = p.causal ? k0 + warp_row0 - (p.tk - p.tq) : 0;

  int buffer = 0;
  for (int64_t q0 = begin; q0 < p.tq; q0 += kLoad, buffer ^= 1) {
    cp_async_wait_all();
    __syncthreads();  // these queries are in; every warp is done with the other buffer
    if (q0 + kLoad < p.tq) load_queries(q0 + kLoad, buffer ^ 1);
    const uint16_t* qb = buffers + buffer * Tile::kQueryBuffer;
    const float* lse_b = reinterpret_cast<const float*>(qb + 2 * kTile);
#pragma unroll 1
    for (int step = 0; step < Tile::kSteps && q0 + step * Tile::kQueries < p.tq; ++step) {
      const int row = step * Tile::kQueries;
      const uint16_t* qs = qb + row * Tile::kStride;
      const uint16_t* gs = qb + kTile + row * Tile::kStride;
      const float* lse_s = lse_b + row;
      const float* dot_s = lse_b + kLoad + row;

      // Queries that see none of this warp's keys would add exact zeros.
      if (q0 + row + Tile::kQueries <= warp_visible_from) continue;
      float pt[kM][kQ8][4] = {}, dst[kM][kQ8][4] = {};
      mma_rows_rows<Half, Tile::kStride, kM, kQ8, Tile::kD>(pt, ks, warp_row0, qs);
      const float factor = to_scaled_logits<true>(pt, logits, k0 + warp_row0, q0 + row);
#pragma unroll
      for (int n = 0; n < kQ8; ++n) {
        const float2 lse2 = *reinterpret_cast<const float2*>(lse_s + 8 * n + acc_col(0));
#pragma unroll
        for (int m = 0; m < kM; ++m)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            pt[m][n][e] = fast_exp2(fmaf(pt[m][n][e], factor, -(e % 2 ? lse2.y : lse2.x)));
      }
      mma_acc_rows<Half, Tile::kStride, kM, kD8, kQ8>(dv, pt, gs);
      mma_rows_rows<Half, Tile::kStride, kM, kQ8, Tile::kD>(dst, vs, warp_row0, gs);
#pragma unroll
      for (int n = 0; n < kQ8; ++n) {
        const float2 dot2 = *reinterpret_cast<const float2*>(dot_s + 8 * n + acc_col(0));
#pragma unroll
        for (int m = 0; m < kM; ++m)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            dst[m][n][e] = pt[m][n][e] * (dst[m][n][e] - (e % 2 ? dot2.y : dot2.x));
      }
      mma_acc_rows<Half, Tile::kStride, kM, kD8, kQ8>(dk, dst, qs);
    }
  }
  cp_async_wait_all();  // nothing left in flight when no query sees these keys

  store_rows<Half>(rows.out[1], dk, k0 + warp_row0, p.tk, p.d, float(p.scale));
  store_rows<Half>(rows.out[2], dv, k0 + warp_row0, p.tk, p.d, 1.0f);
}

}  // namespace sexpgpu::cuda::flash
