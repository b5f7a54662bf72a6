// The tensor-core flash-attention building blocks and forward body
// (FlashAttention-2 style): bf16/f16 operands, products on mma.sync with f32
// accumulation, the softmax in f32, probabilities rounded to the operand
// type for their products. Templated on tiles; flash_forward.cu
// instantiates the forward, flash_tensor_grad.h builds attention_grad's
// kernels from the same parts. Include flash_mma.h (or a host emulation of
// it, flash_mma.h says why) and attention_launch.h first.
//
// A block is 4 warps; each warp owns 16*kM rows of every product it
// accumulates (queries in the forward, the row statistics and dq, keys in
// dk/dv), so warps never combine partial sums and results repeat bit for
// bit. Shared tiles are row-major, [row][head column], padded
// by 16 bytes per row. Scores are kept in base 2 (log2(e) folded into the
// scale), so each probability is one exp2. Head columns past d and rows past
// Tq/Tk are zeros in shared memory, and the logits of rows or keys past the
// edges are -inf, so padding never reaches a result.
#pragma once

namespace sexpgpu::cuda::flash {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ int lane_id() {
  return int(threadIdx.x) % 32;
}
__device__ __forceinline__ int warp_id() {
  return int(threadIdx.x) / 32;
}
// Element e (0..3) of a lane's 16x8 accumulator block is at this row and
// column of the block (the PTX ISA's m16n8k16 C/D layout).
__device__ __forceinline__ int acc_row(int e) {
  return lane_id() / 4 + 8 * (e / 2);
}
__device__ __forceinline__ int acc_col(int e) {
  return 2 * (lane_id() % 4) + e % 2;
}

// Tiles of kD head columns: 16 bytes of padding per row put the 8 rows that
// one ldmatrix matrix reads in 8 different bank quads.
template <int kD>
struct HeadTile {
  static_assert(kD % 16 == 0, "head columns come in k-steps of 16");
  static constexpr int kStride = kD + 8;
};

// The rows of one batch*head of a [B,H,T,D] operand (HeadStrides): the
// first, and the elements from one row to the next.
// The stride is 32-bit (one fewer register in the kernels, which sit at
// the 255 limit): the factory keeps every row * stride below 2^31.
template <class T>
struct HeadRows {
  T* first;
  int32_t stride;
};
// One batch*head's batch and head.
struct HeadIndex {
  int32_t b, h;
};
__device__ __forceinline__ HeadIndex head_index(int64_t bh, int64_t heads) {
  return {int32_t(bh / heads), int32_t(bh % heads)};
}

// `operand`'s rows of one batch*head; its strides resolved
// (with_dense_strides).
template <class T>
__device__ __forceinline__ HeadRows<T> head_rows(T* operand, const HeadStrides& s, HeadIndex i) {
  return {operand + i.b * s.batch + i.h * s.head, int32_t(s.row)};
}
__device__ __forceinline__ HeadRows<const uint16_t> read_rows(const void* operand,
                                                              const HeadStrides& s, HeadIndex i) {
  return head_rows(static_cast<const uint16_t*>(operand), s, i);
}

// The rows of the operands a block reloads in its loop (keys and values;
// queries and g in dk/dv), kept in shared memory: read there after each
// barrier, they take no registers across the loop. (The kernels sit at the
// 255-register limit; a pointer and a stride held per operand would spill.)
// The results' rows are there too: finding them at the end, where the
// accumulators are live, would need registers for a 64-bit division.
struct LoopRows {
  HeadRows<const uint16_t> k, v, q, g, o;
  HeadRows<uint16_t> out[3];  // the forward's o; attention_grad's dq, dk, dv
};
// Thread 0 fills the forward's `rows` of one batch*head, then the block
// waits for them.
__device__ __forceinline__ void share_rows(LoopRows& rows, const AttentionParams& p,
                                           HeadIndex head) {
  if (threadIdx.x == 0) {
    rows.k = read_rows(p.k, p.k_strides, head);
    rows.v = read_rows(p.v, p.v_strides, head);
    rows.q = rows.g = rows.o = read_rows(p.q, p.q_strides, head);
    if (p.out) rows.out[0] = head_rows(static_cast<uint16_t*>(p.out), p.out_strides, head);
  }
  __syncthreads();
}

// 16-byte copies need d % 8 == 0 and rows that start 16-byte aligned.
template <class T>
__device__ __forceinline__ bool rows_copy_16(int64_t d, const HeadRows<T>& rows) {
  return d % 8 == 0 && reinterpret_cast<uintptr_t>(rows.first) % 16 == 0 && rows.stride % 8 == 0;
}

// Rows [row0, row0 + kRows) of a [rows, d] matrix into a shared tile of kD
// columns, zeros past the matrix's edges; asynchronous (cp.async, to be
// committed and waited for) when `copy_16`, else plain stores.
template <int kRows, int kD>
__device__ __forceinline__ void load_tile(uint16_t* tile, HeadRows<const uint16_t> src,
                                          int64_t row0, int64_t rows, int64_t d, bool copy_16) {
  constexpr int kStride = HeadTile<kD>::kStride;
  if (copy_16) {
    constexpr int kChunks = kD / 8;
    for (int i = int(threadIdx.x); i < kRows * kChunks; i += kThreads) {
      const int r = i / kChunks, c = i % kChunks * 8;
      const int64_t row = row0 + r;
      const bool inside = row < rows && c < d;
      cp_async_16(tile + r * kStride + c,
                  inside ? src.first + int32_t(row) * src.stride + c : src.first, inside);
    }
    return;
  }
  for (int i = int(threadIdx.x); i < kRows * kD; i += kThreads) {
    const int r = i / kD, c = i % kD;
    const int64_t row = row0 + r;
    tile[r * kStride + c] =
        row < rows && c < d ? src.first[int32_t(row) * src.stride + c] : uint16_t(0);
  }
}

// acc[m][n] += A B^T over the kK head columns: A is rows a_row0 + 16m.. of
// tile a, B^T's columns 8n.. are rows 8n.. of tile b (both [row][k]).
template <class Half, int kStride, int kM, int kN8, int kK>
__device__ __forceinline__ void mma_rows_rows(float (&acc)[kM][kN8][4], const uint16_t* a,
                                              int a_row0, const uint16_t* b) {
  static_assert(kN8 % 2 == 0 && kK % 16 == 0, "whole 16x16 operand blocks");
  const int lane = lane_id();
#pragma unroll
  for (int k0 = 0; k0 < kK; k0 += 16) {
    uint32_t af[kM][4];
#pragma unroll
    for (int m = 0; m < kM; ++m)
      ldmatrix_x4(af[m], a + (a_row0 + 16 * m + lane % 16) * kStride + k0 + lane / 16 * 8);
#pragma unroll
    for (int n = 0; n < kN8; n += 2) {
      uint32_t bf[4];  // b0, b1 of column block n, then of n + 1
      ldmatrix_x4(bf, b + (8 * n + lane % 8 + lane / 16 * 8) * kStride + k0 + lane / 8 % 2 * 8);
#pragma unroll
      for (int m = 0; m < kM; ++m) {
        mma_16816<Half>(acc[m][n], af[m], bf[0], bf[1]);
        mma_16816<Half>(acc[m][n + 1], af[m], bf[2], bf[3]);
      }
    }
  }
}

// The A operand fragments of rows a_row0 + 16m.. of tile a over its kK head
// columns, for a warp that multiplies the same rows with every tile.
template <int kStride, int kM, int kK>
__device__ __forceinline__ void load_a_fragments(uint32_t (&af)[kM][kK / 16][4], const uint16_t* a,
                                                 int a_row0) {
  const int lane = lane_id();
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int k = 0; k < kK / 16; ++k)
      ldmatrix_x4(af[m][k], a + (a_row0 + 16 * m + lane % 16) * kStride + 16 * k + lane / 16 * 8);
}

