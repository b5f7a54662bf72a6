// The compile-time plan of a CUDA program: build() lowers the function and
// runs the rewrite passes, plan() makes one step per kernel (fusion groups,
// hoisted casts, linked forwards) and places every value, scratch and link
// in the arena. Separate from running (program_run.cpp): nothing here
// touches the GPU until build() ends by calling prepare().
#include "program_plan.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>

#include "absorb_casts.h"
#include "attention_views.h"
#include "cuda/codegen/elementwise.h"
#include "cuda/factories/kernel.h"
#include "cuda/factories/kernels_reduce.h"
#include "cuda/profile.h"
#include "fusion.h"
#include "ir/elementwise.h"
#include "matmul_epilogues.h"
#include "plan/lower.h"
#include "plan/memory_plan.h"

namespace sexpgpu::cuda::program_detail {
namespace {

constexpr size_t kScratchAlignment = 256;

// SEXPGPU_CUDA_BGRAD=0: bias gradients keep their own sums (docs/environment.md).
bool bias_gradients_in_products() {
  const char* v = std::getenv("SEXPGPU_CUDA_BGRAD");
  return !(v && std::string(v) == "0");
}

size_t bytes_of(const ir::TensorType& t) {
  return size_t(t.shape.numel().value_or(0)) * ir::size_bytes(t.dtype);
}

size_t aligned(size_t bytes, size_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// Per gradient node, the forward node whose row statistics it can read
// instead of recomputing them (KernelRequest::link), -1 elsewhere:
// attention_grad and the attention computing its `o` from the same q, k, v,
// mask, scale and causality; cross_entropy_grad and the cross_entropy of the
// same logits, targets, reduction and ignore_index. Also layer_norm_param_grad
// and an earlier layer_norm_grad of the same x, g and eps, which leaves it
// its partial column sums (the "forward" here is the other gradient); a
// layer_norm_grad links to one reader at most.
std::vector<NodeId> linked_forwards(const Lowered& lowered, const std::vector<bool>& live,
                                    const std::vector<NodeViews>& views) {
  std::vector<NodeId> forward(lowered.nodes.size(), -1);
  std::vector<bool> writes_link(lowered.nodes.size(), false);  // a layer_norm_grad, taken
  for (size_t i = 0; i < lowered.nodes.size(); ++i) {
    const LoweredNode& grad = lowered.nodes[i];
    if (!live[i]) continue;
    if (grad.op == Op::AttentionGrad) {
      NodeId o = grad.inputs[3];
      const LoweredNode& f = lowered.nodes[size_t(o)];
      bool masked = grad.inputs.size() == 6;
      bool same = f.op == Op::Attention && f.inputs.size() == (masked ? 4u : 3u) &&
                  std::equal(f.inputs.begin(), f.inputs.begin() + 3, grad.inputs.begin()) &&
                  views[size_t(o)].operand(0) == views[i].operand(0) &&
                  views[size_t(o)].operand(1) == views[i].operand(1) &&
                  views[size_t(o)].operand(2) == views[i].operand(2) &&
                  (!masked || f.inputs[3] == grad.inputs[5]) && f.attrs.scale == grad.attrs.scale &&
                  f.attrs.causal == grad.attrs.causal;
      if (same) forward[i] = o;
    } else if (grad.op == Op::CrossEntropyGrad) {
      for (size_t j = 0; j < i; ++j) {
        const LoweredNode& f = lowered.nodes[j];
        if (live[j] && f.op == Op::CrossEntropy && f.inputs[0] == grad.inputs[0] &&
            f.inputs[1] == grad.inputs[1] && f.attrs.reduction == grad.attrs.reduction &&
            f.attrs.ignore_index == grad.attrs.ignore_index) {
          forward[i] = NodeId(j);
          break;
        }
      }
    } else if (grad.op == Op::LayerNormParamGrad) {
      for (size_t j = 0; j < i; ++j) {
        const LoweredNode& f = lowered.nodes[j];
        if (live[j] && !writes_link[j] && f.op == Op::LayerNormGrad &&
            f.inputs[0] == grad.inputs[0] && f.inputs[2] == grad.inputs[1] &&
            f.attrs.eps == grad.attrs.eps) {
          forward[i] = NodeId(j);
          writes_link[j] = true;
          break;
        }
      }
    }
  }
  return forward;
}

// What step `s` reads of the function's inputs and writes of its outputs
// (plan/in_place.h). A generated kernel without views loads each operand's
// element at the flat index it stores; a multi-tensor sum of squares takes
// (operand, result) pairs.
plan::StepAccess step_access(const Step& s, size_t launch) {
  plan::StepAccess a;
  a.launch = launch;
  a.elementwise = s.group && !has_views(*s.group) && !s.pairs;
  for (size_t m = 0; m < s.inputs.size(); ++m) {
    const Slot& slot = s.inputs[m];
    bool result = s.pairs && m % 2 == 1;
    if (slot.kind == Slot::Input && !result)
      a.reads.push_back({slot.index, s.input_types[m].shape});
    if (slot.kind == Slot::Output && result)
      a.writes.push_back({slot.index, s.input_types[m].shape});
  }
  if (s.output.kind == Slot::Output) a.writes.push_back({s.output.index, s.type.shape});
  for (size_t m = 0; m < s.stores.size(); ++m)
    if (s.stores[m].kind == Slot::Output)
      a.writes.push_back({s.stores[m].index, s.store_types[m].shape});
  return a;
}

}  // namespace

std::string CudaProgram::build(const ir::Function& fn) {
  fn_ = fn;
  Lowered lowered =
      cpu::lower(fn_, cpu::LowerOptions{.native_half_matmul = true, .native_half_attention = true});
  cpu::fold_transposes(lowered);
  std::vector<NodeId> outputs;
  for (const ir::Output& o : fn_.outputs) outputs.push_back(lowered.of_original[size_t(o.node)]);
  absorb_casts(lowered, outputs, ctx_);
  // Views first: the one cast of the whole qkv product they leave is what
  // the bias epilogue then folds into the product.
  views_ = view_attention_operands(lowered, outputs);
  matmul_epilogues(lowered, outputs, ctx_);
  if (std::string e = plan(lowered); !e.empty()) return e;
  report_ = make_report(lowered);
  if (!ctx_.plan_only && !Profile::prefix().empty())
    profile_ = std::make_unique<Profile>(steps_.size());
  return prepare();
}

std::string CudaProgram::plan(const Lowered& lowered) {
  const std::vector<LoweredNode>& nodes = lowered.nodes;
  size_t count = nodes.size();
  std::vector<NodeId> outputs;
  for (const ir::Output& o : fn_.outputs) outputs.push_back(lowered.of_original[size_t(o.node)]);
  const cpu::LiveReaders graph = cpu::live_readers(lowered, outputs);
  const std::vector<bool>&live = graph.live, &is_output = graph.is_output;

  std::vector<Slot> slot(count);
  std::vector<bool> placed(count, false);
  for (size_t k = 0; k < fn_.inputs.size(); ++k) {
    size_t id = size_t(lowered.of_original[size_t(fn_.inputs[k])]);
    slot[id] = Slot{Slot::Input, k};
    placed[id] = true;
  }
  auto creation = [](Op op) { return op == Op::Full || op == Op::Constant || op == Op::Arange; };
  std::vector<bool> written_to_output(fn_.outputs.size(), false);
  for (size_t j = 0; j < fn_.outputs.size(); ++j) {
    size_t id = size_t(lowered.of_original[size_t(fn_.outputs[j].node)]);
    if (placed[id] || creation(nodes[id].op)) continue;
    // An output that reshapes a kernel's result nothing else reads (a
    // gradient cast absorbed into its product): that kernel writes the
    // output's buffer, and the reshape reads it in place.
    size_t writer = id;
    while ((nodes[writer].op == Op::Reshape || nodes[writer].op == Op::StopGradient) &&
           graph.of[size_t(nodes[writer].inputs[0])].size() == 1 &&
           !is_output[size_t(nodes[writer].inputs[0])])
      writer = size_t(nodes[writer].inputs[0]);
    const Op op = nodes[writer].op;
    if (writer != id && (placed[writer] || creation(op) || ir::is_elementwise(op) || is_view(op)))
      writer = id;
    slot[writer] = Slot{Slot::Output, j};
    placed[writer] = true;
    written_to_output[j] = true;
  }

  // Fusion groups of two or more nodes become one generated kernel each.
  GroupPlan grouping = plan_groups(lowered, live, is_output);
  const std::vector<int>& group_id = grouping.fusion.group;
  std::map<int, std::vector<NodeId>>& groups = grouping.members;
  std::map<size_t, ElementwiseGroup> group_of_last;  // last node -> its group
  // Per node computed inside another node's kernel, the last nodes of the
  // groups (or the sum) whose kernels compute it; empty: its own step.
  std::vector<std::vector<NodeId>> computed_at(count);
  std::map<size_t, std::pair<Kernel, ir::NodeIds>> fused_at;  // last node -> (kernel, externals)
  // The nodes a step writes besides its own, per the step's node (a
  // group's GroupPlan::stored; a bias gradient, below), and per such node
  // that step's node (-1 elsewhere): its value has a buffer and no step.
  std::map<size_t, std::vector<NodeId>> stores_of;
  std::vector<NodeId> stored_by(count, -1);
  for (const auto& [group, stored] : grouping.stored) {
    const NodeId writer = groups[group].back();
    stores_of[size_t(writer)] = stored;
    for (NodeId id : stored) stored_by[size_t(id)] = writer;
  }
  for (auto& [group, fused] : grouping.fused) {
    const std::vector<NodeId>& members = groups[group];
    KernelResult k = make_group_kernel(fused.first, ctx_);
    if (!k)
      return node_label(fn_, nodes[size_t(members.back())].origin,
                        nodes[size_t(members.back())].op) +
             ": " + k.error();
    group_of_last[size_t(members.back())] = std::move(fused.first);
    for (NodeId id : members)
      if (id != members.back() && stored_by[size_t(id)] < 0)
        computed_at[size_t(id)].push_back(members.back());
    fused_at[size_t(members.back())] = {std::move(k).value(), std::move(fused.second)};
  }
  std::map<size_t, size_t> summed_square =
      squares_to_sum_on_load(lowered, live, is_output, grouping);
  for (auto [sum, square] : summed_square) computed_at[square].push_back(NodeId(sum));
  // What a node's step reads: a fused group's externals, a summed square's operand.
  auto operands_of = [&](size_t i) -> const ir::NodeIds& {
    if (auto fused = fused_at.find(i); fused != fused_at.end()) return fused->second.second;
    if (auto square = summed_square.find(i); square != summed_square.end())
      return nodes[square->second].inputs;
    return nodes[i].inputs;
  };

  std::vector<NodeId> linked_forward = linked_forwards(lowered, live, views_);
  std::vector<bool> is_linked_forward(count, false);
  for (NodeId f : linked_forward)
    if (f >= 0) is_linked_forward[size_t(f)] = true;
  std::vector<std::pair<size_t, size_t>> links;  // (writer step, reader step)
  std::vector<int64_t> link_writer(count, -1);   // a forward's step, for its gradient
  std::vector<size_t> root(count);               // the node whose buffer a value is in
  std::vector<size_t> step_of(count, 0);
  std::vector<SumOfSquares> sums_of_squares;
  // Elementwise nodes of the function's inputs alone run first (hoisted),
  // the rest in program order.
  std::vector<bool> hoisted(count, false);
  std::vector<size_t> order;
  for (size_t i = 0; i < count; ++i) {
    const LoweredNode& n = nodes[i];
    hoisted[i] = live[i] && !placed[i] && computed_at[i].empty() && stored_by[i] < 0 &&
                 !fused_at.count(i) && !summed_square.count(i) && ir::is_elementwise(n.op) &&
                 n.op != Op::StopGradient && !n.inputs.empty() &&
                 std::all_of(n.inputs.begin(), n.inputs.end(),
                             [&](NodeId in) { return slot[size_t(in)].kind == Slot::Input; });
    if (hoisted[i]) order.push_back(i);
  }
  for (size_t i = 0; i < count; ++i)
    if (!hoisted[i]) order.push_back(i);
  // Bias gradients a weight gradient's product writes beside itself
  // (matmul_epilogues.h): per product its sum and per sum its product, -1
  // elsewhere. The sum's own step is planned only when the product's
  // kernel cannot, right after it.
  std::vector<NodeId> sum_of_product(count, -1), product_of_sum(count, -1);
  if (bias_gradients_in_products())
    for (auto [sum, product] : bias_gradient_sums(lowered, outputs))
      if (computed_at[size_t(sum)].empty() && !summed_square.count(size_t(sum))) {
        sum_of_product[size_t(product)] = sum;
        product_of_sum[size_t(sum)] = product;
      }
  std::function<std::string(size_t)> plan_node = [&](size_t i) -> std::string {
    root[i] = i;
    const LoweredNode& n = nodes[i];
    if (!live[i] || n.op == Op::Input || n.op == Op::Param || !computed_at[i].empty() ||
        stored_by[i] >= 0)
      return {};
    if (auto fused = fused_at.find(i); fused != fused_at.end()) {
      step_of[i] = steps_.size();
      Step s{fused->second.first, {}, {}, {}, n.origin, n.op, {}};
      s.group = group_of_last.at(i);
      for (NodeId id : groups[group_id[i]]) {
        NodeId origin = nodes[size_t(id)].origin;  // a cast after a node shares its origin
        if (origin >= 0 && std::find(s.members.begin(), s.members.end(), origin) == s.members.end())
          s.members.push_back(origin);
      }
      steps_.push_back(std::move(s));
      return {};
    }
    auto square = summed_square.find(i);
    const ir::NodeIds& operands = operands_of(i);
    std::vector<ir::TensorType> in_types = cpu::op_operand_types(lowered, n, operands);
    bool aliasable = n.op == Op::Reshape || n.op == Op::StopGradient;
    if (aliasable && !placed[i]) {
      root[i] = root[size_t(n.inputs[0])];
      slot[i] = slot[root[i]];
      placed[i] = true;
      return {};
    }
    std::optional<ElementwiseGroup> single;
    if (ir::is_elementwise(n.op) && n.op != Op::StopGradient) {
      single = ElementwiseGroup{{GroupNode{n.op, n.attrs, n.type.dtype, {}}}, in_types, n.type};
      for (size_t k = 0; k < in_types.size(); ++k) single->nodes[0].operands.push_back(-1 - int(k));
    }
    bool is_forward = is_linked_forward[i];
    int64_t writer = linked_forward[i] >= 0 ? link_writer[size_t(linked_forward[i])] : -1;
    bool link = is_forward || (writer >= 0 && steps_[size_t(writer)].kernel.link_bytes > 0);
    KernelRequest request{n.op, n.attrs, in_types, n.type, ctx_, n.transposed, link};
    if (!views_[i].operands.empty() || views_[i].output) request.views = &views_[i];
    request.bias_gradient = sum_of_product[i] >= 0;
    KernelResult k = single                          ? make_group_kernel(*single, ctx_)
                     : square != summed_square.end() ? make_sum_of_squares_kernel(request)
                                                     : make_kernel(request);
    if (!k && request.bias_gradient) {  // the sum gets its own kernel
      request.bias_gradient = false;
      k = make_kernel(request);
    }
    if (!k) return node_label(fn_, n.origin, n.op) + ": " + k.error();
    if (creation(n.op)) {
      slot[i] = Slot{Slot::Constant, constant_bytes_};
      placed[i] = true;
      constant_kernels_.push_back({constant_bytes_, std::move(k).value()});
      constant_bytes_ += aligned(bytes_of(n.type), kScratchAlignment);
      return {};
    }
    step_of[i] = steps_.size();
    if (is_forward) link_writer[i] = int64_t(steps_.size());
    steps_.push_back(Step{std::move(k).value(), {}, {}, {}, n.origin, n.op, {}});
    if (writer >= 0 && steps_.back().kernel.reads_link)
      links.push_back({size_t(writer), steps_.size() - 1});
    if (square != summed_square.end()) {
      sums_of_squares.push_back({steps_.size() - 1, i, operands[0]});
      if (nodes[square->second].origin >= 0)
        steps_.back().members.push_back(nodes[square->second].origin);
    }
    if (n.origin >= 0) steps_.back().members.push_back(n.origin);
    steps_.back().group = std::move(single);
    steps_.back().hoisted = hoisted[i];
    if (NodeId sum = sum_of_product[i]; sum >= 0) {
      if (!request.bias_gradient) return plan_node(size_t(sum));
      stored_by[size_t(sum)] = NodeId(i);
      stores_of[i] = {sum};
      if (nodes[size_t(sum)].origin >= 0)
        steps_.back().members.push_back(nodes[size_t(sum)].origin);
    }
    return {};
  };
  for (size_t i : order) {
    if (product_of_sum[i] >= 0) {  // planned with its product
      root[i] = i;
      continue;
    }
    if (std::string e = plan_node(i); !e.empty()) return e;
  }
  for (size_t i = 0; i < count; ++i)
    if (stored_by[i] >= 0) step_of[i] = step_of[size_t(stored_by[i])];
  merge_sums_of_squares(lowered, sums_of_squares, slot, root, step_of, links);
  // Outputs not written by their own kernel (inputs, constants, aliases,
  // one node named twice) are copied at the end.
  std::vector<std::pair<size_t, size_t>> output_copies;  // (node, output)
  for (size_t j = 0; j < fn_.outputs.size(); ++j)
    if (!written_to_output[j])
      output_copies.push_back({size_t(lowered.of_original[size_t(fn_.outputs[j].node)]), j});

  // Lifetimes in step numbers (each step's scratch lives for its step
  // alone), then the arena layout.
  std::vector<int64_t> last_use(count, -1);
  for (size_t i = 0; i < count; ++i) {
    if (!live[i]) continue;
    std::vector<NodeId> readers = computed_at[i];
    if (readers.empty()) readers.push_back(NodeId(i));
    for (NodeId reader : readers)
      for (NodeId in : nodes[i].inputs) {
        size_t r = root[size_t(in)];
        last_use[r] = std::max<int64_t>(last_use[r], int64_t(step_of[size_t(reader)]));
      }
  }
  for (auto [id, j] : output_copies) last_use[root[id]] = int64_t(steps_.size() + j);
  // Every buffer of the arena: a node's value, a step's scratch, or a
  // link from a writer step to its reader.
  struct Buffer {
    cpu::BufferLife life;
    enum { Value, Scratch, Link } kind;
    size_t owner;  // node; step; the writer's index in `links`
  };
  std::vector<Buffer> buffers;
  for (size_t i = 0; i < count; ++i) {
    bool buffer = live[i] && !placed[i] && root[i] == i && computed_at[i].empty();
    if (buffer) {
      int64_t first = hoisted[i] ? 0 : int64_t(step_of[i]);
      buffers.push_back(
          {{first, std::max(first, last_use[i]), bytes_of(nodes[i].type)}, Buffer::Value, i});
    }
  }
  for (size_t s = 0; s < steps_.size(); ++s) {
    if (steps_[s].kernel.scratch_bytes == 0) continue;
    size_t bytes = aligned(steps_[s].kernel.scratch_bytes, kScratchAlignment);
    buffers.push_back({{int64_t(s), int64_t(s), bytes}, Buffer::Scratch, s});
  }
  for (size_t l = 0; l < links.size(); ++l) {
    auto [writer, reader] = links[l];
    size_t bytes = aligned(steps_[writer].kernel.link_bytes, kScratchAlignment);
    buffers.push_back({{int64_t(writer), int64_t(reader), bytes}, Buffer::Link, l});
  }
  std::stable_sort(buffers.begin(), buffers.end(), [](const Buffer& a, const Buffer& b) {
    return a.life.first_step < b.life.first_step;
  });
  std::vector<cpu::BufferLife> lives;
  for (const Buffer& b : buffers) lives.push_back(b.life);
  cpu::ArenaLayout layout = cpu::plan_arena(lives);
  arena_bytes_ = layout.bytes;
  for (size_t b = 0; b < buffers.size(); ++b) {
    Slot s{Slot::Arena, layout.offsets[b]};
    switch (buffers[b].kind) {
      case Buffer::Value: slot[buffers[b].owner] = s; break;
      case Buffer::Scratch: steps_[buffers[b].owner].scratch = s; break;
      case Buffer::Link:
        steps_[links[buffers[b].owner].first].link = s;
        steps_[links[buffers[b].owner].second].link = s;
        break;
    }
  }
  for (size_t i = 0; i < count; ++i)
    if (live[i] && root[i] != i) slot[i] = slot[root[i]];

  for (size_t i = 0; i < count; ++i) {
    const LoweredNode& n = nodes[i];
    bool has_step = live[i] && root[i] == i && n.op != Op::Input && n.op != Op::Param &&
                    slot[i].kind != Slot::Constant && computed_at[i].empty() && stored_by[i] < 0;
    if (!has_step) continue;
    Step& s = steps_[step_of[i]];
    if (s.pairs) {
      size_t in = size_t(operands_of(i)[0]);
      s.inputs.insert(s.inputs.end(), {slot[in], slot[i]});
      s.input_types.insert(s.input_types.end(), {nodes[in].type, n.type});
      s.producers.insert(s.producers.end(), {-1, -1});  // operands are inputs or constants
      s.dtype = n.type.dtype;
      s.type = n.type;
      s.bytes += double(bytes_of(nodes[in].type) + bytes_of(n.type));
      continue;
    }
    s.output = slot[i];
    s.dtype = n.op == Op::MatMul ? nodes[size_t(n.inputs[0])].type.dtype : n.type.dtype;
    s.bytes = double(bytes_of(n.type));
    s.type = n.type;
    if (auto stored = stores_of.find(i); stored != stores_of.end())
      for (NodeId id : stored->second) {
        s.stores.push_back(slot[size_t(id)]);
        s.store_types.push_back(nodes[size_t(id)].type);
        s.bytes += double(bytes_of(nodes[size_t(id)].type));
      }
    for (NodeId in : operands_of(i)) {
      s.inputs.push_back(slot[size_t(in)]);
      s.input_types.push_back(nodes[size_t(in)].type);
      Slot::Kind kind = slot[size_t(in)].kind;
      bool computed = kind == Slot::Arena || kind == Slot::Output;
      s.producers.push_back(computed ? int64_t(step_of[root[size_t(in)]]) : -1);
      // A generated kernel reads each operand element at most once per
      // result element: through a slice, less than the operand.
      size_t read = bytes_of(nodes[size_t(in)].type);
      if (const std::optional<HeadView>& view = views_[i].operand(s.inputs.size() - 1))
        read =
            size_t(view->shape.numel().value_or(0)) * ir::size_bytes(nodes[size_t(in)].type.dtype);
      if (s.group)
        read = std::min(read, size_t(n.type.shape.numel().value_or(0)) *
                                  ir::size_bytes(nodes[size_t(in)].type.dtype));
      s.bytes += double(read);
    }
  }
  for (auto [id, j] : output_copies) {
    steps_.push_back(Step{make_copy_kernel(bytes_of(nodes[id].type)),
                          {slot[id]},
                          Slot{Slot::Output, j},
                          {},
                          nodes[id].origin,
                          Op::Reshape,
                          {}});
    steps_.back().bytes = 2.0 * double(bytes_of(nodes[id].type));
    steps_.back().type = nodes[id].type;
    steps_.back().input_types = {nodes[id].type};
  }
  access_.clear();
  for (size_t k = 0; k < steps_.size(); ++k) access_.push_back(step_access(steps_[k], k));
  return merge_multi_tensor();
}

}  // namespace sexpgpu::cuda::program_detail
