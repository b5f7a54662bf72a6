// The fused neural kernels behind kernels_nn.cpp: softmax and log_softmax
// over one axis, cross_entropy and its gradient, layer_norm (and its
// gradient with respect to x) and rms_norm.
//
// A row (the softmax axis, a sample's logits, the normalised axis) belongs
// to a group of threads: blockDim.x threads per row, blockDim.y rows per
// block (row blockIdx.x*blockDim.y + threadIdx.y). Softmax and norm rows of
// up to kNnRegisterRowLimit elements are held in registers, thread t
// owning elements t, t + blockDim.x, ... (kPerThread of them), so they are
// read once; longer rows, and cross_entropy's, are streamed with several
// loads in flight per thread, softmax keeping them in shared memory when
// they fit. Sums are fixed-order trees in the input's dtype, so results
// repeat bit for bit.
//
// NaN and infinity behave as in devices/cpu/kernels_nn.cpp: the row maximum
// skips NaN, a NaN anywhere makes the row's sum (and so every output of it)
// NaN, a +inf maximum makes them NaN too (exp(inf - inf)), and a row with
// no finite maximum but -inf subtracts 0.
#include <cuda_runtime.h>

#include <cstdint>

#include "nn_launch.h"

namespace sexpgpu::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kPerThread = int(kNnRegisterRowLimit) / kNnWideBlock;  // a register row's share
constexpr int kBatch = 8;       // loads in flight per thread streaming a row
constexpr int kWideBatch = 16;  // the same in a block that may have an SM to itself

// ---------------------------------------------------------------------------
// Scalars

__device__ float infinity(float) {
  return __int_as_float(0x7f800000);
}
__device__ double infinity(double) {
  return __longlong_as_double(0x7ff0000000000000LL);
}
__device__ float quiet_nan(float) {
  return __int_as_float(0x7fffffff);
}
__device__ double quiet_nan(double) {
  return __longlong_as_double(0x7fffffffffffffffLL);
}
__device__ float exp_of(float x) {
  return expf(x);
}
__device__ double exp_of(double x) {
  return exp(x);
}
__device__ float log_of(float x) {
  return logf(x);
}
__device__ double log_of(double x) {
  return log(x);
}
__device__ float sqrt_of(float x) {
  return sqrtf(x);
}
__device__ double sqrt_of(double x) {
  return sqrt(x);
}

__device__ float shfl_down(float v, int d) {
  return __shfl_down_sync(0xffffffffu, v, d);
}
__device__ double shfl_down(double v, int d) {
  return __shfl_down_sync(0xffffffffu, v, d);
}
__device__ int64_t shfl_down(int64_t v, int d) {
  return int64_t(__shfl_down_sync(0xffffffffu, (long long)v, d));
}
__device__ float shfl_first(float v) {
  return __shfl_sync(0xffffffffu, v, 0);
}
__device__ double shfl_first(double v) {
  return __shfl_sync(0xffffffffu, v, 0);
}
__device__ int64_t shfl_first(int64_t v) {
  return int64_t(__shfl_sync(0xffffffffu, (long long)v, 0));
}

// ---------------------------------------------------------------------------
// States combined across a row: a plain sum, and softmax's online
// (maximum, sum of exp(x - maximum)).

template <class T>
struct Sum {
  using Acc = T;
  __device__ static T identity() { return T(0); }
  __device__ static T combine(T a, T b) { return a + b; }
};

template <class T>
struct MaxSum {
  T m, s;
};
template <class T>
__device__ MaxSum<T> shfl_down(MaxSum<T> v, int d) {
  return {shfl_down(v.m, d), shfl_down(v.s, d)};
}
template <class T>
__device__ MaxSum<T> shfl_first(MaxSum<T> v) {
  return {shfl_first(v.m), shfl_first(v.s)};
}

