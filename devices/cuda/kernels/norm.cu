// layer_norm, rms_norm and layer_norm_grad (with respect to x) over the
// last axis, behind kernels_nn.cpp.
//
// Rows of up to kNnRegisterRowLimit elements are held in registers, in any
// storage mix of nn_rows.cuh: GPT-2's 768 get a warp per row, 24 elements a
// lane in 16-byte loads, so a row is read once and every reduction is
// shuffles alone; resident warps walk the rows, loading the next while
// reducing the current. Longer rows get a block each and are read again in each
// pass, in f32 or f64 storage only. Sums are fixed-order trees, so results
// repeat bit for bit.
//
// Linked to its layer_norm_param_grad (KernelRequest::link), an f32
// register-row layer_norm_grad also adds up, per thread, the columns it
// holds of g xhat and g over the rows it walks, and each block leaves its
// [2, dim] partial sums in the link for the param grad's last kernel
// (norm_param.cu), so x and g are read once for both gradients.
#include <cuda_runtime.h>

#include <cstdint>

#include "nn_launch.h"
#include "nn_rows.cuh"

namespace sexpgpu::cuda {
namespace {

using namespace nn;

constexpr int kBatch = 8;  // loads in flight per thread of a block row

// ---------------------------------------------------------------------------
// Register rows walked by resident blocks
//
// A thread holds kChunks chunks of a row (a compile-time count: GPT-2's 768
// takes 3 a lane, and no registers go to chunks past the row) as stored, so
// half storage takes half the registers, widened where used (exactly). A
// block's groups take rows step = gridDim.x * blockDim.y apart, every group
// of a block the same number of steps (row_reduce may synchronise the
// block). Where both fit in registers, the next row's loads are issued
// before the current row is reduced, so a warp always has a row in flight;
// such kernels keep two blocks resident and the grid is sized to them.
// Otherwise every block takes one step, as many blocks as groups of rows.
// Which thread sums which element, and in which order, depends only on the
// row length and the group size: the prefetch and the storage dtype change
// nothing in the results.

template <int N>
struct ChunkCount {
  static constexpr int value = N;
};

// Calls f with ChunkCount<chunks>, 1 <= chunks <= kNnRowChunks.
template <class F>
cudaError_t with_chunk_count(int chunks, F&& f) {
  static_assert(kNnRowChunks == 4, "one case per chunk count");
  switch (chunks) {
    case 1: return f(ChunkCount<1>());
    case 2: return f(ChunkCount<2>());
    case 3: return f(ChunkCount<3>());
    case 4: return f(ChunkCount<4>());
  }
  return cudaErrorInvalidValue;
}

// Element i of words holding values stored as T, widened exactly.
__device__ inline float widened(float, const uint32_t* w, int i) {
  return __uint_as_float(w[i]);
}
__device__ inline double widened(double, const uint32_t* w, int i) {
  return __hiloint2double(int(w[2 * i + 1]), int(w[2 * i]));
}
// Exactly __bfloat162float: the 16 bits become the high half of an f32.
__device__ inline float widened(__nv_bfloat16, const uint32_t* w, int i) {
  return __uint_as_float(i % 2 ? w[i / 2] & 0xffff0000u : w[i / 2] << 16);
}
__device__ inline float widened(__half, const uint32_t* w, int i) {
  return __half2float(__ushort_as_half((unsigned short)(i % 2 ? w[i / 2] >> 16 : w[i / 2])));
}

// A thread's chunks of a row as stored, in 32-bit words (two half values
// a word, as loaded: a 16-bit value alone would take a register of its own).
template <class T, int kChunks>
struct HeldRow {
  static constexpr int kWords = kChunks * kChunk * int(sizeof(T)) / 4;
  uint32_t w[kWords];
  __device__ Compute<T> operator[](int i) const { return widened(T(), w, i); }
};

// Registers a prefetching kernel may give to its rows (current and next)
// and still keep kPrefetchBlocks blocks of kNnBlock threads resident
// without spilling; f64 and long f32 rows do without the prefetch.
constexpr int kPrefetchRowRegisters = 72;
constexpr int kPrefetchBlocks = 2;
constexpr int kDefaultSmCount = 132;  // an H200's, where the context did not say

template <class... T>
constexpr int held_registers(int chunks) {
  return ((chunks * HeldRow<T, 1>::kWords) + ...);
}

// Whether a kernel prefetches: its early operands held twice (the row and
// the next) and its late ones once fit in kPrefetchRowRegisters.
template <int kChunks, class Early, class... Late>
constexpr bool prefetches() {
  return 2 * held_registers<Early>(kChunks) + (0 + ... + held_registers<Late>(kChunks)) <=
         kPrefetchRowRegisters;
}

// Registers a linked kernel may give to its row and its column sums (two
// per held element) and still keep kPrefetchBlocks blocks resident without
// spilling. The sums take the registers a prefetched row would, so a
// linked kernel never prefetches; it walks its rows in kPrefetchBlocks
// blocks a multiprocessor all the same, so that its partials are few.
constexpr int kLinkRowRegisters = 96;

// Whether an f32 kernel holding `chunks` chunks of x and g, stored in
// x_bytes and g_bytes a value, can link. g counts twice: its gh products
// are live in the passes after the statistics too. Calibrated with
// -Xptxas -v for sm_90a: every mix within the budget compiles without
// spills, every one past it spills.
constexpr bool links(int chunks, int x_bytes, int g_bytes) {
  return chunks * kChunk * (x_bytes + 2 * g_bytes) / 4 + 2 * chunks * kChunk <= kLinkRowRegisters;
}

template <int kChunks, class X, class G>
constexpr bool links() {
  return Same<Compute<X>, float>::value && links(kChunks, int(sizeof(X)), int(sizeof(G)));
}

// chunk_start(i) of a register row, in 32 bits.
__device__ inline int held_start(int i) {
  return int(threadIdx.x + i * blockDim.x) * kChunk;
}

// Whether global row `row` exists; its elements from row_start, row 0's
// where it does not (nothing is read or written there).
struct WalkRow {
  int64_t row;
  bool live;
  // dim <= kNnRegisterRowLimit: offsets within a row fit an int.
  __device__ int length(int64_t dim) const { return live ? int(dim) : 0; }
  __device__ int64_t start(int64_t dim) const { return live ? row * dim : 0; }
};
__device__ inline WalkRow walk_row(int64_t row, int64_t rows) {
  return {row, row < rows};
}

// This thread's chunks of `r`, 0 past the row, in 16-byte loads where the
// row is aligned.
template <class T, int kChunks>
__device__ void load_held(const T* x, WalkRow r, int64_t dim, HeldRow<T, kChunks>& h) {
  constexpr int kVectors = int(sizeof(T)) * kChunk / 16;  // per chunk
  const int n = r.length(dim);
  const T* row = x + r.start(dim);
  const bool aligned = aligned16(row);
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int k = held_start(i);
    uint4 raw[kVectors];
    if (aligned && k + kChunk <= n) {
      const uint4* src = reinterpret_cast<const uint4*>(row + k);
#pragma unroll
      for (int q = 0; q < kVectors; ++q) raw[q] = src[q];
    } else {
      T e[kChunk];
#pragma unroll
      for (int j = 0; j < kChunk; ++j) e[j] = k + j < n ? row[k + j] : Store<T>::from(0);
      memcpy(raw, e, sizeof(e));
    }
    memcpy(h.w + i * kVectors * 4, raw, sizeof(raw));
  }
}

// Calls body(r, early, late) on each row r of this group's walk, with its
// operands loaded: the early ones (load_early) a row ahead when kPrefetch,
// so that a row's loads are in flight while the row before it is reduced;
// the late ones (load_late) as the row begins, to be used only after its
// first reductions.
template <bool kPrefetch, class Early, class Late, class LoadEarly, class LoadLate, class Body>
__device__ void walk_rows(int64_t rows, LoadEarly&& load_early, LoadLate&& load_late, Body&& body) {
  const int64_t step = int64_t(gridDim.x) * blockDim.y;
  int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  Early next;
  if (kPrefetch) load_early(walk_row(row, rows), next);
  for (int64_t base = int64_t(blockIdx.x) * blockDim.y; base < rows; base += step, row += step) {
    Early early;
    Late late;
    if (kPrefetch) {
      early = next;
      if (base + step < rows) load_early(walk_row(row + step, rows), next);
    } else {
      load_early(walk_row(row, rows), early);
    }
    load_late(walk_row(row, rows), late);
    body(walk_row(row, rows), early, late);
  }
}

// The late operands of a kernel that has none.
struct NoOperands {};

// p, as far as the compiler knows, a new pointer: loads through it stay in
// the row loop instead of being hoisted out of it, where holding a
// parameter row for every row would cost the registers of the prefetch.
template <class T>
__device__ const T* reloaded(const T* p) {
  asm volatile("" : "+l"(p));
  return p;
}

// The sum over this thread's held elements that lie within the row of
// f(i), i the held index, in index order.
template <int kChunks, class C, class F>
__device__ C sum_within(int n, F&& f) {
  C s = 0;
#pragma unroll
  for (int i = 0; i < kChunks * kChunk; ++i)
    if (held_start(i / kChunk) + i % kChunk < n) s += f(i);
  return s;
}

// ---------------------------------------------------------------------------
// layer_norm / rms_norm: y = (x - mean) / sqrt(var + eps) * weight + bias
// with the biased variance (two passes); rms_norm takes mean 0, no bias.

template <class T, bool kLayer>
__device__ T normalised(T x, T mean, T inv, T weight, T bias) {
  T y = (x - mean) * inv * weight;
  return kLayer ? y + bias : y;
}

template <class X, class Out, bool kLayer, int kChunks>
__global__ void __launch_bounds__(kNnBlock, prefetches<kChunks, X>() ? kPrefetchBlocks : 1)
    norm_register_rows(const X* __restrict__ x, const Compute<X>* __restrict__ weight,
                       const Compute<X>* __restrict__ bias, Out* __restrict__ out, int64_t rows,
                       int64_t dim, Compute<X> eps) {
  using C = Compute<X>;
  using Rows = HeldRow<X, kChunks>;
  const bool params_aligned = aligned16(weight) && aligned16(bias);
  auto load = [&](WalkRow r, Rows& h) { load_held(x, r, dim, h); };
  auto body = [&](WalkRow r, const Rows& v, NoOperands) {
    const int n = r.length(dim);
    C mean = 0;
    if (kLayer) {
      C sum = 0;
#pragma unroll
      for (int i = 0; i < kChunks * kChunk; ++i) sum += v[i];  // 0 past the row
      mean = row_reduce<Sum<C>>(sum) / C(dim);
    }
    const C squares =
        sum_within<kChunks, C>(n, [&](int i) { return (v[i] - mean) * (v[i] - mean); });
    const C inv = C(1) / sqrt_of(row_reduce<Sum<C>>(squares) / C(dim) + eps);
    Out* o = out + r.start(dim);
    const bool out_aligned = aligned16(o);
    const C* row_weight = reloaded(weight);
    const C* row_bias = reloaded(bias);
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      const int k = held_start(i);
      if (k >= n) break;
      C w[kChunk], b[kChunk], y[kChunk];
      load_chunk(row_weight, k, n, params_aligned, C(0), w);
      if (kLayer) load_chunk(row_bias, k, n, params_aligned, C(0), b);
#pragma unroll
      for (int j = 0; j < kChunk; ++j)
        y[j] = normalised<C, kLayer>(v[i * kChunk + j], mean, inv, w[j], kLayer ? b[j] : C(0));
      store_chunk(o, k, n, out_aligned, y);
    }
  };
  walk_rows<prefetches<kChunks, X>(), Rows, NoOperands>(
      rows, load, [](WalkRow, NoOperands&) {}, body);
}

