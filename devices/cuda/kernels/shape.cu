// Shape kernels (shape_launch.h): the strided copy behind permute, expand,
// slice, flip, concat and pad, its shared-memory transpose variant, take
// (a gather of rows) and index_add (the deterministic scatter-add of rows).
//
// The copies are memory-bound: one thread per word (up to 16 bytes when the
// inner axis is contiguous on both sides), with the index split into
// per-axis coordinates by multiply-shift division when every offset fits 31
// bits. index_add sorts (id, position) pairs with CUB's stable radix sort
// and sums each id's rows in a fixed order (below), so it needs no atomics
// and repeats bit for bit.
#include <cuda_runtime.h>

#include <cstdint>
#include <cub/device/device_radix_sort.cuh>

#include "shape_launch.h"

namespace sexpgpu::cuda {
namespace {

constexpr int kThreads = 256;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

int grid_for(int64_t items, int per_block, int max_blocks) {
  int64_t blocks = ceil_div(items, per_block);
  return int(blocks < max_blocks ? blocks : max_blocks);
}

// ---------------------------------------------------------------------------
// Division by a run-time constant d >= 1 for dividends in [0, 2^31):
// n / d = mulhi(n, mul) >> shr with mul = ceil(2^(31+l) / d), l = ceil(log2 d)
// (Granlund and Montgomery; CUTLASS's FastDivmod). mul == 0 marks d == 1.

struct FastDiv {
  uint32_t d = 1, mul = 0, shr = 0;
};

FastDiv make_fast_div(int64_t divisor) {
  FastDiv f;
  f.d = uint32_t(divisor);
  if (f.d <= 1) return f;
  uint32_t l = 0;
  while ((uint64_t(1) << l) < f.d) ++l;
  f.mul = uint32_t(((uint64_t(1) << (31 + l)) + f.d - 1) / f.d);
  f.shr = l - 1;
  return f;
}

__device__ __forceinline__ uint32_t fast_div(uint32_t n, FastDiv f) {
  return f.mul ? __umulhi(n, f.mul) >> f.shr : n;
}

// ---------------------------------------------------------------------------
// Strided copy

struct CopyGeometry {
  int rank;
  FastDiv div[kMaxCopyRank];
  int64_t dims[kMaxCopyRank];
  int64_t in_strides[kMaxCopyRank];
  int64_t out_strides[kMaxCopyRank];
  int64_t in_base, out_base, numel;
};

CopyGeometry copy_geometry(const StridedCopyParams& p) {
  CopyGeometry g{};
  g.rank = p.rank;
  for (int a = 0; a < p.rank; ++a) {
    g.dims[a] = p.dims[a];
    g.div[a] = make_fast_div(p.dims[a]);
    g.in_strides[a] = p.in_strides[a];
    g.out_strides[a] = p.out_strides[a];
  }
  g.in_base = p.in_base;
  g.out_base = p.out_base;
  g.numel = p.numel;
  return g;
}

// The word offsets of linear index i of the space, innermost axis first.
// The axis loop is unrolled over the fixed maximum so every array access
// is static (kernel parameters stay in the constant bank).
template <bool kIndex32>
__device__ __forceinline__ void copy_offsets(const CopyGeometry& g, int64_t i, int64_t& in_off,
                                             int64_t& out_off) {
  if constexpr (kIndex32) {
    uint32_t rem = uint32_t(i);
    int32_t io = int32_t(g.in_base), oo = int32_t(g.out_base);
#pragma unroll
    for (int k = 1; k < kMaxCopyRank; ++k) {
      const int a = kMaxCopyRank - k;
      if (a < g.rank) {
        uint32_t q = fast_div(rem, g.div[a]);
        int32_t r = int32_t(rem - q * g.div[a].d);
        io += r * int32_t(g.in_strides[a]);
        oo += r * int32_t(g.out_strides[a]);
        rem = q;
      }
    }
    in_off = io + int32_t(rem) * int32_t(g.in_strides[0]);
    out_off = oo + int32_t(rem) * int32_t(g.out_strides[0]);
  } else {
    int64_t rem = i, io = g.in_base, oo = g.out_base;
#pragma unroll
    for (int k = 1; k < kMaxCopyRank; ++k) {
      const int a = kMaxCopyRank - k;
      if (a < g.rank) {
        int64_t q = rem / g.dims[a], r = rem - q * g.dims[a];
        io += r * g.in_strides[a];
        oo += r * g.out_strides[a];
        rem = q;
      }
    }
    in_off = io + rem * g.in_strides[0];
    out_off = oo + rem * g.out_strides[0];
  }
}

template <class Word, bool kIndex32>
__global__ void strided_copy_kernel(const Word* __restrict__ in, Word* __restrict__ out,
                                    CopyGeometry g) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel; i += stride) {
    int64_t in_off, out_off;
    copy_offsets<kIndex32>(g, i, in_off, out_off);
    out[out_off] = in[in_off];
  }
}

