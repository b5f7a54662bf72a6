// The fused classifier pass (fuse_classifier.h): find the pattern, build the
// linear_cross_entropy node and the slices of its result at the end of the
// function, move them (and what g needs) to the cross_entropy's place, then
// forward the old nodes' uses to the slices and drop what nothing reads.
#include "ir/passes/fuse_classifier.h"

#include <algorithm>
#include <optional>

#include "ir/grad_rules.h"
#include "ir/passes.h"
#include "ir/passes_impl.h"

namespace sexpgpu::ir {
namespace {

using Users = std::vector<std::vector<NodeId>>;

bool is_output(const Function& fn, NodeId id) {
  return std::any_of(fn.outputs.begin(), fn.outputs.end(),
                     [&](const Output& o) { return o.node == id; });
}

bool is_swap(const Function& fn, NodeId id, NodeId of) {
  const Node& n = fn.node(id);
  return n.op == Op::Permute && n.inputs[0] == of && n.attrs.axes == Dims{1, 0};
}

// One classifier found in the function, by node.
struct Match {
  NodeId x, w, targets, g;
  NodeId loss;                   // the cross_entropy
  std::optional<NodeId> dx, dw;  // matmul's gradient products
  std::string reduction;
  std::optional<int64_t> ignore_index;
};

// The matmul gradient products that read dz (or its [rows, V] reshape),
// or nullopt when something else reads it.
bool match_products(const Function& fn, const Users& users, NodeId dz, Match& m) {
  const Shape& xs = fn.type(m.x).shape;
  for (NodeId u : users[size_t(dz)]) {
    const Node& n = fn.node(u);
    if (n.op == Op::MatMul && n.inputs[0] == dz && is_swap(fn, n.inputs[1], m.w) &&
        n.type.shape == xs && !m.dx) {
      m.dx = u;
      continue;
    }
    // dw = x^T dz: x and dz 2-D, or both reshaped to [rows, .] first.
    auto rows_of = [&](NodeId v, NodeId of) {
      if (v == of) return fn.type(of).shape.rank() == 2;
      const Node& r = fn.node(v);
      return r.op == Op::Reshape && r.inputs[0] == of && r.type.shape.rank() == 2;
    };
    auto is_dw = [&](NodeId p, NodeId dz_rows) {
      const Node& n = fn.node(p);
      if (n.op != Op::MatMul || n.inputs[1] != dz_rows) return false;
      const Node& t = fn.node(n.inputs[0]);
      return t.op == Op::Permute && t.attrs.axes == Dims{1, 0} && rows_of(t.inputs[0], m.x) &&
             n.type.shape == fn.type(m.w).shape;
    };
    if (is_dw(u, dz) && rows_of(dz, dz) && !m.dw) {
      m.dw = u;
      continue;
    }
    if (n.op == Op::Reshape && rows_of(u, dz) && !is_output(fn, u) &&
        users[size_t(u)].size() == 1 && is_dw(users[size_t(u)][0], u) && !m.dw) {
      m.dw = users[size_t(u)][0];
      continue;
    }
    return false;
  }
  return m.dx || m.dw;
}

// Whether node `id` depends on node `on`.
bool depends_on(const Function& fn, NodeId id, NodeId on) {
  if (id < on) return false;
  std::vector<bool> seen(size_t(id) + 1);
  std::vector<NodeId> stack{id};
  while (!stack.empty()) {
    NodeId n = stack.back();
    stack.pop_back();
    if (n == on) return true;
    if (n < on || seen[size_t(n)]) continue;
    seen[size_t(n)] = true;
    for (NodeId in : fn.node(n).inputs) stack.push_back(in);
  }
  return false;
}

std::optional<Match> match_at(const Function& fn, const Users& users, NodeId grad_id) {
  const Node& grad = fn.node(grad_id);
  if (grad.op != Op::CrossEntropyGrad || is_output(fn, grad_id)) return std::nullopt;
  Match m;
  m.reduction = grad.attrs.reduction.value_or("mean");
  m.ignore_index = grad.attrs.ignore_index;
  if (m.reduction != "mean" && m.reduction != "sum") return std::nullopt;
  NodeId logits = grad.inputs[0], z = logits;
  if (fn.node(z).op == Op::Cast) z = fn.node(z).inputs[0];
  const Node& product = fn.node(z);
  if (product.op != Op::MatMul || is_output(fn, z) || is_output(fn, logits)) return std::nullopt;
  m.x = product.inputs[0];
  m.w = product.inputs[1];
  m.targets = grad.inputs[1];
  m.g = grad.inputs[2];
  const TensorType &xt = fn.type(m.x), &wt = fn.type(m.w);
  if (!is_float(xt.dtype) || wt.dtype != xt.dtype || product.type.dtype != xt.dtype ||
      wt.shape.rank() != 2 || xt.shape.rank() < 2)
    return std::nullopt;
  const DType result = xt.dtype == DType::F64 ? DType::F64 : DType::F32;
  // z read only by the cast (or by the two cross-entropy nodes), the
  // logits only by the loss and its gradient.
  if (logits != z && users[size_t(z)] != std::vector<NodeId>{logits}) return std::nullopt;
  std::optional<NodeId> loss;
  for (NodeId u : users[size_t(logits)]) {
    const Node& n = fn.node(u);
    if (u == grad_id) continue;
    if (n.op != Op::CrossEntropy || loss || n.inputs[1] != m.targets ||
        n.attrs.reduction.value_or("mean") != m.reduction ||
        n.attrs.ignore_index != m.ignore_index || n.type.dtype != result)
      return std::nullopt;
    loss = u;
  }
  if (!loss || fn.type(grad_id).dtype != result) return std::nullopt;
  m.loss = *loss;
  // dz: the gradient, or its one cast back to z's dtype.
  NodeId dz = grad_id;
  if (grad.type.dtype != xt.dtype) {
    const std::vector<NodeId>& u = users[size_t(grad_id)];
    if (u.size() != 1 || fn.node(u[0]).op != Op::Cast || fn.type(u[0]).dtype != xt.dtype ||
        is_output(fn, u[0]))
      return std::nullopt;
    dz = u[0];
  }
  if (!match_products(fn, users, dz, m)) return std::nullopt;
  if (depends_on(fn, m.g, m.loss)) return std::nullopt;
  return m;
}

// Moves `moved` (ids in increasing order, each depending only on nodes
// before `at` or in `moved`) to just before node `at`; renumbers. Returns
// where each node went.
std::vector<NodeId> move_before(Function& fn, NodeId at, const std::vector<NodeId>& moved) {
  std::vector<bool> is_moved(fn.nodes.size());
  for (NodeId id : moved) is_moved[size_t(id)] = true;
  std::vector<NodeId> order;
  for (NodeId id = 0; id < at; ++id)
    if (!is_moved[size_t(id)]) order.push_back(id);
  order.insert(order.end(), moved.begin(), moved.end());
  for (NodeId id = at; id < NodeId(fn.nodes.size()); ++id)
    if (!is_moved[size_t(id)]) order.push_back(id);
  std::vector<NodeId> new_id(fn.nodes.size());
  for (size_t k = 0; k < order.size(); ++k) new_id[size_t(order[k])] = NodeId(k);
  std::vector<Node> nodes;
  nodes.reserve(order.size());
  for (NodeId id : order) {
    Node n = std::move(fn.nodes[size_t(id)]);
    for (NodeId& in : n.inputs) in = new_id[size_t(in)];
    nodes.push_back(std::move(n));
  }
  fn.nodes = std::move(nodes);
  for (NodeId& id : fn.inputs) id = new_id[size_t(id)];
  for (Output& o : fn.outputs) o.node = new_id[size_t(o.node)];
  return new_id;
}

// 1-D elements [start, start + count) of `packed`, as `shape`.
NodeId part(Builder& b, NodeId packed, int64_t start, int64_t count, const Shape& shape) {
  Attrs a;
  a.starts = Dims{start};
  a.ends = Dims{start + count};
  a.steps = Dims{1};
  NodeId s = b.must(Op::Slice, {packed}, std::move(a));
  Attrs r;
  r.shape = grad::dims_of(shape);
  return b.must(Op::Reshape, {s}, std::move(r));
}

NodeId cast_to(Builder& b, NodeId v, DType d) {
  if (b.type(v).dtype == d) return v;
  Attrs a;
  a.dtype = d;
  return b.must(Op::Cast, {v}, std::move(a));
}

void rewrite(Function& fn, const Match& m) {
  const size_t before = fn.nodes.size();
  Builder b(fn);
  b.set_loc(fn.node(m.loss).loc);
  const TensorType xt = fn.type(m.x), wt = fn.type(m.w);
  const DType d = fn.type(m.loss).dtype;
  const int64_t nx = *xt.shape.numel(), nw = *wt.shape.numel();
  // "mean" divides the loss and g by the rows counted, at least one.
  std::optional<NodeId> count;
  if (m.reduction == "mean") {
    if (m.ignore_index) {
      NodeId kept =
          b.must(Op::Ne, {m.targets, b.scalar(double(*m.ignore_index), fn.type(m.targets).dtype)});
      NodeId n = b.must(Op::Sum, {cast_to(b, kept, d)});
      count = b.must(Op::Maximum, {n, b.scalar(1.0, d)});
    } else {
      count = b.scalar(double(std::max<int64_t>(*fn.type(m.targets).shape.numel(), 1)), d);
    }
  }
  NodeId g = count ? b.must(Op::Div, {m.g, *count}) : m.g;
  Attrs attrs;
  attrs.ignore_index = m.ignore_index;
  NodeId packed = b.must(Op::LinearCrossEntropy, {m.x, m.w, m.targets, g}, std::move(attrs));
  NodeId loss = part(b, packed, nx + nw, 1, Shape{});
  if (count) loss = b.must(Op::Div, {loss, *count});
  std::vector<NodeId> replacement_of(before, -1);
  replacement_of[size_t(m.loss)] = loss;
  // A product's uses take the part in its own dtype; its casts back to the
  // part's dtype take the part itself (no rounding in between).
  auto replace_product = [&](std::optional<NodeId> product, int64_t start, int64_t count_,
                             const Shape& shape) {
    if (!product) return;
    NodeId exact = part(b, packed, start, count_, shape);
    replacement_of[size_t(*product)] = cast_to(b, exact, fn.type(*product).dtype);
    for (size_t i = size_t(*product) + 1; i < before; ++i) {
      const Node& n = fn.nodes[i];
      if (n.op == Op::Cast && n.inputs[0] == *product && n.type.dtype == d)
        replacement_of[i] = exact;
    }
  };
  replace_product(m.dx, 0, nx, xt.shape);
  replace_product(m.dw, nx, nw, wt.shape);
  // What g is made of after the loss moves up with the new nodes.
  std::vector<bool> needed(fn.nodes.size());
  needed[size_t(m.g)] = true;
  std::vector<NodeId> moved;
  for (NodeId id = NodeId(before) - 1; id > m.loss; --id)
    if (needed[size_t(id)])
      for (NodeId in : fn.node(id).inputs) needed[size_t(in)] = true;
  for (NodeId id = m.loss + 1; id < NodeId(before); ++id)
    if (needed[size_t(id)]) moved.push_back(id);
  for (NodeId id = NodeId(before); id < NodeId(fn.nodes.size()); ++id) moved.push_back(id);
  const std::vector<NodeId> new_id = move_before(fn, m.loss, moved);
  std::vector<NodeId> replacement = pass_detail::identity_replacement(fn);
  for (size_t i = 0; i < before; ++i)
    if (replacement_of[i] >= 0) replacement[size_t(new_id[i])] = new_id[size_t(replacement_of[i])];
  pass_detail::compact(fn, replacement, std::vector<bool>(fn.nodes.size(), true));
  eliminate_dead_code(fn);
}

}  // namespace

int fuse_classifier(Function& fn) {
  int fused = 0;
  for (bool again = true; again;) {
    again = false;
    Users users = pass_detail::users_of(fn);
    for (NodeId id = 0; id < NodeId(fn.nodes.size()); ++id)
      if (std::optional<Match> m = match_at(fn, users, id)) {
        rewrite(fn, *m);
        ++fused;
        again = true;
        break;
      }
  }
  return fused;
}

}  // namespace sexpgpu::ir
