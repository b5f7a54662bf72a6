// The fused neural kernels over one axis: softmax, log_softmax,
// cross_entropy and its gradient, layer_norm (and its gradients with
// respect to x and to the weight and bias) and rms_norm. Each row is done
// in one place, numerically stable (the row maximum is subtracted before
// exp), with sums in f64 and one rounding to the output dtype.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "gemm.h"
#include "kernel.h"
#include "parallel.h"
#include "storage.h"
#include "vector_math.h"

namespace sexpgpu::cpu {
namespace {

using ir::Op;

// x viewed as [outer, K, inner] around `axis`.
struct AxisGeometry {
  int64_t outer = 1, K = 1, inner = 1;
};

AxisGeometry axis_geometry(const ir::Shape& x, int64_t axis) {
  AxisGeometry g;
  for (int64_t a = 0; a < x.rank(); ++a) (a < axis ? g.outer : a == axis ? g.K : g.inner) *= x[a];
  return g;
}

// softmax or log_softmax of the strided row x[k*s], k < K, into o[k*s].
template <class T, bool kLog>
void softmax_row(const T* x, T* o, int64_t K, int64_t s) {
  if constexpr (std::is_same_v<T, float> && !kLog) {
    if (s == 1) {
      vmath::softmax_f32(x, o, K);
      return;
    }
  }
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < K; ++k) m = std::fmax(m, double(x[k * s]));
  if (std::isinf(m) && m < 0) m = 0;  // every entry -inf: exp gives 0s, the sum 0
  double sum = 0;
  for (int64_t k = 0; k < K; ++k) sum += std::exp(double(x[k * s]) - m);
  if constexpr (kLog) {
    double lse = m + std::log(sum);
    for (int64_t k = 0; k < K; ++k) o[k * s] = T(double(x[k * s]) - lse);
  } else {
    for (int64_t k = 0; k < K; ++k) o[k * s] = T(std::exp(double(x[k * s]) - m) / sum);
  }
}

template <class T, bool kLog>
Kernel softmax_kernel(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  AxisGeometry g = axis_geometry(x, norm_axis(r.attrs.axis.value_or(-1), x.rank()));
  int threads = r.threads;
  KernelFn fn = [g, threads](const void* const* in, void* out) -> std::string {
    const T* x = static_cast<const T*>(in[0]);
    T* o = static_cast<T*>(out);
    parallel_range(g.outer * g.inner, g.K * 8, threads, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        int64_t base = (row / g.inner) * g.K * g.inner + row % g.inner;
        softmax_row<T, kLog>(x + base, o + base, g.K, g.inner);
      }
    });
    return {};
  };
  return Kernel{std::move(fn),
                kernel_label(r.op, r.output.dtype) + (g.inner == 1 ? " rows" : " strided")};
}

// The first row whose target is outside [0, C) and not ignore_index, said
// as the run's error; "" when there is none.
template <class I>
std::string target_range_error(const I* t, int64_t rows, int64_t C, std::optional<int64_t> ignore) {
  for (int64_t row = 0; row < rows; ++row) {
    int64_t target = int64_t(t[row]);
    if ((target < 0 || target >= C) && !(ignore && target == *ignore))
      return "target " + std::to_string(target) + " (row " + std::to_string(row) +
             ") is out of range for " + std::to_string(C) + " classes";
  }
  return "";
}

// One row's -log_softmax(x)[target] in f64 (the f32 sums in lanes).
template <class T>
double row_cross_entropy(const T* xr, int64_t C, int64_t target) {
  if constexpr (std::is_same_v<T, float>) {
    float m = vmath::max_f32(xr, C);
    return double(m) + std::log(vmath::sum_exp_f64(xr, C, m)) - double(xr[target]);
  } else {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < C; ++c) m = std::fmax(m, double(xr[c]));
    double sum = 0;
    for (int64_t c = 0; c < C; ++c) sum += std::exp(double(xr[c]) - m);
    return m + std::log(sum) - double(xr[target]);
  }
}