// Calls f(x[k]) for k = first, first + step, ... below n, in that order,
// loading kBatch elements before using them.
template <class T, class F>
__device__ void for_each_batched(const T* x, int64_t n, int64_t first, int64_t step, F&& f) {
  for (int64_t k0 = first; k0 < n; k0 += kBatch * step) {
    T v[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      int64_t k = k0 + j * step;
      v[j] = k < n ? x[k] : T(0);
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j)
      if (k0 + j * step < n) f(v[j]);
  }
}

template <class T, bool kLayer>
__global__ void __launch_bounds__(kNnBlock)
    norm_block_rows(const T* __restrict__ x, const T* __restrict__ weight,
                    const T* __restrict__ bias, T* __restrict__ out, int64_t dim, T eps) {
  const T* xr = x + int64_t(blockIdx.x) * dim;
  T mean = 0;
  if (kLayer) {
    T sum = 0;
    for_each_batched(xr, dim, threadIdx.x, blockDim.x, [&](T v) { sum += v; });
    mean = row_reduce<Sum<T>>(sum) / T(dim);
  }
  T squares = 0;
  for_each_batched(xr, dim, threadIdx.x, blockDim.x,
                   [&](T v) { squares += (v - mean) * (v - mean); });
  const T inv = T(1) / sqrt_of(row_reduce<Sum<T>>(squares) / T(dim) + eps);
  T* o = out + int64_t(blockIdx.x) * dim;
  for (int64_t k = threadIdx.x; k < dim; k += blockDim.x)
    o[k] = normalised<T, kLayer>(xr[k], mean, inv, weight[k], kLayer ? bias[k] : T(0));
}