// The CPU's two passes (maximum m skipping NaN, then s = sum of
// exp(x - m)) done online, a batch of elements at a time: the batch raises
// m, the old s is rescaled once, and the batch's exps are independent.
// m never holds NaN; a NaN element makes s NaN for good; a -inf element
// adds 0 (also while m is still -inf, where exp(-inf - -inf) would be NaN),
// so -inf also pads batches past the end of a row.
template <class T>
struct OnlineSoftmax {
  using Acc = MaxSum<T>;
  __device__ static Acc identity() { return {-infinity(T(0)), T(0)}; }
  template <int N>
  __device__ static Acc absorb(Acc a, const T (&v)[N]) {
    T m = a.m;
#pragma unroll
    for (int j = 0; j < N; ++j) m = v[j] > m ? v[j] : m;
    T s = a.m == m ? a.s : a.s * exp_of(a.m - m);
#pragma unroll
    for (int j = 0; j < N; ++j) s += v[j] == -infinity(T(0)) ? T(0) : exp_of(v[j] - m);
    return {m, s};
  }
  __device__ static Acc combine(Acc a, Acc b) {
    T m = a.m > b.m ? a.m : b.m;
    if (m == -infinity(T(0))) return {m, a.s + b.s};  // 0, or NaN
    return {m, a.s * exp_of(a.m - m) + b.s * exp_of(b.m - m)};
  }
  // The CPU's reading of the final state: m = +inf gives a NaN sum
  // (exp(inf - inf)), m = -inf (no finite element) is replaced by 0.
  __device__ static Acc settle(Acc a) {
    if (a.m == infinity(T(0))) return {a.m, quiet_nan(T(0))};
    if (a.m == -infinity(T(0))) return {T(0), a.s};
    return a;
  }
};

// Every thread of a row's group gets the combination of the group's
// states: a warp's shuffles, then across the group's blockDim.x / 32 warps
// through shared memory.
template <class Op>
__device__ typename Op::Acc row_reduce(typename Op::Acc a) {
  using Acc = typename Op::Acc;
  for (int d = kWarp / 2; d > 0; d /= 2) a = Op::combine(a, shfl_down(a, d));
  if (blockDim.x == kWarp) return shfl_first(a);
  __shared__ Acc warps[kNnWideBlock / kWarp];
  __shared__ Acc result[kNnWideBlock / kWarp];
  const int lane = threadIdx.x % kWarp, group_warps = blockDim.x / kWarp;
  const int first_warp = threadIdx.y * group_warps;  // the group's warps are adjacent
  if (lane == 0) warps[first_warp + threadIdx.x / kWarp] = a;
  __syncthreads();
  if (threadIdx.x < kWarp) {
    a = lane < group_warps ? warps[first_warp + lane] : Op::identity();
    for (int d = kWarp / 2; d > 0; d /= 2) a = Op::combine(a, shfl_down(a, d));
    if (lane == 0) result[threadIdx.y] = a;
  }
  __syncthreads();
  return result[threadIdx.y];
}

// This thread's row and whether it exists: the last block may have spare
// row groups, which take row 0 but read and write nothing.
struct RowSlot {
  int64_t row;
  bool live;
};
__device__ RowSlot row_slot(int64_t rows) {
  int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  return {row < rows ? row : 0, row < rows};
}

// The index of this thread's i-th element of a register row.
__device__ int64_t row_index(int i) {
  return threadIdx.x + int64_t(i) * blockDim.x;
}

// A row in its group's registers: v[i] is element row_index(i), `pad` past n.
template <class T>
__device__ void load_row(const T* x, int64_t n, T pad, T (&v)[kPerThread]) {
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) v[i] = row_index(i) < n ? x[row_index(i)] : pad;
}

// The online softmax state of x[k], k = first, first + step, ... below n,
// kLoads loads at a time. kCache: also copies each element to cache[k].
template <class T, int kLoads, bool kCache>
__device__ MaxSum<T> softmax_state(const T* x, int64_t n, int64_t first, int64_t step, T* cache) {
  MaxSum<T> a = OnlineSoftmax<T>::identity();
  for (int64_t k0 = first; k0 < n; k0 += kLoads * step) {
    T v[kLoads];
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      int64_t k = k0 + j * step;
      v[j] = k < n ? x[k] : -infinity(T(0));
      if (kCache && k < n) cache[k] = v[j];
    }
    a = OnlineSoftmax<T>::absorb(a, v);
  }
  return a;
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

// ---------------------------------------------------------------------------
// softmax / log_softmax

// What the output pass needs of a settled state: exp(x - m) * (1/s), or
// x - (m + log s).
template <class T>
struct SoftmaxOut {
  T m, inv, lse;
  bool log;
  __device__ SoftmaxOut(MaxSum<T> a, bool log_softmax)
      : m(a.m), inv(T(1) / a.s), lse(a.m + log_of(a.s)), log(log_softmax) {}
  __device__ T operator()(T x) const { return log ? x - lse : exp_of(x - m) * inv; }
};