constexpr int kTile = 32;       // tile side along axis k, and the warp's width along the inner one
constexpr int kTileInner = 64;  // tile side along the inner axis: 8 loads in flight per thread
constexpr int kTileRows = 8;    // blockDim (kTile, kTileRows)

// The word offsets of batch index b: b split over the axes other than k and
// the inner one, innermost first.
template <bool kIndex32>
__device__ __forceinline__ void batch_offsets(const CopyGeometry& g, int k, int64_t b,
                                              int64_t& in_off, int64_t& out_off) {
  in_off = g.in_base;
  out_off = g.out_base;
#pragma unroll
  for (int j = 2; j <= kMaxCopyRank; ++j) {
    const int a = kMaxCopyRank - j;  // the inner axis, rank - 1, is never a batch axis
    if (a < g.rank - 1 && a != k) {
      int64_t q = kIndex32 ? int64_t(fast_div(uint32_t(b), g.div[a])) : b / g.dims[a];
      int64_t i = b - q * g.dims[a];
      b = q;
      in_off += i * g.in_strides[a];
      out_off += i * g.out_strides[a];
    }
  }
}

// A copy whose input is contiguous along axis k and whose output is
// contiguous along the inner axis: each block moves a tile of 32 (axis k)
// by 64 (inner axis) through shared memory, reading rows of the input and
// writing rows of the output. blockIdx.x is the tile, blockIdx.y walks the
// batch (the other axes).
template <class U, bool kIndex32>
__global__ void transpose_kernel(const U* __restrict__ in, U* __restrict__ out, CopyGeometry g,
                                 int k, FastDiv tiles_inner, int64_t batch) {
  __shared__ U tile[kTileInner][kTile + 1];  // [inner][k]; +1 spreads the banks
  const int inner = g.rank - 1;
  const int64_t dk = g.dims[k], dl = g.dims[inner];
  const uint32_t tk = fast_div(blockIdx.x, tiles_inner), tl = blockIdx.x - tk * tiles_inner.d;
  const int64_t k0 = int64_t(tk) * kTile, l0 = int64_t(tl) * kTileInner;
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    int64_t in_off, out_off;
    batch_offsets<kIndex32>(g, k, b, in_off, out_off);
    const int64_t kk = k0 + threadIdx.x;  // reading: lanes along k
#pragma unroll
    for (int i = 0; i < kTileInner / kTileRows; ++i) {
      const int y = threadIdx.y + i * kTileRows;
      const int64_t ll = l0 + y;
      if (kk < dk && ll < dl)
        tile[y][threadIdx.x] = in[in_off + kk * g.in_strides[k] + ll * g.in_strides[inner]];
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kTileInner / kTile; ++i) {  // writing: lanes along inner
      const int x = threadIdx.x + i * kTile;
      const int64_t ll = l0 + x;
#pragma unroll
      for (int j = 0; j < kTile / kTileRows; ++j) {
        const int y = threadIdx.y + j * kTileRows;
        const int64_t kr = k0 + y;
        if (kr < dk && ll < dl)
          out[out_off + kr * g.out_strides[k] + ll * g.out_strides[inner]] = tile[x][y];
      }
    }
    __syncthreads();  // the tile is refilled for the next batch index
  }
}

// Calls f(Word{}) with the unsigned type of `bytes` bytes.
template <class F>
cudaError_t by_word(int bytes, F&& f) {
  switch (bytes) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    default: return f(uint4{});
  }
}

