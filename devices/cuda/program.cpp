// cuda::Program: compile() lowers the function as the CPU device does
// (devices/cpu/lower.h, keeping bf16/f16 matrix products native), makes one
// kernel per live node or fusion group, places every intermediate and every
// kernel's scratch in one arena (devices/cpu/memory_plan.h) and keeps a flat
// list of steps. Creation ops are evaluated once, when the program is
// prepared, into device constants; reshape and stop_gradient read their
// operand in place. run() enqueues the steps; the second run with the same
// buffers is captured as a CUDA graph and every later one replays it.
#include "program.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "absorb_casts.h"
#include "attention_views.h"
#include "check.h"
#include "elementwise.h"
#include "fusion.h"
#include "ir/cost.h"
#include "ir/elementwise.h"
#include "ir/verify.h"
#include "kernel.h"
#include "kernels_reduce.h"
#include "lower.h"
#include "matmul_epilogues.h"
#include "memory_plan.h"
#include "nvrtc_cache.h"
#include "profile.h"
#include "roofline.h"

namespace sexpgpu::cuda {
namespace {

using cpu::Lowered;
using cpu::LoweredNode;
using ir::NodeId;
using ir::Op;

constexpr size_t kScratchAlignment = 256;
constexpr size_t kGraphsPerProgram = 8;

struct Slot {
  enum Kind : uint8_t { Input, Output, Arena, Constant, None } kind = None;
  size_t index = 0;  // input/output number, or arena/constant offset
};

struct Step {
  Kernel kernel;
  std::vector<Slot> inputs;
  Slot output;
  Slot scratch;
  NodeId origin;  // the IR node, for messages (-1: an operand cast)
  Op op;
  std::vector<NodeId> members;       // a fused group's IR nodes, in order
  ir::DType dtype = ir::DType::F32;  // the result's (the roofline's unit)
  double bytes = 0;                  // read and written, for the roofline
  // A generated elementwise kernel's group (for multi-tensor launches), and
  // per input the step that writes it (-1: an input or a constant).
  std::optional<ElementwiseGroup> group;
  std::vector<int64_t> producers;
  // What SEXPGPU_CUDA_CHECK reads back: the result's and operands' types.
  ir::TensorType type;
  std::vector<ir::TensorType> input_types;
  Slot link;  // shared with the linked step (KernelRequest::link)
  // A multi-tensor sum of squares: its inputs are (operand, result) pairs,
  // one per member, and it has no output of its own.
  bool pairs = false;
  // An elementwise step of the function's inputs alone (a weight's cast to
  // bf16), planned first: its result's buffer lives from the first step, so
  // it may join a multi-tensor launch there.
  bool hoisted = false;
};

// A sum of squares' step, its node and the operand it squares.
struct SumOfSquares {
  size_t step, node;
  NodeId operand;
};

size_t bytes_of(const ir::TensorType& t) {
  return size_t(t.shape.numel().value_or(0)) * ir::size_bytes(t.dtype);
}

size_t aligned(size_t bytes, size_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

std::string node_label(const ir::Function& fn, NodeId origin, Op op) {
  if (origin < 0)
    return "a cast inserted by the CUDA lowering ('" + std::string(ir::info(op).ir_name) + "')";
  const ir::Node& n = fn.node(origin);
  return "%" + std::to_string(origin) + " = " + std::string(ir::info(n.op).ir_name) + " " +
         n.type.to_string();
}

struct DeviceFree {
  void operator()(void* p) const {
    if (p) cudaFree(p);
  }
};
using DevicePtr = std::unique_ptr<void, DeviceFree>;

// A captured step, for one binding of inputs and outputs.
struct Graph {
  std::vector<const void*> key;
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec) cudaGraphExecDestroy(exec);
  }
};

// SEXPGPU_CUDA_CHECK=1: every step runs alone and its result is read back;
// the first step that writes a NaN or an infinity from finite operands
// fails the run, naming the step (docs/environment.md).
bool check_enabled() {
  const char* v = std::getenv("SEXPGPU_CUDA_CHECK");
  return v && std::string(v) == "1";
}

// How many of the float tensor's elements are NaN or infinite (0 for other
// dtypes), and the first one's index in `first`.
ir::Result<int64_t> non_finite(const void* device, const ir::TensorType& t, int64_t& first) {
  using R = ir::Result<int64_t>;
  size_t width = ir::size_bytes(t.dtype);
  bool is_float = t.dtype == ir::DType::F32 || t.dtype == ir::DType::F64 ||
                  t.dtype == ir::DType::BF16 || t.dtype == ir::DType::F16;
  int64_t n = t.shape.numel().value_or(0);
  if (!is_float || n == 0 || !device) return R(0);
  std::vector<unsigned char> host(size_t(n) * width);
  if (cudaError_t e = cudaMemcpy(host.data(), device, host.size(), cudaMemcpyDeviceToHost);
      e != cudaSuccess)
    return R::failure(cuda_error(e, "cudaMemcpy"));
  auto bad = [&](int64_t i) {
    const unsigned char* p = host.data() + size_t(i) * width;
    switch (t.dtype) {
      case ir::DType::F32: {
        float v;
        std::memcpy(&v, p, sizeof v);
        return !std::isfinite(v);
      }
      case ir::DType::F64: {
        double v;
        std::memcpy(&v, p, sizeof v);
        return !std::isfinite(v);
      }
      default: {  // bf16 and f16: all exponent bits set
        uint16_t bits;
        std::memcpy(&bits, p, sizeof bits);
        uint16_t exponent = t.dtype == ir::DType::BF16 ? 0x7f80 : 0x7c00;
        return (bits & exponent) == exponent;
      }
    }
  };
  int64_t count = 0;
  first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (bad(i)) {
      if (first < 0) first = i;
      ++count;
    }
  return R(count);
}

bool multi_tensor_enabled() {
  const char* v = std::getenv("SEXPGPU_CUDA_MULTI_TENSOR");
  return !(v && std::string(v) == "0");
}

bool graphs_enabled() {
  const char* v = std::getenv("SEXPGPU_CUDA_GRAPHS");
  return !(v && std::string(v) == "0");
}

class CudaProgram final : public Program {
 public:
  explicit CudaProgram(Context& context) : ctx_(context) {}
  ~CudaProgram() override;
  std::string build(const ir::Function& fn);