// mma_rows_rows with A's fragments already in registers (load_a_fragments).
template <class Half, int kStride, int kM, int kN8, int kK>
__device__ __forceinline__ void mma_fragments_rows(float (&acc)[kM][kN8][4],
                                                   const uint32_t (&af)[kM][kK / 16][4],
                                                   const uint16_t* b) {
  static_assert(kN8 % 2 == 0 && kK % 16 == 0, "whole 16x16 operand blocks");
  const int lane = lane_id();
#pragma unroll
  for (int k = 0; k < kK / 16; ++k)
#pragma unroll
    for (int n = 0; n < kN8; n += 2) {
      uint32_t bf[4];  // b0, b1 of column block n, then of n + 1
      ldmatrix_x4(bf, b + (8 * n + lane % 8 + lane / 16 * 8) * kStride + 16 * k + lane / 8 % 2 * 8);
#pragma unroll
      for (int m = 0; m < kM; ++m) {
        mma_16816<Half>(acc[m][n], af[m][k], bf[0], bf[1]);
        mma_16816<Half>(acc[m][n + 1], af[m][k], bf[2], bf[3]);
      }
    }
}

// acc[m][n] += P B: P is the warp's f32 accumulator tile p (its rows as
// acc's, 8*kK8 columns), rounded to Half; B is rows 0..8*kK8 of tile b
// ([k][head column]), its columns 8n...
template <class Half, int kStride, int kM, int kN8, int kK8>
__device__ __forceinline__ void mma_acc_rows(float (&acc)[kM][kN8][4], const float (&p)[kM][kK8][4],
                                             const uint16_t* b) {
  static_assert(kN8 % 2 == 0 && kK8 % 2 == 0, "whole 16x16 operand blocks");
  const int lane = lane_id();
#pragma unroll
  for (int kk = 0; kk < kK8; kk += 2) {
    uint32_t af[kM][4];  // the accumulator layout of columns kk, kk+1 is the A layout of 16
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      af[m][0] = pack_pair<Half>(p[m][kk][0], p[m][kk][1]);
      af[m][1] = pack_pair<Half>(p[m][kk][2], p[m][kk][3]);
      af[m][2] = pack_pair<Half>(p[m][kk + 1][0], p[m][kk + 1][1]);
      af[m][3] = pack_pair<Half>(p[m][kk + 1][2], p[m][kk + 1][3]);
    }
#pragma unroll
    for (int n = 0; n < kN8; n += 2) {
      uint32_t bf[4];  // b0, b1 of column block n, then of n + 1
      ldmatrix_x4_trans(
          bf, b + (8 * kk + lane % 8 + lane / 8 % 2 * 8) * kStride + 8 * n + lane / 16 * 8);
#pragma unroll
      for (int m = 0; m < kM; ++m) {
        mma_16816<Half>(acc[m][n], af[m], bf[0], bf[1]);
        mma_16816<Half>(acc[m][n + 1], af[m], bf[2], bf[3]);
      }
    }
  }
}

