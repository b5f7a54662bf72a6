// conv2d and its two gradients (ops.def, "Neural"), as PyTorch's conv2d on
// NCHW: x [N,C,H,W], w [O,C/groups,KH,KW]. Each image and group is one
// im2col (the receptive fields as columns [C/groups*KH*KW, OH*OW]) and one
// gemm; the input gradient is a gemm then col2im (the adjoint of im2col),
// the weight gradient a gemm against the columns, summed over images.
#include <vector>

#include "gemm.h"
#include "kernel.h"
#include "plan/geometry.h"
#include "storage.h"

namespace sexpgpu::cpu {
namespace {

using ir::Op;

struct ConvGeometry {
  int64_t N, C, H, W, O, KH, KW, OH, OW;
  int64_t sh, sw, ph, pw, dh, dw, groups;
  int64_t Cg() const { return C / groups; }
  int64_t Og() const { return O / groups; }
  int64_t col_rows() const { return Cg() * KH * KW; }
  int64_t col_cols() const { return OH * OW; }
};

int64_t pair(const std::optional<ir::Dims>& v, size_t i, int64_t fallback) {
  return v && v->size() > i ? (*v)[i] : fallback;
}

ConvGeometry conv_geometry(const ir::Shape& x, const ir::Shape& w, const ir::Attrs& a) {
  ConvGeometry g{x[0],
                 x[1],
                 x[2],
                 x[3],
                 w[0],
                 w[2],
                 w[3],
                 0,
                 0,
                 pair(a.stride, 0, 1),
                 pair(a.stride, 1, 1),
                 pair(a.padding, 0, 0),
                 pair(a.padding, 1, 0),
                 pair(a.dilation, 0, 1),
                 pair(a.dilation, 1, 1),
                 a.groups.value_or(1)};
  g.OH = (g.H + 2 * g.ph - g.dh * (g.KH - 1) - 1) / g.sh + 1;
  g.OW = (g.W + 2 * g.pw - g.dw * (g.KW - 1) - 1) / g.sw + 1;
  return g;
}

// Calls f(col_index, x_index) for every column entry of image n's group
// channels starting at x_img (x_index -1: padding).
template <class F>
void for_each_col(const ConvGeometry& g, F f) {
  int64_t cols = g.col_cols();
  for (int64_t c = 0; c < g.Cg(); ++c)
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        int64_t row = (c * g.KH + kh) * g.KW + kw;
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          int64_t ih = oh * g.sh - g.ph + kh * g.dh;
          for (int64_t ow = 0; ow < g.OW; ++ow) {
            int64_t iw = ow * g.sw - g.pw + kw * g.dw;
            bool inside = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
            f(row * cols + oh * g.OW + ow, inside ? (c * g.H + ih) * g.W + iw : -1);
          }
        }
      }
}

template <class T>
void im2col(const ConvGeometry& g, const T* x_group, T* col) {
  for_each_col(g, [&](int64_t ci, int64_t xi) { col[ci] = xi < 0 ? T(0) : x_group[xi]; });
}

template <class T>
void col2im_add(const ConvGeometry& g, const T* col, T* dx_group) {
  for_each_col(g, [&](int64_t ci, int64_t xi) {
    if (xi >= 0) dx_group[xi] = T(dx_group[xi] + col[ci]);
  });
}

// Which operand is which: conv2d (x, w) -> y; grad_input (gy, w) -> gx;
// grad_weight (x, gy) -> gw.
template <class T>
Kernel conv_kernel(const KernelRequest& r) {
  Op op = r.op;
  ir::Shape x_shape = op == Op::Conv2dGradInput ? r.output.shape : r.inputs[0].shape;
  ir::Shape w_shape = op == Op::Conv2dGradWeight ? r.output.shape : r.inputs[1].shape;
  ConvGeometry g = conv_geometry(x_shape, w_shape, r.attrs);
  int64_t out_total = numel(r.output.shape);
  const int threads = r.threads;
  KernelFn fn = [g, op, out_total, threads](const void* const* in, void* out) -> std::string {
    std::vector<T> col(size_t(g.col_rows() * g.col_cols()));
    int64_t x_img = g.C * g.H * g.W, x_grp = g.Cg() * g.H * g.W;
    int64_t y_img = g.O * g.col_cols(), y_grp = g.Og() * g.col_cols();
    int64_t w_grp = g.Og() * g.col_rows();
    T* o = static_cast<T*>(out);
    if (op != Op::Conv2d) std::fill(o, o + out_total, T(0));
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        if (op == Op::Conv2d) {
          const T* x = static_cast<const T*>(in[0]) + n * x_img + grp * x_grp;
          const T* w = static_cast<const T*>(in[1]) + grp * w_grp;
          im2col(g, x, col.data());
          gemm<T>(false, false, g.Og(), g.col_cols(), g.col_rows(), T(1), w, g.col_rows(),
                  col.data(), g.col_cols(), T(0), o + n * y_img + grp * y_grp, g.col_cols(),
                  threads);
        } else if (op == Op::Conv2dGradInput) {
          const T* gy = static_cast<const T*>(in[0]) + n * y_img + grp * y_grp;
          const T* w = static_cast<const T*>(in[1]) + grp * w_grp;
          gemm<T>(true, false, g.col_rows(), g.col_cols(), g.Og(), T(1), w, g.col_rows(), gy,
                  g.col_cols(), T(0), col.data(), g.col_cols(), threads);
          col2im_add(g, col.data(), o + n * x_img + grp * x_grp);
        } else {
          const T* x = static_cast<const T*>(in[0]) + n * x_img + grp * x_grp;
          const T* gy = static_cast<const T*>(in[1]) + n * y_img + grp * y_grp;
          im2col(g, x, col.data());
          gemm<T>(false, true, g.Og(), g.col_rows(), g.col_cols(), T(1), gy, g.col_cols(),
                  col.data(), g.col_cols(), T(1), o + grp * w_grp, g.col_rows(), threads);
        }
      }
    return {};
  };
  return Kernel{std::move(fn), kernel_label(op, r.output.dtype) + " im2col"};
}

}  // namespace

KernelResult make_conv_kernel(const KernelRequest& r) {
  ir::DType d = r.output.dtype;
  if (d == ir::DType::BF16 || d == ir::DType::F16 || d == ir::DType::Bool ||
      r.inputs[0].dtype != d || r.inputs[1].dtype != d)
    return no_kernel(r, "operands must be lowered to the compute dtype first");
  for (const ir::TensorType& t : r.inputs)
    if (t.shape.rank() != 4) return no_kernel(r, "conv2d works on 4-D NCHW tensors");
  if (r.output.shape.rank() != 4) return no_kernel(r, "conv2d works on 4-D NCHW tensors");
  return dispatch_compute(d, [&](auto t) -> KernelResult { return conv_kernel<decltype(t)>(r); });
}

}  // namespace sexpgpu::cpu