template <class T>
__global__ void __launch_bounds__(kNnWideBlock)
    softmax_register_rows(const T* __restrict__ x, T* __restrict__ out, int64_t rows, int64_t count,
                          bool log) {
  RowSlot r = row_slot(rows);
  const int64_t n = r.live ? count : 0;
  T v[kPerThread];
  load_row(x + r.row * count, n, -infinity(T(0)), v);
  MaxSum<T> a = OnlineSoftmax<T>::absorb(OnlineSoftmax<T>::identity(), v);
  const SoftmaxOut<T> f(OnlineSoftmax<T>::settle(row_reduce<OnlineSoftmax<T>>(a)), log);
  T* o = out + r.row * count;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
    if (row_index(i) < n) o[row_index(i)] = f(v[i]);
}

// A block of kNnWideBlock threads per row. kCached: the first pass also
// copies the row into dynamic shared memory (cache_bytes), where the
// second reads it; each thread reads back only what it wrote.
template <class T, bool kCached>
__global__ void __launch_bounds__(kNnWideBlock)
    softmax_block_rows(const T* __restrict__ x, T* __restrict__ out, int64_t count, bool log) {
  extern __shared__ double cache_storage[];  // double: aligned for either T
  T* cache = reinterpret_cast<T*>(cache_storage);
  const T* xr = x + int64_t(blockIdx.x) * count;
  MaxSum<T> a = softmax_state<T, kWideBatch, kCached>(xr, count, threadIdx.x, blockDim.x, cache);
  const SoftmaxOut<T> f(OnlineSoftmax<T>::settle(row_reduce<OnlineSoftmax<T>>(a)), log);
  const T* src = kCached ? cache : xr;
  T* o = out + int64_t(blockIdx.x) * count;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) o[k] = f(src[k]);
}

// Softmax over a middle axis: a thread per (outer, inner) pair, so that
// neighbouring threads read neighbouring elements at every step.
template <class T>
__global__ void __launch_bounds__(kNnBlock)
    softmax_columns(const T* __restrict__ x, T* __restrict__ out, int64_t outer, int64_t count,
                    int64_t inner, bool log) {
  const int64_t columns = outer * inner;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < columns;
       c += int64_t(gridDim.x) * blockDim.x) {
    const T* xc = x + (c / inner) * count * inner + c % inner;
    T* oc = out + (xc - x);
    MaxSum<T> a = OnlineSoftmax<T>::identity();
    for (int64_t k = 0; k < count; ++k) {
      T v[1] = {xc[k * inner]};
      a = OnlineSoftmax<T>::absorb(a, v);
    }
    const SoftmaxOut<T> f(OnlineSoftmax<T>::settle(a), log);
    for (int64_t k = 0; k < count; ++k) oc[k * inner] = f(xc[k * inner]);
  }
}

// ---------------------------------------------------------------------------
// cross_entropy

// Each row's loss -log_softmax(logits)[target]: 0 for an ignored row (whose
// logits are not read), NaN for a target out of range or a row whose
// maximum is infinite (the CPU's exp(inf - inf)). A group per row.
template <class T, class I>
__global__ void __launch_bounds__(kNnBlock)
    cross_entropy_rows(const T* __restrict__ x, const I* __restrict__ targets,
                       T* __restrict__ losses, int64_t rows, int64_t classes, bool has_ignore,
                       int64_t ignore_index) {
  RowSlot r = row_slot(rows);
  const int64_t target = r.live ? int64_t(targets[r.row]) : 0;
  const bool ignored = has_ignore && target == ignore_index;
  const T* xr = x + r.row * classes;
  // Every group reaches row_reduce's barriers, an ignored row's reading nothing.
  const int64_t n = r.live && !ignored ? classes : 0;
  MaxSum<T> a = softmax_state<T, kBatch, false>(xr, n, threadIdx.x, blockDim.x, nullptr);
  a = row_reduce<OnlineSoftmax<T>>(a);
  if (!r.live || threadIdx.x != 0) return;
  if (ignored) {
    losses[r.row] = T(0);
    return;
  }
  const bool finite = a.m != infinity(T(0)) && a.m != -infinity(T(0));
  losses[r.row] =
      target < 0 || target >= classes || !finite ? quiet_nan(T(0)) : a.m + log_of(a.s) - xr[target];
}

