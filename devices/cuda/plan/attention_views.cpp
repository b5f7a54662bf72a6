// Attention operands read in place (attention_views.h).
#include "attention_views.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "cuda/kernels/attention_launch.h"

namespace sexpgpu::cuda {
namespace {

using cpu::Lowered;
using cpu::LoweredNode;
using ir::DType;
using ir::NodeId;
using ir::Op;

bool is_view(Op op) {
  return op == Op::Slice || op == Op::Reshape || op == Op::Permute;
}

// NumPy's reshape without a copy: the new axes regroup the old ones, and
// the old axes of a group are laid out one inside the next.
bool reshape_in_place(StridedView& v, const ir::Shape& target) {
  ir::Dims old_shape, old_strides;  // size-1 axes dropped: their strides mean nothing
  for (size_t a = 0; a < v.shape.size(); ++a)
    if (v.shape[a] != 1) old_shape.push_back(v.shape[a]), old_strides.push_back(v.strides[a]);
  ir::Dims new_shape(target.begin(), target.end()), new_strides(new_shape.size(), 0);
  size_t oi = 0, ni = 0;
  while (oi < old_shape.size() && ni < new_shape.size()) {
    size_t oj = oi + 1, nj = ni + 1;
    int64_t old_n = old_shape[oi], new_n = new_shape[ni];
    while (old_n != new_n) {
      if (old_n < new_n) {
        if (oj == old_shape.size()) return false;
        old_n *= old_shape[oj++];
      } else {
        if (nj == new_shape.size()) return false;
        new_n *= new_shape[nj++];
      }
    }
    for (size_t a = oi; a + 1 < oj; ++a)
      if (old_strides[a] != old_strides[a + 1] * old_shape[a + 1]) return false;
    new_strides[nj - 1] = old_strides[oj - 1];
    for (size_t a = nj - 1; a > ni; --a) new_strides[a - 1] = new_strides[a] * new_shape[a];
    oi = oj;
    ni = nj;
  }
  // What is left on either side is size-1 axes (the element counts agree).
  for (; ni < new_shape.size(); ++ni) new_strides[ni] = 1;
  v.shape = new_shape;
  v.strides = new_strides;
  return true;
}

}  // namespace

std::optional<StridedView> compose_views(const ir::Shape& source,
                                         const std::vector<const LoweredNode*>& chain) {
  StridedView v;
  v.shape.assign(source.begin(), source.end());
  v.strides.assign(v.shape.size(), 1);
  for (size_t a = v.shape.size(); a-- > 1;) v.strides[a - 1] = v.strides[a] * v.shape[a];
  for (const LoweredNode* n : chain) {
    const ir::Attrs& at = n->attrs;
    switch (n->op) {
      case Op::Slice: {
        if (!at.starts || !at.ends || !at.steps || at.starts->size() != v.shape.size())
          return std::nullopt;
        for (size_t a = 0; a < v.shape.size(); ++a) {
          const int64_t start = (*at.starts)[a], step = (*at.steps)[a];
          v.offset += start * v.strides[a];
          v.strides[a] *= step;
        }
        v.shape.assign(n->type.shape.begin(), n->type.shape.end());
        break;
      }
      case Op::Permute: {
        if (!at.axes || at.axes->size() != v.shape.size()) return std::nullopt;
        StridedView p = v;
        for (size_t a = 0; a < v.shape.size(); ++a) {
          p.shape[a] = v.shape[size_t((*at.axes)[a])];
          p.strides[a] = v.strides[size_t((*at.axes)[a])];
        }
        v = p;
        break;
      }
      case Op::Reshape:
        if (!reshape_in_place(v, n->type.shape)) return std::nullopt;
        break;
      default: return std::nullopt;
    }
    if (!(ir::Shape(v.shape) == n->type.shape)) return std::nullopt;
  }
  return v;
}

namespace {

struct Graph {
  Lowered& lowered;
  std::vector<std::vector<NodeId>> readers;  // live readers, one entry per operand read
  std::vector<bool> is_output;