cudaError_t launch_transpose(const StridedCopyParams& p, const CopyGeometry& g,
                             cudaStream_t stream) {
  constexpr int64_t kMaxGridY = 65535;
  const int k = p.transpose_axis;
  const int64_t tiles_k = ceil_div(p.dims[k], kTile);
  const int64_t tiles_inner = ceil_div(p.dims[p.rank - 1], kTileInner);
  const int64_t batch = p.numel / (p.dims[k] * p.dims[p.rank - 1]);
  const dim3 grid(unsigned(tiles_k * tiles_inner), unsigned(batch < kMaxGridY ? batch : kMaxGridY));
  const FastDiv div = make_fast_div(tiles_inner);
  auto launch = [&](auto word) {
    using U = decltype(word);
    const U* in = static_cast<const U*>(p.in);
    U* out = static_cast<U*>(p.out);
    if (p.index32)
      transpose_kernel<U, true>
          <<<grid, dim3(kTile, kTileRows), 0, stream>>>(in, out, g, k, div, batch);
    else
      transpose_kernel<U, false>
          <<<grid, dim3(kTile, kTileRows), 0, stream>>>(in, out, g, k, div, batch);
    return cudaGetLastError();
  };
  switch (p.word_bytes) {  // one element per word: the inner axis is not contiguous
    case 1: return launch(uint8_t{});
    case 2: return launch(uint16_t{});
    case 4: return launch(uint32_t{});
    default: return launch(uint64_t{});
  }
}

// ---------------------------------------------------------------------------
// Ids (take, index_add)

__device__ __forceinline__ int64_t load_id(const void* ids, int64_t j, IdKind kind) {
  switch (kind) {
    case IdKind::I32: return static_cast<const int32_t*>(ids)[j];
    case IdKind::I64: return static_cast<const int64_t*>(ids)[j];
    case IdKind::U8: return static_cast<const uint8_t*>(ids)[j];
    default: return static_cast<const uint16_t*>(ids)[j];
  }
}

// ops.def lets a device clamp an id outside [0, n) (the CPU reports it).
__device__ __forceinline__ int64_t clamp_id(int64_t id, int64_t n) {
  return id < 0 ? 0 : (id >= n ? n - 1 : id);
}

// ---------------------------------------------------------------------------
// take: out word i = (p, j, c) reads x word (p, id_j, c).

struct TakeGeometry {
  int64_t n, post, count, total;
  FastDiv post_div, count_div;
};

template <class Word, bool kIndex32>
__global__ void take_kernel(const Word* __restrict__ x, const void* __restrict__ ids,
                            Word* __restrict__ out, TakeGeometry g, IdKind kind) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < g.total; i += stride) {
    int64_t row, c, p, j;
    if constexpr (kIndex32) {
      uint32_t r32 = fast_div(uint32_t(i), g.post_div), p32 = fast_div(r32, g.count_div);
      row = r32;
      c = i - int64_t(r32) * g.post;
      p = p32;
      j = row - int64_t(p32) * g.count;
    } else {
      row = i / g.post;
      c = i - row * g.post;
      p = row / g.count;
      j = row - p * g.count;
    }
    int64_t id = clamp_id(load_id(ids, j, kind), g.n);
    out[i] = x[(p * g.n + id) * g.post + c];
  }
}

// ---------------------------------------------------------------------------
// index_add. The (id, position) pairs are sorted by id (stable, so each id's
// positions stay increasing) and cut into chunks of kChunk sorted entries.
// A block per chunk sums each run of equal ids in order: a run that is a
// whole id (it neither continues from the previous chunk nor into the next)
// is written to its output row; the first and last runs of a chunk that do
// continue leave partial sums, which a block per id spanning chunks adds in
// chunk order. Ids of many rows are thus summed by many blocks, and every
// sum has a fixed order. Rows no id hits keep the zeros of a memset.

constexpr int64_t kChunk = 32;
constexpr int kBatch = 8;  // rows of g loaded before they are added, to keep loads in flight

constexpr size_t add_bytes(AddKind k) {
  switch (k) {
    case AddKind::F64:
    case AddKind::I64: return 8;
    case AddKind::U8: return 1;
    case AddKind::U16: return 2;
    default: return 4;
  }
}

size_t align256(size_t bytes) {
  return (bytes + 255) & ~size_t(255);
}

int64_t chunks_of(const IndexAddParams& p) {
  return ceil_div(p.count, kChunk);
}

