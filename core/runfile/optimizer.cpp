// Optimizer values, the staging of one update, and optimizer groups
// (optimizer.h). The Lisp side (defoptimizer, defstate, optimizer-update,
// group, selector) is prelude/optimizers.lisp.
#include "runfile/optimizer.h"

#include <algorithm>
#include <cctype>

#include "lisp/builtins.h"
#include "stage/stager.h"

namespace sexpgpu::runfile {

using ir::NodeId;
using lisp::Interp;
using lisp::Value;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Value wrap(lisp::Foreign* f) {
  return Value::object(lisp::Kind::Foreign, f);
}

// The span of a form the reader made (a quoted piece of the user's source).
Span span_of_form(Interp& in, Value form) {
  return form.is_cons() && form.cons()->span ? in.span_of(form.cons()->span) : in.current_span();
}

// ---- %make-optimizer --------------------------------------------------------------------

StateDecl state_decl(Interp& in, Value spec) {
  std::vector<Value> parts = in.list_items(spec, "defstate");
  if (parts.size() != 5 || !parts[0].is_string())
    in.type_error(spec, "(name init dtype shape form)", "%make-optimizer");
  StateDecl s;
  s.name = lisp::u32_to_utf8(parts[0].str()->chars);
  s.span = span_of_form(in, parts[4]);
  Value init = parts[1];
  if (init.is_number()) {
    s.init = "full";
    s.fill = init.is_int() ? double(init.i) : init.f;
  } else if (init.is_symbol() && init.sym()->keyword &&
             (init.sym()->name == "ZEROS" || init.sym()->name == "ONES")) {
    s.init = lower(init.sym()->name);
    s.fill = s.init == "ones" ? 1.0 : 0.0;
  } else {
    in.fail_at(
        s.span, "E-TYPE",
        "defstate " + s.name + ": :init " + in.show(init) + " is not :zeros, :ones or a number");
  }
  Value dtype = parts[2];
  std::optional<ir::DType> d =
      dtype.is_symbol() && dtype.sym()->keyword ? ir::parse_dtype(dtype.sym()->name) : std::nullopt;
  if (!d)
    in.fail_at(s.span, "E-TYPE",
               "defstate " + s.name + ": :dtype " + in.show(dtype) +
                   " is not a dtype keyword (:f32 :bf16 ...)");
  s.dtype = *d;
  s.shape_fn = parts[3];
  if (!s.shape_fn.is_nil() && s.shape_fn.kind != lisp::Kind::Function)
    in.fail_at(s.span, "E-TYPE",
               "defstate " + s.name + ": :shape " + in.show(s.shape_fn) +
                   " is not a function of the parameter's shape");
  return s;
}

Value make_optimizer(Interp& in, Value* args) {
  if (!args[0].is_symbol()) in.type_error(args[0], "an optimizer name", "%make-optimizer");
  if (args[3].kind != lisp::Kind::Function)
    in.type_error(args[3], "the update function", "%make-optimizer");
  Optimizer* o = in.alloc<Optimizer>();
  o->name = lower(args[0].sym()->name);
  for (Value spec : in.list_items(args[1], "%make-optimizer"))
    o->states.push_back(state_decl(in, spec));
  for (Value pair : in.list_items(args[2], "%make-optimizer")) {
    if (!pair.is_cons() || !pair.cons()->car.is_string())
      in.type_error(pair, "(name . value)", "%make-optimizer");
    o->hyper.emplace_back(lisp::u32_to_utf8(pair.cons()->car.str()->chars), pair.cons()->cdr);
  }
  o->update = args[3];
  o->update_span = span_of_form(in, args[4]);
  return wrap(o);
}

Optimizer& optimizer_arg(Interp& in, Value v, std::string_view where) {
  Optimizer* o = as_optimizer(v);
  if (!o) in.type_error(v, "an optimizer", where);
  return *o;
}

// A schedule's value: a number or a scalar tensor.
Value checked_schedule_value(Interp& in, const std::string& name, Value v) {
  if (v.is_number()) return v;
  stage::StagedTensor* t = stage::as_tensor(v);
  if (!t) in.type_error(v, "a number or a scalar tensor", "the schedule of " + name);
  if (!t->type.shape.is_scalar())
    in.fail("E-SHAPE",
            "the schedule of " + name + " gave " + t->type.to_string() + ", not a scalar",
            "a schedule returns one number per step: reduce it, or index it");
  return v;
}

// (%hyper NAME VALUE CTX): a schedule called with CTX, any other value as it is.
Value hyper_value(Interp& in, Value* args) {
  if (args[1].kind != lisp::Kind::Function) return args[1];
  std::string name = args[0].is_string() ? lisp::u32_to_utf8(args[0].str()->chars) : "?";
  return checked_schedule_value(in, name, lisp::call1(in, args[1], args[2]));
}

// ---- staging ----------------------------------------------------------------------------

// `v` as a node of type `want`: broadcast where it broadcasts, cast to the
// dtype; E-SHAPE at the optimizer-update form otherwise.
NodeId conform(Interp& in, const Optimizer& opt, Value v, const ir::TensorType& want,
               const std::string& what) {
  stage::Stager& st = stage::stager_of(in);
  NodeId id = st.operand(v, what, &want);
  ir::TensorType got = st.type(id);
  if (!(got.shape == want.shape)) {
    if (!ir::broadcastable_to(got.shape, want.shape))
      in.fail_at(opt.update_span, "E-SHAPE",
                 "optimizer " + opt.name + ": " + what + " is " + got.to_string() +
                     " but must be " + want.to_string(),
                 "the body's value is the new parameter, of the parameter's shape; a state keeps "
                 "its shape");
    ir::Attrs a;
    a.shape = ir::Dims(want.shape.begin(), want.shape.end());
    id = st.stage(ir::Op::Expand, {id}, std::move(a));
  }
  if (st.type(id).dtype != want.dtype) {
    ir::Attrs a;
    a.dtype = want.dtype;
    id = st.stage(ir::Op::Cast, {id}, std::move(a));
  }
  return id;
}

// (stage-optimizer-update OPT P G &rest STATES): what the compiler does
// for one parameter, from Lisp; without STATES, each starts at its :init.
Value stage_update_from_lisp(Interp& in, Value* args, int nargs) {
  stage::Stager& st = stage::stager_of(in);
  const Optimizer& opt = optimizer_arg(in, args[0], "stage-optimizer-update");
  NodeId p = st.tensor_operand(args[1], "stage-optimizer-update");
  NodeId g = st.tensor_operand(args[2], "stage-optimizer-update");
  std::vector<NodeId> states;
  if (nargs == 3) {
    for (const StateDecl& s : opt.states) {
      ir::Attrs a;
      ir::Shape shape = state_shape(in, s, st.type(p).shape);
      a.shape = ir::Dims(shape.begin(), shape.end());
      a.dtype = s.dtype;
      a.value = s.fill;
      states.push_back(st.stage(ir::Op::Full, {}, std::move(a)));
    }
  } else if (size_t(nargs - 3) == opt.states.size()) {
    for (int i = 3; i < nargs; ++i)
      states.push_back(st.tensor_operand(args[i], "stage-optimizer-update"));
  } else {
    in.fail("E-ARITY", "optimizer " + opt.name + " has " + std::to_string(opt.states.size()) +
                           " states; stage-optimizer-update was given " +
                           std::to_string(nargs - 3));
  }
  StagedUpdate u = stage_update(in, opt, p, g, states);
  std::vector<Value> out;
  for (NodeId s : u.states) out.push_back(st.wrap(s));
  return in.values2(st.wrap(u.param), in.list_from(out));
}

// ---- accessors --------------------------------------------------------------------------

Value hyperparameter_plist(Interp& in, const Optimizer& o) {
  std::vector<Value> items;
  for (const auto& [name, value] : o.hyper) {
    items.push_back(in.sym_kw(lisp::upcase_ascii(name)));
    items.push_back(value);
  }
  return in.list_from(items);
}

Value state_names(Interp& in, const Optimizer& o) {
  std::vector<Value> items;
  for (const StateDecl& s : o.states) items.push_back(in.make_string_utf8(s.name));
  return in.list_from(items);
}

// ---- groups -----------------------------------------------------------------------------

std::string group_name(Interp& in, Value v) {
  if (v.is_symbol() && !v.is_nil()) return lower(v.sym()->name);
  if (v.is_string()) return lisp::u32_to_utf8(v.str()->chars);
  in.type_error(v, "a group name (a keyword, symbol or string)", "group");
}

Value make_group(Interp& in, Value* args) {
  GroupSpec* g = in.alloc<GroupSpec>();
  g->name = group_name(in, args[0]);
  g->span = in.current_span();
  if (!as_selector(args[1])) in.type_error(args[1], "a selector", "group " + g->name + " :select");
  if (!as_optimizer(args[2]))
    in.type_error(args[2], "an optimizer (such as (optim:adamw))", "group " + g->name + " :use");
  g->selector = args[1];
  g->optimizer = args[2];
  return wrap(g);
}

GroupSpec* as_group(Value v) {
  if (v.kind != lisp::Kind::Foreign || v.p == nullptr) return nullptr;
  return dynamic_cast<GroupSpec*>(v.foreign());
}

// The groups of the value, each with its selector (nil: every parameter).
std::vector<std::pair<Group, Value>> groups_of(Interp& in, Value result) {
  if (Optimizer* o = as_optimizer(result))
    return {{Group{"default", o, result, {}, in.current_span()}, in.nil()}};
  if (!result.is_cons())
    in.type_error(result, "an optimizer or a list of groups", "the value of (optimizer)");
  std::vector<std::pair<Group, Value>> out;
  for (Value item : in.list_items(result, "the value of (optimizer)")) {
    GroupSpec* g = as_group(item);
    if (!g)
      in.type_error(item, "a group: (group NAME :select SELECTOR :use OPTIMIZER)",
                    "the list (optimizer) returned");
    for (const auto& earlier : out)
      if (earlier.first.name == g->name)
        in.fail_at(g->span, "E-TYPE", "two optimizer groups are named " + g->name,
                   "each group needs its own name: its series are reported as lr/NAME");
    out.push_back(
        {Group{g->name, as_optimizer(g->optimizer), g->optimizer, {}, g->span}, g->selector});
  }
  return out;
}

void report_empty(Interp& in, const Group& g) {
  Diagnostic d;
  d.code = "W-EMPTY-GROUP";
  d.severity = Severity::Warning;
  d.span = g.span;
  d.message = "optimizer group " + g.name + " selects no trainable parameter";
  d.fix = "an earlier group takes them first (first match wins), or the selector matches nothing";
  in.sink.report(std::move(d));
}

[[noreturn]] void report_ungrouped(Interp& in, const std::vector<Group>& groups,
                                   const std::vector<std::string>& paths) {
  std::string list;
  for (size_t i = 0; i < paths.size() && i < 20; ++i) list += (i ? ", " : "") + paths[i];
  if (paths.size() > 20) list += ", ... (" + std::to_string(paths.size()) + " in all)";
  in.fail_at(groups.back().span, "E-PARAM-UNGROUPED",
             std::to_string(paths.size()) + " trainable parameter" +
                 (paths.size() == 1 ? "" : "s") + " in no optimizer group: " + list,
             "add a last group with :select t, or widen a selector; a parameter that should not "
             "train is declared with :trainable nil");
}

}  // namespace