  std::string run(std::span<const void* const> inputs, std::span<void* const> outputs,
                  cudaStream_t stream) override;
  size_t arena_bytes() const override { return arena_bytes_; }
  size_t constant_bytes() const override { return constant_bytes_; }
  std::string report_json() const override { return report_; }
  const ir::Function& function() const override { return fn_; }

 private:
  std::string plan(const Lowered& lowered);
  std::string merge_multi_tensor();
  void merge_sums_of_squares(const Lowered& lowered, const std::vector<SumOfSquares>& sums,
                             const std::vector<Slot>& slot, const std::vector<size_t>& root,
                             std::vector<size_t>& step_of,
                             std::vector<std::pair<size_t, size_t>>& links);
  std::string prepare();
  std::string enqueue(std::span<const void* const> inputs, std::span<void* const> outputs,
                      cudaStream_t stream);
  std::string make_report(const Lowered& lowered) const;
  std::string check_step(size_t k, const LaunchArgs& launch, cudaStream_t stream) const;

  Context& ctx_;
  ir::Function fn_;
  std::vector<Step> steps_;
  std::vector<NodeViews> views_;  // per lowered node: attention operands read in place
  std::vector<std::pair<size_t, Kernel>> constant_kernels_;  // (offset, creation kernel)
  size_t constant_bytes_ = 0, arena_bytes_ = 0;
  DevicePtr arena_, constants_;
  std::list<Graph> graphs_;                          // most recent first
  std::vector<std::vector<const void*>> seen_once_;  // bindings run eagerly once
  std::string report_;
  std::unique_ptr<Profile> profile_;  // SEXPGPU_CUDA_PROFILE set
};

// Per gradient node, the forward node whose row statistics it can read
// instead of recomputing them (KernelRequest::link), -1 elsewhere:
// attention_grad and the attention computing its `o` from the same q, k, v,
// mask, scale and causality; cross_entropy_grad and the cross_entropy of the
// same logits, targets, reduction and ignore_index.
std::vector<NodeId> linked_forwards(const Lowered& lowered, const std::vector<bool>& live,
                                    const std::vector<NodeViews>& views) {
  std::vector<NodeId> forward(lowered.nodes.size(), -1);
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
    }
  }
  return forward;
}

