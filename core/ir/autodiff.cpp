// Reverse-mode autodiff (autodiff.h): a sweep from the loss down to the
// wrt nodes over the function's nodes in reverse definition order (a
// topological order: operands come before their users), each node's
// cotangent handed to its op's rule (grad_rules.h) and the operands'
// cotangents summed with add. Only nodes on a path from a wrt node to the
// loss get cotangents, so the new IR holds no dead gradients.
//
// A gradient flows from a node into an operand when the op is
// differentiable, the operand slot is (not take's ids, where's condition,
// ...) and both values are floats: integers carry no gradient, so a cast to
// i32 stops it as surely as argmax does. stop_gradient stops it too, but on
// purpose: a wrt reached only through it is unreached, not E-NONDIFF.
#include "ir/autodiff.h"

#include <optional>
#include <stdexcept>

#include "ir/grad_rules.h"

namespace sexpgpu::ir {
namespace {

bool flows(const Function& fn, const Node& user, size_t slot) {
  return is_float(user.type.dtype) && is_float(fn.type(user.inputs[slot]).dtype) &&
         operand_differentiable(user.op, slot);
}

// Which nodes the loss depends on, and how: `touched` through any edge but
// stop_gradient's, `needed` through edges a gradient flows along.
struct LossReach {
  std::vector<bool> touched, needed;
};

LossReach reach_of_loss(const Function& fn, NodeId loss) {
  LossReach r{std::vector<bool>(size_t(loss) + 1), std::vector<bool>(size_t(loss) + 1)};
  r.touched[size_t(loss)] = r.needed[size_t(loss)] = true;
  for (NodeId id = loss; id >= 0; --id) {
    if (!r.touched[size_t(id)]) continue;
    const Node& n = fn.node(id);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      size_t in = size_t(n.inputs[k]);
      if (n.op != Op::StopGradient) r.touched[in] = true;
      if (r.needed[size_t(id)] && flows(fn, n, k)) r.needed[in] = true;
    }
  }
  return r;
}

// Nodes a gradient can reach from some wrt node: those the sweep visits.
std::vector<bool> reach_of_wrt(const Function& fn, NodeId loss, const std::vector<NodeId>& wrt) {
  std::vector<bool> active(size_t(loss) + 1);
  for (NodeId w : wrt)
    if (w <= loss) active[size_t(w)] = true;
  for (NodeId id = 0; id <= loss; ++id) {
    const Node& n = fn.node(id);
    for (size_t k = 0; k < n.inputs.size() && !active[size_t(id)]; ++k)
      if (active[size_t(n.inputs[k])] && flows(fn, n, k)) active[size_t(id)] = true;
  }
  return active;
}

// For a wrt that reaches the loss only where no gradient flows: the stop
// nearest the loss. Of an edge that carries none, the user is named when
// its op (or that operand of it) has no gradient (argmax, floor, take's
// ids), else the operand, which then is an integer value (a cast to i32).
NodeId blocking_node(const Function& fn, NodeId loss, NodeId w, const LossReach& reach) {
  std::vector<bool> from_w(size_t(loss) + 1);
  from_w[size_t(w)] = true;
  for (NodeId id = w + 1; id <= loss; ++id) {
    const Node& n = fn.node(id);
    if (n.op == Op::StopGradient) continue;
    for (NodeId in : n.inputs)
      if (from_w[size_t(in)]) from_w[size_t(id)] = true;
  }
  for (NodeId id = loss; id >= w; --id) {
    if (!from_w[size_t(id)] || !reach.needed[size_t(id)]) continue;
    const Node& n = fn.node(id);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      NodeId in = n.inputs[k];
      if (!from_w[size_t(in)] || flows(fn, n, k)) continue;
      return operand_differentiable(n.op, k) ? in : id;
    }
  }
  return w;  // unreachable when w touches the loss: some edge on its path stops the gradient
}

class Sweep {
 public:
  Sweep(Function& fn, NodeId loss, std::vector<bool> on_path)
      : fn_(fn), b_(fn), on_path_(std::move(on_path)), cot_(size_t(loss) + 1) {
    if (!on_path_[size_t(loss)]) return;  // no wrt reaches the loss
    b_.set_loc(fn.node(loss).loc);
    cot_[size_t(loss)] = b_.scalar(1.0, fn.type(loss).dtype);
    for (NodeId id = loss; id >= 0; --id)
      if (on_path_[size_t(id)] && cot_[size_t(id)]) propagate(id);
  }

  std::optional<NodeId> cotangent(NodeId id) const {
    return size_t(id) < cot_.size() ? cot_[size_t(id)] : std::nullopt;
  }
  Builder& builder() { return b_; }

 private:
  void propagate(NodeId id) {
    const Node node = fn_.node(id);  // a copy: rules append nodes
    std::vector<bool> wanted(node.inputs.size());
    bool any = false;
    for (size_t k = 0; k < wanted.size(); ++k) {
      wanted[k] = on_path_[size_t(node.inputs[k])] && flows(fn_, node, k);
      any = any || wanted[k];
    }
    if (!any) return;
    b_.set_loc(node.loc);
    Result<Cotangents> r = vjp(b_, id, *cot_[size_t(id)], wanted);
    if (!r) throw std::logic_error("internal: autodiff through " + r.error());
    for (size_t k = 0; k < wanted.size(); ++k)
      if (wanted[k]) accumulate(node, k, (*r)[k]);
  }

  void accumulate(const Node& user, size_t slot, std::optional<NodeId> c) {
    NodeId in = user.inputs[slot];
    std::string rule = std::string(info(user.op).ir_name);
    if (!c) throw std::logic_error("internal: the '" + rule + "' rule gave no cotangent");
    if (!(fn_.type(*c) == fn_.type(in)))
      throw std::logic_error("internal: the '" + rule + "' rule gave a cotangent of type " +
                             fn_.type(*c).to_string() + " for an operand of type " +
                             fn_.type(in).to_string());
    std::optional<NodeId>& sum = cot_[size_t(in)];
    sum = sum ? b_.must(Op::Add, {*sum, *c}) : *c;
  }

  Function& fn_;
  Builder b_;
  std::vector<bool> on_path_;
  std::vector<std::optional<NodeId>> cot_;
};

}  // namespace

Gradients differentiate(Function& fn, NodeId loss, const std::vector<NodeId>& wrt,
                        std::vector<NonDifferentiable>* nondiff) {
  const TensorType& lt = fn.type(loss);
  if (!lt.shape.is_scalar() || !is_float(lt.dtype))
    throw std::logic_error("internal: differentiate needs a scalar float loss, not " +
                           lt.to_string());
  LossReach reach = reach_of_loss(fn, loss);
  std::vector<bool> on_path = reach_of_wrt(fn, loss, wrt);
  for (size_t i = 0; i < on_path.size(); ++i) on_path[i] = on_path[i] && reach.needed[i];
  Sweep sweep(fn, loss, std::move(on_path));
  Gradients out;
  for (size_t i = 0; i < wrt.size(); ++i) {
    NodeId w = wrt[i];
    if (std::optional<NodeId> c = sweep.cotangent(w)) {
      out.grads.push_back(*c);
      continue;
    }
    Builder& b = sweep.builder();
    b.set_loc(fn.node(w).loc);
    out.grads.push_back(b.full(fn.type(w).shape, 0.0, fn.type(w).dtype));
    bool touches = w <= loss && reach.touched[size_t(w)];
    if (!touches)
      out.unreached.push_back(i);
    else if (nondiff)
      nondiff->push_back({i, blocking_node(fn, loss, w, reach)});
  }
  return out;
}

}  // namespace sexpgpu::ir