// One block adds the row losses up (in f64, as the CPU) in a fixed order and
// counts the rows not ignored; out[0] is the sum or the mean (0 when none).
template <class T, class I>
__global__ void __launch_bounds__(kNnBlock)
    cross_entropy_total(const T* __restrict__ losses, const I* __restrict__ targets,
                        T* __restrict__ out, int64_t rows, bool has_ignore, int64_t ignore_index,
                        bool mean) {
  double total = 0;
  int64_t counted = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
    total += double(losses[i]);
    counted += has_ignore && int64_t(targets[i]) == ignore_index ? 0 : 1;
  }
  total = row_reduce<Sum<double>>(total);
  counted = row_reduce<Sum<int64_t>>(counted);
  if (threadIdx.x != 0) return;
  out[0] = T(!mean ? total : counted == 0 ? 0.0 : total / double(counted));
}

// ---------------------------------------------------------------------------
// cross_entropy_grad

// "mean": the row scale g / max(rows not ignored, 1), counted by one block.
template <class T, class I>
__global__ void __launch_bounds__(kNnBlock)
    cross_entropy_grad_mean_scale(const I* __restrict__ targets, const T* __restrict__ g,
                                  T* __restrict__ scale, int64_t rows, bool has_ignore,
                                  int64_t ignore_index) {
  int64_t counted = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x)
    counted += has_ignore && int64_t(targets[i]) == ignore_index ? 0 : 1;
  counted = row_reduce<Sum<int64_t>>(counted);
  if (threadIdx.x == 0) scale[0] = g[0] / T(counted > 1 ? counted : 1);
}

// Each row's (softmax - one_hot(target)) * scale, as the CPU: the softmax
// state first (the row read once), then exp(x - m) / s less the one-hot,
// times the row's scale (scales[row], or scales[0] shared by all rows), which
// is 0 in an ignored row. A group per row; the second read is batched like
// the first, so kBatch loads are in flight per thread.
template <class T, class I>
__global__ void __launch_bounds__(kNnBlock)
    cross_entropy_grad_rows(const T* __restrict__ x, const I* __restrict__ targets,
                            const T* __restrict__ scales, bool scale_per_row, T* __restrict__ out,
                            int64_t rows, int64_t classes, bool has_ignore, int64_t ignore_index) {
  RowSlot r = row_slot(rows);
  const int64_t n = r.live ? classes : 0;
  const T* xr = x + r.row * classes;
  MaxSum<T> a = softmax_state<T, kBatch, false>(xr, n, threadIdx.x, blockDim.x, nullptr);
  a = OnlineSoftmax<T>::settle(row_reduce<OnlineSoftmax<T>>(a));
  if (!r.live) return;
  const int64_t target = int64_t(targets[r.row]);
  const bool ignored = has_ignore && target == ignore_index;
  const T scale = ignored ? T(0) : scales[scale_per_row ? r.row : 0];
  T* o = out + r.row * classes;
  const int64_t step = blockDim.x;
  for (int64_t k0 = threadIdx.x; k0 < n; k0 += kBatch * step) {
    T v[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) v[j] = k0 + j * step < n ? xr[k0 + j * step] : T(0);
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int64_t k = k0 + j * step;
      if (k < n) o[k] = (exp_of(v[j] - a.m) / a.s - T(k == target ? 1 : 0)) * scale;
    }
  }
}

// ---------------------------------------------------------------------------
// layer_norm / rms_norm: y = (x - mean) / sqrt(var + eps) * weight + bias
// with the biased variance (two passes); rms_norm takes mean 0, no bias.

template <class T, bool kLayer>
__device__ T normalised(T x, T mean, T inv, const T* weight, const T* bias, int64_t k) {
  T y = (x - mean) * inv * weight[k];
  return kLayer ? y + bias[k] : y;
}

template <class T, bool kLayer>
__global__ void __launch_bounds__(kNnWideBlock)
    norm_register_rows(const T* __restrict__ x, const T* __restrict__ weight,
                       const T* __restrict__ bias, T* __restrict__ out, int64_t rows, int64_t dim,
                       T eps) {
  RowSlot r = row_slot(rows);
  const int64_t n = r.live ? dim : 0;
  T v[kPerThread];
  load_row(x + r.row * dim, n, T(0), v);
  T mean = 0;
  if (kLayer) {
    T sum = 0;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) sum += v[i];  // 0 past the row
    mean = row_reduce<Sum<T>>(sum) / T(dim);
  }
  T squares = 0;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
    if (row_index(i) < n) squares += (v[i] - mean) * (v[i] - mean);
  const T inv = T(1) / sqrt_of(row_reduce<Sum<T>>(squares) / T(dim) + eps);
  T* o = out + r.row * dim;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
    if (row_index(i) < n)
      o[row_index(i)] = normalised<T, kLayer>(v[i], mean, inv, weight, bias, row_index(i));
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
    o[k] = normalised<T, kLayer>(xr[k], mean, inv, weight, bias, k);
}

