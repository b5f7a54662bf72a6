// max_pool2d, avg_pool2d and their gradients (ops.def, "Neural") on NCHW.
// Windows of `kernel` every `stride` (default: the kernel) over the input
// padded by `padding`; max pads with -inf (padding never wins), avg counts
// the padding (PyTorch's count_include_pad=True, so it divides by KH*KW).
// The max gradient routes each window's g to the window's first maximum.
#include <cmath>
#include <limits>

#include "kernel.h"
#include "plan/geometry.h"
#include "storage.h"

namespace sexpgpu::cpu {
namespace {

using ir::Op;

struct PoolGeometry {
  int64_t planes, H, W, OH, OW, KH, KW, sh, sw, ph, pw;
};

PoolGeometry pool_geometry(const ir::Shape& x, const ir::Shape& y, const ir::Attrs& a) {
  auto at = [](const std::optional<ir::Dims>& v, size_t i, int64_t fallback) {
    return v && v->size() > i ? (*v)[i] : fallback;
  };
  int64_t kh = at(a.kernel, 0, 1), kw = at(a.kernel, 1, 1);
  return PoolGeometry{x[0] * x[1],
                      x[2],
                      x[3],
                      y[2],
                      y[3],
                      kh,
                      kw,
                      at(a.stride, 0, kh),
                      at(a.stride, 1, kw),
                      at(a.padding, 0, 0),
                      at(a.padding, 1, 0)};
}

// Calls f(window_index, x_index) for every in-bounds input position of
// every window of every plane (window_index indexes the pooled output).
template <class F>
void for_each_window(const PoolGeometry& g, F f) {
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        int64_t win = (p * g.OH + oh) * g.OW + ow;
        f.begin(win);
        for (int64_t kh = 0; kh < g.KH; ++kh) {
          int64_t ih = oh * g.sh - g.ph + kh;
          if (ih < 0 || ih >= g.H) continue;
          for (int64_t kw = 0; kw < g.KW; ++kw) {
            int64_t iw = ow * g.sw - g.pw + kw;
            if (iw >= 0 && iw < g.W) f.visit((p * g.H + ih) * g.W + iw);
          }
        }
        f.end(win);
      }
}

// The index of the first maximum of a window (-1 when it is all padding).
template <class T>
struct ArgMaxWindow {
  const T* x;
  int64_t best = -1;
  void begin(int64_t) { best = -1; }
  void visit(int64_t i) {
    if (best < 0 || x[i] > x[best] || (std::isnan(double(x[i])) && !std::isnan(double(x[best]))))
      best = i;
  }
};

template <class T>
Kernel pool_kernel(const KernelRequest& r) {
  Op op = r.op;
  // The input's shape: x's for the forward ops and max's gradient, `shape`
  // (the output) for avg's gradient; the pooled shape is the other one.
  const ir::Shape& x = op == Op::AvgPool2dGrad ? r.output.shape : r.inputs[0].shape;
  const ir::Shape& y = op == Op::MaxPool2d || op == Op::AvgPool2d ? r.output.shape
                       : op == Op::MaxPool2dGrad                  ? r.inputs[1].shape
                                                                  : r.inputs[0].shape;
  PoolGeometry g = pool_geometry(x, y, r.attrs);
  int64_t out_total = numel(r.output.shape);
  KernelFn fn = [g, op, out_total](const void* const* in, void* out) -> std::string {
    T* o = static_cast<T*>(out);
    double area = double(g.KH * g.KW);
    switch (op) {
      case Op::MaxPool2d: {
        struct : ArgMaxWindow<T> {
          T* o;
          void end(int64_t win) {
            o[win] = this->best < 0 ? -std::numeric_limits<T>::infinity() : this->x[this->best];
          }
        } f;
        f.x = static_cast<const T*>(in[0]);
        f.o = o;
        for_each_window(g, f);
        break;
      }
      case Op::MaxPool2dGrad: {
        std::fill(o, o + out_total, T(0));
        struct : ArgMaxWindow<T> {
          const T* gy;
          T* o;
          void end(int64_t win) {
            if (this->best >= 0) o[this->best] = T(o[this->best] + gy[win]);
          }
        } f;
        f.x = static_cast<const T*>(in[0]);
        f.gy = static_cast<const T*>(in[1]);
        f.o = o;
        for_each_window(g, f);
        break;
      }
      case Op::AvgPool2d: {
        struct {
          const T* x;
          T* o;
          double area, sum = 0;
          void begin(int64_t) { sum = 0; }
          void visit(int64_t i) { sum += double(x[i]); }
          void end(int64_t win) { o[win] = T(sum / area); }
        } f{static_cast<const T*>(in[0]), o, area};
        for_each_window(g, f);
        break;
      }
      default: {  // AvgPool2dGrad
        std::fill(o, o + out_total, T(0));
        struct {
          const T* gy;
          T* o;
          double area, share = 0;
          void begin(int64_t win) { share = double(gy[win]) / area; }
          void visit(int64_t i) { o[i] = T(double(o[i]) + share); }
          void end(int64_t) {}
        } f{static_cast<const T*>(in[0]), o, area};
        for_each_window(g, f);
      }
    }
    return {};
  };
  return Kernel{std::move(fn), kernel_label(op, r.output.dtype)};
}

}  // namespace

KernelResult make_pool_kernel(const KernelRequest& r) {
  ir::DType d = r.output.dtype;
  if (d != ir::DType::F32 && d != ir::DType::F64)
    return no_kernel(r, "pooling computes in f32 or f64");
  for (const ir::TensorType& t : r.inputs)
    if (t.dtype != d || t.shape.rank() != 4)
      return no_kernel(r, "pooling works on 4-D NCHW tensors of the compute dtype");
  if (d == ir::DType::F64) return pool_kernel<double>(r);
  return pool_kernel<float>(r);
}

}  // namespace sexpgpu::cpu
