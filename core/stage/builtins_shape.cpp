// Tensor builtins, part 3: shape ops and linear algebra (tensors.md,
// "Signatures worth stating"). Builtins that are another op in disguise
// (transpose is a permute, squeeze/unsqueeze/flatten are reshapes, stack is
// unsqueeze + concat, split is slices, einsum is permutes, reshapes and
// matmuls) are lowered here, so the IR stays small.
#include <algorithm>
#include <map>

#include "lisp/builtins.h"
#include "stage/args.h"

namespace sexpgpu::stage {

using ir::Attrs;
using ir::Dims;
using ir::NodeId;
using ir::Op;

namespace {

NodeId reshape(Stager& st, NodeId x, const Dims& shape) {
  if (Dims(st.type(x).shape.begin(), st.type(x).shape.end()) == shape) return x;
  Attrs a;
  a.shape = shape;
  return st.stage(Op::Reshape, {x}, std::move(a));
}

NodeId permute(Stager& st, NodeId x, const Dims& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
  if (identity) return x;
  Attrs a;
  a.axes = perm;
  return st.stage(Op::Permute, {x}, std::move(a));
}

std::string type_text(Stager& st, NodeId x) {
  return st.type(x).to_string();
}

// reshape's target: one -1 takes what is left.
Dims reshape_target(Interp& in, Stager& st, NodeId x, Value spec) {
  Dims want = arg_ints(in, spec, "reshape");
  int64_t numel = *st.type(x).shape.numel(), known = 1;
  int infer = -1;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == -1) {
      if (infer >= 0)
        in.fail("E-SHAPE", "reshape of " + type_text(st, x) + ": only one -1 is allowed");
      infer = int(i);
    } else if (want[i] < 0) {
      in.fail("E-SHAPE", "reshape of " + type_text(st, x) + ": the size " +
                             std::to_string(want[i]) + " is negative");
    } else {
      known *= want[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      in.fail("E-SHAPE", "reshape of " + type_text(st, x) + " to " + in.show(spec) + ": " +
                             std::to_string(numel) + " elements do not divide into it");
    want[size_t(infer)] = numel / known;
  }
  return want;
}

Value transpose(Interp& in, Value* args, int nargs) {
  Stager& st = stager_of(in);
  NodeId x = st.tensor_operand(args[0], "transpose");
  int64_t rank = st.type(x).shape.rank();
  if (rank < 2) in.fail("E-SHAPE", "transpose of " + type_text(st, x) + ": needs two axes or more");
  int64_t a = arg_axis(in, nargs > 1 ? args[1] : Value::integer(-2), rank, "transpose");
  int64_t b = arg_axis(in, nargs > 2 ? args[2] : Value::integer(-1), rank, "transpose");
  Dims perm;
  for (int64_t i = 0; i < rank; ++i) perm.push_back(i);
  std::swap(perm[size_t(a)], perm[size_t(b)]);
  return st.wrap(permute(st, x, perm));
}

Value squeeze(Interp& in, Value* args, int nargs) {
  Stager& st = stager_of(in);
  NodeId x = st.tensor_operand(args[0], "squeeze");
  const ir::Shape& s = st.type(x).shape;
  Dims out;
  if (nargs > 1 && !args[1].is_nil()) {
    int64_t axis = arg_axis(in, args[1], s.rank(), "squeeze");
    if (s[axis] != 1)
      in.fail("E-SHAPE", "squeeze of " + type_text(st, x) + ": axis " + in.show(args[1]) +
                             " has size " + std::to_string(s[axis]) + ", not 1");
    for (int64_t i = 0; i < s.rank(); ++i)
      if (i != axis) out.push_back(s[i]);
  } else {
    for (int64_t d : s)
      if (d != 1) out.push_back(d);
  }
  return st.wrap(reshape(st, x, out));
}

NodeId unsqueeze(Interp& in, Stager& st, NodeId x, Value axis_v) {
  const ir::Shape& s = st.type(x).shape;
  int64_t axis = arg_axis(in, axis_v, s.rank() + 1, "unsqueeze");
  Dims out(s.begin(), s.end());
  out.insert(out.begin() + axis, 1);
  return reshape(st, x, out);
}

Value flatten(Interp& in, Value* args, int nargs) {
  Stager& st = stager_of(in);
  NodeId x = st.tensor_operand(args[0], "flatten");
  Value k[2];
  in.parse_keys(args, nargs, 1, {"START", "END"}, k);
  const ir::Shape& s = st.type(x).shape;
  if (s.rank() == 0) return st.wrap(reshape(st, x, Dims{1}));
  int64_t start =
      arg_axis(in, k[0].is_nil() ? Value::integer(0) : k[0], s.rank(), "flatten :start");
  int64_t end = arg_axis(in, k[1].is_nil() ? Value::integer(-1) : k[1], s.rank(), "flatten :end");
  if (start > end) in.fail("E-SHAPE", "flatten of " + type_text(st, x) + ": :start is after :end");
  Dims out;
  for (int64_t i = 0; i < start; ++i) out.push_back(s[i]);
  int64_t merged = 1;
  for (int64_t i = start; i <= end; ++i) merged *= s[i];
  out.push_back(merged);
  for (int64_t i = end + 1; i < s.rank(); ++i) out.push_back(s[i]);
  return st.wrap(reshape(st, x, out));
}

std::vector<NodeId> tensor_list(Interp& in, Stager& st, Value list, const char* what) {
  std::vector<NodeId> out;
  for (Value v : in.list_items(list, what)) out.push_back(st.tensor_operand(v, what));
  if (out.empty()) in.fail("E-SHAPE", std::string(what) + " of no tensors");
  return out;
}

NodeId concat(Interp& in, Stager& st, const std::vector<NodeId>& xs, Value axis_v) {
  if (xs.size() == 1) return xs[0];
  Attrs a;
  a.axis = arg_axis(in, axis_v, st.type(xs[0]).shape.rank(), "concat :axis");
  return st.stage(Op::Concat, std::span<const NodeId>(xs), std::move(a));
}

NodeId slice_axis(Stager& st, NodeId x, int64_t axis, int64_t start, int64_t end) {
  const ir::Shape& s = st.type(x).shape;
  Attrs a;
  a.starts = Dims(size_t(s.rank()), 0);
  a.ends = Dims(s.begin(), s.end());
  a.steps = Dims(size_t(s.rank()), 1);
  (*a.starts)[size_t(axis)] = start;
  (*a.ends)[size_t(axis)] = end;
  return st.stage(Op::Slice, {x}, std::move(a));
}

// (slice x ranges): per axis nil (all) or (start end [step]) with nil ends
// and negative positions counting from the end, clamped as Python's are.
Value slice(Interp& in, Value* args, int) {
  Stager& st = stager_of(in);
  NodeId x = st.tensor_operand(args[0], "slice");
  const ir::Shape& s = st.type(x).shape;
  std::vector<Value> ranges = in.list_items(args[1], "slice");
  if (int64_t(ranges.size()) > s.rank())
    in.fail("E-SHAPE", "slice of " + type_text(st, x) + ": " + std::to_string(ranges.size()) +
                           " ranges for " + std::to_string(s.rank()) + " axes");
  Attrs a;
  a.starts = Dims(size_t(s.rank()), 0);
  a.ends = Dims(s.begin(), s.end());
  a.steps = Dims(size_t(s.rank()), 1);
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].is_nil()) continue;
    std::vector<Value> r = in.list_items(ranges[i], "slice range");
    if (r.size() < 2 || r.size() > 3)
      in.type_error(ranges[i], "(start end) or (start end step)", "slice");
    int64_t dim = s[int64_t(i)];
    auto pos = [&](Value v, int64_t fallback) {
      if (v.is_nil()) return fallback;
      int64_t p = arg_int(in, v, "slice");
      if (p < 0) p += dim;
      return std::clamp<int64_t>(p, 0, dim);
    };
    int64_t step = r.size() == 3 && !r[2].is_nil() ? arg_int(in, r[2], "slice step") : 1;
    if (step < 1)
      in.fail("E-SHAPE", "slice of " + type_text(st, x) + ": the step must be 1 or more");
    (*a.starts)[i] = pos(r[0], 0);
    (*a.ends)[i] = std::max((*a.starts)[i], pos(r[1], dim));
    (*a.steps)[i] = step;
  }
  return st.stage_value(Op::Slice, {x}, std::move(a));
}

