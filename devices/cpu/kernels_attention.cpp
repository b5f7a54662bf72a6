// attention (ops.def, "Neural"): for each batch and head,
// softmax(q k^T * scale + mask) v, fused: the scores of one head live in a
// scratch [Tq, Tk] matrix, two gemms around a stable row softmax.
// q [B,H,Tq,D], k [B,H,Tk,D], v [B,H,Tk,Dv] -> [B,H,Tq,Dv]. `causal`: query
// i sees keys j <= i + Tk - Tq. A bool mask keeps where true; a float mask
// is added; either broadcasts to [B,H,Tq,Tk]. A query that sees no key
// (everything masked) gets zeros.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gemm.h"
#include "geometry.h"
#include "kernel.h"
#include "storage.h"
#include "vector_math.h"

namespace sexpgpu::cpu {
namespace {

struct AttentionGeometry {
  int64_t B, H, Tq, Tk, D, Dv;
  double scale;
  bool causal;
  int mask = 0;       // 0: none, 1: bool, 2: additive float
  Dims mask_strides;  // over [B,H,Tq,Tk]
};

template <class T>
Kernel attention_kernel(const KernelRequest& r) {
  const ir::Shape &q = r.inputs[0].shape, &k = r.inputs[1].shape, &v = r.inputs[2].shape;
  AttentionGeometry g{q[0],
                      q[1],
                      q[2],
                      k[2],
                      q[3],
                      v[3],
                      r.attrs.scale.value_or(1.0 / std::sqrt(double(q[3]))),
                      r.attrs.causal.value_or(false),
                      0,
                      {}};
  if (r.inputs.size() > 3) {
    g.mask = r.inputs[3].dtype == ir::DType::Bool ? 1 : 2;
    g.mask_strides = broadcast_strides(r.inputs[3].shape, ir::Shape{g.B, g.H, g.Tq, g.Tk});
  }
  std::string name = kernel_label(ir::Op::Attention, r.output.dtype) + (g.causal ? " causal" : "") +
                     (g.mask == 1   ? " bool-mask"
                      : g.mask == 2 ? " float-mask"
                                    : "");
  KernelFn fn = [g](const void* const* in, void* out) -> std::string {
    const T* q = static_cast<const T*>(in[0]);
    const T* k = static_cast<const T*>(in[1]);
    const T* v = static_cast<const T*>(in[2]);
    const void* mask = g.mask ? in[3] : nullptr;
    T* o = static_cast<T*>(out);
    std::vector<T> scores(size_t(g.Tq * g.Tk));
    const T neg_inf = -std::numeric_limits<T>::infinity();
    for (int64_t b = 0; b < g.B; ++b)
      for (int64_t h = 0; h < g.H; ++h) {
        int64_t bh = b * g.H + h;
        const T* qh = q + bh * g.Tq * g.D;
        const T* kh = k + bh * g.Tk * g.D;
        const T* vh = v + bh * g.Tk * g.Dv;
        T* oh = o + bh * g.Tq * g.Dv;
        gemm<T>(false, true, g.Tq, g.Tk, g.D, T(g.scale), qh, g.D, kh, g.D, T(0), scores.data(),
                g.Tk);
        for (int64_t i = 0; i < g.Tq; ++i) {
          T* row = scores.data() + i * g.Tk;
          for (int64_t j = 0; j < g.Tk; ++j) {
            if (g.causal && j > i + g.Tk - g.Tq) row[j] = neg_inf;
            if (!g.mask) continue;
            int64_t m = b * g.mask_strides[0] + h * g.mask_strides[1] + i * g.mask_strides[2] +
                        j * g.mask_strides[3];
            if (g.mask == 1) {
              if (!static_cast<const uint8_t*>(mask)[m]) row[j] = neg_inf;
            } else {
              row[j] += static_cast<const T*>(mask)[m];
            }
          }
          if constexpr (std::is_same_v<T, float>) {
            // -inf in every entry (sees no key) leaves the row's max -inf.
            float mx = -std::numeric_limits<float>::infinity();
            for (int64_t j = 0; j < g.Tk; ++j) mx = std::max(mx, row[j]);
            if (std::isinf(mx) && mx < 0) {
              std::fill(row, row + g.Tk, 0.0f);
            } else {
              vmath::softmax_f32(row, row, g.Tk);
            }
            continue;
          }
          double mx = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < g.Tk; ++j) mx = std::fmax(mx, double(row[j]));
          if (std::isinf(mx) && mx < 0) {  // sees no key
            for (int64_t j = 0; j < g.Tk; ++j) row[j] = T(0);
            continue;
          }
          double sum = 0;
          for (int64_t j = 0; j < g.Tk; ++j) sum += std::exp(double(row[j]) - mx);
          for (int64_t j = 0; j < g.Tk; ++j) row[j] = T(std::exp(double(row[j]) - mx) / sum);
        }
        gemm<T>(false, false, g.Tq, g.Dv, g.Tk, T(1), scores.data(), g.Tk, vh, g.Dv, T(0), oh,
                g.Dv);
      }
    return {};
  };
  return Kernel{std::move(fn), std::move(name)};
}

}  // namespace

KernelResult make_attention_kernel(const KernelRequest& r) {
  ir::DType d = r.output.dtype;
  if (r.inputs.size() < 3 || r.inputs.size() > 4)
    return no_kernel(r, "attention takes q, k, v and an optional mask");
  for (size_t i = 0; i < 3; ++i)
    if (r.inputs[i].dtype != d || r.inputs[i].shape.rank() != 4)
      return no_kernel(r, "q, k and v must be [B,H,T,D] of the compute dtype");
  if (r.inputs.size() == 4 && r.inputs[3].dtype != ir::DType::Bool && r.inputs[3].dtype != d)
    return no_kernel(r, "the mask must be bool or of the compute dtype");
  if (d == ir::DType::F64) return attention_kernel<double>(r);
  if (d == ir::DType::F32) return attention_kernel<float>(r);
  return no_kernel(r, "attention computes in f32 or f64");
}

}  // namespace sexpgpu::cpu