// The scratch: four u32 arrays of `count` (keys and positions, before and
// after the sort), then two partial rows (head, tail) per (pre, chunk).
struct IndexAddScratch {
  uint32_t *keys_in, *keys_out, *order_in, *order_out;
  void* partials;
  size_t total;
};

IndexAddScratch index_add_layout(const IndexAddParams& p) {
  char* base = static_cast<char*>(p.scratch);
  size_t at = 0;
  auto carve = [&](size_t bytes) {
    void* q = base ? base + at : nullptr;
    at += align256(bytes);
    return q;
  };
  const size_t list = size_t(p.count) * sizeof(uint32_t);
  IndexAddScratch s;
  s.keys_in = static_cast<uint32_t*>(carve(list));
  s.keys_out = static_cast<uint32_t*>(carve(list));
  s.order_in = static_cast<uint32_t*>(carve(list));
  s.order_out = static_cast<uint32_t*>(carve(list));
  s.partials = carve(size_t(2 * p.pre * chunks_of(p) * p.post) * add_bytes(p.add_kind));
  s.total = at;
  return s;
}

// Bits of the largest key, n - 1 (at least one).
int key_bits(int64_t n) {
  int bits = 1;
  while (bits < 32 && (uint64_t(1) << bits) < uint64_t(n)) ++bits;
  return bits;
}

__global__ void make_keys_kernel(const void* __restrict__ ids, IdKind kind, int64_t count,
                                 int64_t n, uint32_t* __restrict__ keys,
                                 uint32_t* __restrict__ order) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < count; j += stride) {
    keys[j] = uint32_t(clamp_id(load_id(ids, j, kind), n));
    order[j] = uint32_t(j);
  }
}

template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// The IR's addition (elementwise.h): floats round once per add; integers
// wrap as two's complement.
__device__ __forceinline__ float add(float a, float b) {
  return a + b;
}
__device__ __forceinline__ double add(double a, double b) {
  return a + b;
}
__device__ __forceinline__ int32_t add(int32_t a, int32_t b) {
  return int32_t(uint32_t(a) + uint32_t(b));
}
__device__ __forceinline__ int64_t add(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) + uint64_t(b));
}
__device__ __forceinline__ uint8_t add(uint8_t a, uint8_t b) {
  return uint8_t(a + b);
}
__device__ __forceinline__ uint16_t add(uint16_t a, uint16_t b) {
  return uint16_t(a + b);
}

// acc + rows[index(0)] + rows[index(1)] + ... + rows[index(m-1)], in that
// order, loading kBatch rows before adding them.
template <class T, int V, class Index>
__device__ __forceinline__ Pack<T, V> sum_rows(Pack<T, V> acc, const Pack<T, V>* rows, int64_t m,
                                               Index index) {
  for (int64_t b = 0; b < m; b += kBatch) {
    Pack<T, V> x[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
      if (b + u < m) x[u] = rows[index(b + u)];
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
      if (b + u < m)
#pragma unroll
        for (int v = 0; v < V; ++v) acc.v[v] = add(acc.v[v], x[u].v[v]);
  }
  return acc;
}

template <class T, int V>
__device__ __forceinline__ Pack<T, V> zero_pack() {
  Pack<T, V> z;
#pragma unroll
  for (int v = 0; v < V; ++v) z.v[v] = T(0);
  return z;
}

// Block (p, q) sums the runs of chunk q of slice p of g [pre, count, post];
// threads walk the row's packs of V elements. Partials: [pre, chunks, 2,
// packs], slot 0 the run continuing from the previous chunk (also when it
// continues into the next), slot 1 the run continuing into the next.
template <class T, int V>
__global__ void chunk_sums_kernel(const Pack<T, V>* __restrict__ g, Pack<T, V>* __restrict__ out,
                                  Pack<T, V>* __restrict__ partials,
                                  const uint32_t* __restrict__ keys,
                                  const uint32_t* __restrict__ order, int64_t pre, int64_t n,
                                  int64_t count, int64_t packs, int64_t chunks) {
  for (int64_t pq = blockIdx.x; pq < pre * chunks; pq += gridDim.x) {
    const int64_t p = pq / chunks, q = pq - p * chunks;
    const int64_t e0 = q * kChunk, e1 = e0 + kChunk < count ? e0 + kChunk : count;
    const bool from_previous = e0 > 0 && keys[e0 - 1] == keys[e0];
    const bool into_next = e1 < count && keys[e1] == keys[e1 - 1];
    const Pack<T, V>* g_rows = g + p * count * packs;
    // A run [start, end) of one key is done: to its row, or a partial.
    auto finish = [&](int64_t start, int64_t end, uint32_t key, int64_t c, Pack<T, V> acc) {
      if (start == e0 && from_previous)
        partials[(pq * 2 + 0) * packs + c] = acc;
      else if (end == e1 && into_next)
        partials[(pq * 2 + 1) * packs + c] = acc;
      else
        out[(p * n + key) * packs + c] = acc;
    };
    for (int64_t c = threadIdx.x; c < packs; c += blockDim.x) {
      // The chunk's rows are loaded kBatch at a time whatever its runs, so
      // short runs keep loads in flight too; they are added in order.
      Pack<T, V> acc = zero_pack<T, V>();
      uint32_t key = keys[e0];
      int64_t start = e0;
      for (int64_t b = e0; b < e1; b += kBatch) {
        Pack<T, V> x[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u)
          if (b + u < e1) x[u] = g_rows[int64_t(order[b + u]) * packs + c];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          if (b + u >= e1) break;
          if (const uint32_t k = keys[b + u]; k != key) {
            finish(start, b + u, key, c, acc);
            acc = zero_pack<T, V>();
            key = k;
            start = b + u;
          }
#pragma unroll
          for (int v = 0; v < V; ++v) acc.v[v] = add(acc.v[v], x[u].v[v]);
        }
      }
      finish(start, e1, key, c, acc);
    }
  }
}