// ---------------------------------------------------------------------------
// layer_norm_grad: dx = rstd (gh - mean(gh) - xhat mean(gh xhat)) with
// gh = g w, the statistics recomputed from x as norm_*_rows does.

template <class T>
__device__ T layer_norm_dx(T x, T gh, T mean, T rstd, T mean_gh, T mean_ghx) {
  return rstd * (gh - mean_gh - (x - mean) * rstd * mean_ghx);
}

// A linked kernel's sums over its rows of g xhat and g, for the columns of
// its thread's held elements: value e of each kind at g_xhat[e], g[e].
template <int kChunks>
struct ColumnSums {
  static constexpr int kHeld = kChunks * kChunk;
  float v[2 * kHeld];
  __device__ float& g_xhat(int e) { return v[e]; }
  __device__ float& g(int e) { return v[kHeld + e]; }
};

// Adds the row's g xhat and g to the sums, xhat = (x - mean) rstd as
// layer_norm_param_grad computes it (norm_param.cu); elements past the row
// (n elements, 0 where the row does not exist) add nothing.
template <int kChunks, class XRow, class GRow>
__device__ void add_columns(const XRow& xr, const GRow& gr, float mean, float rstd, int n,
                            ColumnSums<kChunks>& sums) {
#pragma unroll
  for (int e = 0; e < kChunks * kChunk; ++e)
    if (held_start(e / kChunk) + e % kChunk < n) {
      const float gv = gr[e];
      sums.g_xhat(e) += gv * ((xr[e] - mean) * rstd);
      sums.g(e) += gv;
    }
}

