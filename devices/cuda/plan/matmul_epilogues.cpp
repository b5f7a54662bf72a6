// Products that add their bias and residual in cuBLASLt (matmul_epilogues.h).
//
// The node that becomes the product is the chain's last addition, not the
// product's own node: it comes after everything the epilogue reads (the
// bias parameter may be declared after the product, the residual computed
// after it), so the lowered nodes stay in program order.
#include "matmul_epilogues.h"

#include <algorithm>
#include <optional>

#include "cuda/codegen/elementwise.h"
#include "cuda/factories/kernel.h"
#include "ir/elementwise.h"
#include "plan/geometry.h"

namespace sexpgpu::cuda {
namespace {

using cpu::Lowered;
using cpu::LoweredNode;
using ir::DType;
using ir::NodeId;
using ir::Op;

using Readers = cpu::LiveReaders;

// The one reader of node `id`, when it is not an output and read once.
std::optional<NodeId> only_reader(const Readers& r, NodeId id) {
  if (r.is_output[size_t(id)] || r.of[size_t(id)].size() != 1) return std::nullopt;
  return r.of[size_t(id)][0];
}

// The operand of the addition `n` that is not `x`.
std::optional<NodeId> other_addend(const LoweredNode& n, NodeId x) {
  if (n.op != Op::Add || n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) return std::nullopt;
  if (n.inputs[0] == x) return n.inputs[1];
  if (n.inputs[1] == x) return n.inputs[0];
  return std::nullopt;
}

// A bias cuBLASLt broadcasts: f32 values along the last axis alone.
bool is_bias(const ir::TensorType& t, int64_t n) {
  return t.dtype == DType::F32 && t.shape.rank() >= 1 && t.shape[t.shape.rank() - 1] == n &&
         t.shape.numel() == n;
}

// sum = f32(product) + bias, where the product is half and read only by
// its cast, which only the sum reads.
struct BiasSum {
  NodeId product, sum, bias;
};

std::optional<BiasSum> bias_sum(const Lowered& lowered, const Readers& r, NodeId m) {
  const LoweredNode& product = lowered.nodes[size_t(m)];
  if (product.op != Op::MatMul || !is_half(product.type.dtype) || product.inputs.size() != 2 ||
      product.type.shape.rank() < 1)
    return std::nullopt;
  std::optional<NodeId> cast = only_reader(r, m);
  if (!cast) return std::nullopt;
  const LoweredNode& widened = lowered.nodes[size_t(*cast)];
  if (widened.op != Op::Cast || widened.type.dtype != DType::F32) return std::nullopt;
  std::optional<NodeId> sum = only_reader(r, *cast);
  if (!sum || r.is_output[size_t(*sum)]) return std::nullopt;
  const LoweredNode& s = lowered.nodes[size_t(*sum)];
  std::optional<NodeId> bias = other_addend(s, *cast);
  if (!bias || s.type != widened.type) return std::nullopt;
  int64_t n = product.type.shape[product.type.shape.rank() - 1];
  if (!is_bias(lowered.nodes[size_t(*bias)].type, n)) return std::nullopt;
  return BiasSum{m, *sum, *bias};
}

// Whether the matmul kernels take `n` (program_plan.cpp's view of it: transposed
// operands swapped back).
bool accepted(const Lowered& lowered, const LoweredNode& n, Context& context) {
  std::vector<ir::TensorType> types = cpu::op_operand_types(lowered, n, n.inputs);
  return bool(make_kernel(KernelRequest{n.op, n.attrs, types, n.type, context, n.transposed}));
}

// Node `target` becomes `product` with `added` operands after its two,
// writing `result` (f32 unless said), when the matmul kernels take that.
bool becomes_product(Lowered& lowered, NodeId target, NodeId product, const ir::NodeIds& added,
                     Context& context, DType result = DType::F32) {
  LoweredNode rewritten = lowered.nodes[size_t(product)];  // its origin too: the report's FLOPs
  rewritten.inputs.insert(rewritten.inputs.end(), added.begin(), added.end());
  rewritten.type.dtype = result;
  if (!accepted(lowered, rewritten, context)) return false;
  lowered.nodes[size_t(target)] = std::move(rewritten);
  return true;
}

// The residual r of total = sum + r (or r + sum), f32 of the sum's shape,
// when the sum's one reader is that addition.
std::optional<NodeId> residual(const Lowered& lowered, const Readers& r, NodeId sum,
                               NodeId& total) {
  std::optional<NodeId> reader = only_reader(r, sum);
  if (!reader) return std::nullopt;
  const LoweredNode& t = lowered.nodes[size_t(*reader)];
  std::optional<NodeId> addend = other_addend(t, sum);
  const ir::TensorType& s = lowered.nodes[size_t(sum)].type;
  if (!addend || t.type != s || lowered.nodes[size_t(*addend)].type != s) return std::nullopt;
  total = *reader;
  return addend;
}

// Whether every reader of `id` reads it from memory in a kernel of its own.
// Only then does the bias alone go into the product: the f32 result is
// twice the half one's bytes, so where the sum would fuse into its readers'
// generated kernel (a gelu, the slices of q, k and v), that kernel's
// reading the half product and the bias is cheaper than the product's
// writing f32; where it is a kernel of its own (before a layer norm, say),
// the epilogue saves that kernel's whole read and write.
bool read_by_kernels_alone(const Lowered& lowered, const Readers& r, NodeId id) {
  if (r.of[size_t(id)].empty()) return false;
  for (NodeId reader : r.of[size_t(id)]) {
    Op op = lowered.nodes[size_t(reader)].op;
    if (ir::is_elementwise(op) || is_view(op)) return false;
  }
  return true;
}

// The readers of `id` when every one rounds it to `half` (a bias sum cast
// back to bf16 for the next product: GPT-2's qkv, once attention reads its
// slices in place), in program order; none otherwise.
std::vector<NodeId> half_casts(const Lowered& lowered, const Readers& r, NodeId id, DType half) {
  if (r.is_output[size_t(id)]) return {};
  for (NodeId reader : r.of[size_t(id)]) {
    const LoweredNode& n = lowered.nodes[size_t(reader)];
    if (n.op != Op::Cast || n.type.dtype != half) return {};
  }
  return r.of[size_t(id)];
}

// What `id` reshapes, through any chain of reshapes: the same elements in
// the same order.
NodeId unreshaped(const Lowered& lowered, NodeId id) {
  while (lowered.nodes[size_t(id)].op == Op::Reshape) id = lowered.nodes[size_t(id)].inputs[0];
  return id;
}

int64_t last_axis(const Lowered& lowered, NodeId id) {
  const ir::Shape& shape = lowered.nodes[size_t(id)].type.shape;
  return shape.rank() == 0 ? -1 : shape[shape.rank() - 1];
}

// Whether everything reading `id` comes after node `after`, reshapes
// (which read in place) looked through.
bool read_after(const Lowered& lowered, const Readers& r, NodeId id, NodeId after) {
  return std::all_of(r.of[size_t(id)].begin(), r.of[size_t(id)].end(), [&](NodeId reader) {
    return reader > after || (lowered.nodes[size_t(reader)].op == Op::Reshape &&
                              read_after(lowered, r, reader, after));
  });
}

// Whether sum node `s` adds its operand over every axis but the last.
bool sums_columns(const LoweredNode& s, const Lowered& lowered) {
  const ir::Shape& in = lowered.nodes[size_t(s.inputs[0])].type.shape;
  const int64_t rank = in.rank();
  if (rank < 2 || s.type.dtype != DType::F32 || !s.attrs.axes) return false;
  std::vector<bool> reduced(size_t(rank), false);
  for (int64_t a : *s.attrs.axes) reduced[size_t(cpu::norm_axis(a, rank))] = true;
  for (int64_t a = 0; a < rank; ++a)
    if (reduced[size_t(a)] != (a < rank - 1)) return false;
  return s.type.shape.numel() == in[rank - 1];
}

}  // namespace

std::vector<std::pair<NodeId, NodeId>> bias_gradient_sums(const Lowered& lowered,
                                                          const std::vector<NodeId>& outputs) {
  const Readers r = cpu::live_readers(lowered, outputs);
  std::vector<std::pair<NodeId, NodeId>> pairs;
  std::vector<bool> taken(lowered.nodes.size(), false);  // a product writes one sum
  for (size_t s = 0; s < lowered.nodes.size(); ++s) {
    const LoweredNode& sum = lowered.nodes[s];
    if (!r.live[s] || sum.op != Op::Sum || !sums_columns(sum, lowered)) continue;
    const NodeId source = unreshaped(lowered, sum.inputs[0]);
    if (!is_half(lowered.nodes[size_t(source)].type.dtype)) continue;
    // The readers of b or of any reshape of it.
    std::vector<NodeId> views = {source}, products;
    for (size_t v = 0; v < views.size(); ++v)
      for (NodeId reader : r.of[size_t(views[v])])
        (lowered.nodes[size_t(reader)].op == Op::Reshape ? views : products).push_back(reader);
    for (NodeId p : products) {
      const LoweredNode& product = lowered.nodes[size_t(p)];
      bool weight_gradient =
          product.op == Op::MatMul && product.inputs.size() == 2 && product.transposed[0] &&
          !product.transposed[1] && unreshaped(lowered, product.inputs[1]) == source &&
          unreshaped(lowered, product.inputs[0]) != source &&
          last_axis(lowered, product.inputs[1]) == last_axis(lowered, source) && !taken[size_t(p)];
      if (!weight_gradient || !read_after(lowered, r, NodeId(s), p)) continue;
      pairs.push_back({NodeId(s), p});
      taken[size_t(p)] = true;
      break;
    }
  }
  return pairs;
}

void matmul_epilogues(Lowered& lowered, const std::vector<NodeId>& outputs, Context& context) {
  Readers r = cpu::live_readers(lowered, outputs);
  // Each chain's nodes are read only inside it, so a rewrite leaves the
  // other chains' readers as they were.
  for (size_t i = 0; i < lowered.nodes.size(); ++i) {
    std::optional<BiasSum> chain = bias_sum(lowered, r, NodeId(i));
    if (!chain) continue;
    NodeId total = -1;
    if (std::optional<NodeId> addend = residual(lowered, r, chain->sum, total);
        addend && becomes_product(lowered, total, chain->product, {chain->bias, *addend}, context))
      continue;
    if (read_by_kernels_alone(lowered, r, chain->sum)) {
      becomes_product(lowered, chain->sum, chain->product, {chain->bias}, context);
      continue;
    }
    // Read only rounded back to the product's half type: the product adds
    // the bias, rounded to that type as autocast rounds it, to its f32
    // accumulator and rounds once. The widening cast of the product becomes
    // the bias's rounding (it sits before the sum's readers and after the
    // bias), the first cast of the sum becomes the product, the others
    // read it in place.
    const DType half = lowered.nodes[size_t(chain->product)].type.dtype;
    std::vector<NodeId> casts = half_casts(lowered, r, chain->sum, half);
    if (casts.empty()) continue;
    const NodeId widening = lowered.nodes[size_t(chain->sum)].inputs[0] == chain->bias
                                ? lowered.nodes[size_t(chain->sum)].inputs[1]
                                : lowered.nodes[size_t(chain->sum)].inputs[0];
    const LoweredNode kept = lowered.nodes[size_t(widening)];
    LoweredNode& rounding = lowered.nodes[size_t(widening)];
    rounding.inputs = {chain->bias};
    rounding.type = lowered.nodes[size_t(chain->bias)].type;
    rounding.type.dtype = half;
    rounding.attrs.dtype = half;
    if (!becomes_product(lowered, casts.front(), chain->product, {widening}, context, half)) {
      lowered.nodes[size_t(widening)] = kept;
      continue;
    }
    for (size_t c = 1; c < casts.size(); ++c) {
      LoweredNode& copy = lowered.nodes[size_t(casts[c])];
      if (copy.inputs.empty() || copy.inputs[0] != chain->sum) continue;  // one cast counted twice
      copy.op = Op::Reshape;
      copy.inputs = {casts.front()};
      copy.attrs = ir::Attrs{};
    }
  }
}

}  // namespace sexpgpu::cuda