std::string CudaProgram::build(const ir::Function& fn) {
  fn_ = fn;
  Lowered lowered =
      cpu::lower(fn_, cpu::LowerOptions{.native_half_matmul = true, .native_half_attention = true});
  cpu::fold_transposes(lowered);
  std::vector<NodeId> outputs;
  for (const ir::Output& o : fn_.outputs) outputs.push_back(lowered.of_original[size_t(o.node)]);
  absorb_casts(lowered, outputs, ctx_);
  matmul_epilogues(lowered, outputs, ctx_);
  views_ = view_attention_operands(lowered, outputs);
  if (std::string e = plan(lowered); !e.empty()) return e;
  report_ = make_report(lowered);
  if (!ctx_.plan_only && !Profile::prefix().empty())
    profile_ = std::make_unique<Profile>(steps_.size());
  return prepare();
}

CudaProgram::~CudaProgram() {
  if (!profile_ || profile_->runs() == 0) return;
  nlohmann::json report = nlohmann::json::parse(report_, nullptr, false);
  if (report.is_object() && report.contains("steps"))
    Profile::write(Profile::prefix(), fn_.name, report["steps"], *profile_);
}

std::string CudaProgram::plan(const Lowered& lowered) {
  const std::vector<LoweredNode>& nodes = lowered.nodes;
  size_t count = nodes.size();
  std::vector<bool> live(count, false);
  for (const ir::Output& o : fn_.outputs) live[size_t(lowered.of_original[size_t(o.node)])] = true;
  for (size_t i = count; i-- > 0;)
    if (live[i])
      for (NodeId in : nodes[i].inputs) live[size_t(in)] = true;

  std::vector<Slot> slot(count);
  std::vector<bool> placed(count, false);
  for (size_t k = 0; k < fn_.inputs.size(); ++k) {
    size_t id = size_t(lowered.of_original[size_t(fn_.inputs[k])]);
    slot[id] = Slot{Slot::Input, k};
    placed[id] = true;
  }
  auto creation = [](Op op) { return op == Op::Full || op == Op::Constant || op == Op::Arange; };
  std::vector<bool> written_to_output(fn_.outputs.size(), false);
  std::vector<bool> is_output(count, false);
  for (size_t j = 0; j < fn_.outputs.size(); ++j)
    is_output[size_t(lowered.of_original[size_t(fn_.outputs[j].node)])] = true;
  std::vector<int> readers(count, 0);
  for (size_t i = 0; i < count; ++i)
    if (live[i])
      for (NodeId in : nodes[i].inputs) ++readers[size_t(in)];
  for (size_t j = 0; j < fn_.outputs.size(); ++j) {
    size_t id = size_t(lowered.of_original[size_t(fn_.outputs[j].node)]);
    if (placed[id] || creation(nodes[id].op)) continue;
    // An output that reshapes a kernel's result nothing else reads (a
    // gradient cast absorbed into its product): that kernel writes the
    // output's buffer, and the reshape reads it in place.
    size_t writer = id;
    while ((nodes[writer].op == Op::Reshape || nodes[writer].op == Op::StopGradient) &&
           readers[size_t(nodes[writer].inputs[0])] == 1 &&
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
  for (auto& [group, fused] : grouping.fused) {
    const std::vector<NodeId>& members = groups[group];
    KernelResult k = make_group_kernel(fused.first, ctx_);
    if (!k)
      return node_label(fn_, nodes[size_t(members.back())].origin,
                        nodes[size_t(members.back())].op) +
             ": " + k.error();
    group_of_last[size_t(members.back())] = std::move(fused.first);
    for (NodeId id : members)
      if (id != members.back()) computed_at[size_t(id)].push_back(members.back());
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
    hoisted[i] = live[i] && !placed[i] && computed_at[i].empty() && !fused_at.count(i) &&
                 !summed_square.count(i) && ir::is_elementwise(n.op) && n.op != Op::StopGradient &&
                 !n.inputs.empty() && std::all_of(n.inputs.begin(), n.inputs.end(), [&](NodeId in) {
                   return slot[size_t(in)].kind == Slot::Input;
                 });
    if (hoisted[i]) order.push_back(i);
  }
  for (size_t i = 0; i < count; ++i)
    if (!hoisted[i]) order.push_back(i);
  for (size_t i : order) {
    root[i] = i;
    const LoweredNode& n = nodes[i];
    if (!live[i] || n.op == Op::Input || n.op == Op::Param || !computed_at[i].empty()) continue;
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
      continue;
    }
    auto square = summed_square.find(i);
    const ir::NodeIds& operands = operands_of(i);
    std::vector<ir::TensorType> in_types;  // as the op sees them: transposed operands swapped back
    for (size_t k = 0; k < operands.size(); ++k) {
      ir::TensorType t = nodes[size_t(operands[k])].type;
      if (k < 2 && n.transposed[k])
        std::swap(t.shape[t.shape.rank() - 2], t.shape[t.shape.rank() - 1]);
      in_types.push_back(std::move(t));
    }
    bool aliasable = n.op == Op::Reshape || n.op == Op::StopGradient;
    if (aliasable && !placed[i]) {
      root[i] = root[size_t(n.inputs[0])];
      slot[i] = slot[root[i]];
      placed[i] = true;
      continue;
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
    KernelResult k = single                          ? make_group_kernel(*single, ctx_)
                     : square != summed_square.end() ? make_sum_of_squares_kernel(request)
                                                     : make_kernel(request);
    if (!k) return node_label(fn_, n.origin, n.op) + ": " + k.error();
    if (creation(n.op)) {
      slot[i] = Slot{Slot::Constant, constant_bytes_};
      placed[i] = true;
      constant_kernels_.push_back({constant_bytes_, std::move(k).value()});
      constant_bytes_ += aligned(bytes_of(n.type), kScratchAlignment);
      continue;
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
  }
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
                    slot[i].kind != Slot::Constant && computed_at[i].empty();
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
  return merge_multi_tensor();
}

// Sums of squares of the function's inputs or constants (an optimizer's
// gradient norms) become multi-tensor launches, each at its first member's
// place and bit for bit the members' own results. This runs before the
// arena is planned, so the results' lives start where they are now written;
// what they read is ready from the start.
void CudaProgram::merge_sums_of_squares(const Lowered& lowered,
                                        const std::vector<SumOfSquares>& sums,
                                        const std::vector<Slot>& slot,
                                        const std::vector<size_t>& root,
                                        std::vector<size_t>& step_of,
                                        std::vector<std::pair<size_t, size_t>>& links) {
  if (!multi_tensor_enabled() || sums.size() < 2) return;
  const std::vector<LoweredNode>& nodes = lowered.nodes;
  auto request_of = [&](const SumOfSquares& m) {
    const LoweredNode& n = nodes[m.node];
    return KernelRequest{n.op, n.attrs, {&nodes[size_t(m.operand)].type, 1}, n.type, ctx_,
                         {},   false};
  };
  // Members by dtype, in step order, cut into launches of at most the maximum.
  std::map<ir::DType, std::vector<std::vector<SumOfSquares>>> by_dtype;
  for (const SumOfSquares& m : sums) {
    Slot::Kind kind = slot[root[size_t(m.operand)]].kind;
    if ((kind != Slot::Input && kind != Slot::Constant) ||
        !joins_multi_sum_of_squares(request_of(m)))
      continue;
    auto& launches = by_dtype[nodes[m.node].type.dtype];
    if (launches.empty() || launches.back().size() == size_t(kMultiReduceMaxTensors))
      launches.emplace_back();
    launches.back().push_back(m);
  }
  std::vector<int64_t> launch_of(steps_.size(), -1);
  std::vector<std::vector<SumOfSquares>> launches;
  std::vector<Kernel> kernels;
  for (auto& [dtype, cut] : by_dtype)
    for (std::vector<SumOfSquares>& members : cut) {
      if (members.size() < 2) continue;
      std::vector<KernelRequest> requests;
      for (const SumOfSquares& m : members) requests.push_back(request_of(m));
      KernelResult k = make_multi_sum_of_squares_kernel(requests);
      if (!k) continue;  // the members keep their own kernels
      for (const SumOfSquares& m : members) launch_of[m.step] = int64_t(launches.size());
      launches.push_back(std::move(members));
      kernels.push_back(std::move(k).value());
    }
  if (launches.empty()) return;
  std::vector<size_t> new_index(steps_.size());
  std::vector<Step> merged;
  for (size_t s = 0; s < steps_.size(); ++s) {
    int64_t l = launch_of[s];
    if (l < 0) {
      new_index[s] = merged.size();
      merged.push_back(std::move(steps_[s]));
      continue;
    }
    const std::vector<SumOfSquares>& members = launches[size_t(l)];
    if (members.front().step != s) {  // launched with its first member, earlier
      new_index[s] = new_index[members.front().step];
      continue;
    }
    new_index[s] = merged.size();
    Step step{std::move(kernels[size_t(l)]), {}, {}, {}, steps_[s].origin, steps_[s].op, {}};
    step.pairs = true;
    for (const SumOfSquares& m : members)
      step.members.insert(step.members.end(), steps_[m.step].members.begin(),
                          steps_[m.step].members.end());
    merged.push_back(std::move(step));
  }
  steps_ = std::move(merged);
  for (size_t& s : step_of) s = new_index[s];
  for (auto& [writer, reader] : links) {
    writer = new_index[writer];
    reader = new_index[reader];
  }
}

// Steps running the same shape-free generated code that write function
// outputs (an optimizer's update: one group per parameter) become one
// multi-tensor launch at the first member's place. A step joins only when
// everything it reads is ready there (written by a step that runs earlier,
// possibly itself moved up with its own class, or an input or constant);
// its output is the caller's buffer, outside the arena, or a hoisted step's
// buffer, which lives from the first step: computing it earlier disturbs no
// other buffer's life. (Hoisted steps: the weights' casts to bf16.)
std::string CudaProgram::merge_multi_tensor() {
  if (!multi_tensor_enabled()) return {};
  struct Class {
    std::string key;
    std::vector<size_t> members;
  };
  std::vector<Class> classes;
  std::map<std::string, size_t> open;  // key -> its latest class
  std::vector<int64_t> class_of(steps_.size(), -1);
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    if (!s.group || !shape_free(*s.group) || (s.output.kind != Slot::Output && !s.hoisted) ||
        s.kernel.scratch_bytes > 0)
      continue;
    std::string key = shape_free_key(*s.group);
    auto it = open.find(key);
    if (it != open.end()) {
      Class& c = classes[it->second];
      size_t first = c.members.front();
      // A producer in a class runs at that class's first member.
      auto ready_at = [&](int64_t p) {
        return p >= 0 && class_of[size_t(p)] >= 0
                   ? int64_t(classes[size_t(class_of[size_t(p)])].members.front())
                   : p;
      };
      bool ready = std::all_of(s.producers.begin(), s.producers.end(),
                               [&](int64_t p) { return ready_at(p) < int64_t(first); });
      if (ready && c.members.size() < multi_group_capacity(*s.group)) {
        c.members.push_back(i);
        class_of[i] = int64_t(it->second);
        continue;
      }
    }
    open[key] = classes.size();
    class_of[i] = int64_t(classes.size());
    classes.push_back(Class{key, {i}});
  }
  std::vector<Step> merged;
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (class_of[i] < 0 || classes[size_t(class_of[i])].members.size() < 2) {
      merged.push_back(std::move(steps_[i]));
      continue;
    }
    const Class& c = classes[size_t(class_of[i])];
    if (c.members.front() != i) continue;  // launched with its class's first member
    std::vector<ElementwiseGroup> groups;
    Step step{{}, {}, {}, {}, steps_[i].origin, steps_[i].op, {}};
    step.dtype = steps_[i].dtype;
    for (size_t m : c.members) {
      Step& member = steps_[m];
      groups.push_back(*member.group);
      step.inputs.insert(step.inputs.end(), member.inputs.begin(), member.inputs.end());
      step.inputs.push_back(member.output);
      step.input_types.insert(step.input_types.end(), member.input_types.begin(),
                              member.input_types.end());
      step.input_types.push_back(member.type);
      step.members.insert(step.members.end(), member.members.begin(), member.members.end());
      step.bytes += member.bytes;
    }
    KernelResult k = make_multi_group_kernel(groups, ctx_);
    if (!k) return node_label(fn_, step.origin, step.op) + ": " + k.error();
    step.kernel = std::move(k).value();
    merged.push_back(std::move(step));
  }
  steps_ = std::move(merged);
  return {};
}

std::string memory_error(size_t need, const char* what) {
  size_t free_bytes = 0, total = 0;
  cudaMemGetInfo(&free_bytes, &total);
  return "E-MEMORY: the " + std::string(what) + " needs " + std::to_string(need) +
         " bytes and the device has " + std::to_string(free_bytes) + " free of " +
         std::to_string(total);
}

std::string CudaProgram::prepare() {
  if (std::string e = ctx_.nvrtc->build(!ctx_.plan_only); !e.empty()) return e;
  size_t need = arena_bytes_ + constant_bytes_;
  if (ctx_.plan_only) {
    if (need <= ctx_.memory_bytes) return {};
    return "E-MEMORY: the memory plan of '" + fn_.name + "' needs " + std::to_string(need) +
           " bytes and the device (" + ctx_.name + ", assumed) has " +
           std::to_string(ctx_.memory_bytes);
  }
  for (Step& s : steps_)
    if (s.kernel.prepare)
      if (std::string e = s.kernel.prepare(); !e.empty())
        return node_label(fn_, s.origin, s.op) + ": " + e;
  if (arena_bytes_ > 0) {
    void* p = nullptr;
    if (cudaMalloc(&p, arena_bytes_) != cudaSuccess) {
      cudaGetLastError();
      return memory_error(arena_bytes_, ("memory plan of '" + fn_.name + "'").c_str());
    }
    arena_.reset(p);
  }
  if (constant_bytes_ > 0) {
    void* p = nullptr;
    if (cudaMalloc(&p, constant_bytes_) != cudaSuccess) {
      cudaGetLastError();
      return memory_error(constant_bytes_, "constants");
    }
    constants_.reset(p);
    for (auto& [offset, kernel] : constant_kernels_) {
      if (kernel.prepare)
        if (std::string e = kernel.prepare(); !e.empty()) return e;
      LaunchArgs args{nullptr, static_cast<char*>(p) + offset, nullptr, nullptr};
      if (std::string e = kernel.launch(args); !e.empty()) return e;
    }
    SG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(nullptr));
  }
  return {};
}