// The score of a (query, key) pair before the softmax, as the CPU's, in base
// 2: the scaled dot product, -inf where the edges, causality or a bool mask
// hide the key, an additive mask (of the operands' type) added.
template <class Half>
struct Logits {
  float scale2;           // scale * log2(e)
  int64_t tq, tk, shift;  // causal: query i sees keys j <= i + shift
  bool causal;
  AttentionMask mask_kind;
  const void* mask;
  int64_t mask_base, query_stride, key_stride;

  __device__ Logits(const AttentionParams& p, int64_t bh)
      : scale2(float(p.scale) * kLog2e),
        tq(p.tq),
        tk(p.tk),
        shift(p.tk - p.tq),
        causal(p.causal),
        mask_kind(p.mask_kind),
        mask(p.mask),
        mask_base((bh / p.heads) * p.mask_strides[0] + (bh % p.heads) * p.mask_strides[1]),
        query_stride(p.mask_strides[2]),
        key_stride(p.mask_strides[3]) {}

  // No pair of queries [q0, q0 + nq) and keys [k0, k0 + nk) is hidden or
  // masked: every logit is the scaled dot product.
  __device__ bool plain(int64_t q0, int nq, int64_t k0, int nk) const {
    return mask_kind == AttentionMask::None && q0 + nq <= tq && k0 + nk <= tk &&
           !(causal && k0 + nk - 1 > q0 + shift);
  }

