// The IR cost model (cost.h): FLOPs by op family, bytes moved, and a
// first-fit arena plan over buffer lifetimes.
#include "ir/cost.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <queue>
#include <set>
#include <utility>

namespace sexpgpu::ir {
namespace {

double numel(const TensorType& t) {
  return double(t.shape.numel().value_or(0));
}

double input_numel(const Function& fn, const Node& n, size_t k) {
  return numel(fn.type(n.inputs[k]));
}

// Per input element (cost.h, "reductions").
double reduction_per_element(Op op) {
  switch (op) {
    case Op::Norm: return 2;
    case Op::Var:
    case Op::Std:
    case Op::LogSumExp: return 4;
    default: return 1;
  }
}

double matmul_flops(const Function& fn, const Node& n) {
  const Shape& a = fn.type(n.inputs[0]).shape;
  double k = double(a[a.rank() - 1]);
  return 2 * numel(n.type) * k;
}

// The multiply-adds of one output pixel of the forward convolution are
// Cin/groups·KH·KW, the weight's numel over Cout; its two gradients do the
// same multiply-adds in another order.
double conv_flops(const Function& fn, const Node& n) {
  switch (n.op) {
    case Op::Conv2d: {
      const TensorType& w = fn.type(n.inputs[1]);
      return 2 * numel(n.type) * numel(w) / double(w.shape[0]);
    }
    case Op::Conv2dGradInput: {  // (g, w)
      const TensorType& w = fn.type(n.inputs[1]);
      return 2 * input_numel(fn, n, 0) * numel(w) / double(w.shape[0]);
    }
    default:  // conv2d_grad_weight (x, g) -> w's shape
      return 2 * input_numel(fn, n, 1) * numel(n.type) / double(n.type.shape[0]);
  }
}

// attention: q k^T and p v. attention_grad recomputes q k^T and does four
// more products of the same size (dv, dp, dq, dk): 2.5 times the forward.
double attention_flops(const Function& fn, const Node& n) {
  const Shape& k = fn.type(n.inputs[1]).shape;  // [B,H,Tk,D]; q is [B,H,Tq,D]
  double forward = 4 * input_numel(fn, n, 0) * double(k[2]);
  double flops = n.op == Op::AttentionGrad ? 2.5 * forward : forward;
  return n.attrs.causal.value_or(false) ? flops / 2 : flops;
}

double pool_window(const Node& n) {
  const Dims& kernel = *n.attrs.kernel;
  return double(kernel[0] * kernel[1]);
}

}  // namespace

int64_t type_bytes(const TensorType& t) {
  return t.shape.numel().value_or(0) * int64_t(size_bytes(t.dtype));
}

double node_flops(const Function& fn, const Node& n) {
  switch (info(n.op).rule) {
    case Rule::UnarySame: return n.op == Op::StopGradient ? 0 : numel(n.type);
    case Rule::UnaryFloat:
    case Rule::UnaryBool:
    case Rule::BinaryPromote:
    case Rule::BinaryFloat:
    case Rule::Compare:
    case Rule::Where:
    case Rule::Clamp: return numel(n.type);
    case Rule::ReduceSame:
    case Rule::ReduceFloat:
    case Rule::ReduceIndex: return reduction_per_element(n.op) * input_numel(fn, n, 0);
    case Rule::MatMul: return matmul_flops(fn, n);
    case Rule::AxisSameFloat:
    case Rule::CrossEntropy: return 5 * input_numel(fn, n, 0);
    case Rule::CrossEntropyGrad: return 6 * input_numel(fn, n, 0);
    case Rule::LinearCrossEntropy: {  // three products of [rows, C] and [C, V], the loss and its
                                      // gradient
      const Shape& w = fn.type(n.inputs[1]).shape;
      double logits = input_numel(fn, n, 0) / double(std::max<int64_t>(w[0], 1)) * double(w[1]);
      return 6 * logits * double(w[0]) + 11 * logits;
    }
    case Rule::LayerNormGrad: return 10 * input_numel(fn, n, 0);
    case Rule::LayerNormParamGrad: return 8 * input_numel(fn, n, 0);
    case Rule::Norm: return (n.op == Op::LayerNorm ? 7 : 4) * input_numel(fn, n, 0);
    case Rule::Attention:
    case Rule::AttentionGrad: return attention_flops(fn, n);
    case Rule::Conv2d:
    case Rule::Conv2dGrad: return conv_flops(fn, n);
    case Rule::Pool2d: return pool_window(n) * numel(n.type);
    case Rule::Pool2dGrad:  // max: (x, g); avg: (g)
      return pool_window(n) * input_numel(fn, n, n.inputs.size() - 1);
    case Rule::IndexAdd: return input_numel(fn, n, 0);
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
    case Rule::AllReduce: return 0;  // moves data (over the network too), computes little
  }
  return 0;
}

std::vector<bool> live_nodes(const Function& fn) {
  std::vector<bool> live(fn.nodes.size(), false);
  for (const Output& o : fn.outputs) live[size_t(o.node)] = true;
  for (size_t i = fn.nodes.size(); i-- > 0;)
    if (live[i])
      for (NodeId in : fn.nodes[i].inputs) live[size_t(in)] = true;
  return live;
}

namespace {

bool is_leaf(Op op) {
  return op == Op::Input || op == Op::Param;
}

bool swaps_last_two(const Node& n) {
  if (n.op != Op::Permute) return false;
  const Dims& axes = *n.attrs.axes;
  const int64_t r = int64_t(axes.size());
  if (r < 2 || axes[size_t(r - 2)] != r - 1 || axes[size_t(r - 1)] != r - 2) return false;
  for (int64_t i = 0; i + 2 < r; ++i)
    if (axes[size_t(i)] != i) return false;
  return true;
}

// Nodes that share their operand's buffer: reshape and stop_gradient, and a
// transpose of the last two axes that only matmuls read (devices fold it
// into the product, as BLAS's transpose flags do; so does devices/cpu).
std::vector<bool> view_nodes(const Function& fn, const std::vector<bool>& live) {
  std::vector<bool> view(fn.nodes.size(), false), outside_matmul(fn.nodes.size(), false);
  for (const Output& o : fn.outputs) outside_matmul[size_t(o.node)] = true;
  for (size_t i = 0; i < fn.nodes.size(); ++i)
    if (live[i] && fn.nodes[i].op != Op::MatMul)
      for (NodeId in : fn.nodes[i].inputs) outside_matmul[size_t(in)] = true;
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    const Node& n = fn.nodes[i];
    view[i] = n.op == Op::Reshape || n.op == Op::StopGradient ||
              (swaps_last_two(n) && !outside_matmul[i]);
  }
  return view;
}

// Each fusion group's last node, where the fused kernel runs.
std::vector<NodeId> group_roots(const Function& fn) {
  std::vector<NodeId> roots;
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    int32_t g = fn.nodes[i].fusion_group;
    if (g < 0) continue;
    if (size_t(g) >= roots.size()) roots.resize(size_t(g) + 1, -1);
    roots[size_t(g)] = NodeId(i);
  }
  return roots;
}

}  // namespace

