// Diagnostics (diagnostics.h): the built-in set and defdiagnostic staged
// into the plan's module, one function per diagnostic (and per train batch
// size over activations), the reducers as IR.
#include "runfile/diagnostics.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "ir/verify.h"
#include "lisp/builtins.h"
#include "lisp/span_guard.h"
#include "runfile/model.h"
#include "runfile/selector.h"
#include "stage/stager.h"

namespace sexpgpu::runfile {

using ir::NodeId;
using lisp::Interp;
using lisp::Value;
using stage::Stager;

std::string unknown_diagnostics(const spec::RunSpec& run, const std::vector<std::string>& names) {
  std::vector<std::string> unknown;
  for (const std::string& n : names)
    if (!run.diagnostics || !run.diagnostics->find(n)) unknown.push_back(n);
  if (unknown.empty()) return "";
  std::string list;
  for (const std::string& n : unknown) list += (list.empty() ? "'" : ", '") + n + "'";
  return "no diagnostic named " + list + "; the diagnostics are: " +
         (run.diagnostics ? run.diagnostics->names() : std::string("none"));
}

namespace {

// The tensors a diagnostic is over, as defdiagnostic's :over names them.
enum class Over { Params, Grads, Updates, State, Activations };

// ---- reducers ----------------------------------------------------------------------------

NodeId to_f32(Stager& st, NodeId x) {
  if (st.type(x).dtype == ir::DType::F32) return x;
  ir::Attrs a;
  a.dtype = ir::DType::F32;
  return st.stage(ir::Op::Cast, {x}, std::move(a));
}

NodeId scalar(Stager& st, double v) {
  return ir::Builder(st.current()).scalar(v, ir::DType::F32);
}

NodeId reshape(Stager& st, NodeId x, ir::Dims dims) {
  ir::Attrs a;
  a.shape = std::move(dims);
  return st.stage(ir::Op::Reshape, {x}, std::move(a));
}

// The fraction (mean) or count (sum) of the elements where `pred` holds.
NodeId share(Stager& st, NodeId pred, ir::Op fold) {
  return st.stage(fold, {to_f32(st, pred)});
}

NodeId nonfinite(Stager& st, NodeId x) {
  return st.stage(ir::Op::LogicalNot, {st.stage(ir::Op::IsFinite, {x})});
}

// f32[2 + bins]: the finite values' min and max, then how many fall in each
// of the equal bins between them (the maximum in the last); non-finite
// values are not counted.
NodeId histogram(Stager& st, NodeId x) {
  int64_t n = st.type(x).shape.numel().value_or(0);
  NodeId flat = reshape(st, x, {n});
  NodeId finite = st.stage(ir::Op::IsFinite, {flat});
  const double big = 3.4e38;
  NodeId lo = st.stage(ir::Op::Min, {st.stage(ir::Op::Where, {finite, flat, scalar(st, big)})});
  NodeId hi = st.stage(ir::Op::Max, {st.stage(ir::Op::Where, {finite, flat, scalar(st, -big)})});
  NodeId width = st.stage(ir::Op::Maximum, {st.stage(ir::Op::Sub, {hi, lo}), scalar(st, 1e-30)});
  NodeId inside = st.stage(ir::Op::Where, {finite, flat, lo});
  NodeId position =
      st.stage(ir::Op::Mul, {st.stage(ir::Op::Div, {st.stage(ir::Op::Sub, {inside, lo}), width}),
                             scalar(st, double(kHistogramBins))});
  NodeId bin = st.stage(ir::Op::Clamp, {st.stage(ir::Op::Floor, {position}), scalar(st, 0),
                                        scalar(st, double(kHistogramBins - 1))});
  ir::Attrs as_index;
  as_index.dtype = ir::DType::I64;
  NodeId ids = st.stage(ir::Op::Cast, {bin}, std::move(as_index));
  ir::Attrs bins;
  bins.shape = ir::Dims{kHistogramBins};
  bins.axis = 0;
  NodeId counts = st.stage(ir::Op::IndexAdd, {to_f32(st, finite), ids}, std::move(bins));
  ir::Attrs join;
  join.axis = 0;
  return st.stage(ir::Op::Concat, {reshape(st, lo, {1}), reshape(st, hi, {1}), counts},
                  std::move(join));
}

// A core reducer (or the built-in count-nonfinite) of `x`, as an f32 scalar
// (f32[2 + bins] for histogram).
NodeId reduce(Stager& st, const std::string& reducer, NodeId value) {
  NodeId x = to_f32(st, value);
  bool is_scalar = st.type(x).shape.is_scalar();
  auto square = [&] { return st.stage(ir::Op::Square, {x}); };
  if (reducer == "mean" || reducer == "min" || reducer == "max") {
    if (is_scalar) return x;
    ir::Op op = reducer == "mean" ? ir::Op::Mean : reducer == "min" ? ir::Op::Min : ir::Op::Max;
    return st.stage(op, {x});
  }
  if (reducer == "rms") return st.stage(ir::Op::Sqrt, {st.stage(ir::Op::Mean, {square()})});
  if (reducer == "l2") return st.stage(ir::Op::Sqrt, {st.stage(ir::Op::Sum, {square()})});
  if (reducer == "max-abs") return st.stage(ir::Op::Max, {st.stage(ir::Op::Abs, {x})});
  if (reducer == "std") {
    ir::Attrs a;
    a.correction = 0;  // the population's: a scalar has 0, not NaN
    return st.stage(ir::Op::Std, {x}, std::move(a));
  }
  if (reducer == "frac-zero")
    return share(st, st.stage(ir::Op::Eq, {x, scalar(st, 0)}), ir::Op::Mean);
  if (reducer == "frac-nonfinite") return share(st, nonfinite(st, x), ir::Op::Mean);
  if (reducer == "count-nonfinite") return share(st, nonfinite(st, x), ir::Op::Sum);
  return histogram(st, x);  // the last core reducer; plugin reducers never get here
}

// ---- the tensors -------------------------------------------------------------------------

// One tensor a diagnostic reports on.
struct Target {
  std::string key;  // path, PATH/STATE or probe name
  ParamView view;   // what :select sees (a state's parameter; a probe as a path)
  const ir::ParamInfo* param = nullptr;
  const StateEntry* state = nullptr;
  std::string probe;
  ir::TensorType probe_type;
};

ParamView view_of(Interp& in, const ir::ParamInfo& p) {
  const ParamDecl* d = params_of(in).find(p.path);
  return ParamView{p.path, p.type.shape, p.type.dtype, d ? d->tags : std::vector<std::string>{}};
}

Target param_target(Interp& in, const ir::ParamInfo& p, const StateEntry* state) {
  Target t;
  t.key = state ? state->tensor_name() : p.path;
  t.view = view_of(in, p);
  t.param = &p;
  t.state = state;
  return t;
}

std::vector<Target> param_targets(Interp& in, Over over, const CompiledRun& run) {
  const ir::Module& m = stage::stager_of(in).module();
  std::vector<Target> out;
  if (over == Over::State) {
    for (const StateEntry& s : run.states)
      for (const ir::ParamInfo& p : m.params)
        if (p.path == s.param) out.push_back(param_target(in, p, &s));
    return out;
  }
  for (const ir::ParamInfo& p : m.params)
    if (over == Over::Params || p.trainable) out.push_back(param_target(in, p, nullptr));
  return out;
}

// The probes of one diag:forward function, with their types.
std::vector<Target> probe_targets(const ir::Function& forward) {
  std::vector<Target> out;
  for (const ir::Output& o : forward.outputs) {
    const ir::TensorType& t = forward.type(o.node);
    std::string name = o.name.substr(std::string("probe:").size());
    Target target;
    target.key = target.probe = name;
    target.view = ParamView{name, t.shape, t.dtype, {}};
    target.probe_type = t;
    out.push_back(std::move(target));
  }
  return out;
}

// The leaves of the function being staged, each made once.
class Leaves {
 public:
  Leaves(Stager& st, int64_t microbatches) : st_(st), microbatches_(microbatches) {}