// Block (p, boundary q*kChunk) finishes the id that crosses the boundary
// first there: chunk q-1's tail partial, then the head partials of chunks
// q, q+1, ... as far as the id reaches, added in that order.
template <class T, int V>
__global__ void combine_kernel(Pack<T, V>* __restrict__ out,
                               const Pack<T, V>* __restrict__ partials,
                               const uint32_t* __restrict__ keys, int64_t pre, int64_t n,
                               int64_t count, int64_t packs, int64_t chunks) {
  const int64_t boundaries = chunks - 1;
  for (int64_t pb = blockIdx.x; pb < pre * boundaries; pb += gridDim.x) {
    const int64_t p = pb / boundaries, q = pb - p * boundaries + 1, at = q * kChunk;
    const uint32_t key = keys[at - 1];
    if (keys[at] != key || (q >= 2 && keys[at - kChunk - 1] == key)) continue;
    // The last chunk the id reaches: the chunks from q on that start with
    // the key (a prefix of them, the keys being sorted), by bisection.
    int64_t last = q, above = chunks - 1;
    while (last < above) {
      const int64_t mid = (last + above + 1) / 2;
      if (keys[mid * kChunk] == key)
        last = mid;
      else
        above = mid - 1;
    }
    const Pack<T, V>* chunk_partials = partials + p * chunks * 2 * packs;
    for (int64_t c = threadIdx.x; c < packs; c += blockDim.x) {
      Pack<T, V> acc = chunk_partials[((q - 1) * 2 + 1) * packs + c];
      acc = sum_rows(acc, chunk_partials + c, last - q + 1,
                     [&](int64_t i) { return (q + i) * 2 * packs; });
      out[(p * n + key) * packs + c] = acc;
    }
  }
}

template <class T>
cudaError_t launch_index_add_sums(const IndexAddParams& p, const IndexAddScratch& s,
                                  cudaStream_t stream) {
  constexpr int kVec = 16 / sizeof(T);
  const bool vector = p.post % kVec == 0 && reinterpret_cast<uintptr_t>(p.g) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(p.out) % 16 == 0;
  auto launch = [&](auto pack) {
    using P = decltype(pack);
    const int64_t packs = p.post / int64_t(sizeof(P) / sizeof(T)), chunks = chunks_of(p);
    const int threads = int(packs >= kThreads ? kThreads : ceil_div(packs, 32) * 32);
    const P* g = static_cast<const P*>(p.g);
    P* out = static_cast<P*>(p.out);
    P* partials = static_cast<P*>(s.partials);
    chunk_sums_kernel<<<grid_for(p.pre * chunks, 1, 2 * p.max_blocks), threads, 0, stream>>>(
        g, out, partials, s.keys_out, s.order_out, p.pre, p.n, p.count, packs, chunks);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || chunks == 1) return e;
    combine_kernel<<<grid_for(p.pre * (chunks - 1), 1, 2 * p.max_blocks), threads, 0, stream>>>(
        out, partials, s.keys_out, p.pre, p.n, p.count, packs, chunks);
    return cudaGetLastError();
  };
  return vector ? launch(Pack<T, kVec>{}) : launch(Pack<T, 1>{});
}

}  // namespace