Cost function_cost(const Function& fn, NodeId begin, NodeId end) {
  if (end < 0) end = NodeId(fn.nodes.size());
  std::vector<bool> live = live_nodes(fn), view = view_nodes(fn, live);
  std::vector<NodeId> roots = group_roots(fn);
  std::set<std::pair<int32_t, NodeId>> group_reads;  // (group, operand) counted once
  Cost cost;
  for (NodeId id = begin; id < end; ++id) {
    const Node& n = fn.node(id);
    if (!live[size_t(id)] || is_leaf(n.op)) continue;
    cost.flops += node_flops(fn, n);
    if (view[size_t(id)]) continue;
    int32_t g = n.fusion_group;
    if (g < 0 || roots[size_t(g)] == id) cost.bytes_written += type_bytes(n.type);
    for (NodeId in : n.inputs) {
      if (g >= 0 && (fn.node(in).fusion_group == g || !group_reads.insert({g, in}).second))
        continue;
      cost.bytes_read += type_bytes(fn.type(in));
    }
  }
  return cost;
}

namespace {

int64_t aligned(int64_t bytes) {
  return (bytes + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment;
}

// The arena's free byte ranges, coalesced; `top` is its end so far.
class FreeRanges {
 public:
  int64_t allocate(int64_t bytes) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < bytes) continue;
      int64_t offset = it->first, rest = it->second - bytes;
      free_.erase(it);
      if (rest > 0) free_[offset + bytes] = rest;
      return offset;
    }
    // Nothing fits: grow the arena, taking in a free range that ends at its top.
    int64_t offset = top_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == top_) {
        offset = last->first;
        free_.erase(last);
      }
    }
    top_ = offset + bytes;
    return offset;
  }

  void release(int64_t offset, int64_t bytes) {
    auto next = free_.lower_bound(offset);
    if (next != free_.end() && offset + bytes == next->first) {
      bytes += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        prev->second += bytes;
        return;
      }
    }
    free_[offset] = bytes;
  }

  int64_t top() const { return top_; }

 private:
  std::map<int64_t, int64_t> free_;  // offset -> size
  int64_t top_ = 0;
};

}  // namespace