  NodeId param(const ir::ParamInfo& p) {
    auto [it, fresh] = params_.try_emplace(p.path, -1);
    if (fresh) it->second = ir::Builder(st_.current()).param(p.path, p.type);
    return it->second;
  }
  NodeId input(const std::string& name, const ir::TensorType& t) {
    auto [it, fresh] = inputs_.try_emplace(name, -1);
    if (fresh) it->second = ir::Builder(st_.current()).input(name, t);
    return it->second;
  }
  // The arguments :value takes for `t` over `over`.
  std::vector<NodeId> args(Over over, const Target& t) {
    switch (over) {
      case Over::Params: return {param(*t.param)};
      case Over::Grads: {
        NodeId g = input("grad:" + t.param->path, t.param->type);
        if (microbatches_ > 1)
          g = st_.stage(ir::Op::Mul,
                        {g, ir::Builder(st_.current())
                                .scalar(1.0 / double(microbatches_), t.param->type.dtype)});
        return {g, param(*t.param)};
      }
      case Over::Updates: {
        NodeId updated = input("new:" + t.param->path, t.param->type);
        return {st_.stage(ir::Op::Sub, {updated, param(*t.param)}), param(*t.param)};
      }
      case Over::State:
        return {input("state:" + t.state->tensor_name(), t.state->type), param(*t.param)};
      case Over::Activations: return {input("probe:" + t.probe, t.probe_type)};
    }
    return {};
  }