template <class T, class I>
Kernel cross_entropy_kernel(const KernelRequest& r) {
  const ir::Shape& logits = r.inputs[0].shape;
  int64_t C = logits.rank() == 0 ? 1 : logits[logits.rank() - 1];
  int64_t rows = C == 0 ? 0 : numel(logits) / C;
  std::optional<int64_t> ignore = r.attrs.ignore_index;
  std::string reduction = r.attrs.reduction.value_or("mean");
  int threads = r.threads;
  KernelFn fn = [=](const void* const* in, void* out) -> std::string {
    const T* x = static_cast<const T*>(in[0]);
    const I* t = static_cast<const I*>(in[1]);
    T* o = static_cast<T*>(out);
    auto ignored = [&](int64_t row) { return ignore && int64_t(t[row]) == *ignore; };
    if (std::string e = target_range_error(t, rows, C, ignore); !e.empty()) return e;
    // Rows across threads, each row's loss kept, then summed in row order:
    // the same total at any thread count.
    std::vector<double> losses(size_t(rows), 0.0);
    parallel_range(rows, C * 8, threads, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        if (!ignored(row)) losses[size_t(row)] = row_cross_entropy(x + row * C, C, int64_t(t[row]));
      }
    });
    double total = 0;
    int64_t counted = 0;
    for (int64_t row = 0; row < rows; ++row) {
      if (reduction == "none") o[row] = T(losses[size_t(row)]);
      total += losses[size_t(row)];
      counted += !ignored(row);
    }
    if (reduction == "sum") o[0] = T(total);
    if (reduction == "mean") o[0] = T(counted == 0 ? 0.0 : total / double(counted));
    return {};
  };
  return Kernel{std::move(fn), kernel_label(r.op, r.output.dtype) + " " + reduction};
}

// cross_entropy_grad: each row's softmax (as the softmax kernel computes it)
// less the one-hot of its target, times the row's scale, which is 0 in an
// ignored row, g (or g / max(counted rows, 1) for "mean") in the others:
// the written-out rule's operations in its order.
template <class T, class I>
Kernel cross_entropy_grad_kernel(const KernelRequest& r) {
  const ir::Shape& logits = r.inputs[0].shape;
  int64_t C = logits[logits.rank() - 1];
  int64_t rows = C == 0 ? 0 : numel(logits) / C;
  std::optional<int64_t> ignore = r.attrs.ignore_index;
  std::string reduction = r.attrs.reduction.value_or("mean");
  int threads = r.threads;
  KernelFn fn = [=](const void* const* in, void* out) -> std::string {
    const T* x = static_cast<const T*>(in[0]);
    const I* t = static_cast<const I*>(in[1]);
    const T* g = static_cast<const T*>(in[2]);
    T* o = static_cast<T*>(out);
    auto ignored = [&](int64_t row) { return ignore && int64_t(t[row]) == *ignore; };
    T shared_scale = reduction == "none" ? T(0) : g[0];
    if (reduction == "mean") {
      int64_t counted = rows;
      if (ignore)
        for (int64_t row = 0; row < rows; ++row) counted -= ignored(row);
      shared_scale = shared_scale / T(std::max<int64_t>(counted, 1));
    }
    parallel_range(rows, C * 8, threads, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        T scale = ignored(row) ? T(0) : reduction == "none" ? g[row] : shared_scale;
        int64_t target = int64_t(t[row]);
        softmax_row<T, false>(x + row * C, o + row * C, C, 1);
        T* orow = o + row * C;
        for (int64_t c = 0; c < C; ++c) orow[c] = (orow[c] - T(c == target ? 1 : 0)) * scale;
      }
    });
    return {};
  };
  return Kernel{std::move(fn), kernel_label(r.op, r.output.dtype) + " " + reduction};
}

struct RowStatistics {
  double mean, rstd;
};

// A row's mean (0 without `centered`: rms_norm) and 1 / sqrt(mean square
// about it + eps), the f32 sums in lanes, not one latency-bound chain. The
// forward and both gradients use it, so the gradients see the forward's
// statistics.
template <class T>
RowStatistics row_statistics(const T* xr, int64_t D, double eps, bool centered = true) {
  double mean = 0, ss = 0;
  if constexpr (std::is_same_v<T, float>) {
    if (centered) mean = vmath::sum_f64(xr, D) / double(D);
    ss = vmath::sum_squares_f64(xr, D, mean);
  } else {
    if (centered) {
      for (int64_t d = 0; d < D; ++d) mean += double(xr[d]);
      mean /= double(D);
    }
    for (int64_t d = 0; d < D; ++d) ss += (double(xr[d]) - mean) * (double(xr[d]) - mean);
  }
  return {mean, 1.0 / std::sqrt(ss / double(D) + eps)};
}