std::string CudaProgram::enqueue(std::span<const void* const> inputs,
                                 std::span<void* const> outputs, cudaStream_t stream) {
  auto address = [&](const Slot& s) -> void* {
    switch (s.kind) {
      case Slot::Input: return const_cast<void*>(inputs[s.index]);
      case Slot::Output: return outputs[s.index];
      case Slot::Arena: return static_cast<char*>(arena_.get()) + s.index;
      case Slot::Constant: return static_cast<char*>(constants_.get()) + s.index;
      case Slot::None: return nullptr;
    }
    return nullptr;
  };
  std::vector<const void*> args;
  for (size_t k = 0; k < steps_.size(); ++k) {
    const Step& s = steps_[k];
    if (profile_)
      if (std::string e = profile_->mark(k, stream); !e.empty()) return e;
    args.clear();
    for (const Slot& in : s.inputs) args.push_back(address(in));
    LaunchArgs launch{args.data(), address(s.output), address(s.scratch), stream, address(s.link)};
    if (std::string e = s.kernel.launch(launch); !e.empty())
      return node_label(fn_, s.origin, s.op) + ": " + s.kernel.name + ": " + e;
    if (check_enabled())
      if (std::string e = check_step(k, launch, stream); !e.empty()) return e;
  }
  if (profile_) return profile_->mark(steps_.size(), stream);
  return {};
}