Optimizer* as_optimizer(Value v) {
  if (v.kind != lisp::Kind::Foreign || v.p == nullptr) return nullptr;
  return dynamic_cast<Optimizer*>(v.foreign());
}

std::string GroupSpec::print() const {
  const Optimizer* o = as_optimizer(optimizer);
  return "#<group " + name + " " + (o ? o->name : "?") + ">";
}

Value ctx_argument(Interp& in) {
  // Where no ctx function is defined (a bare session), the symbol stands in:
  // calling it reports E-UNBOUND at the call, as #'ctx would have.
  lisp::Symbol* s = in.intern("CTX");
  return s->cell.has_function() ? s->cell.function : Interp::symval(s);
}

ir::Shape state_shape(Interp& in, const StateDecl& s, const ir::Shape& param) {
  if (s.shape_fn.is_nil()) return param;
  std::vector<Value> dims;
  for (int64_t d : param.dims()) dims.push_back(Value::integer(d));
  Value r = lisp::call1(in, s.shape_fn, in.list_from(dims));
  std::string where = "defstate " + s.name + " :shape of " + param.to_string();
  if (!r.is_list()) in.fail_at(s.span, "E-TYPE", where + " gave " + in.show(r) + ", not a shape");
  ir::Dims out;
  for (Value d : in.list_items(r, where)) {
    if (!d.is_int()) in.fail_at(s.span, "E-TYPE", where + " gave " + in.show(r) + ", not a shape");
    if (d.i < 0)
      in.fail_at(s.span, "E-SHAPE", where + " gave " + in.show(r) + ": a negative dimension");
    out.push_back(d.i);
  }
  return ir::Shape(std::move(out));
}