// The block's sums in its group 0: groups [h, 2h) hand theirs to groups
// [0, h) for h = blockDim.y / 2, ..., 1, a fixed tree through shared
// memory laid out value-major, so a warp's accesses are consecutive.
template <int kChunks>
__device__ void block_column_sums(ColumnSums<kChunks>& sums) {
  constexpr int kValues = 2 * kChunks * kChunk, kSlots = kNnBlock / 2;
  __shared__ float shared[kValues * kSlots];
  for (int h = int(blockDim.y) / 2; h > 0; h /= 2) {
    const int y = int(threadIdx.y);
    if (y >= h && y < 2 * h) {
      float* to = shared + (y - h) * int(blockDim.x) + threadIdx.x;
#pragma unroll
      for (int v = 0; v < kValues; ++v) to[v * kSlots] = sums.v[v];
    }
    __syncthreads();
    if (y < h) {
      const float* from = shared + y * int(blockDim.x) + threadIdx.x;
#pragma unroll
      for (int v = 0; v < kValues; ++v) sums.v[v] += from[v * kSlots];
    }
    __syncthreads();
  }
}

// Block blockIdx.x's partial, [2, dim] at partials + blockIdx.x * 2 * dim:
// the sums of g xhat, then of g.
template <int kChunks>
__device__ void store_partial(ColumnSums<kChunks>& sums, int64_t dim, float* partials) {
  block_column_sums(sums);
  if (threadIdx.y != 0) return;
  float* p = partials + int64_t(blockIdx.x) * 2 * dim;
  const bool aligned = aligned16(p) && aligned16(p + dim);
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int k = held_start(i);
    if (k >= dim) break;
    store_chunk(p, k, dim, aligned, &sums.g_xhat(i * kChunk));
    store_chunk(p + dim, k, dim, aligned, &sums.g(i * kChunk));
  }
}