// ---------------------------------------------------------------------------
// layer_norm_grad: dx = rstd (gh - mean(gh) - xhat mean(gh xhat)) with
// gh = g w, the statistics recomputed from x as norm_*_rows does.

template <class T>
__device__ T layer_norm_dx(T x, T gh, T mean, T rstd, T mean_gh, T mean_ghx) {
  return rstd * (gh - mean_gh - (x - mean) * rstd * mean_ghx);
}

template <class T>
__global__ void __launch_bounds__(kNnWideBlock)
    layer_norm_grad_register_rows(const T* __restrict__ x, const T* __restrict__ weight,
                                  const T* __restrict__ g, T* __restrict__ out, int64_t rows,
                                  int64_t dim, T eps) {
  RowSlot r = row_slot(rows);
  const int64_t n = r.live ? dim : 0;
  T v[kPerThread], gh[kPerThread];
  load_row(x + r.row * dim, n, T(0), v);
  load_row(g + r.row * dim, n, T(0), gh);
  T sum = 0;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    if (row_index(i) < n) gh[i] *= weight[row_index(i)];
    sum += v[i];  // 0 past the row
  }
  const T mean = row_reduce<Sum<T>>(sum) / T(dim);
  T squares = 0;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
    if (row_index(i) < n) squares += (v[i] - mean) * (v[i] - mean);
  const T rstd = T(1) / sqrt_of(row_reduce<Sum<T>>(squares) / T(dim) + eps);
  T sum_gh = 0, sum_ghx = 0;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
    if (row_index(i) < n) {
      sum_gh += gh[i];
      sum_ghx += gh[i] * (v[i] - mean) * rstd;
    }
  const T mean_gh = row_reduce<Sum<T>>(sum_gh) / T(dim);
  const T mean_ghx = row_reduce<Sum<T>>(sum_ghx) / T(dim);
  T* o = out + r.row * dim;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
    if (row_index(i) < n)
      o[row_index(i)] = layer_norm_dx(v[i], gh[i], mean, rstd, mean_gh, mean_ghx);
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

// The launch shape of a row kernel: groups of 32 to `most` threads (a
// power of two), enough for `per_thread` elements each, one per row; as
// many rows to a block as make kNnBlock threads while groups are smaller.
struct RowShape {
  dim3 grid, block;
};
RowShape row_shape(int64_t rows, int64_t count, int64_t per_thread, int most) {
  int threads = kWarp;
  while (threads < most && threads * per_thread < count) threads *= 2;
  int per_block = threads < kNnBlock ? kNnBlock / threads : 1;
  return {dim3(unsigned((rows + per_block - 1) / per_block)), dim3(threads, per_block)};
}

template <class T>
cudaError_t softmax_typed(const SoftmaxParams& p, const void* x, void* out, cudaStream_t stream) {
  const T* in = static_cast<const T*>(x);
  T* o = static_cast<T*>(out);
  if (p.inner != 1) {
    int64_t blocks = (p.outer * p.inner + kNnBlock - 1) / kNnBlock;
    unsigned grid = unsigned(blocks < 65536 ? blocks : 65536);  // grid-stride beyond
    softmax_columns<T><<<grid, kNnBlock, 0, stream>>>(in, o, p.outer, p.count, p.inner, p.log);
  } else if (p.count <= kNnRegisterRowLimit) {
    RowShape l = row_shape(p.outer, p.count, kPerThread, kNnWideBlock);
    softmax_register_rows<T><<<l.grid, l.block, 0, stream>>>(in, o, p.outer, p.count, p.log);
  } else if (p.cache_bytes > 0) {
    softmax_block_rows<T, true>
        <<<unsigned(p.outer), kNnWideBlock, p.cache_bytes, stream>>>(in, o, p.count, p.log);
  } else {
    softmax_block_rows<T, false>
        <<<unsigned(p.outer), kNnWideBlock, 0, stream>>>(in, o, p.count, p.log);
  }
  return cudaGetLastError();
}

