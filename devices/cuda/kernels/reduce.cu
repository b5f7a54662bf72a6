// The reduction kernels (ops.def, "Reductions") behind kernels_reduce.cpp.
// Every op is an accumulator policy (identity, lift one element, combine
// two accumulators, finish), and these kernels walk the input:
//   reduce_rows     a warp or a block per output (or per chunk of one);
//                   Rows and Gathered layouts
//   reduce_columns  32 adjacent outputs per block, read coalesced along the
//                   kept inner axis, 8 threads down the reduced axis
//                   (sum_columns_vector: 16-byte loads, for f32 sums)
//   multi_sum_of_squares  many tensors' reduce_rows sums of squares in one grid
//   finish_partials one warp per output combines the chunks' partials
// Every combination happens in an order fixed by the launch shape, so
// results repeat bit for bit. Semantics follow devices/cpu/kernels_reduce.cpp:
// f32 sum/mean/norm accumulate in f32 (trees keep the error near log K
// ulps), the other float reductions in f64 as on the CPU; integers wrap;
// max/min/argmax/argmin treat NaN as the extreme, argmax/argmin pick the
// first extreme index. A sum may square each element as it loads it
// (ReduceParams::square_input), and an f32 sum may read half-precision
// storage, widening each element as it loads it (ReduceParams::storage).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "reduce_launch.h"

namespace sexpgpu::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kRowsPerWarpBlock = kReduceBlock / kWarp;         // warp mode: 8 outputs per block
constexpr int kColumnDepth = kReduceBlock / kReduceColumnTile;  // threads down a column

// ---------------------------------------------------------------------------
// Scalars

template <class T>
struct IsFloat {
  static constexpr bool value = false;
};
template <>
struct IsFloat<float> {
  static constexpr bool value = true;
};
template <>
struct IsFloat<double> {
  static constexpr bool value = true;
};

template <class T>
__device__ bool is_nan(T x) {
  return x != x;  // never true for integers
}

__device__ float infinity(float) {
  return __int_as_float(0x7f800000);
}
__device__ double infinity(double) {
  return __longlong_as_double(0x7ff0000000000000LL);
}

// The extremes max/min start from: -inf/+inf for floats, the type's range otherwise.
template <class T>
struct Range;
template <>
struct Range<float> {
  __device__ static float lowest() { return -infinity(0.0f); }
  __device__ static float highest() { return infinity(0.0f); }
};
template <>
struct Range<double> {
  __device__ static double lowest() { return -infinity(0.0); }
  __device__ static double highest() { return infinity(0.0); }
};
template <>
struct Range<int32_t> {
  __device__ static int32_t lowest() { return -2147483647 - 1; }
  __device__ static int32_t highest() { return 2147483647; }
};
template <>
struct Range<int64_t> {
  __device__ static int64_t lowest() { return -9223372036854775807LL - 1; }
  __device__ static int64_t highest() { return 9223372036854775807LL; }
};
template <>
struct Range<uint8_t> {
  __device__ static uint8_t lowest() { return 0; }
  __device__ static uint8_t highest() { return 255; }
};
template <>
struct Range<uint16_t> {
  __device__ static uint16_t lowest() { return 0; }
  __device__ static uint16_t highest() { return 65535; }
};

// Two's-complement arithmetic for integers (the CPU's scalar::wrap_add and
// wrap_mul, the same expression), plain arithmetic for floats.
template <class T>
__device__ T add(T a, T b) {
  if constexpr (IsFloat<T>::value)
    return a + b;
  else
    return T(uint64_t(a) + uint64_t(b));
}
template <class T>
__device__ T mul(T a, T b) {
  if constexpr (IsFloat<T>::value)
    return a * b;
  else
    return T(uint64_t(a) * uint64_t(b));
}

__device__ float square_root(float x) {
  return sqrtf(x);
}
__device__ double square_root(double x) {
  return sqrt(x);
}

// Floats accumulate in f64 where the op is not on a hot path (as on the CPU).
template <class T>
struct WideOf {
  using type = T;
};
template <>
struct WideOf<float> {
  using type = double;
};
template <class T>
using Wide = typename WideOf<T>::type;

// ---------------------------------------------------------------------------
// Warp shuffles of every accumulator type

