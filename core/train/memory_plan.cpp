// The core's memory plan of a compiled run (memory_plan.h).
#include "train/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "ir/cost.h"

namespace sexpgpu::train {

namespace {

int64_t output_bytes(const ir::Function& fn, std::string_view prefix) {
  int64_t bytes = 0;
  for (const ir::Output& o : fn.outputs)
    if (o.name.starts_with(prefix)) bytes += ir::type_bytes(fn.type(o.node));
  return bytes;
}

int64_t input_bytes(const ir::Function& fn, std::string_view prefix) {
  int64_t bytes = 0;
  for (ir::NodeId id : fn.inputs)
    if (fn.node(id).attrs.name.value_or("").starts_with(prefix))
      bytes += ir::type_bytes(fn.type(id));
  return bytes;
}

}  // namespace

int64_t RunMemory::total() const {
  int64_t sum = 0;
  for (int64_t part :
       {parameters, gradients, optimizer_state, update_outputs, batch, activations, workspace})
    if (__builtin_add_overflow(sum, part, &sum)) return std::numeric_limits<int64_t>::max();
  return sum;
}

RunMemory plan_run_memory(const spec::RunSpec& run) {
  RunMemory m;
  for (const spec::ParamEntry& p : run.params) m.parameters += ir::type_bytes(p.type);
  for (const spec::StateEntry& s : run.states) m.optimizer_state += ir::type_bytes(s.type);
  // The training step of the batch shape that needs the most (a stage's
  // larger batch or longer sequences): it sizes the run.
  const ir::Function* step = nullptr;
  int64_t step_need = -1;
  for (const spec::SizedFunction& f : run.train_fns)
    if (const ir::Function* fn = run.module.find(f.fn)) {
      ir::MemoryUse use = ir::plan_memory(*fn);
      if (use.input_bytes + use.intermediate_peak > step_need)
        step = fn, step_need = use.input_bytes + use.intermediate_peak;
    }
  const ir::Function* update = run.module.find("update");
  const ir::Function* accumulate = run.module.find("accumulate");
  m.step_function = step ? step->name : "";
  m.gradients = step ? output_bytes(*step, "grad:") : 0;
  if (accumulate) m.gradients += input_bytes(*accumulate, "acc:") + output_bytes(*accumulate, "");
  m.update_outputs = update ? ir::plan_memory(*update).output_bytes : 0;
  const ir::MemoryUse step_use = step ? ir::plan_memory(*step) : ir::MemoryUse{};
  m.batch = step_use.input_bytes;
  m.activations = step_use.intermediate_peak;
  for (const ir::Function& fn : run.module.functions) {
    bool train_step = std::any_of(run.train_fns.begin(), run.train_fns.end(),
                                  [&](const spec::SizedFunction& f) { return f.fn == fn.name; });
    if (train_step) continue;  // a shape of the step, which runs in the largest one's place
    int64_t peak = ir::plan_memory(fn).intermediate_peak;
    if (peak > m.workspace) m.workspace = peak, m.workspace_function = fn.name;
  }
  return m;
}

std::string bytes_text(uint64_t bytes) {
  static const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) v /= 1024, ++unit;
  char buf[64];
  if (unit == 0)
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  return buf;
}

std::optional<std::string> memory_shortfall(const RunMemory& plan, uint64_t have_bytes,
                                            const std::string& device) {
  uint64_t need = uint64_t(plan.total());
  if (need <= have_bytes) return std::nullopt;
  return "the memory plan needs " + std::to_string(need) + " bytes (" + bytes_text(need) +
         ": parameters " + bytes_text(uint64_t(plan.parameters)) + ", activations " +
         bytes_text(uint64_t(plan.activations)) + ", optimizer state " +
         bytes_text(uint64_t(plan.optimizer_state)) + ") and device " + device + " has " +
         std::to_string(have_bytes) + " bytes (" + bytes_text(have_bytes) + ")";
}

}  // namespace sexpgpu::train