std::string CudaProgram::check_step(size_t k, const LaunchArgs& launch, cudaStream_t stream) const {
  const Step& s = steps_[k];
  SG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  if (s.output.kind == Slot::None) return {};  // a multi-tensor launch: its outputs are inputs
  int64_t first = -1;
  for (size_t j = 0; j < s.input_types.size(); ++j) {
    ir::Result<int64_t> bad = non_finite(launch.inputs[j], s.input_types[j], first);
    if (!bad) return bad.error();
    if (bad.value() > 0) return {};  // not this step's doing
  }
  ir::Result<int64_t> bad = non_finite(launch.output, s.type, first);
  if (!bad) return bad.error();
  if (bad.value() == 0) return {};
  return "SEXPGPU_CUDA_CHECK: step " + std::to_string(k) + " of '" + fn_.name + "' (" +
         node_label(fn_, s.origin, s.op) + ", kernel " + s.kernel.name + ") wrote " +
         std::to_string(bad.value()) + " non-finite values of " +
         std::to_string(s.type.shape.numel().value_or(0)) + " (the first at element " +
         std::to_string(first) + ") from finite operands";
}

std::string CudaProgram::run(std::span<const void* const> inputs, std::span<void* const> outputs,
                             cudaStream_t stream) {
  if (ctx_.plan_only) return "the device was opened to plan only (no GPU): it cannot run";
  if (inputs.size() != fn_.inputs.size() || outputs.size() != fn_.outputs.size())
    return "'" + fn_.name + "' takes " + std::to_string(fn_.inputs.size()) + " inputs and " +
           std::to_string(fn_.outputs.size()) + " outputs, given " + std::to_string(inputs.size()) +
           " and " + std::to_string(outputs.size());
  if (profile_) {
    if (std::string e = enqueue(inputs, outputs, stream); !e.empty()) return e;
    return profile_->collect();
  }
  if (!graphs_enabled() || check_enabled()) return enqueue(inputs, outputs, stream);
  std::vector<const void*> key(inputs.begin(), inputs.end());
  key.insert(key.end(), outputs.begin(), outputs.end());
  for (auto it = graphs_.begin(); it != graphs_.end(); ++it) {
    if (it->key != key) continue;
    graphs_.splice(graphs_.begin(), graphs_, it);
    return cuda_error(cudaGraphLaunch(graphs_.front().exec, stream), "cudaGraphLaunch");
  }
  // The first run of a binding goes eagerly (its errors name the step); the
  // second is captured.
  if (std::find(seen_once_.begin(), seen_once_.end(), key) == seen_once_.end()) {
    seen_once_.push_back(key);
    if (seen_once_.size() > 4 * kGraphsPerProgram) seen_once_.erase(seen_once_.begin());
    return enqueue(inputs, outputs, stream);
  }
  SG_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  std::string failed = enqueue(inputs, outputs, stream);
  cudaGraph_t graph = nullptr;
  cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (!failed.empty()) {
    if (graph) cudaGraphDestroy(graph);
    return failed;
  }
  SG_CUDA_RETURN_IF_ERROR(ended);
  cudaGraphExec_t exec = nullptr;
  cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  SG_CUDA_RETURN_IF_ERROR(made);
  graphs_.emplace_front();
  graphs_.front().key = std::move(key);
  graphs_.front().exec = exec;
  if (graphs_.size() > kGraphsPerProgram) graphs_.pop_back();
  return cuda_error(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
}

// Every step in order: its kernel or library call, the IR ops it computes,
// FLOPs, bytes read and written, and its roofline time on the device.
std::string CudaProgram::make_report(const Lowered& lowered) const {
  nlohmann::json steps = nlohmann::json::array();
  static const char* kKinds[] = {"input", "output", "arena", "constant", "none"};
  Roofline roof = roofline_of(ctx_);
  bool tf32 = ctx_.precision != Precision::F32;
  double total_flops = 0, total_bytes = 0, total_us = 0;
  for (const Step& s : steps_) {
    double flops = 0;
    nlohmann::json ops = nlohmann::json::array();
    for (NodeId id : s.members) {
      flops += ir::node_flops(fn_, fn_.node(id));
      ops.push_back(std::string(ir::info(fn_.node(id).op).ir_name));
    }
    double us = roofline_us(roof, s.op, s.dtype, tf32, flops, s.bytes);
    nlohmann::json j = {{"node", s.origin}, {"kernel", s.kernel.name}, {"ops", ops},
                        {"flops", flops},   {"bytes", s.bytes},        {"roofline_us", us}};
    j["out"] = {{"in", kKinds[s.output.kind]},
                {s.output.kind == Slot::Arena ? "offset" : "index", s.output.index}};
    if (s.kernel.scratch_bytes) j["scratch_bytes"] = s.kernel.scratch_bytes;
    total_flops += flops;
    total_bytes += s.bytes;
    total_us += us;
    steps.push_back(std::move(j));
  }
  nlohmann::json report = {{"device", "cuda"},
                           {"gpu", ctx_.plan_only ? "none (planned for an H200)" : ctx_.name},
                           {"roofline_gpu", roof.gpu},
                           {"function", fn_.name},
                           {"lowered_nodes", lowered.nodes.size()},
                           {"kernels", steps_.size()},
                           {"arena_bytes", arena_bytes_},
                           {"constant_bytes", constant_bytes_},
                           {"flops", total_flops},
                           {"bytes", total_bytes},
                           {"roofline_us", total_us},
                           {"steps", std::move(steps)}};
  return report.dump();
}

}  // namespace

ir::Result<std::shared_ptr<Program>> Program::compile(const ir::Module& module, std::string_view fn,
                                                      Context& context) {
  using R = ir::Result<std::shared_ptr<Program>>;
  const ir::Function* f = module.find(fn);
  if (!f) return R::failure("no function '" + std::string(fn) + "' in the module");
  if (std::string e = ir::verify(module, *f); !e.empty()) return R::failure(e);
  auto program = std::make_shared<CudaProgram>(context);
  if (std::string e = program->build(*f); !e.empty()) return R::failure(e);
  return std::shared_ptr<Program>(std::move(program));
}

}  // namespace sexpgpu::cuda
