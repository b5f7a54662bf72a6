// Casts absorbed into the row kernels (absorb_casts.h).
#include "absorb_casts.h"

#include <optional>

#include "kernel.h"

namespace sexpgpu::cuda {
namespace {

using cpu::Lowered;
using cpu::LoweredNode;
using ir::DType;
using ir::NodeId;
using ir::Op;

bool is_half(DType d) {
  return d == DType::BF16 || d == DType::F16;
}

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

}  // namespace

void absorb_casts(Lowered& lowered, const std::vector<NodeId>& outputs, Context& context) {
  std::vector<LoweredNode>& nodes = lowered.nodes;
  size_t count = nodes.size();
  std::vector<bool> live(count, false), is_output(count, false);
  for (NodeId o : outputs) live[size_t(o)] = is_output[size_t(o)] = true;
  for (size_t i = count; i-- > 0;)
    if (live[i])
      for (NodeId in : nodes[i].inputs) live[size_t(in)] = true;
  std::vector<std::vector<NodeId>> readers(count);
  for (size_t i = 0; i < count; ++i)
    if (live[i])
      for (NodeId in : nodes[i].inputs) readers[size_t(in)].push_back(NodeId(i));

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
