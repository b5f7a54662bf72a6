// cross_entropy and cross_entropy_grad behind kernels_nn.cpp, with logits
// and the gradient in any storage mix of nn_rows.cuh.
//
// A group of threads streams a row in batches of kBatchChunks chunks per
// thread, all loads of a batch issued before their exps, keeping the online
// (maximum, sum of exp) state: the forward reads each row once. The
// gradient needs that settled state before writing its output: it reads
// it from the link when its forward left it there (one read of the row),
// else computes it with the forward's own code and launch shape (a second
// read), so linked and unlinked gradients have the same bits. GPT-2's 50304
// logits a row get a block of kNnBlock threads, 16 bytes per load.
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
constexpr int kBatch = kBatchChunks * kChunk;  // elements a thread has in flight

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

// The online softmax state of row[0, n): thread t takes chunks t, t + G,
// ... (G the group's size), a batch of kBatchChunks of them at a time.
template <class T>
__device__ MaxSum<Compute<T>> row_state(const T* row, int64_t n) {
  using C = Compute<T>;
  const bool aligned = aligned16(row);
  const int64_t stride = int64_t(blockDim.x) * kChunk;
  MaxSum<C> a = OnlineSoftmax<C>::identity();
  for (int64_t k0 = int64_t(threadIdx.x) * kChunk; k0 < n; k0 += kBatchChunks * stride) {
    C v[kBatch];
#pragma unroll
    for (int b = 0; b < kBatchChunks; ++b)
      load_chunk(row, k0 + b * stride, n, aligned, -infinity(C(0)), v + b * kChunk);
    a = absorb_batch<kBatch>(a, v);
  }
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

// Each row's loss -log_softmax(logits)[target]: 0 for an ignored row (whose
// logits are not read unless linked), NaN for a target out of range or a
// row whose maximum is infinite (the CPU's exp(inf - inf)). A group per
// row. `link` (or null): each row's settled state, for the gradient.
template <class T>
__global__ void __launch_bounds__(kNnBlock)
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
__global__ void __launch_bounds__(kNnBlock)
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
  const bool in_aligned = aligned16(xr), out_aligned = aligned16(o);
  const int64_t stride = int64_t(blockDim.x) * kChunk;
  for (int64_t k0 = int64_t(threadIdx.x) * kChunk; k0 < n; k0 += kBatchChunks * stride) {
    C v[kBatch];
#pragma unroll
    for (int b = 0; b < kBatchChunks; ++b)
      load_chunk(xr, k0 + b * stride, n, in_aligned, C(0), v + b * kChunk);
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
      store_chunk(o, k, n, out_aligned, y);
    }
  }
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
