// Shape kernels (ops.def, "Shape") on the CUDA device: reshape and
// stop_gradient (plain copies), permute, expand, slice, flip, concat and pad
// (strided copies: the input read with permuted, zero, stepped or negative
// strides, as on the CPU, resolved here into collapsed axes and the widest
// words the geometry allows), take (a gather of rows) and index_add (its
// deterministic scatter-add). Except index_add they only move elements, so
// they dispatch on the element size. Kernels are in shape.cu.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "cuda/check.h"
#include "cuda/kernels/creation_launch.h"
#include "cuda/kernels/shape_launch.h"
#include "kernel.h"
#include "plan/geometry.h"

namespace sexpgpu::cuda {
namespace {

using cpu::Dims;
using cpu::norm_axis;
using cpu::numel;
using ir::Op;

constexpr int64_t kIndex32Limit = int64_t(1) << 31;

bool aligned(const void* a, const void* b, int bytes) {
  return (reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b)) % uintptr_t(bytes) == 0;
}

Kernel empty_kernel(std::string name) {
  return kernel_of([](const LaunchArgs&) { return std::string(); }, std::move(name) + " (empty)");
}

// ---------------------------------------------------------------------------
// Strided copies

// A copy in two forms: `vector` moves the widest words the geometry allows,
// `scalar` one element per word, for buffers not aligned to those words.
struct CopyPlan {
  StridedCopyParams vector, scalar;
};

// The largest offset magnitude the space reaches from `base`.
int64_t reach(const StridedCopyParams& p, const int64_t* strides, int64_t base) {
  int64_t r = base < 0 ? -base : base;
  for (int a = 0; a < p.rank; ++a)
    r += (p.dims[a] - 1) * (strides[a] < 0 ? -strides[a] : strides[a]);
  return r;
}

bool fits_index32(const StridedCopyParams& p) {
  return p.numel < kIndex32Limit && reach(p, p.in_strides, p.in_base) < kIndex32Limit &&
         reach(p, p.out_strides, p.out_base) < kIndex32Limit;
}

// The outer axis along which the input is contiguous, when the output is
// contiguous along the inner one and the input is not (a transpose that
// pays for tiling); -1 otherwise.
int transpose_axis(const StridedCopyParams& p) {
  constexpr int64_t kMinSide = 16;
  const int inner = p.rank - 1;
  if (p.out_strides[inner] != 1 || p.in_strides[inner] == 1 || p.in_strides[inner] == 0 ||
      p.dims[inner] < kMinSide)
    return -1;
  for (int a = 0; a < inner; ++a)
    if (p.in_strides[a] == 1 && p.dims[a] >= kMinSide &&
        (p.dims[a] + 31) / 32 * ((p.dims[inner] + 31) / 32) < kIndex32Limit)  // tiles (grid.x)
      return a;
  return -1;
}

// p in words of `bytes` bytes, when its inner axis is contiguous on both
// sides and its length, the other strides and both bases are whole words.
std::optional<StridedCopyParams> widened(StridedCopyParams p, int bytes) {
  const int inner = p.rank - 1;
  const int64_t k = bytes / p.word_bytes;
  if (bytes % p.word_bytes || k <= 1 || p.in_strides[inner] != 1 || p.out_strides[inner] != 1 ||
      p.dims[inner] % k || p.in_base % k || p.out_base % k)
    return std::nullopt;
  for (int a = 0; a < inner; ++a)
    if (p.in_strides[a] % k || p.out_strides[a] % k) return std::nullopt;
  for (int a = 0; a < inner; ++a) {
    p.in_strides[a] /= k;
    p.out_strides[a] /= k;
  }
  p.dims[inner] /= k;
  p.numel /= k;
  p.in_base /= k;
  p.out_base /= k;
  p.word_bytes = bytes;
  p.index32 = fits_index32(p);
  return p;
}

// out[out_base + i.out_strides] = in[in_base + i.in_strides] for every index
// i of `shape` (element units), its axes collapsed as on the CPU; nullopt
// when more than kMaxCopyRank remain.
std::optional<CopyPlan> plan_copy(const ir::Shape& shape, const Dims& out_strides, int64_t out_base,
                                  const Dims& in_strides, int64_t in_base, size_t elem,
                                  int blocks) {
  Dims strides[] = {out_strides, in_strides};
  cpu::Space space = cpu::make_space(shape, strides);
  StridedCopyParams p;
  if (space.dims.empty()) {  // one element
    p.rank = 1;
    p.dims[0] = p.in_strides[0] = p.out_strides[0] = 1;
  } else {
    if (space.dims.size() > size_t(kMaxCopyRank)) return std::nullopt;
    p.rank = int(space.dims.size());
    for (int a = 0; a < p.rank; ++a) {
      p.dims[a] = space.dims[size_t(a)];
      p.out_strides[a] = space.strides[0][size_t(a)];
      p.in_strides[a] = space.strides[1][size_t(a)];
    }
  }
  p.in_base = in_base;
  p.out_base = out_base;
  p.numel = space.numel;
  p.word_bytes = int(elem);
  p.max_blocks = blocks;
  p.index32 = fits_index32(p);
  p.transpose_axis = transpose_axis(p);
  CopyPlan plan{p, p};
  for (int bytes : {16, 8, 4})
    if (std::optional<StridedCopyParams> v = widened(p, bytes)) {
      plan.vector = *v;
      break;
    }
  return plan;
}

std::string run_copy(const CopyPlan& c, const void* in, void* out, cudaStream_t stream) {
  StridedCopyParams p = aligned(in, out, c.vector.word_bytes) ? c.vector : c.scalar;
  p.in = in;
  p.out = out;
  return cuda_error(launch_strided_copy(p, stream), "launch_strided_copy");
}

// "[192,1024,8]x16B": the collapsed space and the word of the copy.
std::string describe(const StridedCopyParams& p) {
  std::string s = "[";
  for (int a = 0; a < p.rank; ++a) s += (a ? "," : "") + std::to_string(p.dims[a]);
  s += "]x" + std::to_string(p.word_bytes) + "B";
  if (p.transpose_axis >= 0) s += " tiled";
  return s;
}

// One strided copy of `shape` from operand `operand` (strides and bases in
// elements).
struct CopySpec {
  int operand;
  ir::Shape shape;
  Dims out_strides;
  int64_t out_base;
  Dims in_strides;
  int64_t in_base;
};

// The copies of `specs` into the output, after filling it with `fill`
// (pad's value, as the element's bits) when given.
KernelResult copies_kernel(const KernelRequest& r, const std::vector<CopySpec>& specs,
                           std::optional<uint64_t> fill, std::string name) {
  const size_t elem = ir::size_bytes(r.output.dtype);
  const int blocks = max_blocks(r.context);
  const int64_t n = numel(r.output.shape);
  name = kernel_label(r.op, r.output.dtype) + name;
  if (n == 0) return empty_kernel(std::move(name));
  std::vector<std::pair<int, CopyPlan>> plans;
  for (const CopySpec& s : specs) {
    if (numel(s.shape) == 0) continue;
    std::optional<CopyPlan> plan =
        plan_copy(s.shape, s.out_strides, s.out_base, s.in_strides, s.in_base, elem, blocks);
    if (!plan) return no_kernel(r, "more than 8 axes remain after merging contiguous ones");
    name += (plans.empty() ? " " : " + ") + describe(plan->vector);
    plans.emplace_back(s.operand, *plan);
  }
  LaunchFn launch = [plans, fill, n, elem, blocks](const LaunchArgs& a) -> std::string {
    if (fill) SG_CUDA_RETURN_IF_ERROR(launch_fill(a.output, n, int(elem), *fill, blocks, a.stream));
    for (const auto& [operand, plan] : plans)
      if (std::string e = run_copy(plan, a.inputs[operand], a.output, a.stream); !e.empty())
        return e;
    return {};
  };
  return kernel_of(std::move(launch), std::move(name));
}

KernelResult permute(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  Dims xs = cpu::contiguous_strides(x), in_strides;
  for (int64_t a : *r.attrs.axes) in_strides.push_back(xs[size_t(norm_axis(a, x.rank()))]);
  const ir::Shape& out = r.output.shape;
  return copies_kernel(r, {{0, out, cpu::contiguous_strides(out), 0, in_strides, 0}}, std::nullopt,
                       "");
}

KernelResult expand(const KernelRequest& r) {
  const ir::Shape& out = r.output.shape;
  return copies_kernel(r,
                       {{0, out, cpu::contiguous_strides(out), 0,
                         cpu::broadcast_strides(r.inputs[0].shape, out), 0}},
                       std::nullopt, "");
}

KernelResult slice(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  Dims xs = cpu::contiguous_strides(x), in_strides;
  int64_t base = 0;
  for (int64_t a = 0; a < x.rank(); ++a) {
    base += (*r.attrs.starts)[size_t(a)] * xs[size_t(a)];
    in_strides.push_back((*r.attrs.steps)[size_t(a)] * xs[size_t(a)]);
  }
  const ir::Shape& out = r.output.shape;
  return copies_kernel(r, {{0, out, cpu::contiguous_strides(out), 0, in_strides, base}},
                       std::nullopt, "");
}

KernelResult flip(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  Dims in_strides = cpu::contiguous_strides(x);
  int64_t base = 0;
  for (int64_t a : *r.attrs.axes) {
    size_t ax = size_t(norm_axis(a, x.rank()));
    base += (x[int64_t(ax)] - 1) * in_strides[ax];
    in_strides[ax] = -in_strides[ax];
  }
  return copies_kernel(r, {{0, x, cpu::contiguous_strides(x), 0, in_strides, base}}, std::nullopt,
                       "");
}

KernelResult concat(const KernelRequest& r) {
  const ir::Shape& out = r.output.shape;
  int64_t axis = norm_axis(*r.attrs.axis, out.rank());
  Dims os = cpu::contiguous_strides(out);
  std::vector<CopySpec> specs;
  int64_t at = 0;
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const ir::Shape& s = r.inputs[i].shape;
    specs.push_back({int(i), s, os, at * os[size_t(axis)], cpu::contiguous_strides(s), 0});
    at += s[axis];
  }
  return copies_kernel(r, specs, std::nullopt, "");
}