  // No pair of queries [q0, q0 + nq) and keys [k0, k0 + nk) is visible
  // under causality (whatever the mask says).
  __device__ bool all_hidden(int64_t q0, int nq, int64_t k0) const {
    return causal && k0 > q0 + nq - 1 + shift;
  }

  // Without a mask, the visible columns of one accumulator row are the
  // offsets [lo, hi) from the tile's first column (in [0, n]): queries as
  // rows see keys up to the causal limit and below Tk, keys as rows are
  // seen by queries from the causal limit on and below Tq.
  template <bool kKeyRows>
  __device__ void visible_columns(int64_t row, int64_t col0, int n, int& lo, int& hi) const {
    auto clamp = [n](int64_t x) { return int(x < 0 ? 0 : x > n ? n : x); };
    if (kKeyRows) {
      const bool key_inside = row < tk;
      lo = clamp(causal ? row - shift - col0 : -col0);
      hi = key_inside ? clamp(tq - col0) : 0;
      return;
    }
    const int64_t end = causal && row + shift + 1 < tk ? row + shift + 1 : tk;
    lo = 0;
    hi = row < tq ? clamp(end - col0) : 0;
  }

  __device__ float operator()(float dot, int64_t query, int64_t key) const {
    if (query >= tq || key >= tk || (causal && key > query + shift)) return negative_infinity();
    if (mask_kind == AttentionMask::None) return dot * scale2;
    const int64_t at = mask_base + query * query_stride + key * key_stride;
    if (mask_kind == AttentionMask::Bool)
      return static_cast<const uint8_t*>(mask)[at] ? dot * scale2 : negative_infinity();
    return fmaf(dot, scale2, to_float<Half>(static_cast<const uint16_t*>(mask)[at]) * kLog2e);
  }
};

// A warp's dot products to logits in place. Rows are queries from row0 and
// columns keys from col0, or with kKeyRows keys and queries.
template <bool kKeyRows, class Half, int kM, int kN8>
__device__ __forceinline__ void to_logits(float (&s)[kM][kN8][4], const Logits<Half>& logits,
                                          int64_t row0, int64_t col0) {
  const bool plain = kKeyRows ? logits.plain(col0, 8 * kN8, row0, 16 * kM)
                              : logits.plain(row0, 16 * kM, col0, 8 * kN8);
  if (plain) {
#pragma unroll
    for (int m = 0; m < kM; ++m)
#pragma unroll
      for (int n = 0; n < kN8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[m][n][e] *= logits.scale2;
    return;
  }
  if (logits.mask_kind == AttentionMask::None) {
#pragma unroll
    for (int m = 0; m < kM; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        int lo, hi;
        logits.template visible_columns<kKeyRows>(row0 + 16 * m + acc_row(2 * h), col0, 8 * kN8, lo,
                                                  hi);
#pragma unroll
        for (int n = 0; n < kN8; ++n)
#pragma unroll
          for (int e = 2 * h; e < 2 * h + 2; ++e) {
            const int c = 8 * n + acc_col(e);
            s[m][n][e] = c >= lo && c < hi ? s[m][n][e] * logits.scale2 : negative_infinity();
          }
      }
    return;
  }
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int n = 0; n < kN8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t row = row0 + 16 * m + acc_row(e), col = col0 + 8 * n + acc_col(e);
        s[m][n][e] = kKeyRows ? logits(s[m][n][e], col, row) : logits(s[m][n][e], row, col);
      }
}

