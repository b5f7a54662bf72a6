// cpu::Program: compile() lowers the function (lower.h), makes one kernel
// per live node, places every intermediate in one arena (memory_plan.h) and
// keeps the result as a flat list of steps; run() walks it. Inputs and
// outputs stay in the caller's memory: a node that is an output writes
// straight into the caller's output buffer. Creation ops (full, constant,
// arange) are evaluated once, at compile time. reshape and stop_gradient
// read their operand's buffer in place unless they are outputs. A fusion
// group (ir::fuse_elementwise) that the fused kernel takes is one step at
// its last node, and its other nodes get no buffer.
#include "program.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "ir/verify.h"
#include "kernel.h"
#include "plan/geometry.h"
#include "plan/in_place.h"
#include "plan/lower.h"
#include "plan/memory_plan.h"
#include "plan/profile_report.h"
#include "storage.h"
#include "thread_pool.h"

namespace sexpgpu::cpu {
namespace {

using ir::NodeId;
using ir::Op;

// Where a value lives during a run.
struct Slot {
  enum Kind : uint8_t { Input, Output, Arena, Constant } kind = Arena;
  size_t index = 0;  // input/output/constant number, or arena offset
};

struct Step {
  Kernel kernel;
  std::vector<Slot> inputs;
  Slot output;
  NodeId origin;  // the IR node, for messages (-1: an operand cast)
  Op op;
};

struct AlignedFree {
  void operator()(std::byte* p) const { std::free(p); }
};
using ArenaPtr = std::unique_ptr<std::byte[], AlignedFree>;

ArenaPtr allocate_arena(size_t bytes) {
  if (bytes == 0) return nullptr;
  size_t rounded = (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  return ArenaPtr(static_cast<std::byte*>(std::aligned_alloc(kArenaAlignment, rounded)));
}

size_t bytes_of(const ir::TensorType& t) {
  return size_t(numel(t.shape)) * ir::size_bytes(t.dtype);
}

// The fusion groups that run as one fused kernel, in lowered ids.
struct Fusions {
  std::vector<NodeId> absorbed_into;  // per node: its group's last node, -1 if not absorbed
  std::map<size_t, std::pair<Kernel, ir::NodeIds>> at_last;  // last node -> (kernel, externals)
};

// A group's lowered nodes, as the fused kernel sees them, or nullopt when
// something outside the group reads a node other than its last.
std::optional<FusedRequest> fused_request(const Lowered& lowered,
                                          const std::vector<NodeId>& members,
                                          const std::vector<bool>& live,
                                          const std::vector<int>& group_of, int group, int threads,
                                          ir::NodeIds& externals) {
  std::optional<LoweredGroup> g = gather_group(lowered, members, live, group_of, group);
  if (!g) return std::nullopt;
  externals = g->externals;
  return FusedRequest{std::move(g->nodes), std::move(g->external_types),
                      lowered.nodes[size_t(members.back())].type, threads};
}

// Groups whose nodes are all live, none an output but the last, and which
// the fused kernel handles; the rest run node by node.
Fusions find_fusions(const ir::Function& fn, const Lowered& lowered, const std::vector<bool>& live,
                     int threads) {
  size_t count = lowered.nodes.size();
  Fusions f{std::vector<NodeId>(count, -1), {}};
  std::vector<int> group_of(count, -1);
  std::map<int, std::vector<NodeId>> groups;
  for (size_t i = 0; i < count; ++i) {
    NodeId origin = lowered.nodes[i].origin;
    if (origin < 0 || fn.node(origin).fusion_group < 0) continue;
    group_of[i] = fn.node(origin).fusion_group;
    groups[group_of[i]].push_back(NodeId(i));
  }
  std::vector<bool> is_output(count, false);
  for (const ir::Output& o : fn.outputs)
    is_output[size_t(lowered.of_original[size_t(o.node)])] = true;
  for (const auto& [group, members] : groups) {
    bool usable = std::all_of(members.begin(), members.end(), [&](NodeId id) {
      return live[size_t(id)] && (id == members.back() || !is_output[size_t(id)]);
    });
    ir::NodeIds externals;
    std::optional<FusedRequest> request =
        usable ? fused_request(lowered, members, live, group_of, group, threads, externals)
               : std::nullopt;
    if (!request) continue;
    KernelResult k = make_fused_kernel(*request);
    if (!k) continue;
    for (NodeId id : members)
      if (id != members.back()) f.absorbed_into[size_t(id)] = members.back();
    f.at_last[size_t(members.back())] = {std::move(k).value(), std::move(externals)};
  }
  return f;
}

// Per-kernel timing, for finding where a step's time goes on a CPU: with
// SEXPGPU_CPU_PROFILE=PREFIX every run times each of its steps, and when the
// program is destroyed (the run's end) it writes PREFIX.FUNCTION.json in
// the CUDA device's profile format (bench/profile_summary.py reads both).
// The first run is a warm-up and is not counted.
class StepProfile {
 public:
  static std::string prefix() {
    const char* p = std::getenv("SEXPGPU_CPU_PROFILE");
    return p ? std::string(p) : std::string();
  }
  explicit StepProfile(size_t steps) : total_us_(steps, 0.0) {}
  void add(size_t k, std::chrono::steady_clock::duration d) {
    if (counting_) total_us_[k] += std::chrono::duration<double, std::micro>(d).count();
  }
  void end_run() {
    if (counting_) ++runs_;
    counting_ = true;
  }
  int64_t runs() const { return runs_; }
  void write(const std::string& path, const std::string& function,
             const std::vector<std::pair<std::string, std::string>>& steps) const {
    nlohmann::json list = nlohmann::json::array();
    for (size_t k = 0; k < steps.size(); ++k)
      list.push_back({{"kernel", steps[k].first},
                      {"node", steps[k].second},
                      {"measured_us", runs_ > 0 ? total_us_[k] / double(runs_) : 0.0},
                      {"roofline_us", 0.0}});
    plan::write_profile_report(path, function, std::move(list), runs_, "cpu");
  }

 private:
  std::vector<double> total_us_;
  int64_t runs_ = 0;
  bool counting_ = false;
};

class CpuProgram final : public Program {
 public:
  ~CpuProgram() override;
  std::string build(const ir::Function& fn, const Options& options);

  std::string run(std::span<const void* const> inputs, std::span<void* const> outputs) override;
  size_t arena_bytes() const override { return arena_bytes_; }
  std::string report_json() const override { return report_; }
  const ir::Function& function() const override { return fn_; }
  bool writes_in_place(size_t output, size_t input) const override {
    return plan::writes_in_place(access_, output, input);
  }

 private:
  std::string plan(const Lowered& lowered, int threads);
  std::string make_report(const Lowered& lowered) const;

  ir::Function fn_;
  // The run's other processes, for all_reduce kernels (null: a world of
  // one); held here so the kernels' raw pointer outlives them.
  std::shared_ptr<Collective> collective_;
  std::vector<Step> steps_;
  std::vector<plan::StepAccess> access_;  // per step: what it reads and writes of the caller's
  std::vector<std::vector<std::byte>> constants_;
  size_t constant_bytes_ = 0;
  size_t arena_bytes_ = 0;
  ArenaPtr arena_;
  std::mutex run_mutex_;  // one run at a time: they share the arena
  std::string report_;
  std::unique_ptr<StepProfile> profile_;  // SEXPGPU_CPU_PROFILE set
};

std::string node_label(const ir::Function& fn, NodeId origin, Op op) {
  if (origin < 0)
    return "a cast inserted by the CPU lowering ('" + std::string(ir::info(op).ir_name) + "')";
  const ir::Node& n = fn.node(origin);
  return "%" + std::to_string(origin) + " = " + std::string(ir::info(n.op).ir_name) + " " +
         n.type.to_string();
}

CpuProgram::~CpuProgram() {
  if (!profile_ || profile_->runs() == 0) return;
  std::vector<std::pair<std::string, std::string>> steps;
  for (const Step& s : steps_) steps.push_back({s.kernel.name, node_label(fn_, s.origin, s.op)});
  profile_->write(StepProfile::prefix(), fn_.name, steps);
}

std::string CpuProgram::build(const ir::Function& fn, const Options& options) {
  fn_ = fn;
  collective_ = options.collective;
  int threads = options.threads > 0 ? options.threads : ThreadPool::instance().size();
  Lowered lowered = lower(fn_);
  fold_transposes(lowered);
  if (std::string e = plan(lowered, std::max(threads, 1)); !e.empty()) return e;
  arena_ = allocate_arena(arena_bytes_);
  if (arena_bytes_ > 0 && !arena_)
    return "cannot allocate the " + std::to_string(arena_bytes_) + "-byte arena";
  report_ = make_report(lowered);
  if (!StepProfile::prefix().empty()) profile_ = std::make_unique<StepProfile>(steps_.size());
  return {};
}

std::string CpuProgram::plan(const Lowered& lowered, int threads) {
  const std::vector<LoweredNode>& nodes = lowered.nodes;
  size_t count = nodes.size();
  // Liveness: the nodes the outputs need.
  std::vector<NodeId> outputs;
  for (const ir::Output& o : fn_.outputs) outputs.push_back(lowered.of_original[size_t(o.node)]);
  const std::vector<bool> live = live_readers(lowered, outputs).live;

  std::vector<Slot> slot(count);
  std::vector<bool> placed(count, false);
  for (size_t k = 0; k < fn_.inputs.size(); ++k) {
    size_t id = size_t(lowered.of_original[size_t(fn_.inputs[k])]);
    slot[id] = Slot{Slot::Input, k};
    placed[id] = true;
  }
  // An output computed by a kernel writes the caller's buffer directly.
  std::vector<bool> written_to_output(fn_.outputs.size(), false);
  for (size_t j = 0; j < fn_.outputs.size(); ++j) {
    size_t id = size_t(lowered.of_original[size_t(fn_.outputs[j].node)]);
    Op op = nodes[id].op;
    bool creation = op == Op::Full || op == Op::Constant || op == Op::Arange;
    if (placed[id] || creation) continue;
    slot[id] = Slot{Slot::Output, j};
    placed[id] = true;
    written_to_output[j] = true;
  }

  Fusions fusions = find_fusions(fn_, lowered, live, threads);
  std::vector<size_t> root(count);  // the node whose buffer a value is in
  std::vector<size_t> step_of(count, 0);
  for (size_t i = 0; i < count; ++i) {
    root[i] = i;
    const LoweredNode& n = nodes[i];
    if (!live[i] || n.op == Op::Input || n.op == Op::Param || fusions.absorbed_into[i] >= 0)
      continue;
    if (auto fused = fusions.at_last.find(i); fused != fusions.at_last.end()) {
      step_of[i] = steps_.size();
      steps_.push_back(Step{fused->second.first, {}, {}, n.origin, n.op});
      continue;
    }
    std::vector<ir::TensorType> in_types = op_operand_types(lowered, n, n.inputs);
    bool aliasable = n.op == Op::Reshape || n.op == Op::StopGradient;
    if (aliasable && !placed[i]) {
      root[i] = root[size_t(n.inputs[0])];
      slot[i] = slot[root[i]];
      placed[i] = true;
      continue;
    }
    KernelResult k = make_kernel(
        KernelRequest{n.op, n.attrs, in_types, n.type, threads, n.transposed, collective_.get()});
    if (!k) return node_label(fn_, n.origin, n.op) + ": " + k.error();
    if (n.op == Op::Full || n.op == Op::Constant || n.op == Op::Arange) {
      std::vector<std::byte> data(bytes_of(n.type));
      if (std::string e = k->fn(nullptr, data.data()); !e.empty())
        return node_label(fn_, n.origin, n.op) + ": " + e;
      constant_bytes_ += data.size();
      slot[i] = Slot{Slot::Constant, constants_.size()};
      placed[i] = true;
      constants_.push_back(std::move(data));
      continue;
    }
    Step step{std::move(k).value(), {}, {}, n.origin, n.op};
    step_of[i] = steps_.size();
    steps_.push_back(std::move(step));
  }
  // Outputs not written by their own kernel (inputs, constants, aliases,
  // one node named twice) are copied at the end.
  std::vector<std::pair<size_t, size_t>> output_copies;  // (node, output)
  for (size_t j = 0; j < fn_.outputs.size(); ++j) {
    if (written_to_output[j]) continue;
    size_t id = size_t(lowered.of_original[size_t(fn_.outputs[j].node)]);
    output_copies.push_back({id, j});
  }

  // Buffer lifetimes in step numbers, then the arena layout.
  std::vector<int64_t> last_use(count, -1);
  for (size_t i = 0; i < count; ++i) {
    if (!live[i]) continue;
    NodeId reader = fusions.absorbed_into[i] >= 0 ? fusions.absorbed_into[i] : NodeId(i);
    for (NodeId in : nodes[i].inputs) {
      size_t r = root[size_t(in)];
      last_use[r] = std::max<int64_t>(last_use[r], int64_t(step_of[size_t(reader)]));
    }
  }
  for (auto [id, j] : output_copies) last_use[root[id]] = int64_t(steps_.size() + j);
  std::vector<BufferLife> lives;
  std::vector<size_t> owner;
  for (size_t i = 0; i < count; ++i) {
    if (!live[i] || placed[i] || root[i] != i || fusions.absorbed_into[i] >= 0) continue;
    int64_t first = int64_t(step_of[i]);
    lives.push_back(BufferLife{first, std::max(first, last_use[i]), bytes_of(nodes[i].type)});
    owner.push_back(i);
  }
  ArenaLayout layout = plan_arena(lives);
  arena_bytes_ = layout.bytes;
  for (size_t b = 0; b < owner.size(); ++b) slot[owner[b]] = Slot{Slot::Arena, layout.offsets[b]};
  for (size_t i = 0; i < count; ++i)
    if (live[i] && root[i] != i) slot[i] = slot[root[i]];

  // Wire the steps to their slots.
  access_.resize(steps_.size() + output_copies.size());
  for (size_t i = 0; i < count; ++i) {
    const LoweredNode& n = nodes[i];
    bool has_step = live[i] && root[i] == i && n.op != Op::Input && n.op != Op::Param &&
                    slot[i].kind != Slot::Constant && fusions.absorbed_into[i] < 0;
    if (!has_step) continue;
    Step& s = steps_[step_of[i]];
    s.output = slot[i];
    auto fused = fusions.at_last.find(i);
    plan::StepAccess& a = access_[step_of[i]];
    a.launch = step_of[i];
    // The fused kernel takes elementwise ops alone (kernels_fused.cpp).
    a.elementwise = fused != fusions.at_last.end() || ir::is_elementwise(n.op);
    if (s.output.kind == Slot::Output) a.writes.push_back({s.output.index, n.type.shape});
    for (NodeId in : fused != fusions.at_last.end() ? fused->second.second : n.inputs) {
      s.inputs.push_back(slot[size_t(in)]);
      if (slot[size_t(in)].kind == Slot::Input)
        a.reads.push_back({slot[size_t(in)].index, nodes[size_t(in)].type.shape});
    }
  }
  for (auto [id, j] : output_copies) {
    plan::StepAccess& a = access_[steps_.size()];
    a.launch = steps_.size();
    a.writes.push_back({j, nodes[id].type.shape});
    if (slot[id].kind == Slot::Input) a.reads.push_back({slot[id].index, nodes[id].type.shape});
    Step copy{make_copy_kernel(bytes_of(nodes[id].type)),
              {slot[id]},
              Slot{Slot::Output, j},
              nodes[id].origin,
              Op::Reshape};
    steps_.push_back(std::move(copy));
  }
  return {};
}

std::string CpuProgram::make_report(const Lowered& lowered) const {
  nlohmann::json steps = nlohmann::json::array();
  static const char* kKinds[] = {"input", "output", "arena", "constant"};
  for (const Step& s : steps_) {
    nlohmann::json j = {{"node", s.origin}, {"kernel", s.kernel.name}};
    j["out"] = {{"in", kKinds[s.output.kind]},
                {s.output.kind == Slot::Arena ? "offset" : "index", s.output.index}};
    steps.push_back(std::move(j));
  }
  nlohmann::json report = {{"device", "cpu"},
                           {"function", fn_.name},
                           {"arena_bytes", arena_bytes_},
                           {"constant_bytes", constant_bytes_},
                           {"lowered_nodes", lowered.nodes.size()},
                           {"steps", std::move(steps)}};
  return report.dump();
}

std::string CpuProgram::run(std::span<const void* const> inputs, std::span<void* const> outputs) {
  if (inputs.size() != fn_.inputs.size() || outputs.size() != fn_.outputs.size())
    return "'" + fn_.name + "' takes " + std::to_string(fn_.inputs.size()) + " inputs and " +
           std::to_string(fn_.outputs.size()) + " outputs, given " + std::to_string(inputs.size()) +
           " and " + std::to_string(outputs.size());
  std::lock_guard<std::mutex> lock(run_mutex_);
  auto address = [&](const Slot& s) -> void* {
    switch (s.kind) {
      case Slot::Input: return const_cast<void*>(inputs[s.index]);
      case Slot::Output: return outputs[s.index];
      case Slot::Arena: return arena_.get() + s.index;
      case Slot::Constant: return constants_[s.index].data();
    }
    return nullptr;
  };
  std::vector<const void*> args;
  for (size_t k = 0; k < steps_.size(); ++k) {
    const Step& s = steps_[k];
    args.clear();
    for (const Slot& in : s.inputs) args.push_back(address(in));
    auto started = profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (std::string e = s.kernel.fn(args.data(), address(s.output)); !e.empty())
      return node_label(fn_, s.origin, s.op) + ": " + e;
    if (profile_) profile_->add(k, std::chrono::steady_clock::now() - started);
  }
  if (profile_) profile_->end_run();
  return {};
}

}  // namespace

HostTensor HostTensor::zeros(const ir::TensorType& type) {
  return HostTensor{type, std::vector<std::byte>(bytes_of(type))};
}

HostTensor HostTensor::from_doubles(const ir::TensorType& type, std::span<const double> values) {
  HostTensor t = zeros(type);
  size_t n = std::min(values.size(), size_t(numel(type.shape)));
  dispatch_storage(type.dtype, [&](auto tag) {
    using D = decltype(tag);
    D* out = reinterpret_cast<D*>(t.bytes.data());
    for (size_t i = 0; i < n; ++i) out[i] = convert<D>(values[i]);
  });
  return t;
}

std::vector<double> HostTensor::to_doubles() const {
  std::vector<double> out(size_t(numel(type.shape)));
  dispatch_storage(type.dtype, [&](auto tag) {
    using S = decltype(tag);
    const S* in = reinterpret_cast<const S*>(bytes.data());
    for (size_t i = 0; i < out.size(); ++i) out[i] = double(widen(in[i]));
  });
  return out;
}

ir::Result<std::shared_ptr<Program>> Program::compile(const ir::Module& module, std::string_view fn,
                                                      const Options& options) {
  using R = ir::Result<std::shared_ptr<Program>>;
  const ir::Function* f = module.find(fn);
  if (!f) return R::failure("no function '" + std::string(fn) + "' in the module");
  if (std::string e = ir::verify(module, *f); !e.empty()) return R::failure(e);
  auto program = std::make_shared<CpuProgram>();
  if (std::string e = program->build(*f, options); !e.empty()) return R::failure(e);
  return std::shared_ptr<Program>(std::move(program));
}

ir::Result<std::vector<HostTensor>> Program::run(std::span<const HostTensor> inputs) {
  using R = ir::Result<std::vector<HostTensor>>;
  const ir::Function& fn = function();
  if (inputs.size() != fn.inputs.size())
    return R::failure("'" + fn.name + "' takes " + std::to_string(fn.inputs.size()) +
                      " inputs, given " + std::to_string(inputs.size()));
  std::vector<const void*> in;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ir::TensorType& want = fn.type(fn.inputs[k]);
    if (!(inputs[k].type == want) || inputs[k].bytes.size() != bytes_of(want))
      return R::failure("input " + std::to_string(k) + " of '" + fn.name + "' is " +
                        want.to_string() + ", given " + inputs[k].type.to_string());
    in.push_back(inputs[k].bytes.data());
  }
  std::vector<HostTensor> outs;
  std::vector<void*> out;
  for (const ir::Output& o : fn.outputs) outs.push_back(HostTensor::zeros(fn.type(o.node)));
  for (HostTensor& t : outs) out.push_back(t.bytes.data());
  if (std::string e = run(in, out); !e.empty()) return R::failure(e);
  return outs;
}

}  // namespace sexpgpu::cpu
