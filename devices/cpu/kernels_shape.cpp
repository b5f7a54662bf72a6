// Shape kernels (ops.def, "Shape"): reshape, permute, expand, concat, slice,
// take, index_add, pad, flip, and stop_gradient. Except index_add they only
// move elements, so they dispatch on the element size. permute, expand,
// slice and flip are one strided copy each: the input read with permuted,
// zero, stepped or negative strides, resolved when the kernel is made.
#include <cstring>
#include <vector>

#include "kernel.h"
#include "parallel.h"
#include "scalar_ops.h"
#include "storage.h"

namespace sexpgpu::cpu {
namespace {

using ir::Op;

// Copies the elements of a `shape`-d view: in[in_base + i.in_strides] to
// out[out_base + i.out_strides] (element units).
struct StridedCopy {
  Space space;  // operands: (out, in)
  int64_t out_base = 0, in_base = 0;
};

StridedCopy strided_copy(const ir::Shape& shape, const Dims& out_strides, int64_t out_base,
                         const Dims& in_strides, int64_t in_base) {
  Dims strides[] = {out_strides, in_strides};
  return StridedCopy{make_space(shape, strides), out_base, in_base};
}

template <class U>
void run_copy(const StridedCopy& c, const U* in, U* out, int threads) {
  for_each_row(c.space, threads, 1, [&](int64_t n, const std::array<int64_t, kMaxOperands>& off) {
    U* o = out + c.out_base + off[0];
    const U* x = in + c.in_base + off[1];
    int64_t so = c.space.inner_stride(0), si = c.space.inner_stride(1);
    if (so == 1 && si == 1) {
      std::memcpy(o, x, size_t(n) * sizeof(U));
    } else {
      for (int64_t i = 0; i < n; ++i) o[i * so] = x[i * si];
    }
  });
}

// Calls f(U{}) with the unsigned type of `bytes` bytes.
template <class F>
decltype(auto) by_size(size_t bytes, F&& f) {
  switch (bytes) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    default: return f(uint64_t{});
  }
}

// One operand copied through `copies` (each from operand `copy_operand[i]`),
// after filling the output with `fill` (pad) when given.
Kernel copies_kernel(const KernelRequest& r, std::vector<StridedCopy> copies,
                     std::vector<int> copy_operand, std::optional<double> fill, std::string name) {
  int threads = r.threads;
  int64_t n = numel(r.output.shape);
  ir::DType dtype = r.output.dtype;
  return by_size(ir::size_bytes(dtype), [&](auto u) {
    using U = decltype(u);
    U fill_bits{};
    if (fill)
      dispatch_storage(dtype, [&](auto s) {
        auto v = convert<decltype(s)>(*fill);
        if constexpr (sizeof(v) == sizeof(U)) std::memcpy(&fill_bits, &v, sizeof(U));
      });
    bool has_fill = fill.has_value();
    KernelFn fn = [=](const void* const* in, void* out) -> std::string {
      U* o = static_cast<U*>(out);
      if (has_fill) std::fill(o, o + n, fill_bits);
      for (size_t i = 0; i < copies.size(); ++i)
        run_copy(copies[i], static_cast<const U*>(in[copy_operand[i]]), o, threads);
      return {};
    };
    return Kernel{std::move(fn), std::move(name)};
  });
}

KernelResult permute(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  Dims xs = contiguous_strides(x), in_strides;
  for (int64_t a : *r.attrs.axes) in_strides.push_back(xs[size_t(norm_axis(a, x.rank()))]);
  return copies_kernel(
      r, {strided_copy(r.output.shape, contiguous_strides(r.output.shape), 0, in_strides, 0)}, {0},
      std::nullopt, "permute");
}

KernelResult expand(const KernelRequest& r) {
  const ir::Shape& out = r.output.shape;
  return copies_kernel(
      r,
      {strided_copy(out, contiguous_strides(out), 0, broadcast_strides(r.inputs[0].shape, out), 0)},
      {0}, std::nullopt, "expand");
}

KernelResult slice(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  Dims xs = contiguous_strides(x), in_strides;
  int64_t base = 0;
  for (int64_t a = 0; a < x.rank(); ++a) {
    base += (*r.attrs.starts)[size_t(a)] * xs[size_t(a)];
    in_strides.push_back((*r.attrs.steps)[size_t(a)] * xs[size_t(a)]);
  }
  return copies_kernel(
      r, {strided_copy(r.output.shape, contiguous_strides(r.output.shape), 0, in_strides, base)},
      {0}, std::nullopt, "slice");
}

KernelResult flip(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  Dims in_strides = contiguous_strides(x);
  int64_t base = 0;
  for (int64_t a : *r.attrs.axes) {
    size_t ax = size_t(norm_axis(a, x.rank()));
    base += (x[int64_t(ax)] - 1) * in_strides[ax];
    in_strides[ax] = -in_strides[ax];
  }
  return copies_kernel(r, {strided_copy(x, contiguous_strides(x), 0, in_strides, base)}, {0},
                       std::nullopt, "flip");
}

KernelResult concat(const KernelRequest& r) {
  const ir::Shape& out = r.output.shape;
  int64_t axis = norm_axis(*r.attrs.axis, out.rank());
  Dims os = contiguous_strides(out);
  std::vector<StridedCopy> copies;
  std::vector<int> operand;
  int64_t at = 0;
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const ir::Shape& s = r.inputs[i].shape;
    copies.push_back(strided_copy(s, os, at * os[size_t(axis)], contiguous_strides(s), 0));
    operand.push_back(int(i));
    at += s[axis];
  }
  return copies_kernel(r, std::move(copies), std::move(operand), std::nullopt, "concat");
}

