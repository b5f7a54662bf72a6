// Inserting the casts of lower.h.
#include "lower.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

namespace sexpgpu::cpu {
namespace {

using ir::DType;
using ir::Op;
using ir::Rule;

// What one IR node computes in: the dtype C its value operands are cast to,
// which operands those are, and whether its result is in C (else it keeps
// its own dtype: comparisons, predicates, argmax).
struct ComputeSpec {
  DType dtype;
  std::vector<size_t> value_operands;
  bool result_in_compute_dtype = true;
};

std::vector<size_t> all_operands(const ir::Node& n) {
  std::vector<size_t> v;
  for (size_t i = 0; i < n.inputs.size(); ++i) v.push_back(i);
  return v;
}

// nullopt: the node moves or makes data and needs no casts.
std::optional<ComputeSpec> compute_spec(const ir::Function& fn, const ir::Node& n) {
  DType out = n.type.dtype;
  auto in = [&](size_t i) { return fn.type(n.inputs[i]).dtype; };
  switch (ir::info(n.op).rule) {
    case Rule::UnarySame:
      if (n.op == Op::StopGradient) return std::nullopt;
      return ComputeSpec{out, {0}};
    case Rule::UnaryFloat:
    case Rule::ReduceSame:
    case Rule::ReduceFloat:
    case Rule::AxisSameFloat:
    case Rule::CrossEntropy:
    case Rule::Pool2d: return ComputeSpec{out, {0}};
    case Rule::IndexAdd: return ComputeSpec{out, {0}};
    case Rule::UnaryBool:
    case Rule::ReduceIndex: return ComputeSpec{in(0), {0}, false};
    case Rule::BinaryPromote:
    case Rule::BinaryFloat:
    case Rule::MatMul:
    case Rule::Conv2d:
    case Rule::Conv2dGrad: return ComputeSpec{out, {0, 1}};
    case Rule::Compare: return ComputeSpec{ir::promote(in(0), in(1)), {0, 1}, false};
    case Rule::Clamp:
    case Rule::Norm:
    case Rule::LayerNormGrad:
    case Rule::LayerNormParamGrad:
    case Rule::Pool2dGrad: return ComputeSpec{out, all_operands(n)};
    case Rule::Attention: {
      ComputeSpec s{out, {0, 1, 2}};
      if (n.inputs.size() > 3 && in(3) != DType::Bool) s.value_operands.push_back(3);
      return s;
    }
    case Rule::AttentionGrad: return ComputeSpec{out, {0, 1, 2, 3, 4}};  // the mask is bool
    case Rule::CrossEntropyGrad: return ComputeSpec{out, {0, 2}};        // not the targets
    // Its products in x's dtype, as matmul's; g and the result stay f32.
    case Rule::LinearCrossEntropy: return ComputeSpec{in(0), {0, 1}, false};
    case Rule::Where:
    case Rule::Cast:
    case Rule::FromAttrs:
    case Rule::Random:
    case Rule::Reshape:
    case Rule::Permute:
    case Rule::Expand:
    case Rule::Concat:
    case Rule::Slice:
    case Rule::Take:
    case Rule::Pad:
    case Rule::Flip:
    case Rule::AllReduce: return std::nullopt;  // sums in its own dtype, as the wire carries it
  }
  return std::nullopt;
}

// The dtype a kernel really computes C in.
DType widened(DType c, Op op, const LowerOptions& options) {
  bool half = c == DType::BF16 || c == DType::F16;
  bool product = op == Op::MatMul || op == Op::LinearCrossEntropy;
  if (half && product && options.native_half_matmul) return c;
  bool attention = op == Op::Attention || op == Op::AttentionGrad;
  if (half && attention && options.native_half_attention) return c;
  if (half) return DType::F32;
  Rule rule = ir::info(op).rule;
  bool float_only = rule == Rule::AxisSameFloat || rule == Rule::CrossEntropy ||
                    rule == Rule::CrossEntropyGrad || rule == Rule::Norm ||
                    rule == Rule::LayerNormGrad || rule == Rule::LayerNormParamGrad ||
                    rule == Rule::Attention || rule == Rule::AttentionGrad ||
                    rule == Rule::Pool2d || rule == Rule::Pool2dGrad;
  if (float_only && !ir::is_float(c)) return DType::F64;  // exact for every i32/u8/u16/bool value
  if (c == DType::Bool) return DType::U8;
  return c;
}

class Lowerer {
 public:
  Lowerer(const ir::Function& fn, const LowerOptions& options) : fn_(fn), options_(options) {}

