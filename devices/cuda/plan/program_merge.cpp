// The plan's two merges into multi-tensor launches (an optimizer's
// gradient norms and its per-parameter updates): passes over the finished
// list of steps, separate from plan() so that its placing of values stays
// readable. SEXPGPU_CUDA_MULTI_TENSOR=0 turns both off.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "cuda/codegen/elementwise.h"
#include "cuda/factories/kernel.h"
#include "cuda/factories/kernels_reduce.h"
#include "program_plan.h"

namespace sexpgpu::cuda::program_detail {
namespace {

bool multi_tensor_enabled() {
  const char* v = std::getenv("SEXPGPU_CUDA_MULTI_TENSOR");
  return !(v && std::string(v) == "0");
}

}  // namespace

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
// its output (and any stored node) is the caller's buffer, outside the arena, or a hoisted step's
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
    bool outputs_only = std::all_of(s.stores.begin(), s.stores.end(),
                                    [](const Slot& out) { return out.kind == Slot::Output; }) &&
                        (s.output.kind == Slot::Output || (s.hoisted && s.stores.empty()));
    if (!s.group || !shape_free(*s.group) || !outputs_only || s.kernel.scratch_bytes > 0) continue;
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
      access_[i].launch = merged.size();
      merged.push_back(std::move(steps_[i]));
      continue;
    }
    const Class& c = classes[size_t(class_of[i])];
    if (c.members.front() != i) continue;  // launched with its class's first member
    for (size_t m : c.members) access_[m].launch = merged.size();
    std::vector<ElementwiseGroup> groups;
    Step step{{}, {}, {}, {}, steps_[i].origin, steps_[i].op, {}};
    step.dtype = steps_[i].dtype;
    for (size_t m : c.members) {
      Step& member = steps_[m];
      groups.push_back(*member.group);
      step.inputs.insert(step.inputs.end(), member.inputs.begin(), member.inputs.end());
      step.inputs.push_back(member.output);
      step.inputs.insert(step.inputs.end(), member.stores.begin(), member.stores.end());
      step.input_types.insert(step.input_types.end(), member.input_types.begin(),
                              member.input_types.end());
      step.input_types.push_back(member.type);
      step.input_types.insert(step.input_types.end(), member.store_types.begin(),
                              member.store_types.end());
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

}  // namespace sexpgpu::cuda::program_detail