Value split(Interp& in, Value* args, int nargs) {
  Stager& st = stager_of(in);
  NodeId x = st.tensor_operand(args[0], "split");
  Value k[1];
  in.parse_keys(args, nargs, 2, {"AXIS"}, k);
  const ir::Shape& s = st.type(x).shape;
  int64_t axis = arg_axis(in, k[0].is_nil() ? Value::integer(0) : k[0], s.rank(), "split :axis");
  Dims sizes;
  if (args[1].is_int()) {  // a chunk size, the last chunk smaller
    if (args[1].i < 1) in.fail("E-SHAPE", "split: the chunk size must be 1 or more");
    for (int64_t at = 0; at < s[axis]; at += args[1].i)
      sizes.push_back(std::min(args[1].i, s[axis] - at));
  } else {
    sizes = arg_ints(in, args[1], "split");
  }
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  if (total != s[axis])
    in.fail("E-SHAPE", "split of " + type_text(st, x) + ": the sizes " + in.show(args[1]) +
                           " add up to " + std::to_string(total) + ", not " +
                           std::to_string(s[axis]));
  std::vector<Value> parts;
  int64_t at = 0;
  for (int64_t n : sizes) {
    parts.push_back(st.wrap(slice_axis(st, x, axis, at, at + n)));
    at += n;
  }
  return in.list_from(parts, in.nil());
}

