// Tensor builtins, part 4: the neural ops (tensors.md: softmax, losses,
// norms, attention, convolution, pools), stop-gradient, and the
// `stage-function` test hook that stages a function with declared inputs
// outside a run file (what `sexpgpu ir` prints until the run file stages
// the contract functions).
#include <cmath>

#include "ir/autodiff.h"
#include "lisp/builtins.h"
#include "stage/args.h"

namespace sexpgpu::stage {

using ir::Attrs;
using ir::Dims;
using ir::NodeId;
using ir::Op;

namespace {

Value softmax_like(Interp& in, Op op, Value* args, int nargs, const char* what) {
  Stager& st = stager_of(in);
  NodeId x = st.tensor_operand(args[0], what);
  Value k[1];
  in.parse_keys(args, nargs, 1, {"AXIS"}, k);
  Attrs a;
  a.axis = arg_axis(in, k[0].is_nil() ? Value::integer(-1) : k[0], st.type(x).shape.rank(),
                    std::string(what) + " :axis");
  return st.stage_value(op, {x}, std::move(a));
}

std::string reduction_arg(Interp& in, Value v, const char* what) {
  if (v.is_nil()) return "mean";
  std::string r = v.is_symbol() ? lower_name(v.sym()->name) : "";
  if (r != "mean" && r != "sum" && r != "none")
    in.type_error(v, ":mean, :sum or :none", std::string(what) + " :reduction");
  return r;
}

// Two numbers for conv/pool options: an integer is both.
Dims pair_arg(Interp& in, Value v, int64_t fallback, const char* what) {
  if (v.is_nil()) return Dims{fallback, fallback};
  Dims d = arg_ints(in, v, what);
  if (d.size() == 1) d.push_back(d[0]);
  if (d.size() != 2) in.type_error(v, "an integer or a list of two", what);
  return d;
}

Value pool(Interp& in, Op op, Value* args, int nargs, const char* what) {
  Stager& st = stager_of(in);
  NodeId x = st.tensor_operand(args[0], what);
  Value k[2];
  in.parse_keys(args, nargs, 2, {"STRIDE", "PADDING"}, k);
  Attrs a;
  a.kernel = pair_arg(in, args[1], 1, what);
  a.stride = k[0].is_nil() ? *a.kernel : pair_arg(in, k[0], 1, ":stride");
  a.padding = pair_arg(in, k[1], 0, ":padding");
  return st.stage_value(op, {x}, std::move(a));
}

// A stage-function parameter joins the module's table; functions that name
// the same parameter must agree on its type.
void declare_param(Interp& in, ir::Module& m, const std::string& path, const ir::TensorType& t) {
  for (const ir::ParamInfo& p : m.params)
    if (p.path == path) {
      if (!(p.type == t))
        in.fail("E-SHAPE", "parameter '" + path + "' is " + t.to_string() + " here but " +
                               p.type.to_string() + " in an earlier stage-function");
      return;
    }
  m.params.push_back(ir::ParamInfo{path, t, true});
}

// (stage-function NAME ((arg shape [dtype] [:param]) ...) BODY...) expands
// to (%stage-function 'NAME 'ARGS (lambda (arg ...) BODY...)).
Value stage_function(Interp& in, Value* args, int) {
  Stager& st = stager_of(in);
  if (!args[0].is_symbol()) in.type_error(args[0], "a function name", "stage-function");
  std::string name = lower_name(args[0].sym()->name);
  if (st.module().find(name) || name == "toplevel")
    in.fail("E-USER", "stage-function: '" + name + "' is already staged");
  if (!st.staging_toplevel()) in.fail("E-USER", "stage-function inside another stage-function");
  struct Scope {
    Stager& st;
    bool done = false;
    ~Scope() { done ? st.end_function() : st.abandon_function(); }
  };
  st.begin_function(name);
  Scope scope{st};
  ir::Builder b(st.current());
  std::vector<Value> inputs, param_nodes;
  std::vector<NodeId> params;
  for (Value spec : in.list_items(args[1], "stage-function")) {
    std::vector<Value> parts = in.list_items(spec, "stage-function argument");
    if (parts.size() < 2 || !parts[0].is_symbol())
      in.type_error(spec, "(name shape [dtype] [:param])", "stage-function");
    ir::TensorType t{ir::kDefaultDType, arg_shape(in, parts[1], "stage-function")};
    bool is_param = false;
    for (size_t i = 2; i < parts.size(); ++i) {
      if (parts[i].is_symbol() && parts[i].sym()->name == "PARAM")
        is_param = true;
      else
        t.dtype = arg_dtype(in, parts[i], t.dtype);
    }
    std::string arg = lower_name(parts[0].sym()->name);
    // A parameter's path is the function's name, a dot, the argument's.
    std::string path = name + "." + arg;
    NodeId id = is_param ? b.param(path, t) : b.input(arg, t);
    if (is_param) {
      params.push_back(id);
      declare_param(in, st.module(), path, t);
    }
    inputs.push_back(st.wrap(id));
  }
  Value result = in.apply(args[2], inputs.data(), int(inputs.size()));
  std::vector<Value> results = in.last_values(result);
  in.single();  // our own value is one keyword, whatever the body returned
  ir::Function& fn = st.current();
  for (size_t i = 0; i < results.size(); ++i) {
    std::string out = results.size() == 1 ? "out" : "out" + std::to_string(i);
    fn.outputs.push_back({out, st.operand(results[i], "stage-function result")});
  }
  // With parameters, the first result is a loss: its gradients follow.
  if (!params.empty() && fn.outputs.empty())
    in.fail("E-OBJECTIVE-NOT-SCALAR", "'" + name + "' has parameters but returned no loss",
            "return the loss, a float scalar, as the first value");
  if (!params.empty()) {
    NodeId loss = fn.outputs[0].node;
    if (!fn.type(loss).shape.is_scalar() || !ir::is_float(fn.type(loss).dtype))
      in.fail("E-OBJECTIVE-NOT-SCALAR",
              "the loss of '" + name + "' is " + fn.type(loss).to_string() + ", not a float scalar",
              "reduce it, e.g. with (mean ...)");
    std::vector<ir::NonDifferentiable> nondiff;
    ir::Gradients g = ir::differentiate(fn, loss, params, &nondiff);
    for (const ir::NonDifferentiable& nd : nondiff) {
      const ir::Node& blocker = fn.node(nd.blocking_node);
      in.fail("E-NONDIFF",
              "the loss reaches parameter '" + *fn.node(params[nd.wrt_index]).attrs.name +
                  "' only through '" + std::string(ir::info(blocker.op).ir_name) +
                  "', which has no gradient",
              "integer, boolean and comparison ops carry no gradient");
    }
    for (size_t i : g.unreached)
      in.warn("W-UNUSED-PARAM", "the loss of '" + name + "' does not depend on '" +
                                    *fn.node(params[i]).attrs.name + "': its gradient is zero");
    for (size_t i = 0; i < params.size(); ++i)
      fn.outputs.push_back({"grad:" + *fn.node(params[i]).attrs.name, g.grads[i]});
  }
  scope.done = true;
  return in.sym_kw(lisp::upcase_ascii(name));
}

}  // namespace

void register_tensor_nn(Interp& in) {
  SG_BUILTIN(in, "SOFTMAX", 1, -1, "exp(x) normalised to sum 1 along :axis (default -1)",
             { return softmax_like(in, Op::Softmax, args, nargs, "softmax"); });
  SG_BUILTIN(in, "LOG-SOFTMAX", 1, -1, "the log of softmax along :axis, computed stably",
             { return softmax_like(in, Op::LogSoftmax, args, nargs, "log-softmax"); });
  SG_BUILTIN(in, "CROSS-ENTROPY", 2, -1,
             "(cross-entropy logits targets &key ignore-index reduction): fused, classes last", {
               Stager& st = stager_of(in);
               NodeId logits = st.tensor_operand(args[0], "cross-entropy");
               NodeId targets = st.tensor_operand(args[1], "cross-entropy");
               Value k[2];
               in.parse_keys(args, nargs, 2, {"IGNORE-INDEX", "REDUCTION"}, k);
               Attrs a;
               if (!k[0].is_nil()) a.ignore_index = arg_int(in, k[0], ":ignore-index");
               a.reduction = reduction_arg(in, k[1], "cross-entropy");
               return st.stage_value(Op::CrossEntropy, {logits, targets}, std::move(a));
             });
  SG_BUILTIN(in, "MSE", 2, -1, "(mse pred target &key reduction): squared error", {
    Stager& st = stager_of(in);
    NodeId pred = st.tensor_operand(args[0], "mse");
    ir::TensorType like = st.type(pred);
    NodeId target = st.operand(args[1], "mse", &like);
    Value k[1];
    in.parse_keys(args, nargs, 2, {"REDUCTION"}, k);
    std::string r = reduction_arg(in, k[0], "mse");
    NodeId sq = st.stage(Op::Square, {st.stage(Op::Sub, {pred, target})});
    if (r == "none") return st.wrap(sq);
    return st.stage_value(r == "mean" ? Op::Mean : Op::Sum, {sq});
  });
  SG_BUILTIN(
      in, "LAYER-NORM", 3, -1, "(layer-norm x weight bias &key (eps 1e-5)) over the last axis", {
        Stager& st = stager_of(in);
        Value k[1];
        in.parse_keys(args, nargs, 3, {"EPS"}, k);
        Attrs a;
        a.eps = k[0].is_nil() ? 1e-5 : arg_number(in, k[0], ":eps");
        return st.stage_value(
            Op::LayerNorm,
            {st.tensor_operand(args[0], "layer-norm"), st.tensor_operand(args[1], "layer-norm"),
             st.tensor_operand(args[2], "layer-norm")},
            std::move(a));
      });
  SG_BUILTIN(in, "RMS-NORM", 2, -1, "(rms-norm x weight &key (eps 1e-6)) over the last axis", {
    Stager& st = stager_of(in);
    Value k[1];
    in.parse_keys(args, nargs, 2, {"EPS"}, k);
    Attrs a;
    a.eps = k[0].is_nil() ? 1e-6 : arg_number(in, k[0], ":eps");
    return st.stage_value(
        Op::RmsNorm,
        {st.tensor_operand(args[0], "rms-norm"), st.tensor_operand(args[1], "rms-norm")},
        std::move(a));
  });
  SG_BUILTIN(
      in, "ATTENTION", 3, -1,
      "(attention q k v &key causal scale mask): fused scaled dot-product, q k v (B H T D)", {
        Stager& st = stager_of(in);
        std::vector<NodeId> ops = {st.tensor_operand(args[0], "attention"),
                                   st.tensor_operand(args[1], "attention"),
                                   st.tensor_operand(args[2], "attention")};
        Value k[3];
        in.parse_keys(args, nargs, 3, {"CAUSAL", "SCALE", "MASK"}, k);
        Attrs a;
        a.causal = k[0].truthy();
        const ir::Shape& q = st.type(ops[0]).shape;
        double d = q.rank() > 0 ? double(q[q.rank() - 1]) : 1.0;
        a.scale = k[1].is_nil() ? 1.0 / std::sqrt(d > 0 ? d : 1.0) : arg_number(in, k[1], ":scale");
        if (!k[2].is_nil()) ops.push_back(st.tensor_operand(k[2], "attention :mask"));
        return st.wrap(st.stage(Op::Attention, std::span<const NodeId>(ops), std::move(a)));
      });
  SG_BUILTIN(in, "CONV2D", 2, -1, "(conv2d x w &key stride padding dilation groups), NCHW", {
    Stager& st = stager_of(in);
    Value k[4];
    in.parse_keys(args, nargs, 2, {"STRIDE", "PADDING", "DILATION", "GROUPS"}, k);
    Attrs a;
    a.stride = pair_arg(in, k[0], 1, ":stride");
    a.padding = pair_arg(in, k[1], 0, ":padding");
    a.dilation = pair_arg(in, k[2], 1, ":dilation");
    a.groups = k[3].is_nil() ? 1 : arg_int(in, k[3], ":groups");
    return st.stage_value(
        Op::Conv2d, {st.tensor_operand(args[0], "conv2d"), st.tensor_operand(args[1], "conv2d")},
        std::move(a));
  });
  SG_BUILTIN(in, "MAX-POOL2D", 2, -1, "(max-pool2d x kernel &key stride padding), NCHW",
             { return pool(in, Op::MaxPool2d, args, nargs, "max-pool2d"); });
  SG_BUILTIN(in, "AVG-POOL2D", 2, -1, "(avg-pool2d x kernel &key stride padding), NCHW",
             { return pool(in, Op::AvgPool2d, args, nargs, "avg-pool2d"); });
  SG_BUILTIN(in, "STOP-GRADIENT", 1, 1, "x, through which no gradient flows", {
    Stager& st = stager_of(in);
    return st.stage_value(Op::StopGradient, {st.tensor_operand(args[0], "stop-gradient")});
  });
  SG_BUILTIN(in, "%WITH-NUMERICS", 2, 2,
             "calls THUNK with matrix products computed in DTYPE (:f32 or :bf16)", {
               Stager& st = stager_of(in);
               if (!args[0].is_symbol()) in.type_error(args[0], ":f32 or :bf16", "with-numerics");
               std::string c = lower_name(args[0].sym()->name);
               if (c != "f32" && c != "bf16")
                 in.type_error(args[0], ":f32 or :bf16", "with-numerics :compute");
               std::optional<ir::DType> saved = st.autocast;
               st.autocast = c == "bf16" ? std::optional<ir::DType>(ir::DType::BF16) : std::nullopt;
               struct Restore {
                 Stager& st;
                 std::optional<ir::DType> saved;
                 ~Restore() { st.autocast = saved; }
               } restore{st, saved};
               return in.apply(args[1], nullptr, 0);
             });
  SG_BUILTIN(in, "%STAGE-FUNCTION", 3, 3, "the function behind the stage-function macro",
             { return stage_function(in, args, nargs); });
}

}  // namespace sexpgpu::stage
