// Elementwise kernels: unary, predicates, binary with broadcasting,
// comparisons, where and clamp. Lowering (lower.h) has already cast every
// operand to the compute dtype, so each kernel is one type T (and uint8_t
// for boolean results and where's condition). Contiguous same-shape and
// scalar operands take tight loops the compiler vectorises; anything else
// walks the collapsed broadcast space row by row.
#include <cstring>
#include <optional>

#include "elementwise_rows.h"
#include "kernel.h"
#include "parallel.h"
#include "scalar_ops.h"
#include "storage.h"
#include "vector_math.h"

namespace sexpgpu::cpu {
namespace {

using ir::Op;

// out[i] = f(x[i]) over n contiguous elements.
template <class T, class O, class F>
Kernel unary_kernel(int64_t n, int threads, F f, std::string name) {
  KernelFn fn = [n, threads, f](const void* const* in, void* out) -> std::string {
    const T* x = static_cast<const T*>(in[0]);
    O* o = static_cast<O*>(out);
    parallel_range(n, 4, threads, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = f(x[i]);
    });
    return {};
  };
  return Kernel{std::move(fn), std::move(name)};
}

// out = f(a, b) with NumPy broadcasting; the space's operands are (out, a, b).
template <class T, class O, class F>
Kernel binary_kernel(const KernelRequest& r, F f, const std::string& label) {
  const ir::Shape& out = r.output.shape;
  Dims strides[] = {contiguous_strides(out), broadcast_strides(r.inputs[0].shape, out),
                    broadcast_strides(r.inputs[1].shape, out)};
  Space sp = make_space(out, strides);
  int threads = r.threads;
  bool flat = sp.dims.size() <= 1;
  KernelFn fn = [sp, threads, f](const void* const* in, void* out_ptr) -> std::string {
    const T* a = static_cast<const T*>(in[0]);
    const T* b = static_cast<const T*>(in[1]);
    O* o = static_cast<O*>(out_ptr);
    if (sp.dims.size() <= 1) {  // one flat run: split it across threads directly
      int64_t sa = sp.inner_stride(1), sb = sp.inner_stride(2);
      parallel_range(sp.numel, 4, threads, [&](int64_t begin, int64_t end) {
        binary_row(end - begin, a + begin * sa, sa, b + begin * sb, sb, o + begin, f);
      });
      return {};
    }
    for_each_row(sp, threads, 4, [&](int64_t n, const std::array<int64_t, kMaxOperands>& off) {
      binary_row(n, a + off[1], sp.inner_stride(1), b + off[2], sp.inner_stride(2), o + off[0], f);
    });
    return {};
  };
  return Kernel{std::move(fn), label + (flat ? " flat" : " broadcast")};
}

// out = f(x, y, z) with broadcasting (where, clamp); operands (out, x, y, z).
template <class X, class Y, class Z, class O, class F>
Kernel ternary_kernel(const KernelRequest& r, F f, const std::string& label) {
  const ir::Shape& out = r.output.shape;
  Dims strides[] = {contiguous_strides(out), broadcast_strides(r.inputs[0].shape, out),
                    broadcast_strides(r.inputs[1].shape, out),
                    broadcast_strides(r.inputs[2].shape, out)};
  Space sp = make_space(out, strides);
  int threads = r.threads;
  bool flat = sp.dims.size() <= 1;
  KernelFn fn = [sp, threads, f](const void* const* in, void* out_ptr) -> std::string {
    const X* x = static_cast<const X*>(in[0]);
    const Y* y = static_cast<const Y*>(in[1]);
    const Z* z = static_cast<const Z*>(in[2]);
    O* o = static_cast<O*>(out_ptr);
    int64_t sx = sp.inner_stride(1), sy = sp.inner_stride(2), sz = sp.inner_stride(3);
    if (sp.dims.size() <= 1) {  // one flat run: split it across threads directly
      parallel_range(sp.numel, 4, threads, [&](int64_t b, int64_t e) {
        ternary_row(e - b, x + b * sx, sx, y + b * sy, sy, z + b * sz, sz, o + b, f);
      });
      return {};
    }
    for_each_row(sp, threads, 4, [&](int64_t n, const std::array<int64_t, kMaxOperands>& off) {
      ternary_row(n, x + off[1], sx, y + off[2], sy, z + off[3], sz, o + off[0], f);
    });
    return {};
  };
  return Kernel{std::move(fn), label + (flat ? " flat" : " broadcast")};
}

// out = f(x) where f maps a contiguous run (x, o, n) at once (vector_math.h).
template <class F>
Kernel unary_run_kernel(int64_t n, int threads, F f, std::string name) {
  KernelFn fn = [n, threads, f](const void* const* in, void* out) -> std::string {
    const float* x = static_cast<const float*>(in[0]);
    float* o = static_cast<float*>(out);
    parallel_range(n, 16, threads, [&](int64_t b, int64_t e) { f(x + b, o + b, e - b); });
    return {};
  };
  return Kernel{std::move(fn), std::move(name)};
}

// The f32 ops whose libm calls keep their loops from vectorising.
std::optional<Kernel> vectorised_f32(const KernelRequest& r, int64_t n, const std::string& label) {
  if (r.op == Op::Exp) return unary_run_kernel(n, r.threads, vmath::exp_f32, label + " vector");
  if (r.op == Op::Erf) return unary_run_kernel(n, r.threads, vmath::erf_f32, label + " vector");
  if (r.op == Op::Gelu) return unary_run_kernel(n, r.threads, vmath::gelu_f32, label + " vector");
  return std::nullopt;
}

#define SG_UNARY_CASE(OP)      \
  case Op::OP:                 \
    return unary_kernel<T, T>( \
        n, r.threads, [](T x) { return scalar::unary<Op::OP, T>(x); }, label)

template <class T>
KernelResult unary_same(const KernelRequest& r) {
  int64_t n = numel(r.output.shape);
  std::string label = kernel_label(r.op, r.output.dtype);
  switch (r.op) {
    SG_UNARY_CASE(Neg);
    SG_UNARY_CASE(Abs);
    SG_UNARY_CASE(Square);
    SG_UNARY_CASE(Sign);
    SG_UNARY_CASE(Relu);
    SG_UNARY_CASE(Floor);
    SG_UNARY_CASE(Ceil);
    SG_UNARY_CASE(Round);
    default: break;
  }
  if constexpr (std::is_same_v<T, float>)
    if (std::optional<Kernel> k = vectorised_f32(r, n, label)) return *std::move(k);
  if constexpr (std::is_floating_point_v<T>) {
    switch (r.op) {
#define SG_FLOAT_PRIMITIVE(id, fn) SG_UNARY_CASE(id);
#define SG_FLOAT_UNARY(id, fn, ...) SG_UNARY_CASE(id);
#include "ir/float_unary.def"
#undef SG_FLOAT_PRIMITIVE
#undef SG_FLOAT_UNARY
      default: break;
    }
  }
  return no_kernel(r, "no elementwise kernel for this dtype");
}
#undef SG_UNARY_CASE

template <class T>
KernelResult predicate(const KernelRequest& r) {
  int64_t n = numel(r.output.shape);
  std::string label = kernel_label(r.op, r.inputs[0].dtype);
  if (r.op == Op::LogicalNot)
    return unary_kernel<T, uint8_t>(
        n, r.threads, [](T x) { return scalar::predicate<Op::LogicalNot, T>(x); }, label);
  return unary_kernel<T, uint8_t>(
      n, r.threads, [](T x) { return scalar::predicate<Op::IsFinite, T>(x); }, label);
}

#define SG_BINARY_CASE(OP)      \
  case Op::OP:                  \
    return binary_kernel<T, T>( \
        r, [](T a, T b) { return scalar::binary<Op::OP, T>(a, b); }, label)
#define SG_COMPARE_CASE(OP)           \
  case Op::OP:                        \
    return binary_kernel<T, uint8_t>( \
        r, [](T a, T b) { return scalar::compare<Op::OP, T>(a, b); }, label)

template <class T>
KernelResult binary(const KernelRequest& r) {
  std::string label = kernel_label(r.op, r.inputs[0].dtype);
  switch (r.op) {
    SG_BINARY_CASE(Add);
    SG_BINARY_CASE(Sub);
    SG_BINARY_CASE(Mul);
    SG_BINARY_CASE(Pow);
    SG_BINARY_CASE(Maximum);
    SG_BINARY_CASE(Minimum);
    SG_BINARY_CASE(Mod);
    SG_COMPARE_CASE(Lt);
    SG_COMPARE_CASE(Le);
    SG_COMPARE_CASE(Gt);
    SG_COMPARE_CASE(Ge);
    SG_COMPARE_CASE(Eq);
    SG_COMPARE_CASE(Ne);
    SG_COMPARE_CASE(LogicalAnd);
    SG_COMPARE_CASE(LogicalOr);
    default: break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (r.op) {
      SG_BINARY_CASE(Div);
      SG_BINARY_CASE(Atan2);
      default: break;
    }
  }
  return no_kernel(r, "no elementwise kernel for this dtype");
}
#undef SG_BINARY_CASE
#undef SG_COMPARE_CASE

template <class T>
KernelResult clamp(const KernelRequest& r) {
  return ternary_kernel<T, T, T, T>(
      r, [](T x, T lo, T hi) { return scalar::clamp(x, lo, hi); },
      kernel_label(r.op, r.output.dtype));
}

// where only moves elements, so it dispatches on their size.
template <class U>
Kernel where_sized(const KernelRequest& r) {
  return ternary_kernel<uint8_t, U, U, U>(
      r, [](uint8_t c, U a, U b) { return c ? a : b; },
      "where<" + std::to_string(sizeof(U) * 8) + "-bit>");
}

bool is_compute(ir::DType d) {
  return d != ir::DType::BF16 && d != ir::DType::F16 && d != ir::DType::Bool;
}

}  // namespace

KernelResult make_elementwise_kernel(const KernelRequest& r) {
  if (r.op == Op::Where) {
    switch (ir::size_bytes(r.output.dtype)) {
      case 1: return where_sized<uint8_t>(r);
      case 2: return where_sized<uint16_t>(r);
      case 4: return where_sized<uint32_t>(r);
      default: return where_sized<uint64_t>(r);
    }
  }
  ir::DType d = r.inputs[0].dtype;
  if (!is_compute(d)) return no_kernel(r, "operands must be lowered to a compute dtype first");
  return dispatch_compute(d, [&](auto t) -> KernelResult {
    using T = decltype(t);
    switch (ir::info(r.op).rule) {
      case ir::Rule::UnarySame:
      case ir::Rule::UnaryFloat: return unary_same<T>(r);
      case ir::Rule::UnaryBool: return predicate<T>(r);
      case ir::Rule::Clamp: return clamp<T>(r);
      default: return binary<T>(r);
    }
  });
}

}  // namespace sexpgpu::cpu