// kLink: also leaves the block's column sums in partials (store_partial);
// the grid then walks the rows in kPrefetchBlocks blocks a multiprocessor
// without prefetching. The rows' dx are the same bits either way.
template <class X, class G, class Out, int kChunks, bool kLink>
__global__ void __launch_bounds__(kNnBlock,
                                  kLink || prefetches<kChunks, X, G>() ? kPrefetchBlocks : 1)
    layer_norm_grad_register_rows(const X* __restrict__ x, const Compute<X>* __restrict__ weight,
                                  const G* __restrict__ g, Out* __restrict__ out, int64_t rows,
                                  int64_t dim, Compute<X> eps, float* __restrict__ partials) {
  using C = Compute<X>;
  using XRow = HeldRow<X, kChunks>;
  using GRow = HeldRow<G, kChunks>;
  const bool weight_aligned = aligned16(weight);
  ColumnSums<kChunks> sums;
  if constexpr (kLink) {
#pragma unroll
    for (int v = 0; v < 2 * kChunks * kChunk; ++v) sums.v[v] = 0.0f;
  }
  // gh = g w of chunk i, computed again where needed rather than held.
  auto gh_chunk = [&](const GRow& gr, int i, int n, C(&gh)[kChunk]) {
    C w[kChunk];
    load_chunk(reloaded(weight), held_start(i), n, weight_aligned, C(0), w);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) gh[j] = gr[i * kChunk + j] * w[j];
  };
  auto body = [&](WalkRow r, const XRow& xr, const GRow& gr) {
    const int n = r.length(dim);
    C sum = 0;
#pragma unroll
    for (int i = 0; i < kChunks * kChunk; ++i) sum += xr[i];  // 0 past the row
    const C mean = row_reduce<Sum<C>>(sum) / C(dim);
    const C squares =
        sum_within<kChunks, C>(n, [&](int i) { return (xr[i] - mean) * (xr[i] - mean); });
    const C rstd = C(1) / sqrt_of(row_reduce<Sum<C>>(squares) / C(dim) + eps);
    if constexpr (kLink) add_columns(xr, gr, mean, rstd, n, sums);
    C sum_gh = 0, sum_ghx = 0;
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      C gh[kChunk];
      gh_chunk(gr, i, n, gh);
#pragma unroll
      for (int j = 0; j < kChunk; ++j)
        if (held_start(i) + j < n) {
          sum_gh += gh[j];
          sum_ghx += gh[j] * (xr[i * kChunk + j] - mean) * rstd;
        }
    }
    const C mean_gh = row_reduce<Sum<C>>(sum_gh) / C(dim);
    const C mean_ghx = row_reduce<Sum<C>>(sum_ghx) / C(dim);
    Out* o = out + r.start(dim);
    const bool out_aligned = aligned16(o);
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      const int k = held_start(i);
      if (k >= n) break;
      C gh[kChunk], y[kChunk];
      gh_chunk(gr, i, n, gh);
#pragma unroll
      for (int j = 0; j < kChunk; ++j)
        y[j] = layer_norm_dx(xr[i * kChunk + j], gh[j], mean, rstd, mean_gh, mean_ghx);
      store_chunk(o, k, n, out_aligned, y);
    }
  };
  walk_rows<!kLink && prefetches<kChunks, X, G>(), XRow, GRow>(
      rows, [&](WalkRow r, XRow& h) { load_held(x, r, dim, h); },
      [&](WalkRow r, GRow& h) { load_held(g, r, dim, h); }, body);
  if constexpr (kLink) store_partial(sums, dim, partials);
}

