// Diagnostics on sampled steps (trainer_impl.h; spec/run_spec.h for
// what the functions compute). Nothing is compiled or allocated for a
// diagnostic until it is selected: the first finite step with a selection
// compiles the selected ones (and the forward pass when one is over
// activations) and checks their reducer plugins; a sampled step then runs
// them between the update and the swap, and reports one diag event each.
#include "ir/json.h"
#include "ir/passes.h"
#include "train/diag_values.h"
#include "train/trainer_impl.h"
#include "util/log.h"

namespace sexpgpu::train {

using nlohmann::json;
using spec::DiagnosticPlan;

struct Trainer::DiagRuntime {
  std::vector<const spec::Diagnostic*> selected;
  bool activations = false;                     // a selected one reads probes
  std::map<std::string, Bound> programs;        // by function name
  std::map<std::string, std::string> forwards;  // diag:forward by its shape's suffix
};

namespace {

// A sized function's shape as its name says it (spec/run_spec.h): "@96", "@128x64",
// or "" for the loader's own batch; diag:...:activations and diag:forward are
// named after the train_step they go with (runfile/diagnostics.cpp).
std::string shape_suffix(const std::string& fn) {
  size_t at = fn.find('@');
  return at == std::string::npos ? "" : fn.substr(at);
}

// Sampled: after the first step, every `every` steps, and after the last.
bool sampled(int64_t done, int64_t every, int64_t steps) {
  return done == 1 || done % every == 0 || done == steps;
}

std::vector<std::string> selected_names(const spec::RunDecl& run,
                                        const std::vector<std::string>& flags) {
  std::vector<std::string> out;
  for (const std::vector<std::string>* list : {&run.diagnostics_select, &flags})
    for (const std::string& n : *list)
      if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  return out;
}

// The plan's functions `fns`, optimized as compile_run optimizes the run's.
Result<ir::Module> optimized(const DiagnosticPlan& plan, const std::vector<std::string>& fns) {
  ir::Module module;
  module.files = plan.module.files;
  module.params = plan.module.params;
  for (const std::string& name : fns) {
    module.functions.push_back(*plan.module.find(name));
    if (std::string e = ir::optimize(module, module.functions.back()); !e.empty())
      return Result<ir::Module>::failure(name + ": " + e);
  }
  return module;
}

std::string core_reducer_list() {
  std::string out;
  for (const std::string& r : spec::core_reducers()) out += (out.empty() ? "" : " ") + r;
  return out;
}

}  // namespace

std::set<std::string> Trainer::updates_diagnosed() const {
  std::set<std::string> out;
  if (!run_.diagnostics) return out;
  const DiagnosticPlan& plan = *run_.diagnostics;
  for (const std::string& name : selected_names(run_.run, opt_.diags))
    if (const spec::Diagnostic* d = plan.find(name))
      for (const spec::DiagFunction& f : d->fns)
        if (const ir::Function* fn = plan.module.find(f.fn))
          for (ir::NodeId id : fn->inputs)
            if (std::string in = fn->node(id).attrs.name.value_or(""); in.starts_with("new:"))
              out.insert("param:" + in.substr(4));
  return out;
}

bool Trainer::diagnostics_due() const {
  if (!run_.diagnostics) return false;
  if (!diag_) return !run_.run.diagnostics_select.empty() || !opt_.diags.empty();
  return !diag_->selected.empty() && sampled(step_ + 1, run_.run.diagnostics_every, steps_);
}

Status Trainer::prepare_diagnostics() {
  const DiagnosticPlan& plan = *run_.diagnostics;
  auto rt = std::make_shared<DiagRuntime>();
  for (const std::string& name : selected_names(run_.run, opt_.diags)) {
    const spec::Diagnostic* d = plan.find(name);
    if (!d)
      return fail("E-RUN-KEY",
                  "no diagnostic named '" + name + "'; the diagnostics are: " + plan.names());
    for (const std::string& r : d->plugin_reducers)
      if (!plugins_.reducer(r))
        return fail("E-DIAG-REDUCER", "diagnostic " + name + " reduces with '" + r +
                                          "', which is neither a core reducer (" +
                                          core_reducer_list() +
                                          ") nor a loaded reducer plugin (sexpgpu doctor "
                                          "lists the plugins)");
    rt->selected.push_back(d);
    if (d->over_activations && !plan.forwards.empty()) rt->activations = true;
  }
  std::vector<std::string> fns;
  for (const spec::Diagnostic* d : rt->selected)
    for (const spec::DiagFunction& f : d->fns) fns.push_back(f.fn);
  if (rt->activations)
    for (const spec::SizedFunction& f : plan.forwards) {
      fns.push_back(f.fn);
      rt->forwards[shape_suffix(f.fn)] = f.fn;
    }
  Result<ir::Module> module = optimized(plan, fns);
  if (!module)  // a pass broke the IR: a bug in SexpGPU, not in the file
    return fail(
        "E-UNSUPPORTED",
        "internal error, please report: the diagnostics' IR does not verify: " + module.error());
  std::string ir_json = ir::to_json(*module).dump();
  auto compile = [&](const ir::Function& fn) -> Status {
    Result<std::unique_ptr<Program>> p = device_->compile(ir_json, fn);
    if (!p) return fail("E-DEVICE", p.error());
    Bound& bound = rt->programs[fn.name];
    bound.program = std::move(p).value();
    for (const ir::Output& o : fn.outputs) {
      Result<Buffer> b = device_->alloc(fn.type(o.node));
      if (!b) return fail("E-DEVICE", b.error());
      bound.own[o.name] = std::move(b).value();
    }
    // A ctx key only a diagnostic reads gets its buffer here; set_ctx fills it.
    for (ir::NodeId id : fn.inputs)
      if (auto key = spec::ctx_key_of_input(fn.node(id).attrs.name.value_or("")))
        if (!ctx_.count(*key)) {
          Result<Buffer> b = device_->alloc(fn.node(id).type);
          if (!b) return fail("E-DEVICE", b.error());
          ctx_[*key] = std::move(b).value();
        }
    return ok_status();
  };
  log::Stopwatch took;
  for (const ir::Function& fn : module->functions)
    if (Status e = compile(fn); !e) return e;
  log::info("lower: {} diagnostic functions compiled in {:.1f} ms", module->functions.size(),
            took.ms());
  diag_ = std::move(rt);
  return ok_status();
}

// Binds a diagnostic function's inputs by name (spec/run_spec.h) and runs it.
Status Trainer::run_diag_program(Bound& program, const std::string& train_fn) {
  const ir::Function& fn = program.program->function();
  const bool summed = run_.run.microbatches > 1;
  std::vector<sg_buffer*> in, out;
  for (ir::NodeId id : fn.inputs) {
    const ir::Node& n = fn.node(id);
    const std::string& s = *n.attrs.name;
    auto after = [&](size_t prefix) { return s.substr(prefix); };
    const Buffer* b = nullptr;
    if (n.op == ir::Op::Param)
      b = &params_.at(s).current;
    else if (s == "rng")
      b = &rng_;
    else if (auto key = spec::ctx_key_of_input(s))
      b = &ctx_.at(*key);
    else if (s.rfind("grad:", 0) == 0)
      b = summed ? &acc_.at(after(5)).current : &grads_.at(after(5));
    else if (s.rfind("new:", 0) == 0)
      b = &params_.at(after(4)).spare;  // kept for it (updates_diagnosed)
    else if (s.rfind("state:", 0) == 0)
      b = &states_.at(after(6)).updated();
    else if (s.rfind("batch:", 0) == 0)
      b = &programs_.at(train_fn).own.at(s);
    else  // probe:NAME
      b = &diag_->programs.at(diag_->forwards.at(shape_suffix(train_fn))).own.at(s);
    in.push_back(b->handle());
  }
  for (const ir::Output& o : fn.outputs) out.push_back(program.own.at(o.name).handle());
  if (Status e = device_->run(*program.program, in, out); !e) return e;
  return ok_status();
}

Status Trainer::run_diagnostics() {
  if (!diag_)
    if (Status f = prepare_diagnostics(); !f) return f;
  const int64_t done = step_ + 1;
  if (diag_->selected.empty() || !sampled(done, run_.run.diagnostics_every, steps_))
    return ok_status();
  // The train function the last microbatch ran, and its batch.
  const std::string& train_fn = last_train_fn_;
  // The forward pass sees what the last microbatch saw: its ctx and random draws.
  if (Status f = set_ctx(run_.run.microbatches - 1); !f) return f;
  if (diag_->activations)
    if (Status f = run_diag_program(diag_->programs.at(diag_->forwards.at(shape_suffix(train_fn))),
                                    train_fn);
        !f)
      return f;
  auto reducers = [&](const std::string& name) { return plugins_.reducer(name); };
  for (const spec::Diagnostic* d : diag_->selected) {
    json values = json::object();
    for (const spec::DiagFunction& f : d->fns) {
      if (f.rows != 0 && shape_suffix(f.fn) != shape_suffix(train_fn)) continue;
      Bound& program = diag_->programs.at(f.fn);
      if (Status e = run_diag_program(program, train_fn); !e) return e;
      if (Status e = device_->synchronize(); !e) return e;
      DiagDownloads downloads;
      for (auto& [name, buffer] : program.own) {
        std::vector<float>& v = downloads[name];
        v.resize(size_t(buffer.type().shape.numel().value_or(0)));
        if (Status e = device_->download(buffer, v.data(), buffer.bytes()); !e) return e;
      }
      if (Status e = device_->synchronize(); !e) return e;
      if (Status e = add_diag_values(f, downloads, reducers, values); !e)
        return fail(e.code(), "diagnostic " + d->name + ": " + e.error());
    }
    (void)events_->diag(done, d->name, values);
  }
  return ok_status();
}

}  // namespace sexpgpu::train