  LoweredNode& at(NodeId id) { return lowered.nodes[size_t(id)]; }
};

// The attention or attention_grad nodes the rewrite may give views: bf16 or
// f16 with a head dimension both tensor-core directions take.
bool takes_views(const LoweredNode& n) {
  if (n.op != Op::Attention && n.op != Op::AttentionGrad) return false;
  if (!is_half(n.type.dtype) || n.inputs.empty()) return false;
  return true;
}
bool head_dim_fits(int64_t d) {
  return d > 0 && d <= kFlashGradMaxHeadDim && d % 8 == 0;
}

// Operand positions that are [B,H,T,D] values read through a view: q, k, v
// (and g of attention_grad; its o is the forward's result, handled there).
bool value_operand(const LoweredNode& n, size_t i) {
  return i < 3 || (n.op == Op::AttentionGrad && i == 4);
}

// The head view of `v` if it is [B,H,T,D] with D contiguous and every row
// 16 bytes aligned (for the kernels' 16-byte copies).
std::optional<HeadView> head_view(const StridedView& v, const ir::Shape& logical) {
  if (v.shape.size() != 4 || !(ir::Shape(v.shape) == logical) || v.strides[3] != 1)
    return std::nullopt;
  for (int64_t x : {v.offset, v.strides[0], v.strides[1], v.strides[2]})
    if (x % 8 != 0 || x < 0) return std::nullopt;
  if (v.shape[2] * v.strides[2] >= (int64_t(1) << 31)) return std::nullopt;  // 32-bit row steps
  return HeadView{logical, v.offset, v.strides[0], v.strides[1], v.strides[2]};
}

// Where the chain from operand node `top` starts: the node whose buffer the
// view reads, and whether a cast must make it first (see attention_views.h).
struct Source {
  NodeId node;
  std::vector<const LoweredNode*> chain;  // from the source outward
  NodeId cast = -1;                       // the chain's cast to half, to become the source's
};

std::optional<Source> source_of(Graph& g, NodeId top, DType half) {
  Source s;
  NodeId n = top;
  if (g.at(n).op == Op::Cast) {
    if (g.at(n).type.dtype != half) return std::nullopt;
    s.cast = n;
    n = g.at(n).inputs[0];
  }
  std::vector<const LoweredNode*> outward;
  while (is_view(g.at(n).op)) {
    outward.push_back(&g.at(n));
    n = g.at(n).inputs[0];
  }
  if (outward.empty()) return std::nullopt;  // already dense: nothing to save
  std::reverse(outward.begin(), outward.end());
  s.chain = std::move(outward);
  if (s.cast >= 0 && g.at(n).op == Op::Cast && g.at(n).type.dtype == DType::F32 &&
      g.at(g.at(n).inputs[0]).type.dtype == half) {
    n = g.at(n).inputs[0];  // an exact round trip: read the half value
    s.cast = -1;
  }
  if (s.cast < 0 && g.at(n).type.dtype != half) return std::nullopt;
  s.node = n;
  return s;
}

// Every reader of node `id` is a qualifying attention node reading it only
// as a value operand.
bool read_only_as_values(Graph& g, NodeId id) {
  if (g.is_output[size_t(id)] || g.readers[size_t(id)].empty()) return false;
  for (NodeId r : g.readers[size_t(id)]) {
    const LoweredNode& n = g.at(r);
    if (!takes_views(n) || n.type.dtype != g.at(id).type.dtype) return false;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] == id && !value_operand(n, i)) return false;
  }
  return true;
}

void view_operands(Graph& g, std::vector<NodeViews>& views) {
  std::map<NodeId, NodeId> cast_of_source;  // a source -> the whole-source cast made for it
  for (size_t top = 0; top < g.lowered.nodes.size(); ++top) {
    if (!read_only_as_values(g, NodeId(top))) continue;
    const LoweredNode& reader = g.at(g.readers[top].front());
    const ir::Shape logical = g.at(NodeId(top)).type.shape;
    if (logical.rank() != 4 || !head_dim_fits(logical[3])) continue;
    std::optional<Source> s = source_of(g, NodeId(top), reader.type.dtype);
    if (!s) continue;
    std::optional<StridedView> strided = compose_views(g.at(s->node).type.shape, s->chain);
    if (!strided) continue;
    std::optional<HeadView> view = head_view(*strided, logical);
    if (!view) continue;
    NodeId buffer = s->node;
    if (s->cast >= 0) {
      auto made = cast_of_source.find(s->node);
      if (made != cast_of_source.end()) {
        buffer = made->second;
      } else {
        // This chain's cast becomes the source's: its only readers are the
        // attention nodes rewired below, and it runs before all of them.
        LoweredNode& cast = g.at(s->cast);
        cast.inputs = {s->node};
        cast.type.shape = g.at(s->node).type.shape;
        buffer = cast_of_source[s->node] = s->cast;
      }
    }
    for (NodeId r : g.readers[top]) {
      LoweredNode& n = g.at(r);
      NodeViews& nv = views[size_t(r)];
      nv.operands.resize(n.inputs.size());
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (n.inputs[i] == NodeId(top)) {
          n.inputs[i] = buffer;
          nv.operands[i] = view;
        }
    }
  }
}