KernelResult pad(const KernelRequest& r) {
  const ir::Shape& x = r.inputs[0].shape;
  Dims os = cpu::contiguous_strides(r.output.shape);
  int64_t base = 0;
  for (int64_t a = 0; a < x.rank(); ++a) base += (*r.attrs.pads)[size_t(2 * a)] * os[size_t(a)];
  uint64_t fill = storage_bits(r.attrs.value.value_or(0.0), r.output.dtype);
  return copies_kernel(r, {{0, x, os, base, cpu::contiguous_strides(x), 0}}, fill, "");
}

// ---------------------------------------------------------------------------
// take and index_add see x as [pre, n, post] and ids as a flat list
// (cpu::take_geometry).

std::optional<IdKind> id_kind(ir::DType d) {
  switch (d) {
    case ir::DType::I32: return IdKind::I32;
    case ir::DType::I64: return IdKind::I64;
    case ir::DType::U8: return IdKind::U8;
    case ir::DType::U16: return IdKind::U16;
    default: return std::nullopt;
  }
}

KernelResult take(const KernelRequest& r) {
  const int64_t axis = norm_axis(*r.attrs.axis, r.inputs[0].shape.rank());
  const cpu::TakeGeometry g = cpu::take_geometry(r.inputs[0].shape, axis, r.inputs[1].shape);
  std::optional<IdKind> kind = id_kind(r.inputs[1].dtype);
  if (!kind) return no_kernel(r, "the ids need an integer dtype");
  std::string name = kernel_label(Op::Take, r.output.dtype);
  if (numel(r.output.shape) == 0) return empty_kernel(std::move(name));
  if (g.n == 0) return no_kernel(r, "every id is out of range of an empty axis");
  const int elem = int(ir::size_bytes(r.output.dtype));
  TakeParams scalar;
  scalar.pre = g.pre;
  scalar.n = g.n;
  scalar.post = g.post;
  scalar.count = g.ids;
  scalar.id_kind = *kind;
  scalar.word_bytes = elem;
  scalar.max_blocks = max_blocks(r.context);
  auto finish = [](TakeParams& p) {
    p.index32 = p.pre * p.count * p.post < kIndex32Limit && p.pre * p.n * p.post < kIndex32Limit;
  };
  finish(scalar);
  TakeParams vector = scalar;
  for (int bytes : {16, 8, 4})
    if (bytes > elem && (g.post * elem) % bytes == 0) {
      vector.post = g.post * elem / bytes;
      vector.word_bytes = bytes;
      finish(vector);
      break;
    }
  name += " rows=" + std::to_string(g.pre * g.ids) + "x" + std::to_string(vector.post) + "x" +
          std::to_string(vector.word_bytes) + "B";
  LaunchFn launch = [scalar, vector](const LaunchArgs& a) -> std::string {
    TakeParams p = aligned(a.inputs[0], a.output, vector.word_bytes) ? vector : scalar;
    p.x = a.inputs[0];
    p.ids = a.inputs[1];
    p.out = a.output;
    return cuda_error(launch_take(p, a.stream), "launch_take");
  };
  return kernel_of(std::move(launch), std::move(name));
}