// layer_norm (with bias) or rms_norm (without) over the last axis.
template <class T, bool kLayer>
Kernel norm_kernel(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  int64_t D = x.rank() == 0 ? 1 : x[x.rank() - 1];
  int64_t rows = D == 0 ? 0 : numel(x) / D;
  double eps = r.attrs.eps.value_or(kLayer ? 1e-5 : 1e-6);
  int threads = r.threads;
  KernelFn fn = [=](const void* const* in, void* out) -> std::string {
    const T* xs = static_cast<const T*>(in[0]);
    const T* w = static_cast<const T*>(in[1]);
    const T* bias = kLayer ? static_cast<const T*>(in[2]) : nullptr;
    T* o = static_cast<T*>(out);
    parallel_range(rows, D * 4, threads, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        const T* xr = xs + row * D;
        T* orow = o + row * D;
        const auto [mean, inv] = row_statistics(xr, D, eps, kLayer);
        for (int64_t d = 0; d < D; ++d) {
          double y = (double(xr[d]) - mean) * inv * double(w[d]);
          if constexpr (kLayer) y += double(bias[d]);
          orow[d] = T(y);
        }
      }
    });
    return {};
  };
  return Kernel{std::move(fn), kernel_label(r.op, r.output.dtype)};
}

// Kernel<T, I> of a cross_entropy op by its targets' dtype I.
template <class T, template <class, class> class K>
KernelResult by_targets(const KernelRequest& r) {
  switch (r.inputs[1].dtype) {
    case ir::DType::I32: return K<T, int32_t>::make(r);
    case ir::DType::I64: return K<T, int64_t>::make(r);
    case ir::DType::U8: return K<T, uint8_t>::make(r);
    case ir::DType::U16: return K<T, uint16_t>::make(r);
    default: return no_kernel(r, "the targets need an integer dtype");
  }
}

template <class T, class I>
struct CrossEntropy {
  static Kernel make(const KernelRequest& r) { return cross_entropy_kernel<T, I>(r); }
};
template <class T, class I>
struct CrossEntropyGrad {
  static Kernel make(const KernelRequest& r) { return cross_entropy_grad_kernel<T, I>(r); }
};

// layer_norm_grad: per row, mean and rstd as norm_kernel computes them, the
// sums of gh = g w and of gh xhat in f64, then rstd (gh - mean(gh) - xhat
// mean(gh xhat)), rounded once.
template <class T>
Kernel layer_norm_grad_kernel(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  int64_t D = x[x.rank() - 1];
  int64_t rows = D == 0 ? 0 : numel(x) / D;
  double eps = r.attrs.eps.value_or(1e-5);
  int threads = r.threads;
  KernelFn fn = [=](const void* const* in, void* out) -> std::string {
    const T* xs = static_cast<const T*>(in[0]);
    const T* w = static_cast<const T*>(in[1]);
    const T* gs = static_cast<const T*>(in[2]);
    T* o = static_cast<T*>(out);
    parallel_range(rows, D * 10, threads, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        const T *xr = xs + row * D, *gr = gs + row * D;
        auto [mean, rstd] = row_statistics(xr, D, eps);
        // In vmath::kLanes accumulators, not one latency-bound chain.
        constexpr int64_t L = vmath::kLanes;
        double lane_gh[L] = {}, lane_ghx[L] = {};
        auto add = [&, mean = mean, rstd = rstd](int64_t d, int64_t lane) {
          double gh = double(gr[d]) * double(w[d]);
          lane_gh[lane] += gh;
          lane_ghx[lane] += gh * (double(xr[d]) - mean) * rstd;
        };
        int64_t d0 = 0;
        for (; d0 + L <= D; d0 += L)
          for (int64_t j = 0; j < L; ++j) add(d0 + j, j);
        for (; d0 < D; ++d0) add(d0, 0);
        double sum_gh = 0, sum_ghx = 0;
        for (int64_t j = 0; j < L; ++j) sum_gh += lane_gh[j], sum_ghx += lane_ghx[j];
        double mean_gh = sum_gh / double(D), mean_ghx = sum_ghx / double(D);
        for (int64_t d = 0; d < D; ++d) {
          double xhat = (double(xr[d]) - mean) * rstd;
          double gh = double(gr[d]) * double(w[d]);
          o[row * D + d] = T(rstd * (gh - mean_gh - xhat * mean_ghx));
        }
      }
    });
    return {};
  };
  return Kernel{std::move(fn), kernel_label(r.op, r.output.dtype)};
}