// A block per row longer than a register row: x, g and the weight are read
// again in each pass.
template <class T>
__global__ void __launch_bounds__(kNnBlock)
    layer_norm_grad_block_rows(const T* __restrict__ x, const T* __restrict__ weight,
                               const T* __restrict__ g, T* __restrict__ out, int64_t dim, T eps) {
  const T* xr = x + int64_t(blockIdx.x) * dim;
  const T* gr = g + int64_t(blockIdx.x) * dim;
  T sum = 0;
  for (int64_t k = threadIdx.x; k < dim; k += blockDim.x) sum += xr[k];
  const T mean = row_reduce<Sum<T>>(sum) / T(dim);
  T squares = 0;
  for (int64_t k = threadIdx.x; k < dim; k += blockDim.x)
    squares += (xr[k] - mean) * (xr[k] - mean);
  const T rstd = T(1) / sqrt_of(row_reduce<Sum<T>>(squares) / T(dim) + eps);
  T sum_gh = 0, sum_ghx = 0;
  for (int64_t k = threadIdx.x; k < dim; k += blockDim.x) {
    const T gh = gr[k] * weight[k];
    sum_gh += gh;
    sum_ghx += gh * (xr[k] - mean) * rstd;
  }
  const T mean_gh = row_reduce<Sum<T>>(sum_gh) / T(dim);
  const T mean_ghx = row_reduce<Sum<T>>(sum_ghx) / T(dim);
  T* o = out + int64_t(blockIdx.x) * dim;
  for (int64_t k = threadIdx.x; k < dim; k += blockDim.x)
    o[k] = layer_norm_dx(xr[k], gr[k] * weight[k], mean, rstd, mean_gh, mean_ghx);
}

// ---------------------------------------------------------------------------
// Launching

bool register_rows(int64_t dim) {
  return dim <= kNnRegisterRowLimit;
}

// The chunks a thread of a register row of dim elements holds, laid out as
// l: 1 to kNnRowChunks.
int held_chunks(int64_t dim, const RowShape& l) {
  const int64_t per_chunk_step = int64_t(l.block.x) * kChunk;
  return int((dim + per_chunk_step - 1) / per_chunk_step);
}

// The grid of a register-row kernel laid out as l: without the prefetch,
// l.grid, a block per l.block.y rows; with it, the fewest blocks that walk
// them in as many steps as kPrefetchBlocks blocks a multiprocessor need, so
// the blocks' walks differ by a step at most.
unsigned walk_blocks(const RowShape& l, bool prefetch, int sm_count) {
  const int64_t needed = int64_t(l.grid.x);
  if (!prefetch) return unsigned(needed);
  const int64_t resident = int64_t(sm_count > 0 ? sm_count : kDefaultSmCount) * kPrefetchBlocks;
  const int64_t steps = (needed + resident - 1) / resident;
  return unsigned((needed + steps - 1) / steps);
}

template <class T, bool kLayer>
cudaError_t norm_wide(const NormParams& p, const void* x, const void* w, const void* b, void* out,
                      cudaStream_t stream) {
  norm_block_rows<T, kLayer><<<unsigned(p.rows), kNnBlock, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(b),
      static_cast<T*>(out), p.dim, T(p.eps));
  return cudaGetLastError();
}

template <bool kLayer>
cudaError_t norm_rows(const NormParams& p, const void* x, const void* w, const void* b, void* out,
                      cudaStream_t stream) {
  if (!register_rows(p.dim)) {
    if (p.x != p.out) return cudaErrorInvalidValue;
    if (p.x == Storage::F64) return norm_wide<double, kLayer>(p, x, w, b, out, stream);
    if (p.x == Storage::F32) return norm_wide<float, kLayer>(p, x, w, b, out, stream);
    return cudaErrorInvalidValue;
  }
  return with_storage(p.x, [&](auto x_type) {
    return with_storage(p.out, [&](auto out_type) {
      using X = decltype(x_type);
      using Out = decltype(out_type);
      using C = Compute<X>;
      if constexpr (!supported_mix<X, Out>()) {
        return cudaErrorInvalidValue;
      } else {
        const RowShape l = register_row_shape(p.rows, p.dim);
        return with_chunk_count(held_chunks(p.dim, l), [&](auto count) {
          constexpr int kChunks = decltype(count)::value;
          const unsigned grid = walk_blocks(l, prefetches<kChunks, X>(), p.sm_count);
          norm_register_rows<X, Out, kLayer, kChunks><<<grid, l.block, 0, stream>>>(
              static_cast<const X*>(x), static_cast<const C*>(w), static_cast<const C*>(b),
              static_cast<Out*>(out), p.rows, p.dim, C(p.eps));
          return cudaGetLastError();
        });
      }
    });
  });
}