KernelResult pad(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  Dims os = contiguous_strides(r.output.shape);
  int64_t base = 0;
  for (int64_t a = 0; a < x.rank(); ++a) base += (*r.attrs.pads)[size_t(2 * a)] * os[size_t(a)];
  return copies_kernel(r, {strided_copy(x, os, base, contiguous_strides(x), 0)}, {0},
                       r.attrs.value.value_or(0.0), "pad");
}

// Reads the ids as int64, checking each is in [0, n).
template <class I>
std::string read_ids(const void* p, int64_t count, int64_t n, int64_t axis,
                     std::vector<int64_t>& out) {
  const I* ids = static_cast<const I*>(p);
  out.resize(size_t(count));
  for (int64_t j = 0; j < count; ++j) {
    int64_t id = int64_t(ids[j]);
    if (id < 0 || id >= n)
      return "id " + std::to_string(id) + " (position " + std::to_string(j) +
             ") is out of range for axis " + std::to_string(axis) + " of size " + std::to_string(n);
    out[size_t(j)] = id;
  }
  return {};
}

using IdReader = std::string (*)(const void*, int64_t, int64_t, int64_t, std::vector<int64_t>&);

IdReader id_reader(ir::DType d) {
  switch (d) {
    case ir::DType::I32: return read_ids<int32_t>;
    case ir::DType::I64: return read_ids<int64_t>;
    case ir::DType::U8: return read_ids<uint8_t>;
    case ir::DType::U16: return read_ids<uint16_t>;
    default: return nullptr;
  }
}

KernelResult take(const KernelRequest& r) {
  int64_t axis = norm_axis(*r.attrs.axis, r.inputs[0].shape.rank());
  TakeGeometry g = take_geometry(r.inputs[0].shape, axis, r.inputs[1].shape);
  IdReader read = id_reader(r.inputs[1].dtype);
  if (!read) return no_kernel(r, "the ids need an integer dtype");
  size_t elem = ir::size_bytes(r.output.dtype);
  KernelFn fn = [g, read, elem, axis](const void* const* in, void* out) -> std::string {
    std::vector<int64_t> ids;
    if (std::string e = read(in[1], g.ids, g.n, axis, ids); !e.empty()) return e;
    const char* x = static_cast<const char*>(in[0]);
    char* o = static_cast<char*>(out);
    size_t row = size_t(g.post) * elem;
    for (int64_t p = 0; p < g.pre; ++p)
      for (int64_t j = 0; j < g.ids; ++j)
        std::memcpy(o + size_t(p * g.ids + j) * row, x + size_t(p * g.n + ids[size_t(j)]) * row,
                    row);
    return {};
  };
  return Kernel{std::move(fn), "take"};
}

template <class T>
KernelResult index_add(const KernelRequest& r) {
  int64_t axis = norm_axis(*r.attrs.axis, r.output.shape.rank());
  TakeGeometry g = take_geometry(r.output.shape, axis, r.inputs[1].shape);
  IdReader read = id_reader(r.inputs[1].dtype);
  if (!read) return no_kernel(r, "the ids need an integer dtype");
  int64_t total = numel(r.output.shape);
  KernelFn fn = [g, read, total, axis](const void* const* in, void* out) -> std::string {
    std::vector<int64_t> ids;
    if (std::string e = read(in[1], g.ids, g.n, axis, ids); !e.empty()) return e;
    const T* gr = static_cast<const T*>(in[0]);
    T* o = static_cast<T*>(out);
    std::fill(o, o + total, T(0));
    for (int64_t p = 0; p < g.pre; ++p)
      for (int64_t j = 0; j < g.ids; ++j) {
        T* dst = o + (p * g.n + ids[size_t(j)]) * g.post;
        const T* src = gr + (p * g.ids + j) * g.post;
        for (int64_t q = 0; q < g.post; ++q) dst[q] = scalar::binary<Op::Add, T>(dst[q], src[q]);
      }
    return {};
  };
  return Kernel{std::move(fn), kernel_label(Op::IndexAdd, r.output.dtype)};
}

}  // namespace

KernelResult make_shape_kernel(const KernelRequest& r) {
  switch (r.op) {
    case Op::Reshape:
    case Op::StopGradient:
      return make_copy_kernel(size_t(numel(r.output.shape)) * ir::size_bytes(r.output.dtype));
    case Op::Permute: return permute(r);
    case Op::Expand: return expand(r);
    case Op::Concat: return concat(r);
    case Op::Slice: return slice(r);
    case Op::Take: return take(r);
    case Op::Pad: return pad(r);
    case Op::Flip: return flip(r);
    case Op::IndexAdd: {
      ir::DType d = r.output.dtype;
      if (d == ir::DType::BF16 || d == ir::DType::F16 || d == ir::DType::Bool)
        return no_kernel(r, "operands must be lowered to a compute dtype first");
      return dispatch_compute(d, [&](auto t) { return index_add<decltype(t)>(r); });
    }
    default: return no_kernel(r, "not a shape op");
  }
}

}  // namespace sexpgpu::cpu
