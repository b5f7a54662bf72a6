// einsum with static subscripts (tensors.md: "lowered to transposes and
// matmuls"). One operand: sums and a permute. Two: labels split into batch
// (both operands and the output), contracted (both, not the output) and
// free (one operand and the output); each operand is permuted and reshaped
// to [batch..., M, K] and [batch..., K, N], multiplied, and the result is
// reshaped and permuted to the output's order. More operands fold left.
#include <algorithm>
#include <string>

#include "lisp/builtins.h"
#include "stage/args.h"

namespace sexpgpu::stage {

using ir::Attrs;
using ir::Dims;
using ir::NodeId;
using ir::Op;

namespace {

struct Operand {
  NodeId node;
  std::string labels;
};

[[noreturn]] void bad(Interp& in, const std::string& spec, const std::string& why) {
  in.fail("E-SHAPE", "einsum \"" + spec + "\": " + why);
}

int64_t dim_of(Stager& st, const Operand& x, char label) {
  return st.type(x.node).shape[int64_t(x.labels.find(label))];
}

NodeId permute_to(Stager& st, const Operand& x, const std::string& order) {
  Dims perm;
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) {
    perm.push_back(int64_t(x.labels.find(order[i])));
    identity = identity && perm.back() == int64_t(i);
  }
  if (identity) return x.node;
  Attrs a;
  a.axes = perm;
  return st.stage(Op::Permute, {x.node}, std::move(a));
}

NodeId reshape_to(Stager& st, NodeId x, const Dims& shape) {
  const ir::Shape& s = st.type(x).shape;
  if (Dims(s.begin(), s.end()) == shape) return x;
  Attrs a;
  a.shape = shape;
  return st.stage(Op::Reshape, {x}, std::move(a));
}

// Sums the labels of x not in `keep`.
Operand sum_out(Stager& st, Operand x, const std::string& keep) {
  Dims axes;
  std::string left;
  for (size_t i = 0; i < x.labels.size(); ++i) {
    if (keep.find(x.labels[i]) == std::string::npos)
      axes.push_back(int64_t(i));
    else
      left += x.labels[i];
  }
  if (axes.empty()) return x;
  Attrs a;
  a.axes = axes;
  return {st.stage(Op::Sum, {x.node}, std::move(a)), left};
}

Operand contract(Interp& in, Stager& st, const std::string& spec, Operand a, Operand b,
                 const std::string& out) {
  for (char c : a.labels)
    if (b.labels.find(c) != std::string::npos && dim_of(st, a, c) != dim_of(st, b, c))
      bad(in, spec,
          std::string("the subscript '") + c + "' is " + std::to_string(dim_of(st, a, c)) + " in " +
              st.type(a.node).to_string() + " and " + std::to_string(dim_of(st, b, c)) + " in " +
              st.type(b.node).to_string());
  // Labels neither the other operand nor the output needs are summed first.
  a = sum_out(st, a, b.labels + out);
  b = sum_out(st, b, a.labels + out);
  std::string batch, contracted, a_free, b_free;
  for (char c : a.labels) {
    bool in_b = b.labels.find(c) != std::string::npos, in_out = out.find(c) != std::string::npos;
    (in_b ? (in_out ? batch : contracted) : a_free) += c;
  }
  for (char c : b.labels)
    if (a.labels.find(c) == std::string::npos) b_free += c;
  auto product = [&](const Operand& x, const std::string& labels) {
    int64_t p = 1;
    for (char c : labels) p *= dim_of(st, x, c);
    return p;
  };
  Dims batch_dims;
  for (char c : batch) batch_dims.push_back(dim_of(st, a, c));
  Dims a_shape = batch_dims, b_shape = batch_dims, result_shape = batch_dims;
  a_shape.push_back(product(a, a_free));
  a_shape.push_back(product(a, contracted));
  b_shape.push_back(product(b, contracted));
  b_shape.push_back(product(b, b_free));
  NodeId am = reshape_to(st, permute_to(st, a, batch + a_free + contracted), a_shape);
  NodeId bm = reshape_to(st, permute_to(st, b, batch + contracted + b_free), b_shape);
  NodeId product_node = st.stage(Op::MatMul, {am, bm});
  for (char c : a_free) result_shape.push_back(dim_of(st, a, c));
  for (char c : b_free) result_shape.push_back(dim_of(st, b, c));
  return {reshape_to(st, product_node, result_shape), batch + a_free + b_free};
}

}  // namespace

Value einsum(Interp& in, Value* args, int nargs) {
  in.current_operator = "einsum";
  Stager& st = stager_of(in);
  if (!args[0].is_string())
    in.type_error(args[0], "a subscripts string such as \"ij,jk->ik\"", "einsum");
  std::string spec;
  for (char32_t c : args[0].str()->chars) spec += char(c);
  spec.erase(std::remove(spec.begin(), spec.end(), ' '), spec.end());
  size_t arrow = spec.find("->");
  if (arrow == std::string::npos) bad(in, spec, "give the output subscripts after ->");
  std::string out = spec.substr(arrow + 2);
  std::vector<std::string> inputs;
  for (size_t start = 0;;) {
    size_t comma = spec.find(',', start);
    size_t stop = comma == std::string::npos || comma > arrow ? arrow : comma;
    inputs.push_back(spec.substr(start, stop - start));
    if (stop == arrow) break;
    start = comma + 1;
  }
  if (int(inputs.size()) != nargs - 1)
    bad(in, spec,
        std::to_string(inputs.size()) + " operands named, " + std::to_string(nargs - 1) + " given");
  std::vector<Operand> xs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& l = inputs[i];
    NodeId node = st.tensor_operand(args[i + 1], "einsum");
    for (size_t j = 0; j < l.size(); ++j) {
      if (!std::isalpha(static_cast<unsigned char>(l[j])))
        bad(in, spec, "subscripts are letters ('...' is not supported)");
      if (l.find(l[j], j + 1) != std::string::npos)
        bad(in, spec, std::string("the subscript '") + l[j] + "' repeats within one operand");
    }
    if (int64_t(l.size()) != st.type(node).shape.rank())
      bad(in, spec,
          "'" + l + "' names " + std::to_string(l.size()) + " axes of " +
              st.type(node).to_string());
    xs.push_back({node, l});
  }
  for (char c : out) {
    bool found = false;
    for (const Operand& x : xs) found = found || x.labels.find(c) != std::string::npos;
    if (!found) bad(in, spec, std::string("the output subscript '") + c + "' is in no operand");
    if (out.find(c) != out.rfind(c)) bad(in, spec, std::string("the output repeats '") + c + "'");
  }
  Operand acc = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) {
    std::string later = out;  // labels the rest of the fold still needs
    for (size_t j = i + 1; j < xs.size(); ++j) later += xs[j].labels;
    acc = contract(in, st, spec, acc, xs[i], later);
  }
  acc = sum_out(st, acc, out);
  return st.wrap(permute_to(st, acc, out));
}

}  // namespace sexpgpu::stage