__device__ float shfl_down(float v, int d) {
  return __shfl_down_sync(0xffffffffu, v, d);
}
__device__ double shfl_down(double v, int d) {
  return __shfl_down_sync(0xffffffffu, v, d);
}
__device__ int32_t shfl_down(int32_t v, int d) {
  return __shfl_down_sync(0xffffffffu, v, d);
}
__device__ int64_t shfl_down(int64_t v, int d) {
  return int64_t(__shfl_down_sync(0xffffffffu, (long long)v, d));
}
__device__ uint8_t shfl_down(uint8_t v, int d) {
  return uint8_t(__shfl_down_sync(0xffffffffu, unsigned(v), d));
}
__device__ uint16_t shfl_down(uint16_t v, int d) {
  return uint16_t(__shfl_down_sync(0xffffffffu, unsigned(v), d));
}

// ---------------------------------------------------------------------------
// Accumulator policies: T the input element, Acc the running state, Out
// the output element. identity() is the state of no elements; lift(x, k)
// the state of element k alone.

struct Finish {
  int64_t count;       // the full sequence length K
  int64_t correction;  // var, std
};

template <class T>
struct SumOf {
  using In = T;
  using Acc = T;
  using Out = T;
  __device__ static Acc identity() { return T(0); }
  __device__ static Acc lift(T x, int64_t) { return x; }
  __device__ static Acc combine(Acc a, Acc b) { return add(a, b); }
  __device__ static Out finish(Acc a, Finish) { return a; }
};

template <class T>
struct MeanOf : SumOf<T> {
  __device__ static T finish(T a, Finish f) { return a / T(f.count); }  // 0/0: NaN, as the CPU
};

// A rounded product, never contracted with the sum into an fma: the same
// square the elementwise kernel stores.
__device__ float rounded_square(float x) {
  return __fmul_rn(x, x);
}
__device__ double rounded_square(double x) {
  return __dmul_rn(x, x);
}

template <class T>
struct SumOfSquaresOf : SumOf<T> {
  __device__ static T lift(T x, int64_t) { return rounded_square(x); }
};

// Half-precision storage (the bits), widened to f32 exactly.
struct Bf16Bits {
  __device__ static float widen(uint16_t bits) { return __uint_as_float(uint32_t(bits) << 16); }
};
struct F16Bits {
  __device__ static float widen(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }
};

// An f32 sum of half storage: the f32 sum of the widened elements, the
// same additions in the same order as SumOf<float> of an f32 copy.
template <class Storage>
struct StoredSumOf : SumOf<float> {
  using In = uint16_t;
  __device__ static float lift(uint16_t x, int64_t) { return Storage::widen(x); }
};

template <class T>
struct NormOf : SumOf<T> {
  __device__ static T lift(T x, int64_t) { return x * x; }
  __device__ static T finish(T a, Finish) { return square_root(a); }
};

template <class T>
struct ProdOf {
  using In = T;
  using Acc = Wide<T>;  // f64 for floats: no f32 overflow midway that the CPU avoids
  using Out = T;
  __device__ static Acc identity() { return Acc(1); }
  __device__ static Acc lift(T x, int64_t) { return Acc(x); }
  __device__ static Acc combine(Acc a, Acc b) { return mul(a, b); }
  __device__ static Out finish(Acc a, Finish) { return Out(a); }
};

// max/min: elementwise.h's maximum/minimum, isnan(a) || a > b ? a : b, so a
// NaN anywhere wins whatever the order.
template <class T, bool kMax>
struct ExtremeOf {
  using In = T;
  using Acc = T;
  using Out = T;
  __device__ static Acc identity() { return kMax ? Range<T>::lowest() : Range<T>::highest(); }
  __device__ static Acc lift(T x, int64_t) { return x; }
  __device__ static Acc combine(Acc a, Acc b) {
    return is_nan(a) || (kMax ? a > b : a < b) ? a : b;
  }
  __device__ static Out finish(Acc a, Finish) { return a; }
};

// var/std: Welford's running (count, mean, M2), merged by Chan's formula.
// The CPU's two passes give NaN when any element is not finite (x - mean
// meets inf - inf or NaN); a non-finite element's M2 is NaN for the same.
struct Moments {
  int64_t n;
  double mean, m2;
};
__device__ Moments shfl_down(Moments v, int d) {
  return {shfl_down(v.n, d), shfl_down(v.mean, d), shfl_down(v.m2, d)};
}

