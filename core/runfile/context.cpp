// ctx and metric (context.h).
#include "runfile/context.h"

#include "lisp/builtins.h"
#include "runfile/contract.h"
#include "stage/args.h"
#include "stage/stager.h"

namespace sexpgpu::runfile {

using lisp::Interp;
using lisp::Value;

namespace {

std::string keyword_keys_text() {
  std::string out;
  for (const CtxKey& k : ctx_keyword_keys()) out += (out.empty() ? ":" : ", :") + k.key;
  return out + ", or a reported metric's name such as \"val/loss\"";
}

// The staged scalar of a ctx key in the function being staged: its input,
// made on first use. :training is known when staging, so it is a constant.
Value stage_ctx(Interp& in, Value key) {
  stage::Stager& st = stage::stager_of(in);
  CtxKey k;
  if (key.is_string()) {
    std::string name = lisp::u32_to_utf8(key.str()->chars);
    size_t slash = name.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == name.size())
      in.fail("E-CTX-KEY", "(ctx \"" + name + "\"): a metric key is a series name PASS/NAME",
              "ctx takes " + keyword_keys_text());
    k = CtxKey{name, ir::DType::F32, true};
  } else if (key.is_symbol() && key.sym()->keyword) {
    std::string name = stage::lower_name(key.sym()->name);
    const CtxKey* found = nullptr;
    for (const CtxKey& c : ctx_keyword_keys())
      if (c.key == name) found = &c;
    if (!found) in.fail("E-CTX-KEY", "ctx has no key :" + name, "ctx takes " + keyword_keys_text());
    k = *found;
  } else {
    in.type_error(key, "a ctx key (a keyword such as :step, or a metric name)", "ctx");
  }
  if (k.key == "training") {
    ir::Attrs a;
    a.shape = ir::Dims{};
    a.dtype = ir::DType::Bool;
    a.value = st.training ? 1.0 : 0.0;
    return st.stage_value(ir::Op::Full, {}, std::move(a));
  }
  ir::Function& fn = st.current();
  std::string input = ctx_input_name(k.key);
  for (ir::NodeId id : fn.inputs)
    if (fn.node(id).op == ir::Op::Input && fn.node(id).attrs.name == input) return st.wrap(id);
  ir::Builder b(fn);
  return st.wrap(b.input(input, ir::TensorType{k.dtype, ir::Shape{}}));
}

MetricReduce reduce_arg(Interp& in, Value v) {
  if (v.is_nil()) return MetricReduce::Mean;
  std::string r = v.is_symbol() ? stage::lower_name(v.sym()->name) : "";
  for (MetricReduce m : {MetricReduce::Mean, MetricReduce::Sum, MetricReduce::Min,
                         MetricReduce::Max, MetricReduce::Last})
    if (r == to_string(m)) return m;
  in.type_error(v, ":mean, :sum, :min, :max or :last", "metric :reduce");
}

std::string metric_name(Interp& in, Value v) {
  if (v.is_string()) return lisp::u32_to_utf8(v.str()->chars);
  if (v.is_symbol() && !v.is_nil()) return stage::lower_name(v.sym()->name);
  in.type_error(v, "a metric name (a keyword or a string)", "metric");
}

// (metric NAME VALUE &key reduce): VALUE, recorded as a series of the
// function being staged.
Value metric(Interp& in, Value* args, int nargs) {
  stage::Stager& st = stage::stager_of(in);
  std::string name = metric_name(in, args[0]);
  Value k[1];
  in.parse_keys(args, nargs, 2, {"REDUCE"}, k);
  MetricDecl m{name, st.operand(args[1], "metric"), reduce_arg(in, k[0]), in.current_span()};
  const ir::TensorType& t = st.type(m.node);
  if (!t.shape.is_scalar())
    in.fail("E-SHAPE", "metric " + name + " is " + t.to_string() + ", not a scalar",
            "reduce it, e.g. with (mean ...)");
  if (st.staging_toplevel()) return args[1];
  if (t.dtype != ir::DType::F32) {
    ir::Attrs a;
    a.dtype = ir::DType::F32;
    m.node = st.stage(ir::Op::Cast, {m.node}, std::move(a));
  }
  std::vector<MetricDecl>& list = contract_of(in).metrics[st.current().name];
  for (const MetricDecl& earlier : list)
    if (earlier.name == name)
      in.fail("E-USER", "metric " + name + " is reported twice in '" + st.current().name + "'",
              "report each metric once per function");
  list.push_back(m);
  return args[1];
}

}  // namespace

const std::vector<CtxKey>& ctx_keyword_keys() {
  using ir::DType;
  static const std::vector<CtxKey> keys = {
      {"step", DType::I64},       {"steps", DType::I64},        {"progress", DType::F32},
      {"microbatch", DType::I64}, {"microbatches", DType::I64}, {"epoch", DType::I64},
      {"examples", DType::I64},   {"tokens", DType::I64},       {"stage", DType::I64},
      {"seed", DType::I64},       {"rank", DType::I64},         {"world-size", DType::I64},
      {"training", DType::Bool}};
  return keys;
}

std::vector<MetricDecl> metrics_of(const Interp& in, const std::string& fn) {
  if (!in.extensions.find<Contract>()) return {};
  const auto& all = contract_of(in).metrics;
  auto it = all.find(fn);
  return it == all.end() ? std::vector<MetricDecl>{} : it->second;
}

Value ctx_function(Interp& in) {
  return in.resolve_function(in.sym("CTX"));
}

void register_context(Interp& in) {
  register_contract(in);
  SG_BUILTIN(in, "CTX", 1, 1, "(ctx KEY): the run's context value KEY as a staged scalar",
             { return stage_ctx(in, args[0]); });
  SG_BUILTIN(in, "METRIC", 2, -1,
             "(metric NAME VALUE &key (reduce :mean)): report a staged scalar as a series",
             { return metric(in, args, nargs); });
}

}  // namespace sexpgpu::runfile