cudaError_t launch_strided_copy(const StridedCopyParams& p, cudaStream_t stream) {
  CopyGeometry g = copy_geometry(p);
  if (p.transpose_axis >= 0) return launch_transpose(p, g, stream);
  int grid = grid_for(p.numel, kThreads, p.max_blocks);
  return by_word(p.word_bytes, [&](auto word) {
    using W = decltype(word);
    const W* in = static_cast<const W*>(p.in);
    W* out = static_cast<W*>(p.out);
    if (p.index32)
      strided_copy_kernel<W, true><<<grid, kThreads, 0, stream>>>(in, out, g);
    else
      strided_copy_kernel<W, false><<<grid, kThreads, 0, stream>>>(in, out, g);
    return cudaGetLastError();
  });
}

cudaError_t launch_take(const TakeParams& p, cudaStream_t stream) {
  TakeGeometry g{p.n,
                 p.post,
                 p.count,
                 p.pre * p.count * p.post,
                 make_fast_div(p.post),
                 make_fast_div(p.count)};
  int grid = grid_for(g.total, kThreads, p.max_blocks);
  return by_word(p.word_bytes, [&](auto word) {
    using W = decltype(word);
    const W* x = static_cast<const W*>(p.x);
    W* out = static_cast<W*>(p.out);
    if (p.index32)
      take_kernel<W, true><<<grid, kThreads, 0, stream>>>(x, p.ids, out, g, p.id_kind);
    else
      take_kernel<W, false><<<grid, kThreads, 0, stream>>>(x, p.ids, out, g, p.id_kind);
    return cudaGetLastError();
  });
}

size_t index_add_scratch_bytes(const IndexAddParams& p) {
  return p.count == 0 ? 0 : index_add_layout(p).total;
}

cudaError_t index_add_sort_bytes(const IndexAddParams& p, size_t* bytes) {
  *bytes = 0;
  if (p.count == 0) return cudaSuccess;
  return cub::DeviceRadixSort::SortPairs(
      nullptr, *bytes, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
      static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr), int(p.count), 0,
      key_bits(p.n));
}

cudaError_t launch_index_add(const IndexAddParams& p, cudaStream_t stream) {
  cudaError_t e =
      cudaMemsetAsync(p.out, 0, size_t(p.pre * p.n * p.post) * add_bytes(p.add_kind), stream);
  if (e != cudaSuccess || p.count == 0) return e;
  const IndexAddScratch s = index_add_layout(p);
  make_keys_kernel<<<grid_for(p.count, kThreads, p.max_blocks), kThreads, 0, stream>>>(
      p.ids, p.id_kind, p.count, p.n, s.keys_in, s.order_in);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  size_t temp_bytes = p.sort_temp_bytes;
  e = cub::DeviceRadixSort::SortPairs(p.sort_temp, temp_bytes, s.keys_in, s.keys_out, s.order_in,
                                      s.order_out, int(p.count), 0, key_bits(p.n), stream);
  if (e != cudaSuccess) return e;
  switch (p.add_kind) {
    case AddKind::F32: return launch_index_add_sums<float>(p, s, stream);
    case AddKind::F64: return launch_index_add_sums<double>(p, s, stream);
    case AddKind::I32: return launch_index_add_sums<int32_t>(p, s, stream);
    case AddKind::I64: return launch_index_add_sums<int64_t>(p, s, stream);
    case AddKind::U8: return launch_index_add_sums<uint8_t>(p, s, stream);
    case AddKind::U16: return launch_index_add_sums<uint16_t>(p, s, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace sexpgpu::cuda
