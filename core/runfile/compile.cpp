// compile_run: the contract functions staged into the loop's IR functions
// (compile.h).
#include "runfile/compile.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "data/loader.h"
#include "ir/autodiff.h"
#include "ir/cost.h"
#include "ir/passes.h"
#include "ir/passes/bucket_gradients.h"
#include "ir/verify.h"
#include "lisp/builtins.h"
#include "runfile/diagnostics.h"
#include "runfile/model.h"
#include "runfile/optimizer.h"
#include "stage/args.h"
#include "stage/stager.h"
#include "util/log.h"

namespace sexpgpu::runfile {

using ir::NodeId;
using lisp::Interp;
using lisp::Value;

const ParamEntry* CompiledRun::find_param(const std::string& path) const {
  for (const ParamEntry& p : params)
    if (p.path == path) return &p;
  return nullptr;
}

namespace {

// What the staging steps share; each step is one top-level evaluation, so
// an error in one is reported at its form and the others still run.
struct Compilation {
  CompiledRun out;
  const LoaderDecl* train = nullptr;
  std::vector<Group> groups;
  bool failed = false;
  bool trained = true;  // the objective staged: every parameter is declared
};

// A global function of the file, or nil.
Value user_function(Interp& in, const char* upper_name) {
  lisp::Symbol* s = in.intern(upper_name);
  lisp::Cell* c = in.fcell(s);
  return c && c->has_function() && !c->macro ? c->function : in.nil();
}

// Ends the function being staged when the step fails part-way.
// Under :precision :bf16 the model's functions compute matrix products in
// bf16 (stager.h, autocast); the update and the initialisers stay f32.
struct FunctionGuard {
  stage::Stager& st;
  bool done = false;
  FunctionGuard(stage::Stager& s, const std::string& name, bool training,
                std::optional<ir::DType> autocast = std::nullopt)
      : st(s) {
    st.begin_function(name);
    st.training = training;
    st.autocast = autocast;
  }
  void keep() {
    done = true;
    st.end_function();
    reset();
  }
  ~FunctionGuard() {
    if (!done) {
      st.abandon_function();
      reset();
    }
  }
  void reset() {
    st.training = true;
    st.autocast.reset();
  }
};

std::optional<ir::DType> compute_dtype(const RunDecl& run) {
  return run.precision == "bf16" ? std::optional<ir::DType>(ir::DType::BF16) : std::nullopt;
}

// Inputs first, then params, as the IR's calling convention wants.
void order_inputs(ir::Function& fn) {
  std::stable_partition(fn.inputs.begin(), fn.inputs.end(),
                        [&](NodeId id) { return fn.node(id).op == ir::Op::Input; });
}

// The batch plist: one staged input per field, named batch:FIELD.
Value batch_plist(Interp& in, const LoaderDecl& loader, const SizedFunction& shape) {
  stage::Stager& st = stage::stager_of(in);
  ir::Builder b(st.current());
  std::vector<Value> items;
  for (const BatchFieldType& f : loader.batch_types(shape.rows, shape.seq_len)) {
    items.push_back(in.sym_kw(lisp::upcase_ascii(f.name)));
    items.push_back(st.wrap(b.input("batch:" + f.name, f.type)));
  }
  return in.list_from(items);
}

// prepare, when the file has it, then the batch checked to be a plist.
Value prepared_batch(Interp& in, Value batch) {
  Value prepare = user_function(in, "PREPARE");
  if (!prepare.is_nil()) {
    Value args[2] = {batch, ctx_function(in)};
    batch = in.apply(prepare, args, 2);
    in.single();
    std::vector<Value> items = in.list_items(batch, "prepare's result");
    if (items.size() % 2 != 0)
      in.fail("E-TYPE", "prepare returned " + in.show(batch) + ", not a plist (:x tensor ...)",
              "return (list :x ... :y ...)");
  }
  return batch;
}

// The metrics of the function just staged, as its outputs.
std::vector<MetricEntry> metric_outputs(Interp& in, ir::Function& fn) {
  std::vector<MetricEntry> out;
  for (const MetricDecl& m : metrics_of(in, fn.name)) {
    fn.outputs.push_back({"metric:" + m.name, m.node});
    out.push_back({m.name, m.reduce});
  }
  return out;
}

// The function's Param nodes that the optimizer trains.
std::vector<NodeId> trainable_params(const ir::Module& m, const ir::Function& fn) {
  std::vector<NodeId> out;
  for (NodeId id : fn.inputs) {
    if (fn.node(id).op != ir::Op::Param) continue;
    for (const ir::ParamInfo& p : m.params)
      if (p.path == *fn.node(id).attrs.name && p.trainable) out.push_back(id);
  }
  return out;
}

// W-UNUSED-PARAM at the parameter's declaration (its defparam, or the
// user's call that declared it), with the objective that staged it as a note.
void warn_unused_param(Interp& in, const std::string& path) {
  sexpgpu::Diagnostic d;  // not runfile::Diagnostic, which is defdiagnostic's
  d.code = "W-UNUSED-PARAM";
  d.severity = Severity::Warning;
  d.message = "the loss does not depend on parameter '" + path + "': its gradient is zero";
  d.fix = "use it in the model, declare it with :trainable nil, or remove it";
  d.span = in.current_span();
  if (const ParamDecl* decl = params_of(in).find(path); decl && decl->span.valid()) {
    d.notes.push_back({d.span, "the objective staged here does not reach it"});
    d.span = decl->span;
  }
  in.sink.report(std::move(d));
}

// The finite guard runs on the device, in the update (stage_update): a
// step whose loss is not finite must not be applied even when every
// gradient is, so the smallest gradient takes the loss's value wherever the
// loss is not finite, and the gradient norm the update checks is then not
// finite either. That way the loss reaches the guard through the gradients,
// summed over microbatches and all-reduced over ranks like them, with no
// transfer to the host before the update runs.
void poison_smallest_gradient(stage::Stager& st, NodeId loss, std::vector<NodeId>& grads) {
  ir::Function& fn = st.current();
  if (grads.empty()) return;
  size_t smallest = 0;
  for (size_t i = 1; i < grads.size(); ++i)
    if (fn.type(grads[i]).shape.numel().value_or(0) <
        fn.type(grads[smallest]).shape.numel().value_or(0))
      smallest = i;
  NodeId& g = grads[smallest];
  NodeId bad = loss;
  if (fn.type(g).dtype != fn.type(loss).dtype) {
    ir::Attrs a;
    a.dtype = fn.type(g).dtype;
    bad = st.stage(ir::Op::Cast, {loss}, std::move(a));
  }
  // isfinite at the gradient's shape, of the loss expanded: one group of
  // the gradient's shape, one kernel (a scalar isfinite would be its own).
  NodeId wide = loss;
  if (!fn.type(g).shape.is_scalar()) {
    ir::Attrs a;
    a.shape = ir::Dims(fn.type(g).shape.begin(), fn.type(g).shape.end());
    wide = st.stage(ir::Op::Expand, {loss}, std::move(a));
  }
  g = st.stage(ir::Op::Where, {st.stage(ir::Op::IsFinite, {wide}), g, bad});
}

void stage_train(Interp& in, Compilation& c, SizedFunction& sf) {
  stage::Stager& st = stage::stager_of(in);
  FunctionGuard guard(st, sf.fn, true, compute_dtype(c.out.run));
  Value loss_value;
  {
    TraceScope trace(in);
    Value batch = prepared_batch(in, batch_plist(in, *c.train, sf));
    Value args[2] = {batch, ctx_function(in)};
    loss_value = in.apply(user_function(in, "OBJECTIVE"), args, 2);
    in.single();
  }
  ir::Function& fn = st.current();
  if (!stage::as_tensor(loss_value) && !loss_value.is_number())
    in.fail("E-OBJECTIVE-NOT-SCALAR",
            "objective returned " + in.show(loss_value) + ", not a staged scalar loss",
            "return the loss, e.g. (cross-entropy logits (getf batch :y))");
  NodeId loss = st.operand(loss_value, "objective");
  const ir::TensorType& lt = fn.type(loss);
  if (!lt.shape.is_scalar() || !ir::is_float(lt.dtype))
    in.fail("E-OBJECTIVE-NOT-SCALAR",
            "objective returned " + lt.to_string() + ", not a float scalar",
            "reduce it, e.g. with (mean ...)");
  if (lt.dtype != ir::DType::F32) {
    ir::Attrs a;
    a.dtype = ir::DType::F32;
    loss = st.stage(ir::Op::Cast, {loss}, std::move(a));
  }
  fn.outputs.push_back({"loss", loss});
  std::vector<MetricEntry> metrics = metric_outputs(in, fn);
  if (c.out.train_fns.empty() || sf.fn == c.out.train_fns.front().fn) c.out.train_metrics = metrics;
  std::vector<NodeId> params = trainable_params(st.module(), fn);
  sf.forward_nodes = int64_t(fn.nodes.size());
  std::vector<ir::NonDifferentiable> nondiff;
  ir::Gradients g = ir::differentiate(fn, loss, params, &nondiff);
  for (const ir::NonDifferentiable& nd : nondiff)
    in.fail("E-NONDIFF",
            "the loss reaches parameter '" + *fn.node(params[nd.wrt_index]).attrs.name +
                "' only through '" + std::string(ir::info(fn.node(nd.blocking_node).op).ir_name) +
                "', which has no gradient",
            "integer, boolean and comparison ops carry no gradient");
  if (sf.fn == "train_step")
    for (size_t i : g.unreached) warn_unused_param(in, *fn.node(params[i]).attrs.name);
  poison_smallest_gradient(st, loss, g.grads);
  std::vector<std::string> grad_names;
  for (size_t i = 0; i < params.size(); ++i) {
    grad_names.push_back("grad:" + *fn.node(params[i]).attrs.name);
    fn.outputs.push_back({grad_names.back(), g.grads[i]});
  }
  order_inputs(fn);
  // Data parallel's gradient buckets, at every world size (the IR does not
  // depend on it); with microbatches, update all-reduces their sum instead.
  if (c.out.run.microbatches == 1) {
    ir::GradientBuckets buckets =
        ir::bucket_gradient_outputs(fn, grad_names, c.out.run.bucket_bytes);
    if (sf.forward_nodes > 0) sf.forward_nodes = buckets.new_id[size_t(sf.forward_nodes - 1)] + 1;
  }
  guard.keep();
}

void stage_eval(Interp& in, Compilation& c, EvalPass& pass, const LoaderDecl& loader,
                const SizedFunction& sf) {
  stage::Stager& st = stage::stager_of(in);
  FunctionGuard guard(st, sf.fn, false, compute_dtype(c.out.run));
  TraceScope trace(in);
  Value batch = prepared_batch(in, batch_plist(in, loader, sf));
  Value args[2] = {batch, ctx_function(in)};
  Value fn_value = user_function(in, lisp::upcase_ascii(pass.decl.fn).c_str());
  if (fn_value.is_nil())
    in.fail(
        "E-CONTRACT-MISSING",
        "defeval " + pass.decl.name + " calls " + pass.decl.fn + ", which the file does not define",
        "(defun " + pass.decl.fn + " (batch ctx) (metric :loss ...))");
  in.apply(fn_value, args, 2);
  in.single();
  ir::Function& fn = st.current();
  std::vector<MetricEntry> metrics = metric_outputs(in, fn);
  if (metrics.empty())
    in.fail("E-CONTRACT-SHAPE", pass.decl.fn + " reports no metric for defeval " + pass.decl.name,
            "report values with (metric :loss ...)");
  if (pass.metrics.empty()) pass.metrics = metrics;
  order_inputs(fn);
  guard.keep();
}

// `root` recomputed with `replace` (node -> its stand-in) in place of the
// nodes it names: each node between the first replaced one and `root` that
// reads a replaced node, directly or not, is staged again after the
// stand-ins, reading them; the originals are left to dead code elimination.
NodeId restaged_with(ir::Function& fn, NodeId root, std::map<NodeId, NodeId> replace) {
  if (replace.empty() || replace.begin()->first > root) return root;
  ir::Builder b(fn);
  for (NodeId id = replace.begin()->first + 1; id <= root; ++id) {
    const ir::Node n = fn.node(id);  // a copy: staging may move the nodes
    if (replace.count(id) || n.op == ir::Op::Input || n.op == ir::Op::Param) continue;
    std::vector<NodeId> operands(n.inputs.begin(), n.inputs.end());
    bool reads = false;
    for (NodeId& in : operands)
      if (auto it = replace.find(in); it != replace.end()) in = it->second, reads = true;
    if (!reads) continue;
    b.set_loc(n.loc);
    replace[id] = b.must(n.op, operands, n.attrs);
  }
  auto it = replace.find(root);
  return it == replace.end() ? root : it->second;
}

// The mean over microbatches, the global norm, clipping, then each group's
// optimizer over its members.
void stage_update(Interp& in, Compilation& c) {
  stage::Stager& st = stage::stager_of(in);
  FunctionGuard guard(st, "update", true);
  Value result = in.apply(user_function(in, "OPTIMIZER"), nullptr, 0);
  in.single();
  ir::Module& m = st.module();
  std::vector<ParamView> views;
  // std::vector<bool> has no contiguous storage to give a span of.
  std::unique_ptr<bool[]> trainable(new bool[m.params.size()]);
  for (size_t i = 0; i < m.params.size(); ++i) {
    const ir::ParamInfo& p = m.params[i];
    const ParamDecl* d = params_of(in).find(p.path);
    views.push_back(
        ParamView{p.path, p.type.shape, p.type.dtype, d ? d->tags : std::vector<std::string>{}});
    trainable[i] = p.trainable;
  }
  c.groups = assign_groups(in, result, views,
                           std::span<const bool>(trainable.get(), m.params.size()), c.trained);

  ir::Function& fn = st.current();
  ir::Builder b(fn);
  const double inv_micro = 1.0 / double(c.out.run.microbatches);
  struct Member {
    size_t param;
    NodeId p, g;
  };
  std::vector<Member> members;
  for (size_t i = 0; i < m.params.size(); ++i) {
    if (!m.params[i].trainable) continue;
    const ir::ParamInfo& info = m.params[i];
    NodeId g = b.input("grad:" + info.path, info.type);
    if (c.out.run.microbatches > 1)
      g = st.stage(ir::Op::Mul, {g, b.scalar(inv_micro, info.type.dtype)});
    members.push_back({i, b.param(info.path, info.type), g});
  }
  // The global norm in f32, before clipping (what grad-norm reports).
  NodeId sum_sq = b.scalar(0.0, ir::DType::F32);
  for (const Member& mem : members) {
    NodeId g32 = mem.g;
    if (fn.type(g32).dtype != ir::DType::F32) {
      ir::Attrs a;
      a.dtype = ir::DType::F32;
      g32 = st.stage(ir::Op::Cast, {g32}, std::move(a));
    }
    sum_sq =
        st.stage(ir::Op::Add, {sum_sq, st.stage(ir::Op::Sum, {st.stage(ir::Op::Square, {g32})})});
  }
  NodeId norm = st.stage(ir::Op::Sqrt, {sum_sq});
  fn.outputs.push_back({"grad-norm", norm});
  // The finite guard (observe.md): a step whose gradient norm is not
  // finite (nor its loss: poison_smallest_gradient) leaves every parameter
  // and state as it was, so the update may write them in place.
  NodeId finite = st.stage(ir::Op::IsFinite, {norm});
  auto guarded = [&](NodeId updated, NodeId old) {
    return st.stage(ir::Op::Where, {finite, updated, old});
  };
  if (c.out.run.clip_norm) {
    // As torch.nn.utils.clip_grad_norm_: max_norm / (norm + 1e-6), at most 1.
    NodeId coef =
        st.stage(ir::Op::Div, {b.scalar(*c.out.run.clip_norm, ir::DType::F32),
                               st.stage(ir::Op::Add, {norm, b.scalar(1e-6, ir::DType::F32)})});
    coef = st.stage(ir::Op::Minimum, {coef, b.scalar(1.0, ir::DType::F32)});
    for (Member& mem : members) {
      NodeId k = coef;
      if (fn.type(mem.g).dtype != ir::DType::F32) {
        ir::Attrs a;
        a.dtype = fn.type(mem.g).dtype;
        k = st.stage(ir::Op::Cast, {coef}, std::move(a));
      }
      mem.g = st.stage(ir::Op::Mul, {mem.g, k});
    }
  }
  std::vector<ir::Output> param_outputs, state_outputs;
  for (const Group& grp : c.groups) {
    GroupEntry ge{grp.name, grp.optimizer->name, {}, {}};
    for (auto& [name, node] : stage_schedules(in, *grp.optimizer)) {
      std::string series = name + "/" + grp.name;
      fn.outputs.push_back({series, node});
      ge.series.push_back(series);
    }
    for (size_t member : grp.members) {
      auto it = std::find_if(members.begin(), members.end(),
                             [&](const Member& x) { return x.param == member; });
      const ir::ParamInfo& info = m.params[member];
      ge.params.push_back(info.path);
      std::vector<NodeId> states;
      for (const StateDecl& s : grp.optimizer->states) {
        ir::TensorType t{s.dtype, state_shape(in, s, info.type.shape)};
        states.push_back(b.input("state:" + info.path + "/" + s.name, t));
        c.out.states.push_back(StateEntry{info.path, s.name, t, s.fill});
      }
      StagedUpdate u = runfile::stage_update(in, *grp.optimizer, it->p, it->g, states);
      // The new parameter reads the guarded states, the same values on a
      // finite step: then one kernel computes it and writes them beside it
      // (the CUDA plan's stored members), not a second pass over the states.
      std::map<NodeId, NodeId> guarded_states;
      for (size_t k = 0; k < states.size(); ++k) {
        NodeId kept = guarded(u.states[k], states[k]);
        if (!guarded_states.count(u.states[k])) guarded_states[u.states[k]] = kept;
        state_outputs.push_back({"state:" + info.path + "/" + grp.optimizer->states[k].name,
                                 guarded_states[u.states[k]]});
      }
      NodeId new_param = restaged_with(fn, u.param, guarded_states);
      param_outputs.push_back({"param:" + info.path, guarded(new_param, it->p)});
    }
    c.out.groups.push_back(std::move(ge));
  }
  for (auto& o : param_outputs) fn.outputs.push_back(o);
  for (auto& o : state_outputs) fn.outputs.push_back(o);
  order_inputs(fn);
  // With microbatches, the gradient buckets all-reduce the sums over them
  // here, once a step (train_step has none then).
  if (c.out.run.microbatches > 1) {
    std::vector<std::string> grad_names;
    for (const Member& mem : members) grad_names.push_back("grad:" + m.params[mem.param].path);
    ir::bucket_gradient_inputs(fn, grad_names, c.out.run.bucket_bytes);
  }
  guard.keep();
}

// Sums of gradients over microbatches: acc:PATH + grad:PATH.
void stage_accumulate(Interp& in) {
  stage::Stager& st = stage::stager_of(in);
  FunctionGuard guard(st, "accumulate", true);
  ir::Function& fn = st.current();
  ir::Builder b(fn);
  for (const ir::ParamInfo& p : st.module().params) {
    if (!p.trainable) continue;
    NodeId a = b.input("acc:" + p.path, p.type);
    NodeId g = b.input("grad:" + p.path, p.type);
    fn.outputs.push_back({"sum:" + p.path, st.stage(ir::Op::Add, {a, g})});
  }
  guard.keep();
}

// Whether two sources read the same data: a file in common (compared
// canonically, so `./data/x.npy`, `data/x.npy`, a symlinked directory or a
// `..` detour are one file), or for generated sources the same description
// (their seed and sizes are all of it).
bool same_data(const data::Source& a, const data::Source& b) {
  if (a.files().empty() || b.files().empty()) return a.description() == b.description();
  for (const auto& f : a.files())
    if (std::find(b.files().begin(), b.files().end(), f) != b.files().end()) return true;
  return false;
}

// E-EVAL-LEAK: the train loader itself, or a loader over the same data
// whose split overlaps the train loader's. Over the same examples the splits
// are compared as example ranges; over the same files cut into other
// examples (another :seq-len, another set of fields) as fractions of them.
void check_eval_leaks(Interp& in, const Compilation& c) {
  const Loaders& loaders = loaders_of(in);
  const LoaderDecl& train = *c.train;
  for (const EvalDecl& e : contract_of(in).evals) {
    const LoaderDecl* l = loaders.find(e.loader);
    if (!l)
      in.fail_at(
          e.span, "E-CONTRACT-SHAPE",
          "defeval " + e.name + " reads loader " + e.loader + ", which the file does not define");
    if (l == c.train)
      in.fail_at(e.span, "E-EVAL-LEAK",
                 "defeval " + e.name + " evaluates on loader train, which the run trains on",
                 "define a separate loader over held-out data, e.g. :split (0.9 1.0)");
    if (!same_data(*l->source, *train.source)) continue;
    const char* fix = "give the two loaders disjoint :split ranges, e.g. (0.0 0.9) and (0.9 1.0)";
    int64_t n = l->source->size();
    if (n == train.source->size()) {
      int64_t a0 = data::split_index(train.options.split_from, n);
      int64_t a1 = data::split_index(train.options.split_to, n);
      int64_t b0 = data::split_index(l->options.split_from, n);
      int64_t b1 = data::split_index(l->options.split_to, n);
      if (std::max(a0, b0) < std::min(a1, b1))
        in.fail_at(e.span, "E-EVAL-LEAK",
                   "defeval " + e.name + " reads loader " + e.loader + ", whose examples [" +
                       std::to_string(b0) + ", " + std::to_string(b1) + ") of " +
                       l->source->description() + " overlap train's [" + std::to_string(a0) + ", " +
                       std::to_string(a1) + ") of " + train.source->description(),
                   fix);
    } else if (std::max(train.options.split_from, l->options.split_from) <
               std::min(train.options.split_to, l->options.split_to)) {
      auto split = [](const data::LoaderOptions& o) {
        return "(" + lisp::format_float(o.split_from) + " " + lisp::format_float(o.split_to) + ")";
      };
      in.fail_at(e.span, "E-EVAL-LEAK",
                 "defeval " + e.name + " reads loader " + e.loader + ", whose :split " +
                     split(l->options) + " of " + l->source->description() +
                     " overlaps train's :split " + split(train.options) + " of " +
                     train.source->description() + ", over the same files",
                 fix);
    }
  }
}

// Every batch shape the loader gives (data::Loader::stage_rows) through the
// curriculum's stages, the loader's own batch first, named BASE, BASE@ROWS
// or BASE@ROWSxSEQ. `restart`: an evaluation pass, which reads its loader
// from the start in whichever stage it runs. `per_stage` (when given and
// there are stages) gets, for each stage, the name staged for its own batch.
std::vector<SizedFunction> sized(Interp& in, const std::string& base, const LoaderDecl& l,
                                 const std::vector<StageDecl>& stages, bool restart,
                                 std::vector<std::string>* per_stage = nullptr) {
  std::vector<data::StageOverrides> overrides;
  for (const StageDecl& s : stages) overrides.push_back(l.overrides_for(s.name));
  if (overrides.empty()) overrides.push_back(l.overrides_for(""));
  ir::Result<data::Loader> loader = data::Loader::create(l.source, l.options);
  ir::Result<std::vector<std::vector<data::Loader::Shape>>> shapes =
      loader ? loader->stage_rows(overrides, restart)
             : ir::Result<std::vector<std::vector<data::Loader::Shape>>>::failure(loader.error());
  if (!shapes)
    in.fail_at(l.span, "E-LOADER-SOURCE", shapes.error(),
               "each stage's :batch and :seq-len must fit the loader's source and split");
  const int64_t own_len = l.source->tokens_per_example();
  std::vector<SizedFunction> out{{base, l.options.batch, own_len}};
  for (const auto& stage : *shapes)
    for (const data::Loader::Shape& s : stage) {
      bool seen = std::any_of(out.begin(), out.end(), [&](const SizedFunction& f) {
        return f.rows == s.rows && f.seq_len == s.seq_len;
      });
      if (seen) continue;
      std::string suffix = "@" + std::to_string(s.rows);
      if (s.seq_len != own_len) suffix += "x" + std::to_string(s.seq_len);
      out.push_back({base + suffix, s.rows, s.seq_len});
    }
  if (per_stage && !stages.empty())
    for (const auto& stage : *shapes)
      for (const SizedFunction& f : out)
        if (!stage.empty() && f.rows == stage.front().rows && f.seq_len == stage.front().seq_len) {
          per_stage->push_back(f.fn);
          break;
        }
  if (out.size() > kMaxBatchShapes) {
    std::string list;
    for (size_t i = 0; i < out.size() && i < 8; ++i)
      list += (i ? ", " : "") + std::to_string(out[i].rows) +
              (out[i].seq_len != own_len ? "x" + std::to_string(out[i].seq_len) : "");
    if (out.size() > 8) list += ", ...";
    in.fail_at(l.span, "E-LOADER-SOURCE",
               "loader " + l.name + ": its stages give batches of " + std::to_string(out.size()) +
                   " shapes (" + list + "), each a compiled " + base + ", and " +
                   std::to_string(kMaxBatchShapes) +
                   " is the most: a stage that changes :batch mid-epoch can end the epoch in "
                   "another remainder",
               "give the loader :drop-last t, or stage batch sizes that divide one another");
  }
  return out;
}

// until:NAME: the stage's condition, staged with the ctx keys it reads.
void stage_until(Interp& in, const StageDecl& s) {
  stage::Stager& st = stage::stager_of(in);
  FunctionGuard guard(st, "until:" + s.name, true);
  Value v = in.apply(s.until, nullptr, 0);
  in.single();
  ir::Function& fn = st.current();
  ir::Builder b(fn);
  NodeId cond;
  if (stage::as_tensor(v)) {
    cond = st.operand(v, "defcurriculum :until");
    if (!fn.type(cond).shape.is_scalar())
      in.fail("E-SHAPE", "stage :" + s.name + "'s :until is " + fn.type(cond).to_string() +
                             ", not a scalar condition");
  } else {
    cond = b.scalar(in.test(v) ? 1.0 : 0.0, ir::DType::F32);
  }
  ir::Attrs a;
  a.dtype = ir::DType::F32;
  if (fn.type(cond).dtype != ir::DType::F32) cond = st.stage(ir::Op::Cast, {cond}, std::move(a));
  fn.outputs.push_back({"until", cond});
  order_inputs(fn);
  guard.keep();
}

// The staging step in progress, which %COMPILE-STEP runs.
std::function<void()>* active_step = nullptr;

// Runs one staging step as a top-level form at `span`, so its errors are
// reported like any form's (and limits, special bindings and non-local
// exits are handled as for any form). False when it failed.
template <class F>
bool step(Interp& in, Compilation& c, Span span, const char* name, F&& body) {
  std::function<void()> fn = [&] {
    try {
      body();
    } catch (lisp::LispError& e) {
      // The error an earlier step gave at the same place (the model that
      // the objective and evaluate both call) is reported once.
      for (const sexpgpu::Diagnostic& d : in.sink.all())
        if (d.severity == Severity::Error && d.code == e.diag.code &&
            d.span.file == e.diag.span.file && d.span.line == e.diag.span.line &&
            d.span.col == e.diag.span.col)
          e.consequence = true;
      throw;
    }
  };
  active_step = &fn;
  Value form = in.list({in.sym("%COMPILE-STEP"), in.make_string_utf8(name)});
  bool ok = in.eval_toplevel(form, nullptr, &span);
  active_step = nullptr;
  if (!ok) c.failed = true;
  return ok;
}

// The FLOPs of one optimizer step by the IR's cost model (ir/cost.h): every
// microbatch's forward and backward pass of the batch shape `train` (one of
// train_fns), the gradient sums, the update (spec::StepFlops).
StepFlops step_flops(const CompiledRun& run, const SizedFunction& train) {
  StepFlops f;
  const double micro = double(run.run.microbatches);
  if (const ir::Function* staged = run.staged.find(train.fn)) {
    f.forward = ir::function_cost(*staged, 0, ir::NodeId(train.forward_nodes)).flops * micro;
    f.backward = ir::function_cost(*staged, ir::NodeId(train.forward_nodes)).flops * micro;
  }
  if (const ir::Function* acc = run.module.find("accumulate"))
    f.accumulate = ir::function_cost(*acc).flops * (micro - 1);
  if (const ir::Function* update = run.module.find("update"))
    f.update = ir::function_cost(*update).flops;
  return f;
}

}  // namespace

void register_compile(Interp& in) {
  SG_BUILTIN(in, "%COMPILE-STEP", 1, 1, "runs one step of compiling the run file (internal)", {
    if (!active_step) in.fail("E-USER", "%compile-step is internal to the compiler");
    (*active_step)();
    return in.t();
  });
}

std::optional<CompiledRun> compile_run(Interp& in, const std::vector<lisp::ReadForm>& forms,
                                       const CompileEnv& env) {
  if (in.sink.error_count() > 0) return std::nullopt;
  Contract& contract = contract_of(in);
  if (!contract.run) return std::nullopt;
  Compilation c;
  c.out.run = *contract.run;
  log::Stopwatch staging;
  auto span_of = [&](const char* head, const char* name) {
    for (const lisp::ReadForm& rf : forms) {
      if (!rf.form.is_cons() || !lisp::car_of(rf.form).is_symbol()) continue;
      if (lisp::car_of(rf.form).sym()->name != head) continue;
      if (!name) return rf.span;
      Value n = lisp::car_of(lisp::cdr_of(rf.form));
      if (n.is_symbol() && n.sym()->name == name) return rf.span;
    }
    return contract.run->span;
  };
  c.train = loaders_of(in).find("train");
  if (!c.train) {
    Span s;
    if (!forms.empty()) s.file = forms.front().span.file;
    step(in, c, s, "loaders", [&] {
      in.fail(
          "E-CONTRACT-MISSING", "the run file has no loader named train",
          "(defloader train :source (synthetic :regression :features 8 :examples 1024) :batch 32)");
    });
    return std::nullopt;
  }
  c.out.has_prepare = !user_function(in, "PREPARE").is_nil();
  c.out.steps = c.out.run.steps;
  if (!c.out.steps &&
      __builtin_mul_overflow(c.out.run.epochs, c.train->batches_per_epoch, &c.out.steps)) {
    step(in, c, contract.run->span, "steps", [&] {
      in.fail("E-OVERFLOW",
              ":epochs " + std::to_string(c.out.run.epochs) + " times " +
                  std::to_string(c.train->batches_per_epoch) +
                  " batches per epoch is more steps than a 64-bit count holds",
              "fewer :epochs, or :steps N");
    });
    return std::nullopt;
  }
  if (c.out.run.precision == "bf16" && c.out.run.master_weights == "none") {
    step(in, c, contract.run->span, "precision", [&] {
      in.fail("E-UNSUPPORTED", ":master-weights :none is not implemented yet",
              "keep the default f32 master weights");
    });
    return std::nullopt;
  }
  std::vector<std::string> train_per_stage;
  if (!step(in, c, c.train->span, "stages", [&] {
        c.out.train_fns =
            sized(in, "train_step", *c.train, contract.stages, false, &train_per_stage);
      }))
    return std::nullopt;
  for (const StageDecl& s : contract.stages) {
    StageInfo info{s.name, s.until.is_nil() ? "" : "until:" + s.name, {}};
    if (c.out.stages.size() < train_per_stage.size())
      info.fns["train_step"] = train_per_stage[c.out.stages.size()];
    if (!s.until.is_nil())
      step(in, c, contract.curriculum_span, "until", [&] { stage_until(in, s); });
    c.out.stages.push_back(std::move(info));
  }
  // Independent errors in one pass (errors.md): after a failed objective the
  // evaluation passes and the optimizer are still staged, and report what
  // is theirs; what needs every parameter (accumulate, init) waits.
  Span objective_span = span_of("DEFUN", "OBJECTIVE");
  for (SizedFunction& sf : c.out.train_fns)
    if (!step(in, c, objective_span, "train", [&] { stage_train(in, c, sf); })) {
      c.trained = false;  // once, not once per batch size
      break;
    }
  step(in, c, span_of("DEFEVAL", nullptr), "eval-leak", [&] { check_eval_leaks(in, c); });
  for (const EvalDecl& e : contract.evals) {
    const LoaderDecl* l = loaders_of(in).find(e.loader);
    if (!l) continue;
    EvalPass pass{e, {}, {}};
    std::vector<std::string> per_stage;
    if (!step(in, c, l->span, "stages", [&] {
          pass.fns = sized(in, "eval:" + e.name, *l, contract.stages, true, &per_stage);
        }))
      continue;
    for (size_t j = 0; j < per_stage.size() && j < c.out.stages.size(); ++j)
      c.out.stages[j].fns["eval:" + e.name] = per_stage[j];
    for (const SizedFunction& sf : pass.fns)
      step(in, c, e.span, "eval", [&] { stage_eval(in, c, pass, *l, sf); });
    c.out.evals.push_back(std::move(pass));
  }
  step(in, c, span_of("DEFUN", "OPTIMIZER"), "update", [&] { stage_update(in, c); });
  if (!c.trained) return std::nullopt;
  if (c.out.run.microbatches > 1)
    step(in, c, contract.run->span, "accumulate", [&] { stage_accumulate(in); });
  step(in, c, contract.run->span, "init", [&] { stage_init_function(in); });
  if (!c.failed)
    step(in, c, contract.run->span, "diagnostics",
         [&] { stage_diagnostics(in, c.out, contract, env); });
  if (c.failed) return std::nullopt;

  // The parameter table, with ties and groups.
  stage::Stager& st = stage::stager_of(in);
  for (const ir::ParamInfo& p : st.module().params) {
    ParamEntry e{p.path, p.type, p.trainable, "", {}, {}, ""};
    if (const ParamDecl* d = params_of(in).find(p.path)) e.init = d->init_text, e.tags = d->tags;
    for (const ParamDecl& d : params_of(in).decls)
      if (d.tie == p.path) e.tied.push_back(d.path);
    for (const GroupEntry& g : c.out.groups)
      if (std::find(g.params.begin(), g.params.end(), p.path) != g.params.end()) e.group = g.name;
    c.out.params.push_back(std::move(e));
  }
  // The module: every function but the scratch one, optimized and verified.
  c.out.module.files = st.module().files;
  c.out.module.params = st.module().params;
  std::set<std::string> ctx_keys;
  for (const ir::Function& fn : st.module().functions) {
    if (fn.name == "toplevel") continue;
    c.out.module.functions.push_back(fn);
    for (NodeId id : fn.inputs)
      if (auto k = ctx_key_of_input(fn.node(id).attrs.name.value_or(""))) ctx_keys.insert(*k);
  }
  c.out.ctx_keys.assign(ctx_keys.begin(), ctx_keys.end());
  c.out.staged = c.out.module;
  log::info("compile: staged {} functions ({} diagnostic) in {:.1f} ms",
            c.out.module.functions.size(),
            c.out.diagnostics ? c.out.diagnostics->module.functions.size() : 0, staging.ms());
  for (const ir::Function& fn : c.out.module.functions)
    log::trace("compile: staged {}: {} nodes", fn.name, fn.nodes.size());
  std::string err;
  log::Stopwatch optimizing;
  for (ir::Function& fn : c.out.module.functions)
    if (err.empty()) err = ir::optimize(c.out.module, fn);
  log::info("compile: optimized in {:.1f} ms", optimizing.ms());
  log::Stopwatch verifying;
  if (err.empty()) err = ir::verify(c.out.module);
  log::info("compile: verified in {:.1f} ms", verifying.ms());
  if (!err.empty()) {
    step(in, c, contract.run->span, "verify", [&] {
      // A pass broke the IR: a bug in SexpGPU, not in the file.
      in.fail("E-UNSUPPORTED",
              "internal error, please report: the compiled IR does not verify: " + err);
    });
    return std::nullopt;
  }
  for (const SizedFunction& sf : c.out.train_fns) c.out.step_flops[sf.fn] = step_flops(c.out, sf);
  c.out.loaders = loaders_of(in);
  return std::move(c.out);
}

}  // namespace sexpgpu::runfile