// (pad x pads &key value): pads is one (before after) per axis, or fewer,
// which then apply to the last axes.
Value pad(Interp& in, Value* args, int nargs) {
  Stager& st = stager_of(in);
  NodeId x = st.tensor_operand(args[0], "pad");
  Value k[1];
  in.parse_keys(args, nargs, 2, {"VALUE"}, k);
  int64_t rank = st.type(x).shape.rank();
  std::vector<Value> pairs = in.list_items(args[1], "pad");
  if (int64_t(pairs.size()) > rank)
    in.fail("E-SHAPE", "pad of " + type_text(st, x) + ": " + std::to_string(pairs.size()) +
                           " (before after) pairs for " + std::to_string(rank) + " axes");
  Attrs a;
  a.pads = Dims(size_t(2 * rank), 0);
  size_t first = size_t(rank) - pairs.size();
  for (size_t i = 0; i < pairs.size(); ++i) {
    Dims ba = arg_ints(in, pairs[i], "pad");
    if (ba.size() != 2) in.type_error(pairs[i], "a (before after) pair", "pad");
    (*a.pads)[2 * (first + i)] = ba[0];
    (*a.pads)[2 * (first + i) + 1] = ba[1];
  }
  a.value = k[0].is_nil() ? 0.0 : arg_number(in, k[0], "pad :value");
  return st.stage_value(Op::Pad, {x}, std::move(a));
}

// (repeat x repeats): tiles x, as PyTorch's Tensor.repeat.
Value repeat(Interp& in, Value* args, int) {
  Stager& st = stager_of(in);
  NodeId x = st.tensor_operand(args[0], "repeat");
  Dims reps = arg_ints(in, args[1], "repeat");
  const ir::Shape& s0 = st.type(x).shape;
  if (int64_t(reps.size()) < s0.rank())
    in.fail("E-SHAPE", "repeat of " + type_text(st, x) + ": " + std::to_string(reps.size()) +
                           " counts for " + std::to_string(s0.rank()) + " axes");
  Dims s(reps.size() - size_t(s0.rank()), 1);
  s.insert(s.end(), s0.begin(), s0.end());
  Dims interleaved, expanded, out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (reps[i] < 0) in.fail("E-SHAPE", "repeat: a count is negative");
    interleaved.push_back(1);
    interleaved.push_back(s[i]);
    expanded.push_back(reps[i]);
    expanded.push_back(s[i]);
    out.push_back(reps[i] * s[i]);
  }
  NodeId r = reshape(st, x, interleaved);
  Attrs a;
  a.shape = expanded;
  r = st.stage(Op::Expand, {r}, std::move(a));
  return st.wrap(reshape(st, r, out));
}

