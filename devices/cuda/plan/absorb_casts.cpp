// Casts absorbed into the kernels that can do them (absorb_casts.h).
#include "absorb_casts.h"

#include <algorithm>
#include <optional>

#include "cuda/factories/kernel.h"

namespace sexpgpu::cuda {
namespace {

using cpu::Lowered;
using cpu::LoweredNode;
using ir::DType;
using ir::NodeId;
using ir::Op;

bool absorbs_casts(Op op) {
  switch (op) {
    case Op::CrossEntropy:
    case Op::CrossEntropyGrad:
    case Op::LayerNorm:
    case Op::LayerNormGrad:
    case Op::LayerNormParamGrad:
    case Op::Softmax:
    case Op::LogSoftmax: return true;
    default: return false;
  }
}

// Whether node `id` is an f32 copy of a half tensor.
bool widens_half(const Lowered& lowered, NodeId id) {
  const LoweredNode& n = lowered.nodes[size_t(id)];
  return n.op == Op::Cast && n.type.dtype == DType::F32 &&
         is_half(lowered.nodes[size_t(n.inputs[0])].type.dtype);
}

// One way to run node `id` with some casts absorbed.
struct Rewrite {
  ir::NodeIds inputs;
  std::optional<DType> stores;  // the dtype it writes, when its reader's cast is absorbed
};

bool accepted(const Lowered& lowered, const LoweredNode& n, const Rewrite& w, Context& context) {
  std::vector<ir::TensorType> types;
  for (NodeId in : w.inputs) types.push_back(lowered.nodes[size_t(in)].type);
  ir::TensorType out = n.type;
  if (w.stores) out.dtype = *w.stores;
  return bool(make_kernel(KernelRequest{n.op, n.attrs, types, out, context, n.transposed}));
}

// The half copy of f32 node `x` made for a matrix product: a live cast of
// it to bf16/f16 that a matmul reads.
std::optional<NodeId> half_copy_for_product(const Lowered& lowered, NodeId x,
                                            const std::vector<std::vector<NodeId>>& readers) {
  for (NodeId c : readers[size_t(x)]) {
    const LoweredNode& cast = lowered.nodes[size_t(c)];
    if (cast.op != Op::Cast || !is_half(cast.type.dtype)) continue;
    for (NodeId r : readers[size_t(c)])
      if (lowered.nodes[size_t(r)].op == Op::MatMul) return c;
  }
  return std::nullopt;
}

// A sum of f32 values that are also rounded to half for a matrix product
// (a bias gradient beside its weight gradient's product) reads the rounded
// copy: what PyTorch's autocast sums, half the bytes, and the values'
// kernel then writes only the half copy when nothing else reads them.
void sum_half_copies(Lowered& lowered, std::vector<std::vector<NodeId>>& readers,
                     Context& context) {
  for (size_t i = 0; i < lowered.nodes.size(); ++i) {
    LoweredNode& n = lowered.nodes[i];
    if (n.op != Op::Sum || n.type.dtype != DType::F32 || n.inputs.size() != 1) continue;
    const NodeId x = n.inputs[0];
    if (lowered.nodes[size_t(x)].type.dtype != DType::F32) continue;
    std::vector<NodeId>& x_readers = readers[size_t(x)];
    if (std::find(x_readers.begin(), x_readers.end(), NodeId(i)) == x_readers.end()) continue;
    std::optional<NodeId> copy = half_copy_for_product(lowered, x, readers);
    if (!copy || !accepted(lowered, n, Rewrite{{*copy}, std::nullopt}, context)) continue;
    n.inputs = {*copy};
    x_readers.erase(std::find(x_readers.begin(), x_readers.end(), NodeId(i)));
    readers[size_t(*copy)].push_back(NodeId(i));
  }
}

// A half product returned only through a cast to f32 (a weight gradient
// for the f32 master) writes f32 itself: cuBLASLt's f32 accumulator, not
// rounded to half and widened back, and no cast kernel. A cast that other
// kernels read stays: fused into its readers it costs nothing, and the
// half result is half the bytes to write and read.
void products_write_f32(Lowered& lowered, const std::vector<bool>& is_output,
                        const std::vector<std::vector<NodeId>>& readers, Context& context) {
  for (size_t i = 0; i < lowered.nodes.size(); ++i) {
    LoweredNode& n = lowered.nodes[i];
    if (n.op != Op::MatMul || !is_half(n.type.dtype) || is_output[i] || readers[i].size() != 1)
      continue;
    const NodeId c = readers[i][0];
    LoweredNode& cast = lowered.nodes[size_t(c)];
    if (cast.op != Op::Cast || cast.type.dtype != DType::F32 || !is_output[size_t(c)] ||
        !readers[size_t(c)].empty())
      continue;
    if (!accepted(lowered, n, Rewrite{n.inputs, DType::F32}, context)) continue;
    n.type.dtype = DType::F32;
    cast.op = Op::Reshape;  // now the same type as its operand: read in place
    cast.attrs = ir::Attrs{};
  }
}

}  // namespace

void absorb_casts(Lowered& lowered, const std::vector<NodeId>& outputs, Context& context) {
  std::vector<LoweredNode>& nodes = lowered.nodes;
  size_t count = nodes.size();
  cpu::LiveReaders graph = cpu::live_readers(lowered, outputs);
  const std::vector<bool>&live = graph.live, &is_output = graph.is_output;
  std::vector<std::vector<NodeId>>& readers = graph.of;
  sum_half_copies(lowered, readers, context);
  products_write_f32(lowered, is_output, readers, context);

  for (size_t i = 0; i < count; ++i) {
    LoweredNode& n = nodes[i];
    if (!live[i] || !absorbs_casts(n.op) || n.type.dtype != DType::F32) continue;
    Rewrite loads{n.inputs, std::nullopt};
    for (NodeId& in : loads.inputs)
      if (widens_half(lowered, in)) in = nodes[size_t(in)].inputs[0];
    std::optional<NodeId> narrowing;  // the one reader, a cast to half
    if (!is_output[i] && readers[i].size() == 1) {
      const LoweredNode& r = nodes[size_t(readers[i][0])];
      if (r.op == Op::Cast && is_half(r.type.dtype)) narrowing = readers[i][0];
    }
    // The most absorbed first: loads and the store, the loads alone, the
    // store alone.
    bool any_load = loads.inputs != n.inputs;
    std::vector<Rewrite> candidates;
    if (narrowing) {
      DType stored = nodes[size_t(*narrowing)].type.dtype;
      if (any_load) {
        candidates.push_back({loads.inputs, stored});
        candidates.push_back(loads);
      }
      candidates.push_back({n.inputs, stored});
    } else if (any_load) {
      candidates.push_back(loads);
    }
    std::optional<Rewrite> chosen;
    for (const Rewrite& w : candidates)
      if (accepted(lowered, n, w, context)) {
        chosen = w;
        break;
      }
    if (!chosen) continue;
    n.inputs = chosen->inputs;
    if (chosen->stores) {
      n.type.dtype = *chosen->stores;
      LoweredNode& cast = nodes[size_t(*narrowing)];
      cast.op = Op::Reshape;  // now the same type as its operand: read in place
      cast.attrs = ir::Attrs{};
    }
  }
}

}  // namespace sexpgpu::cuda