 private:
  Stager& st_;
  int64_t microbatches_;
  std::map<std::string, NodeId> params_, inputs_;
};

// ---- what a diagnostic computes ------------------------------------------------------------

// How a diagnostic turns one tensor into its numbers.
struct Recipe {
  std::string name;
  std::vector<Over> overs;
  std::function<NodeId(const std::vector<NodeId>& args, const Target&)> value;
  Value select;                       // a selector value, or nil
  std::vector<std::string> reducers;  // with `plain`, the one reducer
  bool plain = true;                  // one number per tensor
  bool global = false;                // and "global": the l2 norm over every tensor
};

void emit(Stager& st, DiagFunction& f, const Recipe& r, const std::string& key, NodeId value) {
  auto out = [&](const std::string& name, NodeId node, const std::string& reducer, DiagKind k) {
    st.current().outputs.push_back({name, node});
    f.outputs.push_back(DiagOutput{key, reducer, name, k});
  };
  if (r.plain) {
    out(key, reduce(st, r.reducers.front(), value), "", DiagKind::Number);
    return;
  }
  bool host_value = false;
  for (const std::string& reducer : r.reducers) {
    if (!is_core_reducer(reducer)) {
      if (!host_value) st.current().outputs.push_back({"value:" + key, to_f32(st, value)});
      host_value = true;
      f.outputs.push_back(DiagOutput{key, reducer, "value:" + key, DiagKind::Host});
      continue;
    }
    DiagKind k = reducer == "histogram" ? DiagKind::Histogram : DiagKind::Reduced;
    out(key + ":" + reducer, reduce(st, reducer, value), reducer, k);
  }
}

// Stages function `fn` into the stager and takes it out again: the plan's
// module keeps it, the run's never sees it.
struct Staging {
  Stager& st;
  bool done = false;
  Staging(Stager& s, const std::string& fn, std::optional<ir::DType> autocast = std::nullopt)
      : st(s) {
    st.begin_function(fn);
    st.training = true;
    st.autocast = autocast;
  }
  ir::Function take() {
    ir::Function fn = std::move(st.current());  // abandon_function drops the husk
    std::stable_partition(fn.inputs.begin(), fn.inputs.end(), [&](NodeId id) {
      return fn.node(id).op == ir::Op::Input;  // inputs first, then params
    });
    done = true;
    st.abandon_function();
    st.autocast.reset();
    return fn;
  }
  ~Staging() {
    if (done) return;
    st.abandon_function();
    st.autocast.reset();
  }
};

// One function of a diagnostic over `targets` (each with its :over).
DiagFunction stage_function(Interp& in, DiagnosticPlan& plan, const Recipe& r,
                            const std::string& fn_name, int64_t rows,
                            const std::vector<std::pair<Over, Target>>& targets,
                            int64_t microbatches) {
  Stager& st = stage::stager_of(in);
  Staging staging(st, fn_name);
  Leaves leaves(st, microbatches);
  DiagFunction f{fn_name, rows, {}};
  NodeId sum_sq = -1;
  for (const auto& [over, t] : targets) {
    if (!r.select.is_nil() && !selector_matches(in, r.select, t.view)) continue;
    NodeId value = r.value(leaves.args(over, t), t);
    emit(st, f, r, t.key, value);
    if (!r.global) continue;
    NodeId sq = st.stage(ir::Op::Sum, {st.stage(ir::Op::Square, {to_f32(st, value)})});
    sum_sq = sum_sq < 0 ? sq : st.stage(ir::Op::Add, {sum_sq, sq});
  }
  if (r.global) {
    NodeId norm = st.stage(ir::Op::Sqrt, {sum_sq < 0 ? scalar(st, 0) : sum_sq});
    st.current().outputs.push_back({"global", norm});
    f.outputs.push_back(DiagOutput{"global", "", "global", DiagKind::Number});
  }
  plan.module.functions.push_back(staging.take());
  return f;
}

// "diag:NAME:activations" for the train batch, "...@ROWS" for other sizes.
std::string sized_name(const std::string& base, const SizedFunction& train) {
  size_t at = train.fn.find('@');
  return at == std::string::npos ? base : base + train.fn.substr(at);
}

Diagnostic stage_recipe(Interp& in, DiagnosticPlan& plan, const CompiledRun& run, const Recipe& r,
                        bool builtin) {
  Diagnostic d{r.name, builtin, false, {}, {}};
  std::vector<std::pair<Over, Target>> targets;
  for (Over over : r.overs) {
    if (over == Over::Activations) {
      d.over_activations = true;
      continue;
    }
    for (Target& t : param_targets(in, over, run)) targets.emplace_back(over, std::move(t));
  }
  if (!targets.empty() || !d.over_activations)
    d.fns.push_back(
        stage_function(in, plan, r, "diag:" + r.name, 0, targets, run.run.microbatches));
  if (d.over_activations)
    for (size_t i = 0; i < plan.forwards.size(); ++i) {
      std::vector<std::pair<Over, Target>> probes;
      for (Target& t : probe_targets(*plan.module.find(plan.forwards[i].fn)))
        probes.emplace_back(Over::Activations, std::move(t));
      d.fns.push_back(stage_function(
          in, plan, r, sized_name("diag:" + r.name + ":activations", run.train_fns[i]),
          plan.forwards[i].rows, probes, run.run.microbatches));
    }
  for (const std::string& reducer : r.reducers)
    if (!r.plain && !is_core_reducer(reducer)) d.plugin_reducers.push_back(reducer);
  return d;
}

// ---- the built-in set ----------------------------------------------------------------------

NodeId first_arg(const std::vector<NodeId>& args, const Target&) {
  return args.front();
}

std::vector<Recipe> builtin_recipes(Interp& in) {
  Stager& st = stage::stager_of(in);
  auto builtin = [&](const char* name, std::vector<Over> overs, const char* reducer) {
    return Recipe{name, std::move(overs), first_arg, in.nil(), {reducer}, true, false};
  };
  Recipe grad_norm = builtin("grad-norm", {Over::Grads}, "l2");
  grad_norm.global = true;
  Recipe update_ratio = builtin("update-ratio", {Over::Updates}, "mean");
  update_ratio.value = [sp = &st](const std::vector<NodeId>& args, const Target&) {
    Stager& st = *sp;
    NodeId du = reduce(st, "l2", args[0]), p = reduce(st, "l2", args[1]);
    return st.stage(ir::Op::Div, {du, st.stage(ir::Op::Add, {p, scalar(st, 1e-12)})});
  };
  return {grad_norm,
          builtin("grad-rms", {Over::Grads}, "rms"),
          builtin("param-rms", {Over::Params}, "rms"),
          update_ratio,
          builtin("state-rms", {Over::State}, "rms"),
          builtin("act-rms", {Over::Activations}, "rms"),
          builtin("act-max-abs", {Over::Activations}, "max-abs"),
          builtin("nonfinite", {Over::Grads, Over::Activations}, "count-nonfinite"),
          builtin("dead-relu", {Over::Activations}, "frac-zero")};
}

// ---- defdiagnostic ---------------------------------------------------------------------------

Over over_of(const std::string& over) {
  if (over == "params") return Over::Params;
  if (over == "grads") return Over::Grads;
  if (over == "updates") return Over::Updates;
  if (over == "state") return Over::State;
  return Over::Activations;
}

Recipe user_recipe(Interp& in, const DiagnosticDecl& d) {
  Recipe r{d.name, {over_of(d.over)}, {}, in.nil(), d.reduce, d.reduce.empty(), false};
  if (r.plain) r.reducers = {"mean"};
  if (!d.select.is_nil()) r.select = selector_from_form(in, d.select);
  r.value = [ip = &in, dp = &d](const std::vector<NodeId>& args, const Target& t) {
    Interp& in = *ip;
    const DiagnosticDecl& d = *dp;
    Stager& st = stage::stager_of(in);
    std::vector<Value> values;
    for (NodeId a : args) values.push_back(st.wrap(a));
    Value v = in.apply(d.value, values.data(), int(values.size()));
    in.single();
    if (!stage::as_tensor(v) && !v.is_number())
      in.fail_at(d.span, "E-TYPE",
                 "defdiagnostic " + d.name + ": :value gave " + in.show(v) + " for '" + t.key +
                     "', not a tensor or a number",
                 "return a tensor, e.g. (lambda (g p) (/ (norm g) (norm p)))");
    return st.operand(v, "defdiagnostic :value");
  };
  return r;
}

void check_names(Interp& in, const Contract& contract, const std::vector<Recipe>& builtins) {
  for (size_t i = 0; i < contract.diagnostics.size(); ++i) {
    const DiagnosticDecl& d = contract.diagnostics[i];
    for (const Recipe& b : builtins)
      if (b.name == d.name)
        in.fail_at(d.span, "E-CONTRACT-SHAPE",
                   "defdiagnostic " + d.name + ": a built-in diagnostic has that name",
                   "give it another name");
    for (size_t j = 0; j < i; ++j)
      if (contract.diagnostics[j].name == d.name)
        in.fail_at(d.span, "E-CONTRACT-SHAPE", "defdiagnostic " + d.name + " appears twice");
  }
}

// A :reduce name that is neither a core reducer nor a loaded reducer
// plugin's, when the CLI said which plugins loaded (compile.h, CompileEnv).
void check_reducers(Interp& in, const DiagnosticDecl& d, const CompileEnv& env) {
  if (!env.reducer_plugins) return;
  std::optional<std::vector<std::string>> plugins;  // asked for at the first non-core name
  for (const std::string& r : d.reduce) {
    if (is_core_reducer(r)) continue;
    if (!plugins) plugins = env.reducer_plugins();
    const std::vector<std::string>& loaded = *plugins;
    if (std::find(loaded.begin(), loaded.end(), r) != loaded.end()) continue;
    auto list = [](const std::vector<std::string>& names) {
      std::string out;
      for (const std::string& n : names) out += (out.empty() ? "" : " ") + n;
      return out.empty() ? std::string("none") : out;
    };
    in.fail_at(d.span, "E-DIAG-REDUCER",
               "defdiagnostic " + d.name + ": :reduce names '" + r +
                   "', which is neither a core reducer (" + list(core_reducers()) +
                   ") nor a loaded reducer plugin (" + list(loaded) + ")",
               "use a core reducer, or put the plugin on SEXPGPU_PLUGIN_PATH (sexpgpu doctor "
               "lists the reducers that load)");
  }
}

// ---- the forward pass over probes ------------------------------------------------------------

lisp::Value global_function(Interp& in, const char* upper_name) {
  lisp::Cell* c = in.fcell(in.intern(upper_name));
  return c && c->has_function() && !c->macro ? c->function : in.nil();
}

// diag:forward[@ROWS]: the objective's forward pass as train_step stages it
// (the same batch inputs, prepare, and random streams), its outputs the
// probes. Nothing when the objective probes nothing.
std::optional<ir::Function> stage_forward(Interp& in, const CompiledRun& run,
                                          const SizedFunction& train) {
  Stager& st = stage::stager_of(in);
  std::optional<ir::DType> autocast;
  if (run.run.precision == "bf16") autocast = ir::DType::BF16;
  Staging staging(st, sized_name("diag:forward", train), autocast);
  {
    TraceScope trace(in);
    ir::Builder b(st.current());
    std::vector<Value> items;
    for (const BatchFieldType& f :
         loaders_of(in).find(run.train_loader)->batch_types(train.rows, train.seq_len)) {
      items.push_back(in.sym_kw(lisp::upcase_ascii(f.name)));
      items.push_back(st.wrap(b.input("batch:" + f.name, f.type)));
    }
    Value batch = in.list_from(items);
    if (Value prepare = global_function(in, "PREPARE"); !prepare.is_nil()) {
      Value args[2] = {batch, ctx_function(in)};
      batch = in.apply(prepare, args, 2);
      in.single();
    }
    Value args[2] = {batch, ctx_function(in)};
    in.apply(global_function(in, "OBJECTIVE"), args, 2);
    in.single();
  }
  if (probes_of(in).empty()) return std::nullopt;
  for (const Probe& p : probes_of(in)) st.current().outputs.push_back({"probe:" + p.name, p.node});
  return staging.take();
}

void stage_forwards(Interp& in, DiagnosticPlan& plan, const CompiledRun& run) {
  for (const SizedFunction& train : run.train_fns) {
    std::optional<ir::Function> fn = stage_forward(in, run, train);
    if (!fn) return;
    if (plan.probes.empty())
      for (const ir::Output& o : fn->outputs) plan.probes.push_back(o.name.substr(6));
    plan.forwards.push_back(SizedFunction{fn->name, train.rows, train.seq_len});
    plan.module.functions.push_back(std::move(*fn));
  }
}

// The plan's module, verified. The passes wait for the run: it optimizes
// only the functions it compiles (the selected ones), so check pays nothing
// for them.
void finish_module(Interp& in, DiagnosticPlan& plan) {
  const ir::Module& staged = stage::stager_of(in).module();
  plan.module.files = staged.files;
  plan.module.params = staged.params;
  if (std::string err = ir::verify(plan.module); !err.empty())
    in.fail("E-UNSUPPORTED",
            "internal error, please report: the diagnostics' IR does not verify: " + err);
}

}  // namespace

void stage_diagnostics(Interp& in, CompiledRun& run, const Contract& contract,
                       const CompileEnv& env) {
  auto plan = std::make_shared<DiagnosticPlan>();
  std::vector<Recipe> builtins = builtin_recipes(in);
  check_names(in, contract, builtins);
  stage_forwards(in, *plan, run);
  for (const Recipe& r : builtins)
    plan->diagnostics.push_back(stage_recipe(in, *plan, run, r, true));
  for (const DiagnosticDecl& d : contract.diagnostics) {
    lisp::SpanGuard at(in, in.add_span(d.span));
    check_reducers(in, d, env);
    plan->diagnostics.push_back(stage_recipe(in, *plan, run, user_recipe(in, d), false));
  }
  finish_module(in, *plan);
  for (const std::string& name : run.run.diagnostics_select)
    if (!plan->find(name))
      in.fail("E-RUN-KEY",
              ":diagnostics :select names '" + name +
                  "', which is no diagnostic; the diagnostics are: " + plan->names(),
              "select built-ins such as :grad-norm, or a defdiagnostic's name");
  run.diagnostics = std::move(plan);
}

}  // namespace sexpgpu::runfile