StagedUpdate stage_update(Interp& in, const Optimizer& opt, NodeId p, NodeId g,
                          std::span<const NodeId> states) {
  stage::Stager& st = stage::stager_of(in);
  if (states.size() != opt.states.size())
    throw std::logic_error("stage_update: optimizer " + opt.name + " has " +
                           std::to_string(opt.states.size()) + " states, given " +
                           std::to_string(states.size()));
  std::vector<Value> args{st.wrap(p), st.wrap(g), ctx_argument(in)};
  for (NodeId s : states) args.push_back(st.wrap(s));
  Value r = lisp::call1(in, opt.update, args.data(), int(args.size()));
  std::vector<Value> results = in.list_items(r, "optimizer-update");
  if (results.size() != states.size() + 1)
    throw std::logic_error("stage_update: the update of " + opt.name + " returned " +
                           std::to_string(results.size()) + " values");
  StagedUpdate u;
  u.param = conform(in, opt, results[0], st.type(p), "the new parameter");
  for (size_t i = 0; i < states.size(); ++i)
    u.states.push_back(
        conform(in, opt, results[i + 1], st.type(states[i]), "state " + opt.states[i].name));
  return u;
}

std::vector<std::pair<std::string, NodeId>> stage_schedules(Interp& in, const Optimizer& opt) {
  stage::Stager& st = stage::stager_of(in);
  std::vector<std::pair<std::string, NodeId>> out;
  Value ctx = ctx_argument(in);
  for (const auto& [name, value] : opt.hyper) {
    if (value.kind != lisp::Kind::Function) continue;
    Value v = checked_schedule_value(in, name, lisp::call1(in, value, ctx));
    ir::TensorType f32{ir::DType::F32, ir::Shape{}};
    NodeId id = st.operand(v, "schedule", &f32);
    if (!ir::is_float(st.type(id).dtype)) {
      ir::Attrs a;
      a.dtype = ir::DType::F32;
      id = st.stage(ir::Op::Cast, {id}, std::move(a));
    }
    out.emplace_back(name, id);
  }
  return out;
}