  Lowered run() {
    for (ir::NodeId id = 0; id < ir::NodeId(fn_.nodes.size()); ++id) lower_node(id);
    return std::move(out_);
  }

 private:
  ir::NodeId add(LoweredNode n) {
    out_.nodes.push_back(std::move(n));
    return ir::NodeId(out_.nodes.size() - 1);
  }

  // Lowered node `src` as `dtype`: itself, or a (shared) cast of it.
  ir::NodeId as_dtype(ir::NodeId src, DType dtype, ir::NodeId origin) {
    if (out_.nodes[size_t(src)].type.dtype == dtype) return src;
    auto key = std::make_pair(src, dtype);
    if (auto it = casts_.find(key); it != casts_.end()) return it->second;
    ir::TensorType t{dtype, out_.nodes[size_t(src)].type.shape};
    ir::NodeId id = add(LoweredNode{Op::Cast, {src}, t, {}, origin});
    casts_[key] = id;
    return id;
  }

  void lower_node(ir::NodeId id) {
    const ir::Node& n = fn_.node(id);
    LoweredNode ln{n.op, {}, n.type, n.attrs, id};
    for (ir::NodeId operand : n.inputs) ln.inputs.push_back(out_.of_original[size_t(operand)]);
    std::optional<ComputeSpec> spec = compute_spec(fn_, n);
    if (n.op == Op::Where)  // selection: both values in the result dtype, no arithmetic
      for (size_t i = 1; i < 3; ++i) ln.inputs[i] = as_dtype(ln.inputs[i], n.type.dtype, -1);
    if (!spec) {
      out_.of_original.push_back(add(std::move(ln)));
      return;
    }
    DType compute = widened(spec->dtype, n.op, options_);
    for (size_t i : spec->value_operands) ln.inputs[i] = as_dtype(ln.inputs[i], compute, -1);
    if (!spec->result_in_compute_dtype || compute == n.type.dtype) {
      out_.of_original.push_back(add(std::move(ln)));
      return;
    }
    ln.type.dtype = compute;
    ir::NodeId computed = add(std::move(ln));
    out_.of_original.push_back(as_dtype(computed, n.type.dtype, id));
  }

