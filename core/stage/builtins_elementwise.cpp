// Tensor builtins, part 2: elementwise ops and reductions, registered from
// the op table (one template per rule family, instantiated for every row of
// ops.def), and the tensor bodies of the generic CL functions that share a
// name or a meaning with them (+ - * / = < max min abs exp floor mod ...).
#include "lisp/builtins.h"
#include "stage/args.h"

namespace sexpgpu::stage {

using ir::Attrs;
using ir::NodeId;
using ir::Op;
using ir::Rule;

namespace {

// The tensor among two operands decides the dtype numbers become.
const ir::TensorType* tensor_type_of(Value a, Value b) {
  if (StagedTensor* t = as_tensor(a)) return &t->type;
  if (StagedTensor* t = as_tensor(b)) return &t->type;
  return nullptr;
}

NodeId stage_binary(Interp& in, Op op, Value a, Value b, std::string_view what) {
  Stager& st = stager_of(in);
  ir::TensorType like = tensor_type_of(a, b) ? *tensor_type_of(a, b) : ir::TensorType{};
  NodeId x = st.operand(a, what, &like), y = st.operand(b, what, &like);
  return st.stage(op, {x, y});
}

NodeId stage_unary(Interp& in, Op op, Value a, std::string_view what, Attrs attrs = {}) {
  Stager& st = stager_of(in);
  return st.stage(op, {st.operand(a, what)}, std::move(attrs));
}

// + * and the binary table ops fold left over any number of operands.
Value fold_binary(Interp& in, Op op, Value* args, int nargs, std::string_view what) {
  Stager& st = stager_of(in);
  Value acc = args[0];
  for (int i = 1; i < nargs; ++i) acc = st.wrap(stage_binary(in, op, acc, args[i], what));
  if (nargs == 1) return st.wrap(st.operand(acc, what));
  return acc;
}

// (< a b c) is (and (< a b) (< b c)) elementwise.
Value compare_chain(Interp& in, Op op, Value* args, int nargs, std::string_view what) {
  Stager& st = stager_of(in);
  if (nargs < 2)
    in.fail("E-ARITY", "'" + std::string(what) + "' of tensors needs two or more arguments");
  NodeId acc = stage_binary(in, op, args[0], args[1], what);
  for (int i = 2; i < nargs; ++i)
    acc = st.stage(Op::LogicalAnd, {acc, stage_binary(in, op, args[i - 1], args[i], what)});
  return st.wrap(acc);
}

// (OP x &key axis keepdims [correction]).
Value reduce(Interp& in, Op op, Value* args, int nargs, std::string_view what) {
  Stager& st = stager_of(in);
  NodeId x = st.tensor_operand(args[0], what);
  bool has_correction = op == Op::Var || op == Op::Std;
  Value k[3];
  if (has_correction)
    in.parse_keys(args, nargs, 1, {"AXIS", "KEEPDIMS", "CORRECTION"}, k);
  else
    in.parse_keys(args, nargs, 1, {"AXIS", "KEEPDIMS"}, k);
  Attrs a;
  a.axes = arg_reduce_axes(in, k[0], st.type(x).shape.rank());
  if (k[1].truthy()) a.keepdims = true;
  if (has_correction && !k[2].is_nil()) a.correction = arg_int(in, k[2], ":correction");
  return st.wrap(st.stage(op, {x}, std::move(a)));
}

// One Lisp body per rule family; Op is a template argument because a
// builtin is a plain function pointer.
template <Op op>
Value unary_builtin(Interp& in, Value* args, int nargs) {
  in.current_operator = ir::info(op).lisp_name.data();
  if (op == Op::Gelu) {  // :approximate :tanh stages the op gelu_tanh
    Value k[1];
    in.parse_keys(args, nargs, 1, {"APPROXIMATE"}, k);
    Op form = Op::Gelu;
    if (!k[0].is_nil()) {
      std::string mode = k[0].is_symbol() ? k[0].sym()->name : "";
      if (mode != "TANH" && mode != "NONE")
        in.type_error(k[0], ":tanh or :none", "gelu :approximate");
      if (mode == "TANH") form = Op::GeluTanh;
    }
    return stager_of(in).wrap(stage_unary(in, form, args[0], "gelu"));
  }
  if (nargs != 1)
    in.fail("E-ARITY", "'" + std::string(ir::info(op).lisp_name) + "' takes one tensor");
  return stager_of(in).wrap(stage_unary(in, op, args[0], ir::info(op).lisp_name));
}

template <Op op>
Value binary_builtin(Interp& in, Value* args, int nargs) {
  in.current_operator = ir::info(op).lisp_name.data();
  if (nargs != 2)
    in.fail("E-ARITY", "'" + std::string(ir::info(op).lisp_name) + "' takes two arguments");
  return stager_of(in).wrap(stage_binary(in, op, args[0], args[1], ir::info(op).lisp_name));
}

template <Op op>
Value reduce_builtin(Interp& in, Value* args, int nargs) {
  in.current_operator = ir::info(op).lisp_name.data();
  return reduce(in, op, args, nargs, ir::info(op).lisp_name);
}

// Defines NAME, or, where NAME is already a CL builtin, gives it a tensor body.
void define(Interp& in, std::string_view lisp_name, lisp::BuiltinFn fn, int min, int max,
            const char* doc) {
  std::string upper = lisp::upcase_ascii(lisp_name);
  lisp::Symbol* s = in.intern(upper);
  if (s->cell.function.is_function() && s->cell.function.fn()->builtin)
    in.overload_for_tensors(upper.c_str(), fn);
  else
    in.defbuiltin(s->name.c_str(), min, max, fn, doc);
}

template <Op op>
void register_row(Interp& in) {
  constexpr ir::OpInfo oi = ir::info(op);
  if constexpr (oi.lisp_name.empty()) {
    return;
  } else if constexpr (oi.rule == Rule::UnarySame || oi.rule == Rule::UnaryFloat ||
                       oi.rule == Rule::UnaryBool) {
    define(in, oi.lisp_name, unary_builtin<op>, 1, -1, "elementwise (tensors.md)");
  } else if constexpr (oi.rule == Rule::BinaryPromote || oi.rule == Rule::BinaryFloat ||
                       oi.rule == Rule::Compare) {
    // + - * / and the comparisons are CL's, generic below.
    if (oi.lisp_name.find_first_not_of("+-*/=<>") != std::string_view::npos)
      define(in, oi.lisp_name, binary_builtin<op>, 2, 2, "elementwise, broadcasting (tensors.md)");
  } else if constexpr (oi.rule == Rule::ReduceSame || oi.rule == Rule::ReduceFloat ||
                       oi.rule == Rule::ReduceIndex) {
    // max and min are CL's, generic below.
    if (op != Op::Max && op != Op::Min)
      define(in, oi.lisp_name, reduce_builtin<op>, 1, -1, "reduction over :axis (tensors.md)");
  }
}

// max/min: one tensor (with keywords) is a reduction; two or more
// arguments with a tensor among them, elementwise (tensors.md).
Value extremum(Interp& in, Value* args, int nargs, bool is_max) {
  const char* what = is_max ? "max" : "min";
  if (nargs == 1 || (nargs > 1 && args[1].is_symbol() && args[1].sym()->keyword))
    return reduce(in, is_max ? Op::Max : Op::Min, args, nargs, what);
  return fold_binary(in, is_max ? Op::Maximum : Op::Minimum, args, nargs, what);
}

// (floor x), (round x): one value for tensors; no divisor.
template <Op op>
Value rounding(Interp& in, Value* args, int nargs) {
  if (nargs != 1)
    in.fail("E-ARITY", "'" + std::string(ir::info(op).lisp_name) +
                           "' of a tensor takes no divisor: divide first");
  return stager_of(in).wrap(stage_unary(in, op, args[0], ir::info(op).lisp_name));
}

void register_generic(Interp& in) {
  in.overload_for_tensors("+", [](Interp& in, Value* args, int n) -> Value {
    return fold_binary(in, Op::Add, args, n, "+");
  });
  in.overload_for_tensors("*", [](Interp& in, Value* args, int n) -> Value {
    return fold_binary(in, Op::Mul, args, n, "*");
  });
  in.overload_for_tensors("-", [](Interp& in, Value* args, int n) -> Value {
    if (n == 1) return stager_of(in).wrap(stage_unary(in, Op::Neg, args[0], "-"));
    return fold_binary(in, Op::Sub, args, n, "-");
  });
  in.overload_for_tensors("/", [](Interp& in, Value* args, int n) -> Value {
    if (n == 1) return stager_of(in).wrap(stage_unary(in, Op::Reciprocal, args[0], "/"));
    return fold_binary(in, Op::Div, args, n, "/");
  });
  in.overload_for_tensors("1+", [](Interp& in, Value* args, int) -> Value {
    return stager_of(in).wrap(stage_binary(in, Op::Add, args[0], Value::integer(1), "1+"));
  });
  in.overload_for_tensors("1-", [](Interp& in, Value* args, int) -> Value {
    return stager_of(in).wrap(stage_binary(in, Op::Sub, args[0], Value::integer(1), "1-"));
  });
  in.overload_for_tensors(
      "=", [](Interp& in, Value* a, int n) { return compare_chain(in, Op::Eq, a, n, "="); });
  in.overload_for_tensors("/=", [](Interp& in, Value* a, int n) -> Value {
    if (n != 2) in.fail("E-ARITY", "'/=' of tensors takes two arguments");
    return compare_chain(in, Op::Ne, a, n, "/=");
  });
  in.overload_for_tensors(
      "<", [](Interp& in, Value* a, int n) { return compare_chain(in, Op::Lt, a, n, "<"); });
  in.overload_for_tensors(
      "<=", [](Interp& in, Value* a, int n) { return compare_chain(in, Op::Le, a, n, "<="); });
  in.overload_for_tensors(
      ">", [](Interp& in, Value* a, int n) { return compare_chain(in, Op::Gt, a, n, ">"); });
  in.overload_for_tensors(
      ">=", [](Interp& in, Value* a, int n) { return compare_chain(in, Op::Ge, a, n, ">="); });
  in.overload_for_tensors("MAX",
                          [](Interp& in, Value* a, int n) { return extremum(in, a, n, true); });
  in.overload_for_tensors("MIN",
                          [](Interp& in, Value* a, int n) { return extremum(in, a, n, false); });
  in.overload_for_tensors("FLOOR", rounding<Op::Floor>);
  in.overload_for_tensors("CEILING", rounding<Op::Ceil>);
  in.overload_for_tensors("ROUND", rounding<Op::Round>);
  in.overload_for_tensors("SIGNUM", unary_builtin<Op::Sign>);
  in.overload_for_tensors("EXPT", binary_builtin<Op::Pow>);
  in.overload_for_tensors("ATAN", [](Interp& in, Value* args, int n) -> Value {
    if (n != 2) in.fail("E-ARITY", "'atan' of a tensor takes two arguments (y x): use atan2");
    return stager_of(in).wrap(stage_binary(in, Op::Atan2, args[0], args[1], "atan"));
  });
}

}  // namespace

void register_tensor_elementwise(Interp& in) {
#define SG_OP(id, ir_name, lisp, arity, rule, diff, family, needs) register_row<Op::id>(in);
#include "ir/ops.def"
#undef SG_OP
  register_generic(in);
  SG_BUILTIN(in, "WHERE", 3, 3, "elementwise choice: (where cond a b), cond a :bool tensor", {
    Stager& st = stager_of(in);
    NodeId c = st.operand(args[0], "where");
    ir::TensorType like =
        tensor_type_of(args[1], args[2]) ? *tensor_type_of(args[1], args[2]) : ir::TensorType{};
    return st.stage_value(
        Op::Where, {c, st.operand(args[1], "where", &like), st.operand(args[2], "where", &like)});
  });
  SG_BUILTIN(in, "CLAMP", 3, 3, "x limited to [lo, hi]: (clamp x lo hi)", {
    Stager& st = stager_of(in);
    NodeId x = st.tensor_operand(args[0], "clamp");
    ir::TensorType like = st.type(x);
    return st.stage_value(
        Op::Clamp, {x, st.operand(args[1], "clamp", &like), st.operand(args[2], "clamp", &like)});
  });
  SG_BUILTIN(in, "CAST", 2, 2, "x converted to a dtype: (cast x :bf16)", {
    Stager& st = stager_of(in);
    Attrs a;
    a.dtype = arg_dtype(in, args[1], ir::kDefaultDType);
    return st.stage_value(Op::Cast, {st.operand(args[0], "cast")}, std::move(a));
  });
}

}  // namespace sexpgpu::stage
