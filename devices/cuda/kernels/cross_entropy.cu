// cross_entropy and cross_entropy_grad behind kernels_nn.cpp, with logits
// and the gradient in any storage mix of nn_rows.cuh.
//
// A group of threads streams a row in batches of kBatchChunks chunks per
// thread, keeping the online (maximum, sum of exp) state: the forward reads
// each row once. With half logits a thread issues the loads of its next
// batch before the exps of the current one, so its loads stay in flight
// while it computes (the exps' MUFU work is over half the memory time of
// bf16 logits). The gradient needs that settled state before writing its
// output: it reads it from the link when its forward left it there (one
// read of the row), else computes it with the forward's own code and
// launch shape (a second read), so linked and unlinked gradients have the
// same bits. GPT-2's 50304 logits a row get a block of kNnBlock threads,
// 16 bytes per load.
//
// f32 exps are ex2.approx of (x - m) * log2(e): the MUFU instruction and
// two FP32 ones, instead of expf's range reduction; x - m is exact near
// the maximum, where the values are large, so the error stays within a few
// ulp of each softmax value (a subnormal one flushes to 0).
#include <cuda_runtime.h>

#include <cstdint>

#include "nn_launch.h"
#include "nn_rows.cuh"

namespace sexpgpu::cuda {
namespace {

using namespace nn;

constexpr int kBatchChunks = 4;
constexpr int kBatch = kBatchChunks * kChunk;  // elements of a thread's batch

// Blocks of the streaming kernels resident on a multiprocessor with half
// logits: three, in the 80 registers a thread that allows (the current
// batch, the next one's 16 words in flight and the exps' temporaries);
// 0 (no minimum) for the others.
template <class T>
constexpr int kStreamBlocks = sizeof(T) == 2 ? 3 : 0;

constexpr float kLog2e = 1.4426950408889634f;

__device__ inline float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// exp(v - m) for an element of a row whose maximum is m (finite or 0).
__device__ inline float exp_below(float v, float m) {
  return fast_exp2((v - m) * kLog2e);
}
__device__ inline double exp_below(double v, double m) {
  return exp(v - m);
}

__device__ inline float max_of(float a, float b) {
  return fmaxf(a, b);
}
__device__ inline double max_of(double a, double b) {
  return fmax(a, b);
}

// OnlineSoftmax::absorb (nn_rows.cuh) with its NaN and infinity handling
// but fewer instructions an element: the maximum by fmax (which skips NaN; signed
// zeros give the same exps either way) and the -inf test once a batch: a
// -inf element adds exp_below's 0 below a finite maximum, and while the
// maximum is still -inf every element is -inf (adding 0 against base 0) or
// NaN (adding NaN).
template <int N, class T>
__device__ MaxSum<T> absorb_batch(MaxSum<T> a, const T* v) {
  T m = a.m;
#pragma unroll
  for (int j = 0; j < N; ++j) m = max_of(m, v[j]);
  T s = a.m == m ? a.s : a.s * exp_of(a.m - m);
  const T base = m == -infinity(T(0)) ? T(0) : m;
#pragma unroll
  for (int j = 0; j < N; ++j) s += exp_below(v[j], base);
  return {m, s};
}

// A batch of kBatchChunks chunks as stored, in 16-byte words (half: 16
// registers), as the next batch is held while the current one is used.
template <class T>
struct StoredBatch {
  static constexpr int kVectors = int(sizeof(T)) * kChunk / 16;  // a chunk's
  uint4 q[kBatchChunks * kVectors];
};

// The batch of chunks k0 + b * stride (b < kBatchChunks) of row, `pad` past
// n; a whole chunk of an aligned row in 16-byte loads, as load_chunk.
template <class T>
__device__ void fetch_batch(const T* row, int64_t k0, int64_t stride, int64_t n, bool aligned,
                            T pad, StoredBatch<T>& batch) {
  constexpr int kVectors = StoredBatch<T>::kVectors;
#pragma unroll
  for (int b = 0; b < kBatchChunks; ++b) {
    const int64_t k = k0 + b * stride;
    uint4* q = batch.q + b * kVectors;
    if (aligned && k + kChunk <= n) {
      const uint4* src = reinterpret_cast<const uint4*>(row + k);
#pragma unroll
      for (int i = 0; i < kVectors; ++i) q[i] = src[i];
    } else {
      T e[kChunk];
#pragma unroll
      for (int j = 0; j < kChunk; ++j) e[j] = k + j < n ? row[k + j] : pad;
      memcpy(q, e, sizeof(e));
    }
  }
}

// A stored batch as compute values.
template <class T>
__device__ void widen_batch(const StoredBatch<T>& batch, Compute<T>* v) {
  T e[kBatch];
  memcpy(e, batch.q, sizeof(e));
#pragma unroll
  for (int j = 0; j < kBatch; ++j) v[j] = to_compute(e[j]);
}
// bf16 a word at a time: its 16 bits become the high half of an f32
// (exactly __bfloat162float) by a shift or a mask, one instruction each.
__device__ void widen_batch(const StoredBatch<__nv_bfloat16>& batch, float* v) {
  uint32_t w[kBatch / 2];
  memcpy(w, batch.q, sizeof(w));
#pragma unroll
  for (int i = 0; i < kBatch / 2; ++i) {
    v[2 * i] = __uint_as_float(w[i] << 16);
    v[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

// Calls use(k0, v) for each batch of this thread's chunks of row[0, n) in
// order (thread t: chunks t, t + G, ..., G the group's size; the batch's
// chunk b starts at k0 + b * G * kChunk), v its compute values, `pad` past
// n. Half storage issues the next batch's loads before use(); f32 and f64
// load each batch when used (their batches are twice and four times the
// bytes for the same exps, and two of them would halve the resident
// blocks). Only the order of the loads changes, not the values, so every
// sum keeps its order.
template <class T, class Use>
__device__ void for_each_batch(const T* row, int64_t n, Compute<T> pad, Use&& use) {
  constexpr bool kAhead = sizeof(T) == 2;
  const bool aligned = aligned16(row);
  const T stored_pad = Store<T>::from(pad);
  const int64_t stride = int64_t(blockDim.x) * kChunk, step = kBatchChunks * stride;
  int64_t k0 = int64_t(threadIdx.x) * kChunk;
  StoredBatch<T> next;
  if (kAhead && k0 < n) fetch_batch(row, k0, stride, n, aligned, stored_pad, next);
  for (; k0 < n; k0 += step) {
    StoredBatch<T> batch;
    if (kAhead) {
      batch = next;
      if (k0 + step < n) fetch_batch(row, k0 + step, stride, n, aligned, stored_pad, next);
    } else {
      fetch_batch(row, k0, stride, n, aligned, stored_pad, batch);
    }
    Compute<T> v[kBatch];
    widen_batch(batch, v);
    use(k0, v);
  }
}

// The online softmax state of this thread's chunks of row[0, n), a batch
// at a time.
template <class T>
__device__ MaxSum<Compute<T>> row_state(const T* row, int64_t n) {
  using C = Compute<T>;
  MaxSum<C> a = OnlineSoftmax<C>::identity();
  for_each_batch(row, n, -infinity(C(0)),
                 [&](int64_t, const C* v) { a = absorb_batch<kBatch>(a, v); });
  return a;
}

// The group's row state (every thread of the block calls it). One
// function, not inlined, for the forward and the gradient: the same
// machine code computes the state either way, so the link holds exactly
// what the gradient computes unlinked.
template <class T>
__device__ __noinline__ MaxSum<Compute<T>> row_softmax_state(const T* row, int64_t n) {
  return row_reduce<OnlineSoftmax<Compute<T>>>(row_state(row, n));
}

// Two compute values rounded to a half dtype (each as Store<T>::from), as
// one word: one F2FP instruction rounds and packs both.
__device__ inline uint32_t packed_pair(__nv_bfloat16, float lo, float hi) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
  uint32_t word;
  memcpy(&word, &pair, sizeof(word));
  return word;
}
__device__ inline uint32_t packed_pair(__half, float lo, float hi) {
  const __half2 pair = __floats2half2_rn(lo, hi);
  uint32_t word;
  memcpy(&word, &pair, sizeof(word));
  return word;
}

// store_chunk with the same bits, but a whole chunk of an aligned row goes
// out in 16-byte stores (store_chunk's words reach the memory as 4-byte
// stores here, four times the store instructions of the gradient's output).
template <class T>
__device__ void put_chunk(T* row, int64_t k, int64_t n, bool aligned, const Compute<T>* v) {
  if (!aligned || k + kChunk > n) return store_chunk(row, k, n, false, v);
  constexpr int kVectors = int(sizeof(T)) * kChunk / 16;
  uint32_t w[4 * kVectors];
  if constexpr (sizeof(T) == 2) {
#pragma unroll
    for (int i = 0; i < kChunk / 2; ++i) w[i] = packed_pair(T(), v[2 * i], v[2 * i + 1]);
  } else {
    memcpy(w, v, sizeof(w));  // f32 and f64 are stored as computed
  }
  uint4* dst = reinterpret_cast<uint4*>(row + k);
#pragma unroll
  for (int q = 0; q < kVectors; ++q)
    __stwb(dst + q, make_uint4(w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3]));
}

// Each row's loss -log_softmax(logits)[target]: 0 for an ignored row (whose
// logits are not read unless linked), NaN for a target out of range or a
// row whose maximum is infinite (the CPU's exp(inf - inf)). A group per
// row. `link` (or null): each row's settled state, for the gradient.
template <class T>
__global__ void __launch_bounds__(kNnBlock, kStreamBlocks<T>)
    cross_entropy_rows(const T* __restrict__ x, const void* __restrict__ targets,
                       TargetType target_type, Compute<T>* __restrict__ losses,
                       MaxSum<Compute<T>>* __restrict__ link, int64_t rows, int64_t classes,
                       bool has_ignore, int64_t ignore_index) {
  using C = Compute<T>;
  RowSlot r = row_slot(rows);
  const int64_t target = r.live ? target_at(targets, target_type, r.row) : 0;
  const bool ignored = has_ignore && target == ignore_index;
  const T* xr = x + r.row * classes;
  // Every group reaches row_reduce's barriers, an unread row's reading nothing.
  const int64_t n = r.live && (!ignored || link) ? classes : 0;
  MaxSum<C> a = row_softmax_state(xr, n);
  if (!r.live || threadIdx.x != 0) return;
  if (link) link[r.row] = OnlineSoftmax<C>::settle(a);
  if (ignored) {
    losses[r.row] = C(0);
    return;
  }
  const bool finite = a.m != infinity(C(0)) && a.m != -infinity(C(0));
  losses[r.row] = target < 0 || target >= classes || !finite
                      ? quiet_nan(C(0))
                      : a.m + log_of(a.s) - to_compute(xr[target]);
}

// One block adds the row losses up (in f64, as the CPU) in a fixed order and
// counts the rows not ignored; out[0] is the sum or the mean (0 when none).
template <class C>
__global__ void __launch_bounds__(kNnBlock)
    cross_entropy_total(const C* __restrict__ losses, const void* __restrict__ targets,
                        TargetType target_type, C* __restrict__ out, int64_t rows, bool has_ignore,
                        int64_t ignore_index, bool mean) {
  double total = 0;
  int64_t counted = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
    total += double(losses[i]);
    counted += has_ignore && target_at(targets, target_type, i) == ignore_index ? 0 : 1;
  }
  total = row_reduce<Sum<double>>(total);
  counted = row_reduce<Sum<int64_t>>(counted);
  if (threadIdx.x != 0) return;
  out[0] = C(!mean ? total : counted == 0 ? 0.0 : total / double(counted));
}

// "mean": the row scale g / max(rows not ignored, 1), counted by one block.
template <class C>
__global__ void __launch_bounds__(kNnBlock)
    cross_entropy_grad_mean_scale(const void* __restrict__ targets, TargetType target_type,
                                  const C* __restrict__ g, C* __restrict__ scale, int64_t rows,
                                  bool has_ignore, int64_t ignore_index) {
  int64_t counted = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x)
    counted += has_ignore && target_at(targets, target_type, i) == ignore_index ? 0 : 1;
  counted = row_reduce<Sum<int64_t>>(counted);
  if (threadIdx.x == 0) scale[0] = g[0] / C(counted > 1 ? counted : 1);
}

// Each row's (softmax - one_hot(target)) * scale, as the CPU: the settled
// softmax state (the forward's from `linked`, else computed here), then
// exp(x - m) * (1 / s) less the one-hot, times the row's scale
// (scales[row], or scales[0] shared by all rows), which is 0 in an ignored
// row. The output pass is batched like the statistics pass.
template <class In, class Out>
__global__ void __launch_bounds__(kNnBlock, kStreamBlocks<In>)
    cross_entropy_grad_rows(const In* __restrict__ x, const void* __restrict__ targets,
                            TargetType target_type, const Compute<In>* __restrict__ scales,
                            bool scale_per_row, const MaxSum<Compute<In>>* __restrict__ linked,
                            Out* __restrict__ out, int64_t rows, int64_t classes, bool has_ignore,
                            int64_t ignore_index) {
  using C = Compute<In>;
  RowSlot r = row_slot(rows);
  const int64_t n = r.live ? classes : 0;
  const In* xr = x + r.row * classes;
  // `linked` is the same for the whole grid: all threads or none call row_softmax_state.
  const MaxSum<C> a = linked ? linked[r.row] : OnlineSoftmax<C>::settle(row_softmax_state(xr, n));
  if (!r.live) return;
  const int64_t target = target_at(targets, target_type, r.row);
  const bool ignored = has_ignore && target == ignore_index;
  const C scale = ignored ? C(0) : scales[scale_per_row ? r.row : 0];
  const C inv = C(1) / a.s;
  Out* o = out + r.row * classes;
  const bool out_aligned = aligned16(o);
  const int64_t stride = int64_t(blockDim.x) * kChunk;
  for_each_batch(xr, n, C(0), [&](int64_t k0, const C* v) {
#pragma unroll
    for (int b = 0; b < kBatchChunks; ++b) {
      const int64_t k = k0 + b * stride;
      if (k >= n) break;
      C y[kChunk];
#pragma unroll
      for (int j = 0; j < kChunk; ++j) y[j] = exp_below(v[b * kChunk + j], a.m) * inv;
      // Only the target's chunk has a one-hot to subtract (p - 0 is p).
      if (uint64_t(target - k) < uint64_t(kChunk))
#pragma unroll
        for (int j = 0; j < kChunk; ++j) y[j] -= C(k + j == target ? 1 : 0);
#pragma unroll
      for (int j = 0; j < kChunk; ++j) y[j] *= scale;
      put_chunk(o, k, n, out_aligned, y);
    }
  });
}

// A warp per row up to kNnWarpRowLimit classes, up to a block beyond.
RowShape stream_row_shape(int64_t rows, int64_t classes) {
  return row_shape(rows, classes, kNnWarpRowLimit / kWarp, kNnBlock);
}

template <class T>
cudaError_t cross_entropy_typed(const CrossEntropyParams& p, const void* logits,
                                const void* targets, void* out, void* scratch, void* link,
                                cudaStream_t stream) {
  using C = Compute<T>;
  C* o = static_cast<C*>(out);
  C* losses = p.reduction == Reduction::None ? o : static_cast<C*>(scratch);
  if (p.rows > 0) {
    RowShape l = stream_row_shape(p.rows, p.classes);
    cross_entropy_rows<T><<<l.grid, l.block, 0, stream>>>(
        static_cast<const T*>(logits), targets, p.target_type, losses,
        static_cast<MaxSum<C>*>(link), p.rows, p.classes, p.has_ignore, p.ignore_index);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  if (p.reduction != Reduction::None)
    cross_entropy_total<C><<<1, kNnBlock, 0, stream>>>(losses, targets, p.target_type, o, p.rows,
                                                       p.has_ignore, p.ignore_index,
                                                       p.reduction == Reduction::Mean);
  return cudaGetLastError();
}

template <class In, class Out>
cudaError_t cross_entropy_grad_typed(const CrossEntropyGradParams& p, const void* logits,
                                     const void* targets, const void* g, const void* link,
                                     void* out, void* scratch, cudaStream_t stream) {
  using C = Compute<In>;
  const C* scales = static_cast<const C*>(g);
  if (p.reduction == Reduction::Mean) {
    C* mean_scale = static_cast<C*>(scratch);
    cross_entropy_grad_mean_scale<C><<<1, kNnBlock, 0, stream>>>(
        targets, p.target_type, scales, mean_scale, p.rows, p.has_ignore, p.ignore_index);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    scales = mean_scale;
  }
  RowShape l = stream_row_shape(p.rows, p.classes);
  cross_entropy_grad_rows<In, Out><<<l.grid, l.block, 0, stream>>>(
      static_cast<const In*>(logits), targets, p.target_type, scales,
      p.reduction == Reduction::None, static_cast<const MaxSum<C>*>(link), static_cast<Out*>(out),
      p.rows, p.classes, p.has_ignore, p.ignore_index);
  return cudaGetLastError();
}

size_t compute_bytes(Storage s) {
  return s == Storage::F64 ? sizeof(double) : sizeof(float);
}

}  // namespace

size_t cross_entropy_link_bytes(Storage logits, int64_t rows) {
  return size_t(rows) * 2 * compute_bytes(logits);
}

size_t cross_entropy_scratch_bytes(const CrossEntropyParams& p) {
  if (p.reduction == Reduction::None) return 0;
  return size_t(p.rows) * compute_bytes(p.logits);
}

cudaError_t launch_cross_entropy(const CrossEntropyParams& p, const void* logits,
                                 const void* targets, void* out, void* scratch, void* link,
                                 cudaStream_t stream) {
  return with_storage(p.logits, [&](auto logits_type) {
    return cross_entropy_typed<decltype(logits_type)>(p, logits, targets, out, scratch, link,
                                                      stream);
  });
}

size_t cross_entropy_grad_scratch_bytes(const CrossEntropyGradParams& p) {
  return p.reduction == Reduction::Mean ? sizeof(double) : 0;
}

cudaError_t launch_cross_entropy_grad(const CrossEntropyGradParams& p, const void* logits,
                                      const void* targets, const void* g, const void* link,
                                      void* out, void* scratch, cudaStream_t stream) {
  return with_storage(p.logits, [&](auto logits_type) {
    return with_storage(p.out, [&](auto out_type) {
      using In = decltype(logits_type);
      using Out = decltype(out_type);
      if constexpr (!supported_mix<In, Out>())
        return cudaErrorInvalidValue;
      else
        return cross_entropy_grad_typed<In, Out>(p, logits, targets, g, link, out, scratch, stream);
    });
  });
}

}  // namespace sexpgpu::cuda