// to_logits, except that a tile whose logits are all the dot products times
// the scale stays as it is: the logit of a dot product x is then x * factor
// with the factor returned (the scale, else 1), so that a subtraction from
// the logit takes the multiplication into the same fma.
template <bool kKeyRows, class Half, int kM, int kN8>
__device__ __forceinline__ float to_scaled_logits(float (&s)[kM][kN8][4],
                                                  const Logits<Half>& logits, int64_t row0,
                                                  int64_t col0) {
  const bool plain = kKeyRows ? logits.plain(col0, 8 * kN8, row0, 16 * kM)
                              : logits.plain(row0, 16 * kM, col0, 8 * kN8);
  if (plain) return logits.scale2;
  to_logits<kKeyRows>(s, logits, row0, col0);
  return 1.0f;
}

// One tile of logits to probabilities in place, updating each row's running
// maximum and this lane's share of its sum (the 4 lanes of a row hold its
// columns); rescale[m][h] is what the row's earlier accumulations must be
// multiplied by. Row h of block m is accumulator elements 2h and 2h+1. The
// logit of an element x is x * factor (factor > 0: softmax_tile), so the
// multiplication joins the subtraction of the maximum in one fma; the
// maximum of x times the factor is the maximum of the logits exactly, as
// rounding keeps order.
template <int kM, int kN8>
__device__ __forceinline__ void online_softmax(float (&s)[kM][kN8][4], float factor,
                                               float (&row_max)[kM][2], float (&row_sum)[kM][2],
                                               float (&rescale)[kM][2]) {
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float tile_max = negative_infinity();
#pragma unroll
      for (int n = 0; n < kN8; ++n)
        tile_max = fmaxf(tile_max, fmaxf(s[m][n][2 * h], s[m][n][2 * h + 1]));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
      const float new_max = fmaxf(row_max[m][h], tile_max * factor);
      // A row that has seen no key yet subtracts 0: its probabilities and
      // rescale come out 0, never NaN from -inf - -inf.
      const float base = new_max == negative_infinity() ? 0.0f : new_max;
      rescale[m][h] = fast_exp2(row_max[m][h] - base);
      row_max[m][h] = new_max;
      float sum = 0;
#pragma unroll
      for (int n = 0; n < kN8; ++n)
#pragma unroll
        for (int e = 2 * h; e < 2 * h + 2; ++e) {
          s[m][n][e] = fast_exp2(fmaf(s[m][n][e], factor, -base));
          sum += s[m][n][e];
        }
      row_sum[m][h] = row_sum[m][h] * rescale[m][h] + sum;
    }
}

// A warp's tile of dot products (rows: queries from row0, columns: keys from
// col0) to probabilities by online_softmax, then then(rescale). The scale
// is folded into the exponent where the tile's logits are all the dot
// products times a positive scale. `then` is inlined into both branches so
// that each stays one basic block, in which ptxas interleaves the
// exponentials with the products that use them. The forward and
// attention_grad's row statistics both come here, so their log-sum-exps
// agree bit for bit.
template <class Half, int kM, int kN8, class Then>
__device__ __forceinline__ void softmax_tile(float (&s)[kM][kN8][4], const Logits<Half>& logits,
                                             int64_t row0, int64_t col0, float (&row_max)[kM][2],
                                             float (&row_sum)[kM][2], Then&& then) {
  float rescale[kM][2];
  if (logits.scale2 > 0 && logits.plain(row0, 16 * kM, col0, 8 * kN8)) {
    online_softmax(s, logits.scale2, row_max, row_sum, rescale);
    then(rescale);
    return;
  }
  to_logits<false>(s, logits, row0, col0);
  online_softmax(s, 1.0f, row_max, row_sum, rescale);
  then(rescale);
}

// The sum of a row over its 4 lanes, in a fixed order.
__device__ __forceinline__ float row_total(float share) {
  share += __shfl_xor_sync(0xffffffffu, share, 1);
  return share + __shfl_xor_sync(0xffffffffu, share, 2);
}

// A row's base-2 log-sum-exp from online_softmax's running maximum and its
// row_total; -inf for a row that saw no key.
__device__ __forceinline__ float log_sum_exp2(float row_max, float total) {
  return row_max == negative_infinity() ? negative_infinity() : row_max + log2f(total);
}