template <class T, bool kStd>
struct MomentsOf {
  using In = T;
  using Acc = Moments;
  using Out = T;
  __device__ static Acc identity() { return {0, 0.0, 0.0}; }
  __device__ static Acc lift(T x, int64_t) {
    double v = double(x);
    return {1, v, v - v};  // 0 when finite, NaN otherwise
  }
  __device__ static Acc combine(Acc a, Acc b) {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    int64_t n = a.n + b.n;
    double delta = b.mean - a.mean;
    double mean = a.mean + delta * (double(b.n) / double(n));
    double m2 = a.m2 + b.m2 + delta * delta * (double(a.n) * double(b.n) / double(n));
    return {n, mean, m2};
  }
  __device__ static Out finish(Acc a, Finish f) {
    double var = a.m2 / double(f.count - f.correction);
    return Out(kStd ? sqrt(var) : var);
  }
};

// logsumexp: a running maximum m (NaN skipped, as the CPU's fmax) and the
// sum s of exp(x - m). -inf elements add 0; a NaN makes s NaN. The CPU
// answers m itself when m is infinite (all -inf, empty, or some +inf).
struct MaxSum {
  double m, s;
};
__device__ MaxSum shfl_down(MaxSum v, int d) {
  return {shfl_down(v.m, d), shfl_down(v.s, d)};
}

template <class T>
struct LogSumExpOf {
  using In = T;
  using Acc = MaxSum;
  using Out = T;
  __device__ static Acc identity() { return {-infinity(0.0), 0.0}; }
  __device__ static Acc lift(T x, int64_t) {
    double v = double(x);
    if (is_nan(v)) return {-infinity(0.0), v};
    if (v == -infinity(0.0)) return {v, 0.0};
    return {v, 1.0};
  }
  __device__ static Acc combine(Acc a, Acc b) {
    double m = a.m > b.m ? a.m : b.m;
    if (m == -infinity(0.0)) return {m, a.s + b.s};  // both hold only -inf (s 0) or NaN
    return {m, a.s * exp(a.m - m) + b.s * exp(b.m - m)};
  }
  __device__ static Out finish(Acc a, Finish) {
    if (a.m == infinity(0.0) || a.m == -infinity(0.0)) return Out(a.m);
    return Out(a.m + log(a.s));
  }
};

// argmax/argmin: the first index of the extreme, a NaN counting as the
// extreme. The choice depends only on (value, index), not on the order of
// combination. i < 0 marks no element; an empty sequence gives 0, as the CPU.
template <class T>
struct Indexed {
  T v;
  int64_t i;
};
template <class T>
__device__ Indexed<T> shfl_down(Indexed<T> a, int d) {
  return {shfl_down(a.v, d), shfl_down(a.i, d)};
}

template <class T, bool kMax>
struct ArgExtremeOf {
  using In = T;
  using Acc = Indexed<T>;
  using Out = int32_t;  // ReduceIndex: i32 indices
  __device__ static Acc identity() { return {T(0), -1}; }
  __device__ static Acc lift(T x, int64_t k) { return {x, k}; }
  __device__ static Acc combine(Acc a, Acc b) {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    Acc first = a.i < b.i ? a : b, second = a.i < b.i ? b : a;
    if (is_nan(first.v)) return first;
    if (is_nan(second.v)) return second;
    return (kMax ? second.v > first.v : second.v < first.v) ? second : first;
  }
  __device__ static Out finish(Acc a, Finish) { return Out(a.i < 0 ? 0 : a.i); }
};

// ---------------------------------------------------------------------------
// Trees

// Lane 0 gets the combination of the warp's 32 states.
template <class Op>
__device__ typename Op::Acc warp_reduce(typename Op::Acc a) {
  for (int d = kWarp / 2; d > 0; d /= 2) a = Op::combine(a, shfl_down(a, d));
  return a;
}

// Thread 0 gets the combination of a kReduceBlock-thread block's states.
template <class Op>
__device__ typename Op::Acc block_reduce(typename Op::Acc a) {
  __shared__ typename Op::Acc warps[kReduceBlock / kWarp];
  int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  a = warp_reduce<Op>(a);
  if (lane == 0) warps[warp] = a;
  __syncthreads();
  if (warp == 0) a = warp_reduce<Op>(lane < kReduceBlock / kWarp ? warps[lane] : Op::identity());
  return a;
}