// layer_norm_param_grad: each row's mean and rstd as layer_norm_grad's,
// then the column sums of g xhat (row 0) and of g (row 1) in f64, rounded
// once. Threads split the columns, so each sum runs over the rows in order
// whatever their number.
template <class T>
Kernel layer_norm_param_grad_kernel(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  int64_t D = x[x.rank() - 1];
  int64_t rows = D == 0 ? 0 : numel(x) / D;
  double eps = r.attrs.eps.value_or(1e-5);
  int threads = r.threads;
  KernelFn fn = [=](const void* const* in, void* out) -> std::string {
    const T* xs = static_cast<const T*>(in[0]);
    const T* gs = static_cast<const T*>(in[1]);
    T* o = static_cast<T*>(out);
    std::vector<RowStatistics> stats(static_cast<size_t>(rows));
    parallel_range(rows, D * 3, threads, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row)
        stats[size_t(row)] = row_statistics(xs + row * D, D, eps);
    });
    parallel_range(D, rows * 5, threads, [&](int64_t b, int64_t e) {
      std::vector<double> weight(size_t(e - b), 0.0), bias(size_t(e - b), 0.0);
      for (int64_t row = 0; row < rows; ++row) {
        const T *xr = xs + row * D, *gr = gs + row * D;
        RowStatistics st = stats[size_t(row)];
        for (int64_t d = b; d < e; ++d) {
          double g = double(gr[d]);
          weight[size_t(d - b)] += g * ((double(xr[d]) - st.mean) * st.rstd);
          bias[size_t(d - b)] += g;
        }
      }
      for (int64_t d = b; d < e; ++d) {
        o[d] = T(weight[size_t(d - b)]);
        o[D + d] = T(bias[size_t(d - b)]);
      }
    });
    return {};
  };
  return Kernel{std::move(fn), kernel_label(r.op, r.output.dtype)};
}

// linear_cross_entropy: blocks of rows of at most kClassifierBlockBytes of
// logits each: z = x w into the block, each row's loss (as cross_entropy's)
// and its dz = (softmax - one_hot) g in place, then dx = dz w^T for those
// rows and dw += x^T dz. The losses are added in row order, in f64.
inline constexpr int64_t kClassifierBlockBytes = int64_t(64) << 20;