std::vector<Group> assign_groups(Interp& in, Value optimizer_result,
                                 std::span<const ParamView> params, std::span<const bool> trainable,
                                 bool all_params) {
  std::vector<std::pair<Group, Value>> selected = groups_of(in, optimizer_result);
  std::vector<std::string> ungrouped;
  for (size_t i = 0; i < params.size(); ++i) {
    if (i < trainable.size() && !trainable[i]) continue;
    auto first = std::find_if(selected.begin(), selected.end(), [&](const auto& gs) {
      return gs.second.is_nil() || selector_matches(in, gs.second, params[i]);
    });
    if (first == selected.end())
      ungrouped.push_back(params[i].path);
    else
      first->first.members.push_back(i);
  }
  std::vector<Group> groups;
  for (auto& gs : selected) groups.push_back(std::move(gs.first));
  if (!ungrouped.empty()) report_ungrouped(in, groups, ungrouped);
  if (!as_optimizer(optimizer_result) && all_params)
    for (const Group& g : groups)
      if (g.members.empty()) report_empty(in, g);
  return groups;
}

void register_optimizers(Interp& in) {
  register_selectors(in);
  SG_BUILTIN(in, "%MAKE-OPTIMIZER", 5, 5,
             "an optimizer value (what defoptimizer's constructors call)",
             { return make_optimizer(in, args); });
  SG_BUILTIN(in, "%HYPER", 3, 3, "a hyperparameter in an update: a schedule called with ctx",
             { return hyper_value(in, args); });
  SG_BUILTIN(in, "%MAKE-GROUP", 3, 3, "an optimizer group (what group expands to)",
             { return make_group(in, args); });
  SG_BUILTIN(in, "OPTIMIZERP", 1, 1, "is it an optimizer value",
             { return in.boolean(as_optimizer(args[0]) != nullptr); });
  SG_BUILTIN(in, "OPTIMIZER-NAME", 1, 1, "the name of an optimizer's constructor, a string",
             { return in.make_string_utf8(optimizer_arg(in, args[0], "optimizer-name").name); });
  SG_BUILTIN(
      in, "OPTIMIZER-HYPERPARAMETERS", 1, 1, "an optimizer's hyperparameters as bound, a plist", {
        return hyperparameter_plist(in, optimizer_arg(in, args[0], "optimizer-hyperparameters"));
      });
  SG_BUILTIN(in, "OPTIMIZER-STATES", 1, 1, "the names of an optimizer's per-parameter states",
             { return state_names(in, optimizer_arg(in, args[0], "optimizer-states")); });
  SG_BUILTIN(in, "STAGE-OPTIMIZER-UPDATE", 3, -1,
             "(stage-optimizer-update opt p g &rest states): the new p, and the new states",
             { return stage_update_from_lisp(in, args, nargs); });
}

}  // namespace sexpgpu::runfile