// ---------------------------------------------------------------------------
// Layouts of reduce_rows

struct ContiguousRows {
  int64_t count;
  __device__ int64_t base(int64_t o) const { return o * count; }
  __device__ int64_t offset(int64_t k) const { return k; }
};

struct GatheredRows {
  int kept_rank, reduced_rank;
  int64_t kept_dims[kReduceMaxRuns], kept_strides[kReduceMaxRuns];
  int64_t reduced_dims[kReduceMaxRuns], reduced_strides[kReduceMaxRuns];

  __device__ static int64_t unravel(int64_t i, int rank, const int64_t* dims,
                                    const int64_t* strides) {
    int64_t off = 0;
    for (int a = rank - 1; a >= 0; --a) {
      off += (i % dims[a]) * strides[a];
      i /= dims[a];
    }
    return off;
  }
  __device__ int64_t base(int64_t o) const {
    return unravel(o, kept_rank, kept_dims, kept_strides);
  }
  __device__ int64_t offset(int64_t k) const {
    return unravel(k, reduced_rank, reduced_dims, reduced_strides);
  }
};

struct Split {
  int64_t outputs, count;
  int64_t chunk;  // elements of a sequence per split
  int splits;
  Finish finish;
};

// blockDim (32, 8): warp y reduces output blockIdx.x*8 + y. blockDim (256, 1):
// the block reduces output blockIdx.x. blockIdx.y picks the chunk.
template <class Op, class Layout>
__global__ void __launch_bounds__(kReduceBlock)
    reduce_rows(const typename Op::In* __restrict__ x, typename Op::Out* __restrict__ out,
                typename Op::Acc* __restrict__ partials, Layout layout, Split s) {
  const int64_t o = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  const int64_t begin = int64_t(blockIdx.y) * s.chunk;
  const int64_t end = begin + s.chunk < s.count ? begin + s.chunk : s.count;
  typename Op::Acc acc = Op::identity();
  if (o < s.outputs) {
    const typename Op::In* seq = x + layout.base(o);
#pragma unroll 4
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x)
      acc = Op::combine(acc, Op::lift(seq[layout.offset(k)], k));
  }
  acc = blockDim.x == kWarp ? warp_reduce<Op>(acc) : block_reduce<Op>(acc);
  if (threadIdx.x != 0 || o >= s.outputs) return;
  if (s.splits == 1)
    out[o] = Op::finish(acc, s.finish);
  else
    partials[o * s.splits + blockIdx.y] = acc;
}

// blockDim (32, 8): thread (j, y) walks column j of the tile, rows
// begin + y, begin + y + 8, ...; then the 8 states of a column combine in
// order. blockIdx.x is the tile (outer group g, 32 columns), blockIdx.y
// the chunk. Partials are stored [split][output], coalesced.
template <class Op>
__global__ void __launch_bounds__(kReduceBlock)
    reduce_columns(const typename Op::In* __restrict__ x, typename Op::Out* __restrict__ out,
                   typename Op::Acc* __restrict__ partials, int64_t inner, Split s) {
  const int64_t tiles_per_group = (inner + kReduceColumnTile - 1) / kReduceColumnTile;
  const int64_t g = blockIdx.x / tiles_per_group;
  const int64_t j = (blockIdx.x % tiles_per_group) * kReduceColumnTile + threadIdx.x;
  const int64_t begin = int64_t(blockIdx.y) * s.chunk;
  const int64_t end = begin + s.chunk < s.count ? begin + s.chunk : s.count;
  typename Op::Acc acc = Op::identity();
  if (j < inner) {
    const typename Op::In* column = x + g * s.count * inner + j;
#pragma unroll 4
    for (int64_t k = begin + threadIdx.y; k < end; k += kColumnDepth)
      acc = Op::combine(acc, Op::lift(column[k * inner], k));
  }
  __shared__ typename Op::Acc states[kColumnDepth][kReduceColumnTile];
  states[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y != 0 || j >= inner) return;
  for (int y = 1; y < kColumnDepth; ++y) acc = Op::combine(acc, states[y][threadIdx.x]);
  const int64_t o = g * inner + j;
  if (s.splits == 1)
    out[o] = Op::finish(acc, s.finish);
  else
    partials[int64_t(blockIdx.y) * s.outputs + o] = acc;
}