  const ir::Function& fn_;
  const LowerOptions& options_;
  Lowered out_;
  std::map<std::pair<ir::NodeId, DType>, ir::NodeId> casts_;
};

bool swaps_last_two(const LoweredNode& n) {
  if (n.op != Op::Permute || !n.attrs.axes) return false;
  const auto& axes = *n.attrs.axes;
  int64_t rank = int64_t(axes.size());
  if (rank < 2) return false;
  auto axis = [&](int64_t a) {
    return axes[size_t(a)] < 0 ? axes[size_t(a)] + rank : axes[size_t(a)];
  };
  for (int64_t a = 0; a < rank - 2; ++a)
    if (axis(a) != a) return false;
  return axis(rank - 2) == rank - 1 && axis(rank - 1) == rank - 2;
}

}  // namespace

Lowered lower(const ir::Function& fn, const LowerOptions& options) {
  return Lowerer(fn, options).run();
}

// A cast of a transpose that only products read, directly or through a
// transpose back (an f32 weight transposed, then cast to bf16: a tied
// embedding's head and its gradient), casts the untransposed values
// instead: the two commute, one moving data, the other acting on each
// element. Each product then reads the cast with its operand's transpose
// flag flipped, and a transpose back becomes a reshape (the same values).
void cast_untransposed(Lowered& lowered) {
  std::vector<std::vector<ir::NodeId>> readers(lowered.nodes.size());
  for (size_t i = 0; i < lowered.nodes.size(); ++i)
    for (ir::NodeId in : lowered.nodes[i].inputs) readers[size_t(in)].push_back(ir::NodeId(i));
  for (size_t c = 0; c < lowered.nodes.size(); ++c) {
    LoweredNode& cast = lowered.nodes[c];
    if (cast.op != Op::Cast || !swaps_last_two(lowered.nodes[size_t(cast.inputs[0])])) continue;
    bool only_products = !readers[c].empty();
    for (ir::NodeId r : readers[c]) {
      const LoweredNode& reader = lowered.nodes[size_t(r)];
      bool product = reader.op == Op::MatMul &&
                     (reader.inputs[0] == ir::NodeId(c)) != (reader.inputs[1] == ir::NodeId(c));
      only_products = only_products && (product || swaps_last_two(reader));
    }
    if (!only_products) continue;
    cast.inputs[0] = lowered.nodes[size_t(cast.inputs[0])].inputs[0];
    ir::Shape& shape = cast.type.shape;
    std::swap(shape[shape.rank() - 2], shape[shape.rank() - 1]);
    for (ir::NodeId r : readers[c]) {
      LoweredNode& reader = lowered.nodes[size_t(r)];
      if (reader.op == Op::MatMul) {
        size_t slot = reader.inputs[0] == ir::NodeId(c) ? 0 : 1;
        reader.transposed[slot] = !reader.transposed[slot];
      } else {
        reader.op = Op::Reshape;
        reader.attrs = ir::Attrs{};
      }
    }
  }
}

void fold_transposes(Lowered& lowered) {
  cast_untransposed(lowered);
  for (LoweredNode& n : lowered.nodes) {
    if (n.op != Op::MatMul) continue;
    for (size_t i = 0; i < 2; ++i) {
      const LoweredNode& operand = lowered.nodes[size_t(n.inputs[i])];
      if (!swaps_last_two(operand)) continue;
      n.inputs[i] = operand.inputs[0];
      n.transposed[i] = true;
    }
  }
}

LoweredGroup build_group(const Lowered& lowered, const std::vector<ir::NodeId>& members) {
  std::map<ir::NodeId, int> index;
  for (size_t k = 0; k < members.size(); ++k) index[members[k]] = int(k);
  LoweredGroup g;
  for (ir::NodeId id : members) {
    const LoweredNode& n = lowered.nodes[size_t(id)];
    GroupedNode node{n.op, n.attrs, n.type.dtype, {}};
    for (ir::NodeId in : n.inputs) {
      if (auto it = index.find(in); it != index.end()) {
        node.operands.push_back(it->second);
        continue;
      }
      auto at = std::find(g.externals.begin(), g.externals.end(), in);
      if (at == g.externals.end()) {
        g.externals.push_back(in);
        g.external_types.push_back(lowered.nodes[size_t(in)].type);
        at = g.externals.end() - 1;
      }
      node.operands.push_back(-1 - int(at - g.externals.begin()));
    }
    g.nodes.push_back(std::move(node));
  }
  return g;
}

std::optional<LoweredGroup> gather_group(const Lowered& lowered,
                                         const std::vector<ir::NodeId>& members,
                                         const std::vector<bool>& live,
                                         const std::vector<int>& group_of, int group) {
  std::map<ir::NodeId, int> index;
  for (size_t k = 0; k < members.size(); ++k) index[members[k]] = int(k);
  ir::NodeId last = members.back();
  for (size_t i = 0; i < lowered.nodes.size(); ++i) {
    if (!live[i] || group_of[i] == group) continue;
    for (ir::NodeId in : lowered.nodes[i].inputs)
      if (index.count(in) && in != last) return std::nullopt;
  }
  return build_group(lowered, members);
}

std::vector<ir::TensorType> op_operand_types(const Lowered& lowered, const LoweredNode& n,
                                             const ir::NodeIds& operands) {
  std::vector<ir::TensorType> types;
  for (size_t k = 0; k < operands.size(); ++k) {
    ir::TensorType t = lowered.nodes[size_t(operands[k])].type;
    if (k < 2 && n.transposed[k])
      std::swap(t.shape[t.shape.rank() - 2], t.shape[t.shape.rank() - 1]);
    types.push_back(std::move(t));
  }
  return types;
}

LiveReaders live_readers(const Lowered& lowered, const std::vector<ir::NodeId>& outputs) {
  const size_t count = lowered.nodes.size();
  LiveReaders r{std::vector<bool>(count, false), std::vector<bool>(count, false),
                std::vector<std::vector<ir::NodeId>>(count)};
  for (ir::NodeId o : outputs) r.live[size_t(o)] = r.is_output[size_t(o)] = true;
  for (size_t i = count; i-- > 0;)
    if (r.live[i])
      for (ir::NodeId in : lowered.nodes[i].inputs) r.live[size_t(in)] = true;
  for (size_t i = 0; i < count; ++i)
    if (r.live[i])
      for (ir::NodeId in : lowered.nodes[i].inputs) r.of[size_t(in)].push_back(ir::NodeId(i));
  return r;
}

}  // namespace sexpgpu::cpu