// An attention result whose readers are permutes to [B,T,H,D] and its
// gradients (as o) is written as [B,T,H,D].
void view_results(Graph& g, std::vector<NodeViews>& views) {
  const ir::Dims to_rows = {0, 2, 1, 3};
  for (size_t i = 0; i < g.lowered.nodes.size(); ++i) {
    LoweredNode& n = g.lowered.nodes[i];
    if (n.op != Op::Attention || !takes_views(n) || g.is_output[i] || n.type.shape.rank() != 4 ||
        !head_dim_fits(n.type.shape[3]))
      continue;
    bool permuted = false, others = false;
    for (NodeId r : g.readers[i]) {
      const LoweredNode& reader = g.at(r);
      if (reader.op == Op::Permute && reader.attrs.axes && *reader.attrs.axes == to_rows) {
        permuted = true;
        continue;
      }
      bool as_o = reader.op == Op::AttentionGrad && reader.inputs.size() > 3 &&
                  reader.inputs[3] == NodeId(i);
      for (size_t k = 0; k < reader.inputs.size(); ++k)
        as_o = as_o && (k == 3 || reader.inputs[k] != NodeId(i));
      others = others || !as_o;
    }
    if (!permuted || others) continue;
    const ir::Shape logical = n.type.shape;
    const int64_t b = logical[0], h = logical[1], t = logical[2], d = logical[3];
    if ((h * d) % 8 != 0) continue;
    const HeadView view{logical, 0, t * h * d, d, h * d};
    n.type.shape = ir::Shape{b, t, h, d};
    views[i].output = view;
    for (NodeId r : g.readers[i]) {
      LoweredNode& reader = g.at(r);
      if (reader.op == Op::Permute) {
        reader.op = Op::Reshape;  // the same [B,T,H,D]: read in place
        reader.attrs = ir::Attrs{};
        continue;
      }
      views[size_t(r)].operands.resize(reader.inputs.size());
      views[size_t(r)].operands[3] = view;
    }
  }
}

// The single reader of `id`, or -1.
NodeId sole_reader(Graph& g, NodeId id) {
  const std::vector<NodeId>& r = g.readers[size_t(id)];
  return r.size() == 1 && !g.is_output[size_t(id)] ? r[0] : NodeId(-1);
}

// From slice `id` of an attention_grad result (part of [B,H,T,D]) through
// widening casts, the permute to [B,T,H,D] and the reshape to [B,T,H*D], to
// the zero pad that places it in the last axis of the gradient of a packed
// qkv: the pad, and the part's offset in that axis.
std::optional<std::pair<NodeId, int64_t>> padded_part(Graph& g, NodeId id, const ir::Shape& bhtd) {
  const int64_t b = bhtd[0], h = bhtd[1], t = bhtd[2], d = bhtd[3];
  const ir::Dims to_rows = {0, 2, 1, 3};
  bool permuted = false, merged = false;
  for (NodeId n = sole_reader(g, id); n >= 0; n = sole_reader(g, n)) {
    const LoweredNode& x = g.at(n);
    if (x.op == Op::Cast && (x.type.dtype == DType::F32 || x.type.dtype == g.at(id).type.dtype))
      continue;  // exact: bf16/f16 values widened
    if (x.op == Op::Permute && !permuted && x.attrs.axes && *x.attrs.axes == to_rows) {
      permuted = true;
      continue;
    }
    if (x.op == Op::Reshape && permuted && !merged && x.type.shape == ir::Shape{b, t, h * d}) {
      merged = true;
      continue;
    }
    if (x.op != Op::Pad || !merged || !x.attrs.pads || x.attrs.value.value_or(0) != 0)
      return std::nullopt;
    const ir::Dims& pads = *x.attrs.pads;
    if (pads.size() != 6 || pads[0] || pads[1] || pads[2] || pads[3]) return std::nullopt;
    return std::pair{n, pads[4]};
  }
  return std::nullopt;
}

