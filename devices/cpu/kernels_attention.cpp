// attention and attention_grad (ops.def, "Neural"). attention: for each
// batch and head, softmax(q k^T * scale + mask) v, fused: the scores of one
// head live in a scratch [Tq, Tk] matrix, two gemms around a stable row
// softmax. attention_grad recomputes that matrix per head and derives dq,
// dk and dv from it with five gemms, so no [B,H,Tq,Tk] tensor exists.
// q [B,H,Tq,D], k [B,H,Tk,D], v [B,H,Tk,Dv] -> [B,H,Tq,Dv]. `causal`: query
// i sees keys j <= i + Tk - Tq. A bool mask keeps where true; a float mask
// is added; either broadcasts to [B,H,Tq,Tk]. A query that sees no key
// (everything masked) gets zeros.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gemm.h"
#include "kernel.h"
#include "parallel.h"
#include "plan/geometry.h"
#include "storage.h"
#include "vector_math.h"

namespace sexpgpu::cpu {
namespace {

struct AttentionGeometry {
  int64_t B, H, Tq, Tk, D, Dv;
  double scale;
  bool causal;
  int mask = 0;       // 0: none, 1: bool, 2: additive float
  size_t mask_input;  // the mask's operand index
  Dims mask_strides;  // over [B,H,Tq,Tk]
};

// q, k and v are operands 0, 1 and 2; the mask, if any, is `mask_input`.
AttentionGeometry geometry_of(const KernelRequest& r, size_t mask_input) {
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
                      mask_input,
                      {}};
  if (r.inputs.size() > mask_input) {
    g.mask = r.inputs[mask_input].dtype == ir::DType::Bool ? 1 : 2;
    g.mask_strides = broadcast_strides(r.inputs[mask_input].shape, ir::Shape{g.B, g.H, g.Tq, g.Tk});
  }
  return g;
}

// One head's forward work (its two products), for the split across threads.
int64_t head_work(const AttentionGeometry& g) {
  return g.Tq * g.Tk * (g.D + g.Dv);
}

std::string label(ir::Op op, ir::DType dtype, const AttentionGeometry& g) {
  return kernel_label(op, dtype) + (g.causal ? " causal" : "") +
         (g.mask == 1   ? " bool-mask"
          : g.mask == 2 ? " float-mask"
                        : "");
}

// The probabilities of head (b, h), [Tq, Tk] into `p`: the scaled scores,
// hidden keys at -inf (or the float mask added), a stable softmax per row;
// a row that sees no key is all zeros. The forward and the backward share it
// so the backward differentiates exactly the forward's p.
template <class T>
void probabilities(const AttentionGeometry& g, int64_t b, int64_t h, const T* qh, const T* kh,
                   const void* mask, T* p) {
  gemm<T>(false, true, g.Tq, g.Tk, g.D, T(g.scale), qh, g.D, kh, g.D, T(0), p, g.Tk);
  const T neg_inf = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < g.Tq; ++i) {
    T* row = p + i * g.Tk;
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
}

template <class T>
Kernel attention_kernel(const KernelRequest& r) {
  AttentionGeometry g = geometry_of(r, 3);
  const int threads = r.threads;
  KernelFn fn = [g, threads](const void* const* in, void* out) -> std::string {
    const T* q = static_cast<const T*>(in[0]);
    const T* k = static_cast<const T*>(in[1]);
    const T* v = static_cast<const T*>(in[2]);
    const void* mask = g.mask ? in[g.mask_input] : nullptr;
    T* o = static_cast<T*>(out);
    // Heads across the pool, each head's products on its thread.
    parallel_range(g.B * g.H, head_work(g), threads, [&](int64_t begin, int64_t end) {
      std::vector<T> p(size_t(g.Tq * g.Tk));
      for (int64_t bh = begin; bh < end; ++bh) {
        probabilities<T>(g, bh / g.H, bh % g.H, q + bh * g.Tq * g.D, k + bh * g.Tk * g.D, mask,
                         p.data());
        gemm<T>(false, false, g.Tq, g.Dv, g.Tk, T(1), p.data(), g.Tk, v + bh * g.Tk * g.Dv, g.Dv,
                T(0), o + bh * g.Tq * g.Dv, g.Dv);
      }
    });
    return {};
  };
  return Kernel{std::move(fn), label(ir::Op::Attention, r.output.dtype, g)};
}

// ds = p (dp - rowsum(dp p)) in place of dp, the row sums in double.
template <class T>
void score_gradient(const AttentionGeometry& g, const T* p, T* dp) {
  for (int64_t i = 0; i < g.Tq; ++i) {
    const T* prow = p + i * g.Tk;
    T* row = dp + i * g.Tk;
    double dot = 0;
    for (int64_t j = 0; j < g.Tk; ++j) dot += double(row[j]) * double(prow[j]);
    for (int64_t j = 0; j < g.Tk; ++j) row[j] = T(double(prow[j]) * (double(row[j]) - dot));
  }
}

// attention_grad: per head, p recomputed, then dv = p^T g, dp = g v^T, ds as
// score_gradient, dq = ds k scale, dk = ds^T q scale, written to the rows
// [0,Tq), [Tq,Tq+Tk) and [Tq+Tk,Tq+2Tk) of the head's output. o (operand 3)
// is not read: rowsum(dp p) is computed from p itself.
template <class T>
Kernel attention_grad_kernel(const KernelRequest& r) {
  AttentionGeometry g = geometry_of(r, 5);
  const int threads = r.threads;
  KernelFn fn = [g, threads](const void* const* in, void* out) -> std::string {
    const T* q = static_cast<const T*>(in[0]);
    const T* k = static_cast<const T*>(in[1]);
    const T* v = static_cast<const T*>(in[2]);
    const T* dy = static_cast<const T*>(in[4]);
    const void* mask = g.mask ? in[g.mask_input] : nullptr;
    const T scale = T(g.scale);
    parallel_range(g.B * g.H, 3 * head_work(g), threads, [&](int64_t begin, int64_t end) {
      std::vector<T> p(size_t(g.Tq * g.Tk)), ds(p.size());
      for (int64_t bh = begin; bh < end; ++bh) {
        const int64_t b = bh / g.H, h = bh % g.H;
        const T *qh = q + bh * g.Tq * g.D, *kh = k + bh * g.Tk * g.D, *vh = v + bh * g.Tk * g.D;
        const T* gh = dy + bh * g.Tq * g.D;
        T* dq = static_cast<T*>(out) + bh * (g.Tq + 2 * g.Tk) * g.D;
        T* dk = dq + g.Tq * g.D;
        T* dv = dk + g.Tk * g.D;
        probabilities<T>(g, b, h, qh, kh, mask, p.data());
        gemm<T>(true, false, g.Tk, g.D, g.Tq, T(1), p.data(), g.Tk, gh, g.D, T(0), dv, g.D);
        gemm<T>(false, true, g.Tq, g.Tk, g.D, T(1), gh, g.D, vh, g.D, T(0), ds.data(), g.Tk);
        score_gradient<T>(g, p.data(), ds.data());
        gemm<T>(false, false, g.Tq, g.D, g.Tk, scale, ds.data(), g.Tk, kh, g.D, T(0), dq, g.D);
        gemm<T>(true, false, g.Tk, g.D, g.Tq, scale, ds.data(), g.Tk, qh, g.D, T(0), dk, g.D);
      }
    });
    return {};
  };
  return Kernel{std::move(fn), label(ir::Op::AttentionGrad, r.output.dtype, g)};
}

KernelResult make_forward_kernel(const KernelRequest& r) {
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

KernelResult make_backward_kernel(const KernelRequest& r) {
  ir::DType d = r.output.dtype;
  if (r.inputs.size() < 5 || r.inputs.size() > 6)
    return no_kernel(r, "attention_grad takes q, k, v, o, g and an optional bool mask");
  for (size_t i = 0; i < 5; ++i)
    if (r.inputs[i].dtype != d || r.inputs[i].shape.rank() != 4)
      return no_kernel(r, "q, k, v, o and g must be [B,H,T,D] of the compute dtype");
  if (r.inputs.size() == 6 && r.inputs[5].dtype != ir::DType::Bool)
    return no_kernel(r, "the mask must be bool");
  if (d == ir::DType::F64) return attention_grad_kernel<double>(r);
  if (d == ir::DType::F32) return attention_grad_kernel<float>(r);
  return no_kernel(r, "attention_grad computes in f32 or f64");
}

}  // namespace

KernelResult make_attention_kernel(const KernelRequest& r) {
  return r.op == ir::Op::AttentionGrad ? make_backward_kernel(r) : make_forward_kernel(r);
}

}  // namespace sexpgpu::cpu
