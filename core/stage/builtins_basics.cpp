// Tensor builtins, part 1: introspection (ordinary values at compile time),
// creation and random draws (tensors.md, "Introspection", "Every tensor
// builtin": creation, random).
#include <cmath>

#include "lisp/builtins.h"
#include "stage/args.h"

namespace sexpgpu::stage {

using ir::Attrs;
using ir::DType;
using ir::Op;

namespace {

const StagedTensor& tensor_arg(Interp& in, Value v, const char* where) {
  StagedTensor* t = as_tensor(v);
  if (!t) in.type_error(v, "a tensor", where);
  return *t;
}

Value shape_list(Interp& in, const ir::Shape& s) {
  std::vector<Value> dims;
  for (int64_t d : s) dims.push_back(Value::integer(d));
  return in.list_from(dims, in.nil());
}

Value stage_full(Interp& in, const ir::Shape& shape, double value, DType dtype) {
  Attrs a;
  a.shape = dims_of(shape);
  a.dtype = dtype;
  a.value = value;
  return stager_of(in).stage_value(Op::Full, {}, std::move(a));
}

// (KIND shape &key dtype): zeros, ones.
Value filled(Interp& in, Value* args, int nargs, double value, const char* what) {
  Value k[1];
  in.parse_keys(args, nargs, 1, {"DTYPE"}, k);
  return stage_full(in, arg_shape(in, args[0], what), value,
                    arg_dtype(in, k[0], ir::kDefaultDType));
}

// (KIND-like x &key dtype): the shape of x, its dtype unless given.
Value filled_like(Interp& in, Value* args, int nargs, std::optional<double> value,
                  const char* what) {
  const StagedTensor& t = tensor_arg(in, args[0], what);
  int start = value ? 1 : 2;
  double v = value ? *value : arg_number(in, args[1], what);
  Value k[1];
  in.parse_keys(args, nargs, start, {"DTYPE"}, k);
  return stage_full(in, t.type.shape, v, arg_dtype(in, k[0], t.type.dtype));
}

// An n x n boolean mask: keep (i, j) when (j - i) compares with offset.
Value triangle_mask(Interp& in, Value* args, int nargs, bool lower, const char* what) {
  Stager& st = stager_of(in);
  int64_t n = arg_int(in, args[0], what);
  if (n < 0)
    in.fail("E-SHAPE", std::string(what) + ": the size " + std::to_string(n) + " is negative");
  Value k[1];
  in.parse_keys(args, nargs, 1, {"OFFSET"}, k);
  int64_t offset = k[0].is_nil() ? 0 : arg_int(in, k[0], ":offset");
  Attrs ar;
  ar.shape = ir::Dims{n};
  ar.dtype = DType::I32;
  ar.start = 0;
  ar.step = 1;
  ir::NodeId idx = st.stage(Op::Arange, {}, ar);
  Attrs rows;
  rows.shape = ir::Dims{n, 1};
  ir::NodeId i = st.stage(Op::Reshape, {idx}, rows);
  Attrs shifted;
  shifted.shape = ir::Dims{};
  shifted.dtype = DType::I32;
  shifted.value = double(offset);
  ir::NodeId limit = st.stage(Op::Add, {i, st.stage(Op::Full, {}, shifted)});
  // tril keeps j <= i + offset; triu keeps j >= i + offset.
  return st.stage_value(lower ? Op::Le : Op::Ge, {idx, limit});
}

struct RandomSpec {
  Op op;
  const char* name;
};

Value random_draw(Interp& in, Op op, const ir::Shape& shape, DType dtype, Attrs a) {
  Stager& st = stager_of(in);
  a.shape = dims_of(shape);
  a.dtype = dtype;
  a.stream = st.next_stream();
  ir::NodeId rng = st.rng_state();
  return st.stage_value(op, {rng}, std::move(a));
}

}  // namespace

void register_tensor_basics(Interp& in) {
  // ---- introspection --------------------------------------------------------
  SG_BUILTIN(in, "SHAPE", 1, 1, "the tensor's shape, a list of integers",
             { return shape_list(in, tensor_arg(in, args[0], "shape").type.shape); });
  SG_BUILTIN(in, "DIM", 2, 2, "the size of one axis (negative counts from the end)", {
    const StagedTensor& t = tensor_arg(in, args[0], "dim");
    return Value::integer(t.type.shape[arg_axis(in, args[1], t.type.shape.rank(), "dim")]);
  });
  SG_BUILTIN(in, "RANK", 1, 1, "the number of axes",
             { return Value::integer(tensor_arg(in, args[0], "rank").type.shape.rank()); });
  SG_BUILTIN(in, "DTYPE", 1, 1, "the dtype, a keyword such as :f32", {
    std::string_view kw = ir::lisp_keyword(tensor_arg(in, args[0], "dtype").type.dtype);
    return in.sym_kw(lisp::upcase_ascii(kw.substr(1)));
  });
  SG_BUILTIN(in, "NUMEL", 1, 1, "the number of elements",
             { return Value::integer(*tensor_arg(in, args[0], "numel").type.shape.numel()); });
  SG_BUILTIN(in, "TENSORP", 1, 1, "t if the argument is a staged tensor",
             { return in.boolean(as_tensor(args[0]) != nullptr); });

  // ---- creation -------------------------------------------------------------
  SG_BUILTIN(in, "ZEROS", 1, -1, "a tensor of zeros: (zeros shape &key dtype)",
             { return filled(in, args, nargs, 0.0, "zeros"); });
  SG_BUILTIN(in, "ONES", 1, -1, "a tensor of ones: (ones shape &key dtype)",
             { return filled(in, args, nargs, 1.0, "ones"); });
  SG_BUILTIN(in, "FULL", 2, -1, "a tensor of one value: (full shape value &key dtype)", {
    Value k[1];
    in.parse_keys(args, nargs, 2, {"DTYPE"}, k);
    return stage_full(in, arg_shape(in, args[0], "full"), arg_number(in, args[1], "full"),
                      arg_dtype(in, k[0], ir::kDefaultDType));
  });
  SG_BUILTIN(in, "ZEROS-LIKE", 1, -1, "zeros of x's shape (and dtype unless :dtype)",
             { return filled_like(in, args, nargs, 0.0, "zeros-like"); });
  SG_BUILTIN(in, "ONES-LIKE", 1, -1, "ones of x's shape (and dtype unless :dtype)",
             { return filled_like(in, args, nargs, 1.0, "ones-like"); });
  SG_BUILTIN(in, "FULL-LIKE", 2, -1, "(full-like x value &key dtype)",
             { return filled_like(in, args, nargs, std::nullopt, "full-like"); });
  SG_BUILTIN(
      in, "ARANGE", 1, -1,
      "start, start+step, ... below end: (arange end), (arange start end [step] &key dtype)", {
        int positional = 0;
        while (positional < nargs && positional < 3 && !args[positional].is_symbol()) ++positional;
        Value k[1];
        in.parse_keys(args, nargs, positional, {"DTYPE"}, k);
        double start = 0, end, step = 1;
        bool ints = true;
        for (int i = 0; i < positional; ++i) ints = ints && args[i].is_int();
        if (positional == 1) {
          end = arg_number(in, args[0], "arange");
        } else {
          start = arg_number(in, args[0], "arange");
          end = arg_number(in, args[1], "arange");
          if (positional == 3) step = arg_number(in, args[2], "arange");
        }
        if (step == 0) in.fail("E-SHAPE", "arange: the step is 0");
        double count = std::ceil((end - start) / step);
        if (!(count < 0x1p62))  // also NaN: more than a shape can hold
          in.fail("E-SHAPE", "arange: " + lisp::format_float(count) + " elements are too many");
        int64_t n = count > 0 ? int64_t(count) : 0;
        Attrs a;
        a.shape = ir::Dims{n};
        a.dtype = arg_dtype(in, k[0], ints ? DType::I32 : ir::kDefaultDType);
        a.start = start;
        a.step = step;
        return stager_of(in).stage_value(Op::Arange, {}, std::move(a));
      });
  SG_BUILTIN(in, "CONSTANT", 1, -1,
             "a tensor of a number or (nested) list: (constant x &key dtype)", {
               Value k[1];
               in.parse_keys(args, nargs, 1, {"DTYPE"}, k);
               ir::TensorType like{arg_dtype(in, k[0], ir::kDefaultDType), {}};
               if (args[0].is_number()) {
                 Attrs a;
                 a.shape = ir::Dims{};
                 a.dtype = like.dtype;
                 a.value = arg_number(in, args[0], "constant");
                 return stager_of(in).stage_value(Op::Full, {}, std::move(a));
               }
               if (!args[0].is_cons())
                 in.type_error(args[0], "a number or a list of numbers", "constant");
               return stager_of(in).wrap(stager_of(in).operand(args[0], "constant", &like));
             });
  SG_BUILTIN(in, "EYE", 1, -1, "the n x n identity: (eye n &key dtype)", {
    Value k[1];
    in.parse_keys(args, nargs, 1, {"DTYPE"}, k);
    Value mask = triangle_mask(in, args, 1, true, "eye");
    Value upper = triangle_mask(in, args, 1, false, "eye");
    Stager& st = stager_of(in);
    ir::NodeId diag = st.stage(Op::LogicalAnd, {st.operand(mask, "eye"), st.operand(upper, "eye")});
    Attrs c;
    c.dtype = arg_dtype(in, k[0], ir::kDefaultDType);
    return st.stage_value(Op::Cast, {diag}, std::move(c));
  });
  SG_BUILTIN(in, "TRIL-MASK", 1, -1, "n x n :bool, true on and below diagonal :offset",
             { return triangle_mask(in, args, nargs, true, "tril-mask"); });
  SG_BUILTIN(in, "TRIU-MASK", 1, -1, "n x n :bool, true on and above diagonal :offset",
             { return triangle_mask(in, args, nargs, false, "triu-mask"); });

  // ---- random (Philox, keyed by seed, the op's stream and the step) ----------
  SG_BUILTIN(in, "NORMAL", 1, -1, "normal draws: (normal shape &key (mean 0) (std 1) dtype)", {
    Value k[3];
    in.parse_keys(args, nargs, 1, {"MEAN", "STD", "DTYPE"}, k);
    Attrs a;
    a.mean = k[0].is_nil() ? 0.0 : arg_number(in, k[0], ":mean");
    a.stddev = k[1].is_nil() ? 1.0 : arg_number(in, k[1], ":std");
    return random_draw(in, Op::RandomNormal, arg_shape(in, args[0], "normal"),
                       arg_dtype(in, k[2], ir::kDefaultDType), std::move(a));
  });
  SG_BUILTIN(in, "UNIFORM", 1, -1,
             "uniform draws in [low, high): (uniform shape &key low high dtype)", {
               Value k[3];
               in.parse_keys(args, nargs, 1, {"LOW", "HIGH", "DTYPE"}, k);
               Attrs a;
               a.low = k[0].is_nil() ? 0.0 : arg_number(in, k[0], ":low");
               a.high = k[1].is_nil() ? 1.0 : arg_number(in, k[1], ":high");
               return random_draw(in, Op::RandomUniform, arg_shape(in, args[0], "uniform"),
                                  arg_dtype(in, k[2], ir::kDefaultDType), std::move(a));
             });
  SG_BUILTIN(in, "BERNOULLI", 2, -1, "1 with probability p, else 0: (bernoulli shape p &key dtype)",
             {
               Value k[1];
               in.parse_keys(args, nargs, 2, {"DTYPE"}, k);
               Attrs a;
               a.p = arg_number(in, args[1], "bernoulli");
               if (*a.p < 0 || *a.p > 1)
                 in.fail("E-TYPE", "bernoulli: p must be in [0, 1], not " + in.show(args[1]));
               return random_draw(in, Op::RandomBernoulli, arg_shape(in, args[0], "bernoulli"),
                                  arg_dtype(in, k[0], ir::kDefaultDType), std::move(a));
             });
  SG_BUILTIN(
      in, "DROPOUT", 2, 2,
      "zero each element with probability p, scale the rest by 1/(1-p); identity in evaluation", {
        Stager& st = stager_of(in);
        ir::NodeId x = st.tensor_operand(args[0], "dropout");
        double p = arg_number(in, args[1], "dropout");
        if (p < 0 || p >= 1)
          in.fail("E-TYPE", "dropout: p must be in [0, 1), not " + in.show(args[1]));
        if (!st.training || p == 0) return args[0];
        ir::TensorType xt = st.type(x);
        Attrs a;
        a.p = 1 - p;
        Value keep = random_draw(in, Op::RandomBernoulli, xt.shape, DType::Bool, std::move(a));
        ir::NodeId scaled =
            st.stage(Op::Mul, {x, st.operand(Value::flt(1 / (1 - p)), "dropout", &xt)});
        ir::NodeId zero = st.operand(Value::integer(0), "dropout", &xt);
        return st.stage_value(Op::Where, {st.operand(keep, "dropout"), scaled, zero});
      });
}

}  // namespace sexpgpu::stage
