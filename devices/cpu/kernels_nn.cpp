// The fused neural kernels over one axis: softmax, log_softmax,
// cross_entropy, layer_norm and rms_norm. Each row is done in one place,
// numerically stable (the row maximum is subtracted before exp), with sums
// in f64 and one rounding to the output dtype.
#include <cmath>
#include <limits>
#include <vector>

#include "geometry.h"
#include "kernel.h"
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
    if (s == 1) return vmath::softmax_f32(x, o, K);
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

template <class T, class I>
Kernel cross_entropy_kernel(const KernelRequest& r) {
  const ir::Shape& logits = r.inputs[0].shape;
  int64_t C = logits.rank() == 0 ? 1 : logits[logits.rank() - 1];
  int64_t rows = C == 0 ? 0 : numel(logits) / C;
  std::optional<int64_t> ignore = r.attrs.ignore_index;
  std::string reduction = r.attrs.reduction.value_or("mean");
  KernelFn fn = [=](const void* const* in, void* out) -> std::string {
    const T* x = static_cast<const T*>(in[0]);
    const I* t = static_cast<const I*>(in[1]);
    T* o = static_cast<T*>(out);
    double total = 0;
    int64_t counted = 0;
    for (int64_t row = 0; row < rows; ++row) {
      int64_t target = int64_t(t[row]);
      double loss = 0;
      if (ignore && target == *ignore) {
        loss = 0;
      } else if (target < 0 || target >= C) {
        return "target " + std::to_string(target) + " (row " + std::to_string(row) +
               ") is out of range for " + std::to_string(C) + " classes";
      } else {
        const T* xr = x + row * C;
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t c = 0; c < C; ++c) m = std::fmax(m, double(xr[c]));
        double sum = 0;
        for (int64_t c = 0; c < C; ++c) sum += std::exp(double(xr[c]) - m);
        loss = m + std::log(sum) - double(xr[target]);
        ++counted;
      }
      if (reduction == "none") o[row] = T(loss);
      total += loss;
    }
    if (reduction == "sum") o[0] = T(total);
    if (reduction == "mean") o[0] = T(counted == 0 ? 0.0 : total / double(counted));
    return {};
  };
  return Kernel{std::move(fn), kernel_label(r.op, r.output.dtype) + " " + reduction};
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
        double mean = 0, ss = 0;
        if constexpr (std::is_same_v<T, float>) {  // in lanes, not one latency-bound chain
          if constexpr (kLayer) mean = vmath::sum_f64(xr, D) / double(D);
          ss = vmath::sum_squares_f64(xr, D, mean);
        } else {
          if constexpr (kLayer) {
            for (int64_t d = 0; d < D; ++d) mean += double(xr[d]);
            mean /= double(D);
          }
          for (int64_t d = 0; d < D; ++d) {
            double c = double(xr[d]) - mean;
            ss += c * c;
          }
        }
        double inv = 1.0 / std::sqrt(ss / double(D) + eps);
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

template <class T>
KernelResult nn_for(const KernelRequest& r) {
  switch (r.op) {
    case Op::Softmax: return softmax_kernel<T, false>(r);
    case Op::LogSoftmax: return softmax_kernel<T, true>(r);
    case Op::LayerNorm: return norm_kernel<T, true>(r);
    case Op::RmsNorm: return norm_kernel<T, false>(r);
    case Op::CrossEntropy:
      switch (r.inputs[1].dtype) {
        case ir::DType::I32: return cross_entropy_kernel<T, int32_t>(r);
        case ir::DType::I64: return cross_entropy_kernel<T, int64_t>(r);
        case ir::DType::U8: return cross_entropy_kernel<T, uint8_t>(r);
        case ir::DType::U16: return cross_entropy_kernel<T, uint16_t>(r);
        default: return no_kernel(r, "the targets need an integer dtype");
      }
    default: return no_kernel(r, "not a fused neural op");
  }
}

}  // namespace

KernelResult make_nn_kernel(const KernelRequest& r) {
  ir::DType d = r.output.dtype;
  if (d != ir::DType::F32 && d != ir::DType::F64)
    return no_kernel(r, "operands must be lowered to f32 or f64 first");
  for (size_t i = 0; i < r.inputs.size(); ++i)
    if (!(r.op == Op::CrossEntropy && i == 1) && r.inputs[i].dtype != d)
      return no_kernel(r, "operands must be lowered to the compute dtype first");
  if (d == ir::DType::F64) return nn_for<double>(r);
  return nn_for<float>(r);
}

}  // namespace sexpgpu::cpu
