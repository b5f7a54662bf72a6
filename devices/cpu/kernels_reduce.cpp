// Reductions (ops.def, "Reductions"): sum prod max min mean var std
// logsumexp norm argmax argmin over `axes` (absent: all). Floats accumulate
// in f64 and round once at the output; integers wrap in their own type.
// Each output element reduces a sequence of K inputs: contiguous when the
// reduced axes are the trailing ones (the fast, common case), a run of stride
// `inner` when they are one block in the middle, or a list of offsets.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernel.h"
#include "parallel.h"
#include "scalar_ops.h"
#include "storage.h"
#include "vector_math.h"

namespace sexpgpu::cpu {
namespace {

using ir::Op;

// Where each output element's sequence lies in the input.
struct ReduceLayout {
  int64_t outputs = 1, K = 1;
  // Trailing block: element k of output o is at o*K + k. Middle block: at
  // (o / inner)*K*inner + k*inner + o % inner. Otherwise offsets below.
  bool trailing = false, block = false;
  int64_t inner = 1;
  Dims kept_dims, kept_strides;  // general case: the output index to a base offset
  std::vector<int64_t> offsets;  // general case: k to an offset from the base

  int64_t base(int64_t o) const {
    if (trailing) return o * K;
    if (block) return (o / inner) * K * inner + o % inner;
    int64_t off = 0;
    for (size_t a = kept_dims.size(); a-- > 0;) {
      off += (o % kept_dims[a]) * kept_strides[a];
      o /= kept_dims[a];
    }
    return off;
  }
  int64_t step() const { return block ? inner : 1; }
};

ReduceLayout layout_of(const ir::Shape& x, const ir::Attrs& attrs) {
  int64_t rank = x.rank();
  std::vector<bool> reduced(size_t(rank), !attrs.axes);
  if (attrs.axes)
    for (int64_t a : *attrs.axes) reduced[size_t(norm_axis(a, rank))] = true;
  ReduceLayout L;
  Dims strides = contiguous_strides(x);
  int64_t first = rank, last = -1;
  for (int64_t a = 0; a < rank; ++a) {
    if (reduced[size_t(a)]) {
      L.K *= x[a];
      first = std::min(first, a);
      last = a;
    } else {
      L.outputs *= x[a];
      L.kept_dims.push_back(x[a]);
      L.kept_strides.push_back(strides[size_t(a)]);
    }
  }
  bool one_block = true;
  for (int64_t a = first; a <= last; ++a) one_block = one_block && reduced[size_t(a)];
  if (last < 0 || (one_block && last == rank - 1)) {
    L.trailing = true;
  } else if (one_block) {
    L.block = true;
    L.inner = 1;
    for (int64_t a = last + 1; a < rank; ++a) L.inner *= x[a];
  } else {  // the offsets of the reduced axes, row-major over them
    L.offsets.push_back(0);
    for (int64_t a = 0; a < rank; ++a) {
      if (!reduced[size_t(a)]) continue;
      std::vector<int64_t> next;
      next.reserve(L.offsets.size() * size_t(x[a]));
      for (int64_t off : L.offsets)
        for (int64_t i = 0; i < x[a]; ++i) next.push_back(off + i * strides[size_t(a)]);
      L.offsets = std::move(next);
    }
  }
  return L;
}

template <class T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;

// The reduction of one sequence get(0..K-1) by `op`, as output type O.
template <Op op, class T, class O, class Get>
O reduce_one(int64_t K, Get get, int64_t correction) {
  if constexpr (op == Op::Sum || op == Op::Mean || op == Op::Norm) {
    Acc<T> acc = 0;
    for (int64_t k = 0; k < K; ++k) {
      Acc<T> v = get(k);
      if constexpr (op == Op::Norm) v = v * v;
      if constexpr (std::is_floating_point_v<T>)
        acc += v;
      else
        acc = scalar::wrap_add(acc, v);
    }
    if constexpr (op == Op::Mean)
      return O(double(acc) / double(K));
    else if constexpr (op == Op::Norm)
      return O(std::sqrt(double(acc)));
    else
      return O(acc);
  } else if constexpr (op == Op::Prod) {
    Acc<T> acc = 1;
    for (int64_t k = 0; k < K; ++k) {
      if constexpr (std::is_floating_point_v<T>)
        acc *= Acc<T>(get(k));
      else
        acc = scalar::wrap_mul(acc, get(k));
    }
    return O(acc);
  } else if constexpr (op == Op::Max || op == Op::Min) {
    constexpr Op pick = op == Op::Max ? Op::Maximum : Op::Minimum;
    T acc = op == Op::Max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    if constexpr (std::is_floating_point_v<T>)
      acc =
          op == Op::Max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    for (int64_t k = 0; k < K; ++k) acc = scalar::binary<pick, T>(acc, get(k));
    return acc;
  } else if constexpr (op == Op::Var || op == Op::Std) {
    double mean = 0;
    for (int64_t k = 0; k < K; ++k) mean += double(get(k));
    mean /= double(K);
    double ss = 0;
    for (int64_t k = 0; k < K; ++k) {
      double d = double(get(k)) - mean;
      ss += d * d;
    }
    double var = ss / double(K - correction);
    return O(op == Op::Std ? std::sqrt(var) : var);
  } else if constexpr (op == Op::LogSumExp) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t k = 0; k < K; ++k) m = std::fmax(m, double(get(k)));
    if (std::isinf(m)) return O(m);  // all -inf (or empty), or some +inf
    double s = 0;
    for (int64_t k = 0; k < K; ++k) s += std::exp(double(get(k)) - m);
    return O(m + std::log(s));
  } else if constexpr (op == Op::ArgMax || op == Op::ArgMin) {
    // The first extreme; a NaN is extreme (NumPy's and PyTorch's rule).
    int64_t best = 0;
    for (int64_t k = 1; k < K; ++k) {
      T v = get(k), b = get(best);
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(b)) break;
        if (std::isnan(v)) {
          best = k;
          break;
        }
      }
      if (op == Op::ArgMax ? v > b : v < b) best = k;
    }
    return O(best);
  }
}