// Columns col and col + 1 of a row of a dense matrix with d columns: one
// 4-byte store when `pairs` (d even, row 4-byte aligned), else one by one.
template <class Half>
__device__ __forceinline__ void store_two(uint16_t* row, int col, int64_t d, bool pairs, float x0,
                                          float x1) {
  if (pairs) {
    if (col < d) *reinterpret_cast<uint32_t*>(row + col) = pack_pair<Half>(x0, x1);
    return;
  }
  if (col < d) row[col] = to_bits<Half>(x0);
  if (col + 1 < d) row[col + 1] = to_bits<Half>(x1);
}

// Rows [row0, row0 + 16*kM) of a warp's [rows][8*kN8] f32 tile, times
// `factor`, into rows of a [rows, d] matrix (those below `rows`).
template <class Half, int kM, int kN8>
__device__ __forceinline__ void store_rows(HeadRows<uint16_t> dst, const float (&acc)[kM][kN8][4],
                                           int64_t row0, int64_t rows, int64_t d, float factor) {
  const bool pairs =
      d % 2 == 0 && reinterpret_cast<uintptr_t>(dst.first) % 4 == 0 && dst.stride % 2 == 0;
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = row0 + 16 * m + acc_row(2 * h);
      if (row >= rows) continue;
#pragma unroll
      for (int n = 0; n < kN8; ++n)
        store_two<Half>(dst.first + int32_t(row) * dst.stride, 8 * n + acc_col(0), d, pairs,
                        acc[m][n][2 * h] * factor, acc[m][n][2 * h + 1] * factor);
    }
}

// The tiling of the kernels whose warps own queries (forward, row
// statistics, dq): 16*kM queries per warp, tiles of kKeys keys.
// kQueriesInRegisters: the warp's query (and dq's g) fragments stay in
// registers across key tiles instead of being read again per tile. kSteps:
// key tiles per copy into shared memory (for_each_key_tile).
template <int kD_, int kM_, int kKeys_, bool kQueriesInRegisters_ = false, int kSteps_ = 1>
struct QueryTiling {
  static constexpr int kD = kD_, kM = kM_, kKeys = kKeys_, kSteps = kSteps_;
  static constexpr int kKeysPerLoad = kKeys * kSteps;
  static constexpr bool kQueriesInRegisters = kQueriesInRegisters_;
  static constexpr int kStride = HeadTile<kD>::kStride;
  static constexpr int kRows = kWarps * 16 * kM;  // queries per block
};

// The forward's tiling of each compiled head dimension (d rounded up to 32,
// 64, 128 or 256): 32 queries per warp and tiles of 64 keys up to d = 64
// (the queries' fragments in registers, two tiles a copy: half the
// barriers), then 32 keys, and 16 queries per warp at d = 256, so that the
// f32 accumulators stay in registers (ptxas -v: none spilled; d = 128
// spills 36 bytes, cheaper than the narrower tiles that would not).
// attention_grad's row statistics use the same, so its log-sum-exp is the
// forward's bit for bit.
template <int kD>
struct ForwardTilingFor;
template <>
struct ForwardTilingFor<32> {
  using Type = QueryTiling<32, 2, 64, true, 2>;
};
template <>
struct ForwardTilingFor<64> {
  using Type = QueryTiling<64, 2, 64, true, 2>;
};
template <>
struct ForwardTilingFor<128> {
  using Type = QueryTiling<128, 2, 32>;
};
template <>
struct ForwardTilingFor<256> {
  using Type = QueryTiling<256, 1, 32>;
};
template <int kD>
using ForwardTiling = typename ForwardTilingFor<kD>::Type;

// The causal end of the keys queries below q_end see (all Tk otherwise).
__device__ __forceinline__ int64_t key_end(const AttentionParams& p, int64_t q_end) {
  if (!p.causal) return p.tk;
  const int64_t end = q_end + p.tk - p.tq;
  return end < 0 ? 0 : end < p.tk ? end : p.tk;
}