std::optional<AddKind> add_kind(ir::DType d) {
  switch (d) {
    case ir::DType::F32: return AddKind::F32;
    case ir::DType::F64: return AddKind::F64;
    case ir::DType::I32: return AddKind::I32;
    case ir::DType::I64: return AddKind::I64;
    case ir::DType::U8: return AddKind::U8;
    case ir::DType::U16: return AddKind::U16;
    default: return std::nullopt;
  }
}

KernelResult index_add(const KernelRequest& r) {
  std::optional<AddKind> add = add_kind(r.output.dtype);
  if (!add) return no_kernel(r, "operands must be lowered to a compute dtype first");
  std::optional<IdKind> kind = id_kind(r.inputs[1].dtype);
  if (!kind) return no_kernel(r, "the ids need an integer dtype");
  const int64_t axis = norm_axis(*r.attrs.axis, r.output.shape.rank());
  const cpu::TakeGeometry g = cpu::take_geometry(r.output.shape, axis, r.inputs[1].shape);
  std::string name = kernel_label(Op::IndexAdd, r.output.dtype);
  if (numel(r.output.shape) == 0) return empty_kernel(std::move(name));
  if (g.ids >= kIndex32Limit || g.n >= kIndex32Limit)
    return no_kernel(r, "the sort of the ids takes fewer than 2^31 ids and rows");
  IndexAddParams p;
  p.pre = g.pre;
  p.n = g.n;
  p.post = g.post;
  p.count = g.ids;
  p.id_kind = *kind;
  p.add_kind = *add;
  p.max_blocks = max_blocks(r.context);
  name += " sorted rows=" + std::to_string(g.pre * g.n) + "x" + std::to_string(g.post) +
          " ids=" + std::to_string(g.ids);
  // CUB's temporary storage is sized by asking the GPU: in prepare.
  auto sort_temp = std::make_shared<DeviceBuffer>();
  LaunchFn launch = [p, sort_temp](const LaunchArgs& a) -> std::string {
    IndexAddParams q = p;
    q.g = a.inputs[0];
    q.ids = a.inputs[1];
    q.out = a.output;
    q.scratch = a.scratch;
    q.sort_temp = sort_temp->ptr;
    q.sort_temp_bytes = sort_temp->bytes;
    return cuda_error(launch_index_add(q, a.stream), "launch_index_add");
  };
  Kernel k = kernel_of(std::move(launch), std::move(name));
  k.scratch_bytes = index_add_scratch_bytes(p);
  k.resources = sort_temp;
  if (p.count > 0)
    k.prepare = [p, sort_temp]() -> std::string {
      if (sort_temp->ptr) return {};
      SG_CUDA_RETURN_IF_ERROR(index_add_sort_bytes(p, &sort_temp->bytes));
      SG_CUDA_RETURN_IF_ERROR(cudaMalloc(&sort_temp->ptr, sort_temp->bytes + 1));
      return {};
    };
  return k;
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
    case Op::IndexAdd: return index_add(r);
    case Op::Pad: return pad(r);
    case Op::Flip: return flip(r);
    default: return no_kernel(r, "not a shape op");
  }
}

}  // namespace sexpgpu::cuda