// Sum or mean of a middle block (e.g. [B, T, C] -> [C], the gradient of a
// broadcast bias): output o = (g, j) sums x[g*K*inner + k*inner + j] over
// k. Walking whole rows of `inner` contiguous elements into a small
// accumulator tile vectorises; one strided sequence per output does not.
template <Op op, class T, class O>
void sum_block_rows(const T* x, O* o, const ReduceLayout& L, int64_t begin, int64_t end) {
  constexpr int64_t kTile = 256;
  Acc<T> acc[kTile];
  for (int64_t i = begin; i < end;) {
    int64_t group = i / L.inner, j0 = i % L.inner;
    int64_t width = std::min({kTile, L.inner - j0, end - i});
    const T* base = x + group * L.K * L.inner + j0;
    for (int64_t j = 0; j < width; ++j) acc[j] = 0;
    for (int64_t k = 0; k < L.K; ++k) {
      const T* row = base + k * L.inner;
      for (int64_t j = 0; j < width; ++j) acc[j] = scalar::wrap_add(acc[j], Acc<T>(row[j]));
    }
    for (int64_t j = 0; j < width; ++j)
      o[i + j] = op == Op::Mean ? O(double(acc[j]) / double(L.K)) : O(acc[j]);
    i += width;
  }
}

template <Op op, class T, class O>
Kernel reduce_kernel(const KernelRequest& r) {
  ReduceLayout L = layout_of(r.inputs[0].shape, r.attrs);
  int64_t correction = r.attrs.correction.value_or(1);
  int threads = r.threads;
  std::string name = kernel_label(op, r.inputs[0].dtype) + (L.trailing ? " trailing"
                                                            : L.block  ? " strided"
                                                                       : " gathered");
  KernelFn fn = [L, correction, threads](const void* const* in, void* out) -> std::string {
    const T* x = static_cast<const T*>(in[0]);
    O* o = static_cast<O*>(out);
    if constexpr ((op == Op::Sum || op == Op::Mean) && std::is_same_v<T, float>) {
      if (L.trailing) {  // in independent lanes: one f64 chain per row is latency-bound
        parallel_range(L.outputs, L.K, threads, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            double sum = vmath::sum_f64(x + i * L.K, L.K);
            o[i] = O(op == Op::Mean ? sum / double(L.K) : sum);
          }
        });
        return {};
      }
    }
    if constexpr (op == Op::Sum || op == Op::Mean) {
      if (L.block) {
        parallel_range(L.outputs, L.K, threads,
                       [&](int64_t b, int64_t e) { sum_block_rows<op, T, O>(x, o, L, b, e); });
        return {};
      }
    }
    parallel_range(L.outputs, L.K, threads, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T* base = x + L.base(i);
        if (L.trailing) {
          o[i] = reduce_one<op, T, O>(
              L.K, [base](int64_t k) { return base[k]; }, correction);
        } else if (L.block) {
          int64_t s = L.inner;
          o[i] = reduce_one<op, T, O>(
              L.K, [base, s](int64_t k) { return base[k * s]; }, correction);
        } else {
          const int64_t* offs = L.offsets.data();
          o[i] = reduce_one<op, T, O>(
              L.K, [base, offs](int64_t k) { return base[offs[k]]; }, correction);
        }
      }
    });
    return {};
  };
  return Kernel{std::move(fn), std::move(name)};
}

template <class T>
KernelResult reduce_for(const KernelRequest& r) {
  switch (r.op) {
    case Op::Sum: return reduce_kernel<Op::Sum, T, T>(r);
    case Op::Prod: return reduce_kernel<Op::Prod, T, T>(r);
    case Op::Max: return reduce_kernel<Op::Max, T, T>(r);
    case Op::Min: return reduce_kernel<Op::Min, T, T>(r);
    case Op::ArgMax: return reduce_kernel<Op::ArgMax, T, int32_t>(r);
    case Op::ArgMin: return reduce_kernel<Op::ArgMin, T, int32_t>(r);
    default: break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (r.op) {
      case Op::Mean: return reduce_kernel<Op::Mean, T, T>(r);
      case Op::Var: return reduce_kernel<Op::Var, T, T>(r);
      case Op::Std: return reduce_kernel<Op::Std, T, T>(r);
      case Op::LogSumExp: return reduce_kernel<Op::LogSumExp, T, T>(r);
      case Op::Norm: return reduce_kernel<Op::Norm, T, T>(r);
      default: break;
    }
  }
  return no_kernel(r, "no reduction kernel for this dtype");
}

}  // namespace

KernelResult make_reduce_kernel(const KernelRequest& r) {
  ir::DType d = r.inputs[0].dtype;
  if (d == ir::DType::BF16 || d == ir::DType::F16 || d == ir::DType::Bool)
    return no_kernel(r, "operands must be lowered to a compute dtype first");
  return dispatch_compute(d, [&](auto t) { return reduce_for<decltype(t)>(r); });
}

}  // namespace sexpgpu::cpu