Value flip(Interp& in, Value* args, int) {
  Stager& st = stager_of(in);
  NodeId x = st.tensor_operand(args[0], "flip");
  Attrs a;
  a.axes = *arg_reduce_axes(in, args[1], st.type(x).shape.rank());
  return st.stage_value(Op::Flip, {x}, std::move(a));
}

NodeId take(Stager& st, NodeId x, Value ids, int64_t axis) {
  Attrs a;
  a.axis = axis;
  return st.stage(Op::Take, {x, st.operand(ids, "index")}, std::move(a));
}

}  // namespace

// einsum (einsum.cpp): lowered to permutes, reshapes, sums and matmuls.
Value einsum(Interp& in, Value* args, int nargs);

void register_tensor_shape(Interp& in) {
  SG_BUILTIN(in, "RESHAPE", 2, 2, "the same elements in a new shape (one -1 allowed)", {
    Stager& st = stager_of(in);
    NodeId x = st.tensor_operand(args[0], "reshape");
    Dims target = reshape_target(in, st, x, args[1]);
    Attrs a;
    a.shape = target;
    return st.stage_value(Op::Reshape, {x}, std::move(a));
  });
  SG_BUILTIN(in, "TRANSPOSE", 1, 3, "swap two axes (default the last two)",
             { return transpose(in, args, nargs); });
  SG_BUILTIN(in, "PERMUTE", 2, 2, "reorder the axes: output axis i is input axis (nth i axes)", {
    Stager& st = stager_of(in);
    NodeId x = st.tensor_operand(args[0], "permute");
    Attrs a;
    a.axes = arg_ints(in, args[1], "permute");
    return st.stage_value(Op::Permute, {x}, std::move(a));
  });
  auto expand = [](Interp& in, Value* args, int) -> Value {
    Stager& st = stager_of(in);
    NodeId x = st.tensor_operand(args[0], "expand");
    Attrs a;
    a.shape = dims_of(arg_shape(in, args[1], "expand"));
    return st.stage_value(Op::Expand, {x}, std::move(a));
  };
  in.defbuiltin("EXPAND", 2, 2, expand, "broadcast to a shape");
  in.defbuiltin("BROADCAST-TO", 2, 2, expand, "broadcast to a shape (the same as expand)");
  SG_BUILTIN(in, "SQUEEZE", 1, 2, "drop an axis of size 1 (or every such axis)",
             { return squeeze(in, args, nargs); });
  SG_BUILTIN(in, "UNSQUEEZE", 2, 2, "insert an axis of size 1", {
    Stager& st = stager_of(in);
    return st.wrap(unsqueeze(in, st, st.tensor_operand(args[0], "unsqueeze"), args[1]));
  });
  SG_BUILTIN(in, "FLATTEN", 1, -1, "merge axes :start to :end into one",
             { return flatten(in, args, nargs); });
  SG_BUILTIN(in, "CONCAT", 1, -1, "join a list of tensors along :axis (default 0)", {
    Stager& st = stager_of(in);
    Value k[1];
    in.parse_keys(args, nargs, 1, {"AXIS"}, k);
    std::vector<NodeId> xs = tensor_list(in, st, args[0], "concat");
    return st.wrap(concat(in, st, xs, k[0].is_nil() ? Value::integer(0) : k[0]));
  });
  SG_BUILTIN(in, "STACK", 1, -1, "join a list of tensors along a new :axis (default 0)", {
    Stager& st = stager_of(in);
    Value k[1];
    in.parse_keys(args, nargs, 1, {"AXIS"}, k);
    Value axis = k[0].is_nil() ? Value::integer(0) : k[0];
    std::vector<NodeId> xs = tensor_list(in, st, args[0], "stack");
    for (NodeId& x : xs) x = unsqueeze(in, st, x, axis);
    return st.wrap(concat(in, st, xs, axis));
  });
  SG_BUILTIN(in, "SPLIT", 2, -1, "a list of parts along :axis, by sizes or a chunk size",
             { return split(in, args, nargs); });
  SG_BUILTIN(in, "SLICE", 2, 2, "static slices: one (start end [step]) or nil per axis",
             { return slice(in, args, nargs); });
  SG_BUILTIN(in, "INDEX", 2, -1, "gather along :axis by an integer tensor (NumPy take)", {
    Stager& st = stager_of(in);
    NodeId x = st.tensor_operand(args[0], "index");
    Value k[1];
    in.parse_keys(args, nargs, 2, {"AXIS"}, k);
    int64_t axis = arg_axis(in, k[0].is_nil() ? Value::integer(0) : k[0], st.type(x).shape.rank(),
                            "index :axis");
    return st.wrap(take(st, x, args[1], axis));
  });
  auto take_rows = [](Interp& in, Value* args, int) -> Value {
    Stager& st = stager_of(in);
    return st.wrap(take(st, st.tensor_operand(args[0], "take"), args[1], 0));
  };
  in.defbuiltin("TAKE", 2, 2, take_rows, "rows of a table by integer ids: the embedding lookup");
  in.defbuiltin("EMBEDDING", 2, 2, take_rows, "rows of a table by integer ids (the same as take)");
  SG_BUILTIN(in, "ONE-HOT", 2, -1, "(one-hot ids n &key dtype): 1 at each id along a new last axis",
             {
               Stager& st = stager_of(in);
               NodeId ids = st.tensor_operand(args[0], "one-hot");
               int64_t n = arg_int(in, args[1], "one-hot");
               if (n < 1) in.fail("E-SHAPE", "one-hot: the class count must be 1 or more");
               Value k[1];
               in.parse_keys(args, nargs, 2, {"DTYPE"}, k);
               Attrs r;
               r.shape = Dims{n};
               r.dtype = st.type(ids).dtype;
               r.start = 0;
               r.step = 1;
               if (!ir::is_int(st.type(ids).dtype))
                 in.fail("E-DTYPE",
                         "one-hot: the ids are " + type_text(st, ids) + ", not an integer dtype");
               NodeId classes = st.stage(Op::Arange, {}, std::move(r));
               NodeId hit = st.stage(Op::Eq, {unsqueeze(in, st, ids, Value::integer(-1)), classes});
               Attrs c;
               c.dtype = arg_dtype(in, k[0], ir::kDefaultDType);
               return st.stage_value(Op::Cast, {hit}, std::move(c));
             });
  SG_BUILTIN(in, "PAD", 2, -1, "(pad x ((before after) ...) &key value): pad the last axes",
             { return pad(in, args, nargs); });
  SG_BUILTIN(in, "REPEAT", 2, 2, "tile x: (repeat x counts), as PyTorch's repeat",
             { return repeat(in, args, nargs); });
  SG_BUILTIN(in, "FLIP", 2, 2, "reverse the order along the given axes",
             { return flip(in, args, nargs); });

  // ---- linear algebra ------------------------------------------------------------
  SG_BUILTIN(in, "MATMUL", 2, 2, "matrix product, NumPy rules (batch broadcast, 1-D operands)", {
    Stager& st = stager_of(in);
    return st.stage_value(
        Op::MatMul, {st.tensor_operand(args[0], "matmul"), st.tensor_operand(args[1], "matmul")});
  });
  SG_BUILTIN(in, "OUTER", 2, 2, "outer product of two vectors", {
    Stager& st = stager_of(in);
    NodeId a = st.tensor_operand(args[0], "outer"), b = st.tensor_operand(args[1], "outer");
    if (st.type(a).shape.rank() != 1 || st.type(b).shape.rank() != 1)
      in.fail("E-SHAPE", "outer of " + type_text(st, a) + " and " + type_text(st, b) +
                             ": both must be vectors");
    return st.stage_value(Op::Mul, {reshape(st, a, Dims{st.type(a).shape[0], 1}), b});
  });
  SG_BUILTIN(in, "DOT", 2, 2, "inner product of two vectors", {
    Stager& st = stager_of(in);
    NodeId a = st.tensor_operand(args[0], "dot"), b = st.tensor_operand(args[1], "dot");
    if (st.type(a).shape.rank() != 1 || st.type(b).shape.rank() != 1)
      in.fail("E-SHAPE",
              "dot of " + type_text(st, a) + " and " + type_text(st, b) + ": both must be vectors");
    return st.stage_value(Op::MatMul, {a, b});
  });
  in.defbuiltin("EINSUM", 2, -1, einsum,
                "(einsum \"ij,jk->ik\" a b): static subscripts, lowered to matmuls");
}

}  // namespace sexpgpu::stage