template <class T, class I>
cudaError_t cross_entropy_typed(const CrossEntropyParams& p, const void* logits,
                                const void* targets, void* out, void* scratch,
                                cudaStream_t stream) {
  const T* x = static_cast<const T*>(logits);
  const I* t = static_cast<const I*>(targets);
  T* o = static_cast<T*>(out);
  T* losses = p.reduction == Reduction::None ? o : static_cast<T*>(scratch);
  if (p.rows > 0) {
    // A warp per row up to kNnWarpRowLimit classes, wider groups beyond.
    RowShape l = row_shape(p.rows, p.classes, kNnWarpRowLimit / kWarp, kNnBlock);
    cross_entropy_rows<T, I><<<l.grid, l.block, 0, stream>>>(x, t, losses, p.rows, p.classes,
                                                             p.has_ignore, p.ignore_index);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  if (p.reduction != Reduction::None)
    cross_entropy_total<T, I><<<1, kNnBlock, 0, stream>>>(
        losses, t, o, p.rows, p.has_ignore, p.ignore_index, p.reduction == Reduction::Mean);
  return cudaGetLastError();
}

template <class T>
cudaError_t cross_entropy_targets(const CrossEntropyParams& p, const void* logits,
                                  const void* targets, void* out, void* scratch,
                                  cudaStream_t stream) {
  switch (p.target_type) {
    case TargetType::I32:
      return cross_entropy_typed<T, int32_t>(p, logits, targets, out, scratch, stream);
    case TargetType::I64:
      return cross_entropy_typed<T, int64_t>(p, logits, targets, out, scratch, stream);
    case TargetType::U8:
      return cross_entropy_typed<T, uint8_t>(p, logits, targets, out, scratch, stream);
    case TargetType::U16:
      return cross_entropy_typed<T, uint16_t>(p, logits, targets, out, scratch, stream);
  }
  return cudaErrorInvalidValue;
}

template <class T, class I>
cudaError_t cross_entropy_grad_typed(const CrossEntropyGradParams& p, const void* logits,
                                     const void* targets, const void* g, void* out, void* scratch,
                                     cudaStream_t stream) {
  const I* t = static_cast<const I*>(targets);
  const T* scales = static_cast<const T*>(g);
  if (p.reduction == Reduction::Mean) {
    T* mean_scale = static_cast<T*>(scratch);
    cross_entropy_grad_mean_scale<T, I>
        <<<1, kNnBlock, 0, stream>>>(t, scales, mean_scale, p.rows, p.has_ignore, p.ignore_index);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    scales = mean_scale;
  }
  // A warp per row up to kNnWarpRowLimit classes, up to a block of
  // kNnBlock threads beyond (GPT-2's 50304 logits a row).
  RowShape l = row_shape(p.rows, p.classes, kNnWarpRowLimit / kWarp, kNnBlock);
  cross_entropy_grad_rows<T, I><<<l.grid, l.block, 0, stream>>>(
      static_cast<const T*>(logits), t, scales, p.reduction == Reduction::None,
      static_cast<T*>(out), p.rows, p.classes, p.has_ignore, p.ignore_index);
  return cudaGetLastError();
}

template <class T>
cudaError_t cross_entropy_grad_targets(const CrossEntropyGradParams& p, const void* logits,
                                       const void* targets, const void* g, void* out, void* scratch,
                                       cudaStream_t stream) {
  switch (p.target_type) {
    case TargetType::I32:
      return cross_entropy_grad_typed<T, int32_t>(p, logits, targets, g, out, scratch, stream);
    case TargetType::I64:
      return cross_entropy_grad_typed<T, int64_t>(p, logits, targets, g, out, scratch, stream);
    case TargetType::U8:
      return cross_entropy_grad_typed<T, uint8_t>(p, logits, targets, g, out, scratch, stream);
    case TargetType::U16:
      return cross_entropy_grad_typed<T, uint16_t>(p, logits, targets, g, out, scratch, stream);
  }
  return cudaErrorInvalidValue;
}

template <class T, bool kLayer>
void launch_norm_rows(const NormParams& p, const T* x, const T* w, const T* b, T* o,
                      cudaStream_t stream) {
  if (p.dim <= kNnRegisterRowLimit) {
    RowShape l = row_shape(p.rows, p.dim, kPerThread, kNnWideBlock);
    norm_register_rows<T, kLayer>
        <<<l.grid, l.block, 0, stream>>>(x, w, b, o, p.rows, p.dim, T(p.eps));
  } else
    norm_block_rows<T, kLayer>
        <<<unsigned(p.rows), kNnBlock, 0, stream>>>(x, w, b, o, p.dim, T(p.eps));
}

template <class T>
cudaError_t norm_typed(const NormParams& p, const void* x, const void* weight, const void* bias,
                       void* out, cudaStream_t stream) {
  const T* in = static_cast<const T*>(x);
  const T* w = static_cast<const T*>(weight);
  const T* b = static_cast<const T*>(bias);
  T* o = static_cast<T*>(out);
  if (p.layer)
    launch_norm_rows<T, true>(p, in, w, b, o, stream);
  else
    launch_norm_rows<T, false>(p, in, w, b, o, stream);
  return cudaGetLastError();
}

template <class T>
cudaError_t layer_norm_grad_typed(const LayerNormGradParams& p, const void* x, const void* weight,
                                  const void* g, void* out, cudaStream_t stream) {
  const T* in = static_cast<const T*>(x);
  const T* w = static_cast<const T*>(weight);
  const T* gs = static_cast<const T*>(g);
  T* o = static_cast<T*>(out);
  if (p.dim <= kNnRegisterRowLimit) {
    RowShape l = row_shape(p.rows, p.dim, kPerThread, kNnWideBlock);
    layer_norm_grad_register_rows<T>
        <<<l.grid, l.block, 0, stream>>>(in, w, gs, o, p.rows, p.dim, T(p.eps));
  } else {
    layer_norm_grad_block_rows<T>
        <<<unsigned(p.rows), kNnBlock, 0, stream>>>(in, w, gs, o, p.dim, T(p.eps));
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t prepare_softmax(const SoftmaxParams& p) {
  if (p.cache_bytes == 0) return cudaSuccess;
  return p.f64
             ? cudaFuncSetAttribute(softmax_block_rows<double, true>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, int(p.cache_bytes))
             : cudaFuncSetAttribute(softmax_block_rows<float, true>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(p.cache_bytes));
}

cudaError_t launch_softmax(const SoftmaxParams& p, const void* x, void* out, cudaStream_t stream) {
  return p.f64 ? softmax_typed<double>(p, x, out, stream) : softmax_typed<float>(p, x, out, stream);
}

size_t cross_entropy_scratch_bytes(const CrossEntropyParams& p) {
  if (p.reduction == Reduction::None) return 0;
  return size_t(p.rows) * (p.f64 ? sizeof(double) : sizeof(float));
}

cudaError_t launch_cross_entropy(const CrossEntropyParams& p, const void* logits,
                                 const void* targets, void* out, void* scratch,
                                 cudaStream_t stream) {
  return p.f64 ? cross_entropy_targets<double>(p, logits, targets, out, scratch, stream)
               : cross_entropy_targets<float>(p, logits, targets, out, scratch, stream);
}

size_t cross_entropy_grad_scratch_bytes(const CrossEntropyGradParams& p) {
  return p.reduction == Reduction::Mean ? sizeof(double) : 0;
}

cudaError_t launch_cross_entropy_grad(const CrossEntropyGradParams& p, const void* logits,
                                      const void* targets, const void* g, void* out, void* scratch,
                                      cudaStream_t stream) {
  return p.f64 ? cross_entropy_grad_targets<double>(p, logits, targets, g, out, scratch, stream)
               : cross_entropy_grad_targets<float>(p, logits, targets, g, out, scratch, stream);
}

cudaError_t launch_layer_norm_grad(const LayerNormGradParams& p, const void* x, const void* weight,
                                   const void* g, void* out, cudaStream_t stream) {
  return p.f64 ? layer_norm_grad_typed<double>(p, x, weight, g, out, stream)
               : layer_norm_grad_typed<float>(p, x, weight, g, out, stream);
}

cudaError_t launch_norm(const NormParams& p, const void* x, const void* weight, const void* bias,
                        void* out, cudaStream_t stream) {
  return p.f64 ? norm_typed<double>(p, x, weight, bias, out, stream)
               : norm_typed<float>(p, x, weight, bias, out, stream);
}

}  // namespace sexpgpu::cuda