// The elements of one 16-byte load of In, widened to f32.
template <class Op, int kVector>
__device__ void widen_vector(const uint4& raw, float (&v)[kVector]) {
  const typename Op::In* e = reinterpret_cast<const typename Op::In*>(&raw);
#pragma unroll
  for (int i = 0; i < kVector; ++i) v[i] = Op::lift(e[i], 0);
}

template <int kVector>
__device__ void add_to(float (&acc)[kVector], const float (&v)[kVector]) {
#pragma unroll
  for (int i = 0; i < kVector; ++i) acc[i] += v[i];
}

// reduce_columns for an f32 sum with 16-byte loads (vector_columns):
// thread (j, y) owns the kVector columns of vector j of the tile and walks
// rows begin + y, begin + y + 8, ..., loading kColumnLoads rows before
// adding them in row order, so many bytes are in flight. The 8 states of a
// column then combine in order, as in reduce_columns: each column's sum is
// the one reduce_columns computes, addition for addition.
constexpr int kColumnLoads = 4;

template <class Op>
__global__ void __launch_bounds__(kReduceBlock)
    sum_columns_vector(const typename Op::In* __restrict__ x, float* __restrict__ out,
                       float* __restrict__ partials, int64_t inner, Split s) {
  constexpr int kVector = 16 / sizeof(typename Op::In);
  const int64_t vectors = inner / kVector;
  const int64_t tiles_per_group = (vectors + kReduceColumnTile - 1) / kReduceColumnTile;
  const int64_t g = blockIdx.x / tiles_per_group;
  const int64_t j = (blockIdx.x % tiles_per_group) * kReduceColumnTile + threadIdx.x;
  const int64_t begin = int64_t(blockIdx.y) * s.chunk;
  const int64_t end = begin + s.chunk < s.count ? begin + s.chunk : s.count;
  float acc[kVector] = {};
  if (j < vectors) {
    const uint4* column = reinterpret_cast<const uint4*>(x + g * s.count * inner) + j;
    int64_t k = begin + threadIdx.y;
    for (; k + (kColumnLoads - 1) * kColumnDepth < end; k += kColumnLoads * kColumnDepth) {
      uint4 rows[kColumnLoads];
#pragma unroll
      for (int u = 0; u < kColumnLoads; ++u) rows[u] = column[(k + u * kColumnDepth) * vectors];
#pragma unroll
      for (int u = 0; u < kColumnLoads; ++u) {
        float v[kVector];
        widen_vector<Op>(rows[u], v);
        add_to(acc, v);
      }
    }
    for (; k < end; k += kColumnDepth) {
      float v[kVector];
      widen_vector<Op>(column[k * vectors], v);
      add_to(acc, v);
    }
  }
  __shared__ float states[kColumnDepth][kReduceColumnTile][kVector];
#pragma unroll
  for (int i = 0; i < kVector; ++i) states[threadIdx.y][threadIdx.x][i] = acc[i];
  __syncthreads();
  if (threadIdx.y != 0 || j >= vectors) return;
  for (int y = 1; y < kColumnDepth; ++y) add_to(acc, states[y][threadIdx.x]);
  const int64_t o = g * inner + j * kVector;
  float* to = s.splits == 1 ? out + o : partials + int64_t(blockIdx.y) * s.outputs + o;
#pragma unroll
  for (int i = 0; i < kVector; ++i) to[i] = acc[i];
}

// blockDim (32, 8): warp y combines output blockIdx.x*8 + y's partials,
// partial p of output o at partials[o*output_stride + p*split_stride].
template <class Op>
__global__ void __launch_bounds__(kReduceBlock)
    finish_partials(const typename Op::Acc* __restrict__ partials,
                    typename Op::Out* __restrict__ out, int64_t output_stride, int64_t split_stride,
                    Split s) {
  const int64_t o = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  typename Op::Acc acc = Op::identity();
  if (o < s.outputs)
    for (int p = threadIdx.x; p < s.splits; p += kWarp)
      acc = Op::combine(acc, partials[o * output_stride + p * split_stride]);
  acc = warp_reduce<Op>(acc);
  if (threadIdx.x == 0 && o < s.outputs) out[o] = Op::finish(acc, s.finish);
}