ArenaPlan plan_arena(std::span<const BufferLife> buffers) {
  ArenaPlan plan;
  plan.offsets.resize(buffers.size());
  FreeRanges ranges;
  using Live = std::pair<int64_t, size_t>;  // (last step, buffer), earliest first
  std::priority_queue<Live, std::vector<Live>, std::greater<>> live;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferLife& b = buffers[i];
    while (!live.empty() && live.top().first < b.first) {
      size_t done = live.top().second;
      live.pop();
      ranges.release(plan.offsets[done], aligned(buffers[done].bytes));
    }
    int64_t bytes = aligned(b.bytes);
    plan.offsets[i] = bytes == 0 ? 0 : ranges.allocate(bytes);
    if (bytes > 0) live.push({b.last, i});
  }
  plan.bytes = ranges.top();
  return plan;
}

MemoryUse plan_memory(const Function& fn) {
  MemoryUse use;
  for (NodeId id : fn.inputs)
    (fn.node(id).op == Op::Param ? use.param_bytes : use.input_bytes) += type_bytes(fn.type(id));
  const size_t count = fn.nodes.size();
  std::vector<bool> live = live_nodes(fn), view = view_nodes(fn, live), is_output(count, false);
  for (const Output& o : fn.outputs) {
    use.output_bytes += type_bytes(fn.type(o.node));
    is_output[size_t(o.node)] = true;
  }
  std::vector<NodeId> roots = group_roots(fn);
  // A view's buffer is its operand's; a fused member runs at its group's root.
  std::vector<NodeId> storage(count), step(count);
  for (size_t i = 0; i < count; ++i) {
    const Node& n = fn.nodes[i];
    storage[i] = view[i] ? storage[size_t(n.inputs[0])] : NodeId(i);
    step[i] = n.fusion_group >= 0 ? roots[size_t(n.fusion_group)] : NodeId(i);
  }
  std::vector<int64_t> last(count, -1);
  for (size_t i = 0; i < count; ++i)
    if (live[i])
      for (NodeId in : fn.nodes[i].inputs) {
        int64_t& l = last[size_t(storage[size_t(in)])];
        l = std::max<int64_t>(l, step[i]);
      }
  // An output that is a view of an intermediate is copied out at the end.
  for (const Output& o : fn.outputs)
    if (storage[size_t(o.node)] != o.node) last[size_t(storage[size_t(o.node)])] = int64_t(count);
  std::vector<BufferLife> lives;
  for (size_t i = 0; i < count; ++i) {
    const Node& n = fn.nodes[i];
    bool own_buffer =
        live[i] && !is_leaf(n.op) && !view[i] && !is_output[i] && step[i] == NodeId(i);
    if (own_buffer)
      lives.push_back({int64_t(i), std::max<int64_t>(int64_t(i), last[i]), type_bytes(n.type)});
  }
  use.intermediate_peak = plan_arena(lives).bytes;
  return use;
}

}  // namespace sexpgpu::ir