template <class T, class I>
Kernel linear_cross_entropy_kernel(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  const int64_t C = r.inputs[1].shape[0], V = r.inputs[1].shape[1];
  const int64_t rows = C == 0 ? numel(x) == 0 ? 0 : 1 : numel(x) / C;
  const int64_t block =
      std::clamp<int64_t>(kClassifierBlockBytes / std::max<int64_t>(V * int64_t(sizeof(T)), 1), 1,
                          std::max<int64_t>(rows, 1));
  std::optional<int64_t> ignore = r.attrs.ignore_index;
  int threads = r.threads;
  KernelFn fn = [=](const void* const* in, void* out) -> std::string {
    const T* xs = static_cast<const T*>(in[0]);
    const T* w = static_cast<const T*>(in[1]);
    const I* t = static_cast<const I*>(in[2]);
    const T g = static_cast<const T*>(in[3])[0];
    T* o = static_cast<T*>(out);
    T *dx = o, *dw = o + rows * C;
    if (std::string e = target_range_error(t, rows, V, ignore); !e.empty()) return e;
    std::fill(dw, dw + C * V, T(0));
    std::vector<T> z(size_t(block * V));
    std::vector<double> losses(size_t(rows), 0.0);
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
      const int64_t n = std::min(block, rows - r0);
      const T* xb = xs + r0 * C;
      gemm(false, false, n, V, C, T(1), xb, C, w, V, T(0), z.data(), V, threads);
      parallel_range(n, V * 8, threads, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t row = r0 + i, target = int64_t(t[row]);
          const bool ignored = ignore && target == *ignore;
          T* zr = z.data() + i * V;
          const T scale = ignored ? T(0) : g;
          if constexpr (std::is_same_v<T, float>) {
            // One pass of exps for the loss and the softmax (vector_math.h).
            const double z_target = ignored ? 0.0 : double(zr[target]);
            float m = 0;
            const double sum = vmath::softmax_f32(zr, zr, V, &m);
            if (!ignored)
              losses[size_t(row)] = std::isinf(m) && m < 0
                                        ? std::numeric_limits<double>::quiet_NaN()
                                        : double(m) + std::log(sum) - z_target;
          } else {
            if (!ignored) losses[size_t(row)] = row_cross_entropy(zr, V, target);
            softmax_row<T, false>(zr, zr, V, 1);
          }
          for (int64_t c = 0; c < V; ++c) zr[c] = (zr[c] - T(c == target ? 1 : 0)) * scale;
        }
      });
      gemm(false, true, n, C, V, T(1), z.data(), V, w, V, T(0), dx + r0 * C, C, threads);
      gemm(true, false, C, V, n, T(1), xb, C, z.data(), V, T(1), dw, V, threads);
    }
    double total = 0;
    for (double l : losses) total += l;
    o[rows * C + C * V] = T(total);
    return {};
  };
  return Kernel{std::move(fn),
                kernel_label(r.op, r.output.dtype) + " block=" + std::to_string(block)};
}

template <class T>
KernelResult linear_cross_entropy_for(const KernelRequest& r) {
  switch (r.inputs[2].dtype) {
    case ir::DType::I32: return linear_cross_entropy_kernel<T, int32_t>(r);
    case ir::DType::I64: return linear_cross_entropy_kernel<T, int64_t>(r);
    case ir::DType::U8: return linear_cross_entropy_kernel<T, uint8_t>(r);
    case ir::DType::U16: return linear_cross_entropy_kernel<T, uint16_t>(r);
    default: return no_kernel(r, "the targets need an integer dtype");
  }
}

template <class T>
KernelResult nn_for(const KernelRequest& r) {
  switch (r.op) {
    case Op::Softmax: return softmax_kernel<T, false>(r);
    case Op::LogSoftmax: return softmax_kernel<T, true>(r);
    case Op::LayerNorm: return norm_kernel<T, true>(r);
    case Op::RmsNorm: return norm_kernel<T, false>(r);
    case Op::LayerNormGrad: return layer_norm_grad_kernel<T>(r);
    case Op::LayerNormParamGrad: return layer_norm_param_grad_kernel<T>(r);
    case Op::CrossEntropy: return by_targets<T, CrossEntropy>(r);
    case Op::CrossEntropyGrad: return by_targets<T, CrossEntropyGrad>(r);
    case Op::LinearCrossEntropy: return linear_cross_entropy_for<T>(r);
    default: return no_kernel(r, "not a fused neural op");
  }
}

// The operand that holds a cross-entropy's integer targets, or -1.
int targets_operand(Op op) {
  if (op == Op::CrossEntropy || op == Op::CrossEntropyGrad) return 1;
  return op == Op::LinearCrossEntropy ? 2 : -1;
}

}  // namespace

KernelResult make_nn_kernel(const KernelRequest& r) {
  ir::DType d = r.output.dtype;
  if (d != ir::DType::F32 && d != ir::DType::F64)
    return no_kernel(r, "operands must be lowered to f32 or f64 first");
  for (size_t i = 0; i < r.inputs.size(); ++i)
    if (int(i) != targets_operand(r.op) && r.inputs[i].dtype != d)
      return no_kernel(r, "operands must be lowered to the compute dtype first");
  if (d == ir::DType::F64) return nn_for<double>(r);
  return nn_for<float>(r);
}

}  // namespace sexpgpu::cpu