// ---------------------------------------------------------------------------
// Many sums of squares in one launch: block b works for the last tensor
// whose first block is at most b (a tensor with no blocks is never that
// one), as block (x, y) of that tensor's own reduce_rows/finish_partials
// grid would, in a one-dimensional block of kReduceBlock threads.

__device__ int multi_tensor_of(const MultiReduceParams& p, int block, bool finishing) {
  int lo = 0, hi = p.tensors - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    int first = finishing ? p.tensor[mid].first_finish_block : p.tensor[mid].first_block;
    if (first <= block)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// reduce_rows of tensor t: warp threadIdx.x / threads_per_output of the block
// reduces one output's chunk; warps and blocks mirror its (32, 8) or (256, 1) blocks.
template <class T>
__global__ void __launch_bounds__(kReduceBlock)
    multi_sum_of_squares(const __grid_constant__ MultiReduceParams p,
                         const __grid_constant__ MultiReduceBuffers b, T* __restrict__ partials) {
  using Op = SumOfSquaresOf<T>;
  const int t = multi_tensor_of(p, int(blockIdx.x), false);
  const MultiReduceTensor& m = p.tensor[t];
  const int threads = m.threads_per_output;
  const int64_t per_block = kReduceBlock / threads;
  const int64_t x_blocks = (m.outputs + per_block - 1) / per_block;
  const int64_t local = int64_t(blockIdx.x) - m.first_block;
  const int64_t split = local / x_blocks;
  const int64_t o = (local % x_blocks) * per_block + threadIdx.x / threads;
  const int lane = int(threadIdx.x) % threads;
  int64_t chunk = (m.count + m.splits - 1) / m.splits;
  if (chunk == 0) chunk = 1;  // as launch_op
  const int64_t begin = split * chunk;
  const int64_t end = begin + chunk < m.count ? begin + chunk : m.count;
  T acc = Op::identity();
  if (o < m.outputs) {
    const T* seq = static_cast<const T*>(b.input[t]) + o * m.count;
#pragma unroll 4
    for (int64_t k = begin + lane; k < end; k += threads)
      acc = Op::combine(acc, Op::lift(seq[k], k));
  }
  acc = threads == kWarp ? warp_reduce<Op>(acc) : block_reduce<Op>(acc);
  if (lane != 0 || o >= m.outputs) return;
  if (m.splits == 1)
    static_cast<T*>(b.output[t])[o] = acc;
  else
    partials[m.partials + o * m.splits + split] = acc;
}

// finish_partials of tensor t: warp y combines output x*8 + y's partials.
template <class T>
__global__ void __launch_bounds__(kReduceBlock)
    multi_finish_partials(const __grid_constant__ MultiReduceParams p,
                          const __grid_constant__ MultiReduceBuffers b,
                          const T* __restrict__ partials) {
  using Op = SumOfSquaresOf<T>;
  const int t = multi_tensor_of(p, int(blockIdx.x), true);
  const MultiReduceTensor& m = p.tensor[t];
  const int64_t o =
      (int64_t(blockIdx.x) - m.first_finish_block) * kRowsPerWarpBlock + threadIdx.x / kWarp;
  const int lane = int(threadIdx.x) % kWarp;
  T acc = Op::identity();
  if (o < m.outputs)
    for (int q = lane; q < m.splits; q += kWarp)
      acc = Op::combine(acc, partials[m.partials + o * m.splits + q]);
  acc = warp_reduce<Op>(acc);
  if (lane == 0 && o < m.outputs) static_cast<T*>(b.output[t])[o] = acc;
}

// ---------------------------------------------------------------------------
// Launching

unsigned blocks_for(int64_t items, int64_t per_block) {
  return unsigned((items + per_block - 1) / per_block);
}

template <class Op, class Layout>
void launch_rows(const ReduceParams& p, const Layout& layout, const void* input, void* output,
                 void* scratch, const Split& s, cudaStream_t stream) {
  const bool warp_mode = p.threads_per_output == kWarp;
  dim3 block = warp_mode ? dim3(kWarp, kRowsPerWarpBlock) : dim3(kReduceBlock, 1);
  dim3 grid(blocks_for(p.outputs, block.y), unsigned(s.splits));
  reduce_rows<Op, Layout><<<grid, block, 0, stream>>>(
      static_cast<const typename Op::In*>(input), static_cast<typename Op::Out*>(output),
      static_cast<typename Op::Acc*>(scratch), layout, s);
}

// Whether sum_columns_vector computes p for Op: a plain f32 sum (of f32 or
// half storage) planned with vector_columns, the input 16-byte aligned.
template <class Op>
constexpr bool kVectorSum = false;
template <>
constexpr bool kVectorSum<SumOf<float>> = true;
template <>
constexpr bool kVectorSum<StoredSumOf<Bf16Bits>> = true;
template <>
constexpr bool kVectorSum<StoredSumOf<F16Bits>> = true;

template <class Op>
bool vectorizable(const ReduceParams& p, const void* input) {
  return kVectorSum<Op> && p.vector_columns && p.inner % reduce_column_vector(p.storage) == 0 &&
         reinterpret_cast<uintptr_t>(input) % 16 == 0;
}

template <class Op>
cudaError_t launch_op(const ReduceParams& p, const void* input, void* output, void* scratch,
                      cudaStream_t stream) {
  Split s{p.outputs, p.count, (p.count + p.splits - 1) / p.splits, p.splits,
          Finish{p.count, p.correction}};
  if (s.chunk == 0) s.chunk = 1;  // count 0: every chunk is empty, as it should be
  using Acc = typename Op::Acc;
  Acc* partials = static_cast<Acc*>(scratch);
  int64_t output_stride = p.splits, split_stride = 1;  // rows: [output][split]
  switch (p.layout) {
    case ReduceLayout::Rows:
      launch_rows<Op>(p, ContiguousRows{p.count}, input, output, scratch, s, stream);
      break;
    case ReduceLayout::Gathered: {
      GatheredRows g{p.kept_rank, p.reduced_rank, {}, {}, {}, {}};
      for (int a = 0; a < kReduceMaxRuns; ++a) {
        g.kept_dims[a] = p.kept_dims[a];
        g.kept_strides[a] = p.kept_strides[a];
        g.reduced_dims[a] = p.reduced_dims[a];
        g.reduced_strides[a] = p.reduced_strides[a];
      }
      launch_rows<Op>(p, g, input, output, scratch, s, stream);
      break;
    }
    case ReduceLayout::Columns: {
      int64_t groups = p.outputs / p.inner;
      dim3 block(kReduceColumnTile, kColumnDepth);
      if constexpr (kVectorSum<Op>) {
        if (vectorizable<Op>(p, input)) {
          int64_t vectors = p.inner / reduce_column_vector(p.storage);
          int64_t tiles = groups * ((vectors + kReduceColumnTile - 1) / kReduceColumnTile);
          sum_columns_vector<Op><<<dim3(unsigned(tiles), unsigned(p.splits)), block, 0, stream>>>(
              static_cast<const typename Op::In*>(input), static_cast<float*>(output), partials,
              p.inner, s);
          output_stride = 1;  // columns: [split][output]
          split_stride = p.outputs;
          break;
        }
      }
      {
        int64_t tiles = groups * ((p.inner + kReduceColumnTile - 1) / kReduceColumnTile);
        reduce_columns<Op><<<dim3(unsigned(tiles), unsigned(p.splits)), block, 0, stream>>>(
            static_cast<const typename Op::In*>(input), static_cast<typename Op::Out*>(output),
            partials, p.inner, s);
      }
      output_stride = 1;  // columns: [split][output]
      split_stride = p.outputs;
      break;
    }
  }
  if (p.splits > 1) {
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    finish_partials<Op>
        <<<blocks_for(p.outputs, kRowsPerWarpBlock), dim3(kWarp, kRowsPerWarpBlock), 0, stream>>>(
            partials, static_cast<typename Op::Out*>(output), output_stride, split_stride, s);
  }
  return cudaGetLastError();
}

// Calls visit(Op{}) with the policy of (p.op, T); false when T has no such op.
template <class T, class Visit>
bool visit_op(const ReduceParams& p, Visit&& visit) {
  const ReduceOp op = p.op;
  if constexpr (std::is_same_v<T, float>) {
    if (p.storage != ReduceStorage::Same) {
      if (op != ReduceOp::Sum || p.square_input) return false;
      if (p.storage == ReduceStorage::BF16)
        visit(StoredSumOf<Bf16Bits>{});
      else
        visit(StoredSumOf<F16Bits>{});
      return true;
    }
  }
  if (p.storage != ReduceStorage::Same) return false;
  if constexpr (IsFloat<T>::value) {
    if (op == ReduceOp::Sum && p.square_input) {
      visit(SumOfSquaresOf<T>{});
      return true;
    }
  }
  if (p.square_input) return false;
  switch (op) {
    case ReduceOp::Sum: visit(SumOf<T>{}); return true;
    case ReduceOp::Prod: visit(ProdOf<T>{}); return true;
    case ReduceOp::Max: visit(ExtremeOf<T, true>{}); return true;
    case ReduceOp::Min: visit(ExtremeOf<T, false>{}); return true;
    case ReduceOp::ArgMax: visit(ArgExtremeOf<T, true>{}); return true;
    case ReduceOp::ArgMin: visit(ArgExtremeOf<T, false>{}); return true;
    default: break;
  }
  if constexpr (IsFloat<T>::value) {
    switch (op) {
      case ReduceOp::Mean: visit(MeanOf<T>{}); return true;
      case ReduceOp::Var: visit(MomentsOf<T, false>{}); return true;
      case ReduceOp::Std: visit(MomentsOf<T, true>{}); return true;
      case ReduceOp::LogSumExp: visit(LogSumExpOf<T>{}); return true;
      case ReduceOp::Norm: visit(NormOf<T>{}); return true;
      default: break;
    }
  }
  return false;
}

template <class Visit>
bool visit_reduce(const ReduceParams& p, Visit&& visit) {
  switch (p.type) {
    case ReduceType::F32: return visit_op<float>(p, visit);
    case ReduceType::F64: return visit_op<double>(p, visit);
    case ReduceType::I32: return visit_op<int32_t>(p, visit);
    case ReduceType::I64: return visit_op<int64_t>(p, visit);
    case ReduceType::U8: return visit_op<uint8_t>(p, visit);
    case ReduceType::U16: return visit_op<uint16_t>(p, visit);
  }
  return false;
}

// Kernel parameters beyond 4 KiB need a recent driver: stay under.
static_assert(sizeof(MultiReduceParams) + sizeof(MultiReduceBuffers) + sizeof(void*) <= 4096);

template <class T>
cudaError_t launch_multi(const MultiReduceParams& p, const MultiReduceBuffers& b, void* scratch,
                         cudaStream_t stream) {
  T* partials = static_cast<T*>(scratch);
  if (p.blocks > 0)
    multi_sum_of_squares<T><<<unsigned(p.blocks), kReduceBlock, 0, stream>>>(p, b, partials);
  if (p.finish_blocks > 0) {
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    multi_finish_partials<T>
        <<<unsigned(p.finish_blocks), kReduceBlock, 0, stream>>>(p, b, partials);
  }
  return cudaGetLastError();
}

}  // namespace

size_t reduce_scratch_bytes(const ReduceParams& p) {
  size_t bytes = 0;
  visit_reduce(p, [&](auto op) {
    using Op = decltype(op);
    if (p.splits > 1) bytes = size_t(p.outputs) * size_t(p.splits) * sizeof(typename Op::Acc);
  });
  return bytes;
}

cudaError_t launch_reduce(const ReduceParams& p, const void* input, void* output, void* scratch,
                          cudaStream_t stream) {
  cudaError_t status = cudaErrorInvalidValue;
  visit_reduce(
      p, [&](auto op) { status = launch_op<decltype(op)>(p, input, output, scratch, stream); });
  return status;
}

cudaError_t launch_multi_sum_of_squares(const MultiReduceParams& p, const MultiReduceBuffers& b,
                                        void* scratch, cudaStream_t stream) {
  switch (p.type) {
    case ReduceType::F32: return launch_multi<float>(p, b, scratch, stream);
    case ReduceType::F64: return launch_multi<double>(p, b, scratch, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace sexpgpu::cuda