// An attention_grad result read only through slices into dq, dk and dv that
// are permuted, padded and added into the [B,T,3*H*D] gradient of the qkv
// product they came from is written there directly: the sum becomes a
// reshape of it. (x + 0 + 0 is x, but for -0, which the sum makes +0.)
void write_gradients_in_place(Graph& g, std::vector<NodeViews>& views) {
  for (size_t i = 0; i < g.lowered.nodes.size(); ++i) {
    LoweredNode& ag = g.lowered.nodes[i];
    if (ag.op != Op::AttentionGrad || !takes_views(ag) || g.is_output[i] ||
        ag.type.shape.rank() != 4 || g.readers[i].size() != 3)
      continue;
    const ir::Shape& q =
        views[i].operand(0) ? views[i].operand(0)->shape : g.at(ag.inputs[0]).type.shape;
    const int64_t b = ag.type.shape[0], h = ag.type.shape[1], d = ag.type.shape[3];
    const int64_t t = q.rank() == 4 ? q[2] : -1;
    if (t <= 0 || ag.type.shape[2] != 3 * t || !head_dim_fits(d)) continue;
    // Each reader slices one of dq, dk, dv out of axis 2.
    NodeId pads[3] = {-1, -1, -1};
    int64_t offsets[3] = {0, 0, 0};
    bool ok = true;
    for (NodeId r : g.readers[i]) {
      const LoweredNode& slice = g.at(r);
      ok = ok && slice.op == Op::Slice && slice.attrs.starts && slice.attrs.steps &&
           slice.type.shape == ir::Shape{b, h, t, d};
      if (!ok) break;
      const ir::Dims& starts = *slice.attrs.starts;
      const int64_t part = starts[2] / t;
      ok = starts[0] == 0 && starts[1] == 0 && starts[3] == 0 && starts[2] % t == 0 &&
           std::all_of(slice.attrs.steps->begin(), slice.attrs.steps->end(),
                       [](int64_t s) { return s == 1; }) &&
           pads[part] < 0;
      std::optional<std::pair<NodeId, int64_t>> padded =
          ok ? padded_part(g, r, slice.type.shape) : std::nullopt;
      if (!padded) ok = false;
      if (!ok) break;
      pads[part] = padded->first;
      offsets[part] = padded->second;
    }
    if (!ok) continue;
    // The pads add up, each sum read once, into one [B,T,3*H*D] value.
    const ir::Shape packed = g.at(pads[0]).type.shape;
    const int64_t width = 3 * h * d;
    if (!(packed == ir::Shape{b, t, width})) continue;
    std::vector<NodeId> leaves(pads, pads + 3);
    NodeId sum = -1;
    for (NodeId leaf : leaves) {
      NodeId n = leaf;
      for (NodeId up = sole_reader(g, n); up >= 0 && g.at(up).op == Op::Add;
           up = sole_reader(g, up))
        n = up;
      if (sum >= 0 && n != sum) ok = false;
      sum = n;
    }
    ok = ok && sum >= 0 && g.at(sum).op == Op::Add;
    std::set<int64_t> places(offsets, offsets + 3);
    ok = ok && places == std::set<int64_t>{0, h * d, 2 * h * d};
    // Every add under the sum has only pads and adds under it: three leaves.
    std::vector<NodeId> stack = {sum};
    int leaf_count = 0;
    while (ok && !stack.empty()) {
      const NodeId n = stack.back();
      stack.pop_back();
      if (std::find(leaves.begin(), leaves.end(), n) != leaves.end()) {
        ++leaf_count;
        continue;
      }
      if (g.at(n).op != Op::Add || !(g.at(n).type.shape == packed)) {
        ok = false;
        break;
      }
      for (NodeId in : g.at(n).inputs) stack.push_back(in);
    }
    if (!ok || leaf_count != 3) continue;
    NodeId result = sum;
    if (g.at(sum).type.dtype != ag.type.dtype) {
      result = sole_reader(g, sum);
      if (result < 0 || g.at(result).op != Op::Cast || g.at(result).type.dtype != ag.type.dtype)
        continue;
    }
    for (int part = 0; part < 3; ++part)
      views[i].output_parts.push_back(
          HeadView{ir::Shape{b, h, t, d}, offsets[part], t * width, d, width});
    ag.type.shape = packed;
    LoweredNode& r = g.at(result);
    r.op = Op::Reshape;  // of the same [B,T,3*H*D]: read in place
    r.inputs = {NodeId(i)};
    r.attrs = ir::Attrs{};
  }
}

}  // namespace

std::vector<NodeViews> view_attention_operands(Lowered& lowered,
                                               const std::vector<NodeId>& outputs) {
  const size_t count = lowered.nodes.size();
  std::vector<NodeViews> views(count);
  cpu::LiveReaders live = cpu::live_readers(lowered, outputs);
  Graph g{lowered, std::move(live.of), std::move(live.is_output)};
  // Results first: an o read in place by attention_grad is then no longer
  // a candidate for the operand rewrite.
  view_results(g, views);
  view_operands(g, views);
  write_gradients_in_place(g, views);
  return views;
}

}  // namespace sexpgpu::cuda