template <class T>
cudaError_t layer_norm_grad_wide(const LayerNormGradParams& p, const void* x, const void* w,
                                 const void* g, void* out, cudaStream_t stream) {
  layer_norm_grad_block_rows<T><<<unsigned(p.rows), kNnBlock, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(g),
      static_cast<T*>(out), p.dim, T(p.eps));
  return cudaGetLastError();
}

// A register-row layer_norm_grad laid out as l; kLink: leaving its
// partials in `partials`, its grid as layer_norm_grad_link_parts says.
template <class X, class G, class Out, int kChunks, bool kLink>
cudaError_t layer_norm_grad_rows(const LayerNormGradParams& p, const RowShape& l, const void* x,
                                 const void* weight, const void* g, void* out, float* partials,
                                 cudaStream_t stream) {
  using C = Compute<X>;
  const unsigned grid = walk_blocks(l, kLink || prefetches<kChunks, X, G>(), p.sm_count);
  layer_norm_grad_register_rows<X, G, Out, kChunks, kLink><<<grid, l.block, 0, stream>>>(
      static_cast<const X*>(x), static_cast<const C*>(weight), static_cast<const G*>(g),
      static_cast<Out*>(out), p.rows, p.dim, C(p.eps), partials);
  return cudaGetLastError();
}

// The bytes of a value stored as s.
int stored_bytes(Storage s) {
  int bytes = 0;
  with_storage(s, [&](auto type) {
    bytes = int(sizeof(type));
    return cudaSuccess;
  });
  return bytes;
}

}  // namespace

cudaError_t launch_norm(const NormParams& p, const void* x, const void* weight, const void* bias,
                        void* out, cudaStream_t stream) {
  return p.layer ? norm_rows<true>(p, x, weight, bias, out, stream)
                 : norm_rows<false>(p, x, weight, bias, out, stream);
}

int64_t layer_norm_grad_link_parts(int64_t rows, int64_t dim, Storage x, Storage g, int sm_count) {
  const bool mixed_halves =
      (x == Storage::BF16 && g == Storage::F16) || (x == Storage::F16 && g == Storage::BF16);
  if (rows <= 0 || dim <= 0 || !register_rows(dim) || x == Storage::F64 || g == Storage::F64 ||
      mixed_halves)
    return 0;
  const RowShape l = register_row_shape(rows, dim);
  if (!links(held_chunks(dim, l), stored_bytes(x), stored_bytes(g))) return 0;
  return walk_blocks(l, true, sm_count);
}

cudaError_t launch_layer_norm_grad(const LayerNormGradParams& p, const void* x, const void* weight,
                                   const void* g, void* out, void* link, cudaStream_t stream) {
  if (!register_rows(p.dim)) {
    if (p.x != p.out || p.g != p.out || link != nullptr) return cudaErrorInvalidValue;
    if (p.x == Storage::F64) return layer_norm_grad_wide<double>(p, x, weight, g, out, stream);
    if (p.x == Storage::F32) return layer_norm_grad_wide<float>(p, x, weight, g, out, stream);
    return cudaErrorInvalidValue;
  }
  return with_storage(p.x, [&](auto x_type) {
    return with_storage(p.g, [&](auto g_type) {
      return with_storage(p.out, [&](auto out_type) {
        using X = decltype(x_type);
        using G = decltype(g_type);
        using Out = decltype(out_type);
        if constexpr (!supported_mix<X, G, Out>()) {
          return cudaErrorInvalidValue;
        } else {
          const RowShape l = register_row_shape(p.rows, p.dim);
          return with_chunk_count(held_chunks(p.dim, l), [&](auto count) {
            constexpr int kChunks = decltype(count)::value;
            if (link == nullptr)
              return layer_norm_grad_rows<X, G, Out, kChunks, false>(p, l, x, weight, g, out,
                                                                     nullptr, stream);
            if constexpr (links<kChunks, X, G>())
              return layer_norm_grad_rows<X, G, Out, kChunks, true>(
                  p, l, x, weight, g, out, static_cast<float*>(link), stream);
            return cudaErrorInvalidValue;
          });
        }
      });
    });
  });
}

}  // namespace sexpgpu::cuda