// The batch*head and first query of a block of kRows queries, from its
// linear index (the order blocks start in): the batch*heads go in groups
// whose keys and values fit in L2 together (kGroupBytes), each group's
// query tiles one after another, the last tiles first (under causality
// they see the most keys). So the blocks that run at once share their keys
// and values, read from memory about once instead of once per query tile,
// and the heaviest tiles still start first.
struct BlockTile {
  int64_t bh, q0;
};
template <int kRows>
__device__ __forceinline__ BlockTile grouped_query_tile(const AttentionParams& p) {
  constexpr int64_t kGroupBytes = int64_t(16) << 20;
  const int64_t heads = gridDim.x, tiles = gridDim.y;
  const int64_t linear = int64_t(blockIdx.x) + heads * int64_t(blockIdx.y);
  const int64_t head_bytes = 2 * int64_t(sizeof(uint16_t)) * p.tk * p.d;
  const int64_t fit = head_bytes > 0 ? kGroupBytes / head_bytes : heads;
  const int64_t group = fit < 1 ? 1 : fit > heads ? heads : fit;
  const int64_t first = linear / (group * tiles) * group;
  const int64_t size = heads - first < group ? heads - first : group;
  const int64_t rank = linear - first * tiles;  // in [0, size * tiles)
  return {first + rank % size, (tiles - 1 - rank / size) * kRows};
}

// Calls visit(keys, values, k0) for each tile of Tile::kKeys keys in
// [0, end), the tile's keys (and values, when kValues) in shared memory.
// Tile::kSteps tiles come in one copy (one barrier a copy), into one of two
// buffers from `buffers`, the next copy in flight while this one is used.
// Tiles the caller loaded before are waited for with the first.
template <class Tile, bool kValues, class Visit>
__device__ __forceinline__ void for_each_key_tile(uint16_t* buffers, const LoopRows& rows,
                                                  int64_t end, const AttentionParams& p,
                                                  bool copy_16, Visit&& visit) {
  constexpr int kLoad = Tile::kKeysPerLoad;
  constexpr int kTile = kLoad * Tile::kStride, kBuffer = (kValues ? 2 : 1) * kTile;
  auto load = [&](int64_t k0, int buffer) {
    uint16_t* keys = buffers + buffer * kBuffer;
    load_tile<kLoad, Tile::kD>(keys, rows.k, k0, p.tk, p.d, copy_16);
    if (kValues) load_tile<kLoad, Tile::kD>(keys + kTile, rows.v, k0, p.tk, p.d, copy_16);
    cp_async_commit();
  };
  if (end > 0) load(0, 0);
  int buffer = 0;
  for (int64_t k0 = 0; k0 < end; k0 += kLoad, buffer ^= 1) {
    cp_async_wait_all();
    __syncthreads();  // these tiles are in; every warp is done with the other buffer
    if (k0 + kLoad < end) load(k0 + kLoad, buffer ^ 1);
    const uint16_t* keys = buffers + buffer * kBuffer;
#pragma unroll 1
    for (int step = 0; step < Tile::kSteps && k0 + step * Tile::kKeys < end; ++step) {
      const int offset = step * Tile::kKeys * Tile::kStride;
      visit(keys + offset, keys + kTile + offset, k0 + step * Tile::kKeys);
    }
  }
  cp_async_wait_all();  // nothing left in flight when no tile was visited
}

// The A fragments of a warp's 16*kM query rows of a tile in shared memory,
// held in registers across key tiles when the tiling says so (the heads
// that leave room for them), else read from shared memory per product.
template <class Tile>
struct QueryFragments {
  static constexpr bool kInRegisters = Tile::kQueriesInRegisters;
  uint32_t af[kInRegisters ? Tile::kM : 1][kInRegisters ? Tile::kD / 16 : 1][4];
  const uint16_t* tile;
  int row0;

  // Once the tile is in shared memory and before the first product.
  __device__ __forceinline__ void load(const uint16_t* shared_tile, int warp_row0) {
    tile = shared_tile;
    row0 = warp_row0;
    if constexpr (kInRegisters) load_a_fragments<Tile::kStride, Tile::kM, Tile::kD>(af, tile, row0);
  }

  // acc += these rows times the rows of tile b, transposed.
  template <class Half, int kN8>
  __device__ __forceinline__ void times_rows(float (&acc)[Tile::kM][kN8][4],
                                             const uint16_t* b) const {
    if constexpr (kInRegisters)
      mma_fragments_rows<Half, Tile::kStride, Tile::kM, kN8, Tile::kD>(acc, af, b);
    else
      mma_rows_rows<Half, Tile::kStride, Tile::kM, kN8, Tile::kD>(acc, tile, row0, b);
  }
};

// One block of the forward: queries [q0, q0 + Tile::kRows) of one
// batch*head. Shared: the queries, then two buffers of keys and values.
// With p.lse, each query row's base-2 log-sum-exp goes there too.
template <class Half, class Tile>
__device__ __forceinline__ void forward_block(const AttentionParams& p, unsigned char* shared) {
  constexpr int kM = Tile::kM, kD8 = Tile::kD / 8, kK8 = Tile::kKeys / 8;
  uint16_t* qs = reinterpret_cast<uint16_t*>(shared);
  const BlockTile block_tile = grouped_query_tile<Tile::kRows>(p);
  const int64_t bh = block_tile.bh, q0 = block_tile.q0;
  const int warp_row0 = warp_id() * 16 * kM;
  const HeadIndex head = head_index(bh, p.heads);
  __shared__ LoopRows rows;
  share_rows(rows, p, head);
  const Logits<Half> logits(p, bh);
  const bool copy_16 =
      rows_copy_16(p.d, rows.q) && rows_copy_16(p.d, rows.k) && rows_copy_16(p.d, rows.v);

  // Committed with the first key tile, so in shared memory at its visit.
  load_tile<Tile::kRows, Tile::kD>(qs, rows.q, q0, p.tq, p.d, copy_16);
  QueryFragments<Tile> queries;
  float o[kM][kD8][4] = {};
  float row_max[kM][2], row_sum[kM][2];
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) row_max[m][h] = negative_infinity(), row_sum[m][h] = 0;

  auto visit = [&](const uint16_t* ks, const uint16_t* vs, int64_t k0) {
    if (k0 == 0) queries.load(qs, warp_row0);
    // A tile above the causal diagonal of all this warp's rows would leave
    // its maxima, sums and o exactly as they are.
    if (logits.all_hidden(q0 + warp_row0, 16 * kM, k0)) return;
    float s[kM][kK8][4] = {};
    queries.template times_rows<Half>(s, ks);
    // o times each row's rescale, plus these probabilities times the values.
    auto accumulate = [&](const float(&rescale)[kM][2]) {
#pragma unroll
      for (int m = 0; m < kM; ++m)
#pragma unroll
        for (int n = 0; n < kD8; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) o[m][n][e] *= rescale[m][e / 2];
      mma_acc_rows<Half, Tile::kStride, kM, kD8, kK8>(o, s, vs);
    };
    softmax_tile(s, logits, q0 + warp_row0, k0, row_max, row_sum, accumulate);
  };
  for_each_key_tile<Tile, true>(qs + Tile::kRows * Tile::kStride, rows,
                                key_end(p, q0 + Tile::kRows), p, copy_16, visit);

  // o / the row's sum; a query that sees no key keeps max -inf: zeros, the
  // CPU's choice.
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float total = row_total(row_sum[m][h]);
      const float factor = row_max[m][h] == negative_infinity() ? 0.0f : 1.0f / total;
#pragma unroll
      for (int n = 0; n < kD8; ++n) o[m][n][2 * h] *= factor, o[m][n][2 * h + 1] *= factor;
      const int64_t row = q0 + warp_row0 + 16 * m + acc_row(2 * h);
      if (p.lse && row < p.tq && lane_id() % 4 == 0)
        p.lse[bh * p.tq + row] = log_sum_exp2(row_max[m][h], total);
    }
  store_rows<Half>(head_rows(static_cast<uint16_t*>(p.out), p.out_strides, head), o, q0 + warp_row0,
                   p.tq, p.d, 1.0f);
}

}  // namespace sexpgpu::cuda::flash
