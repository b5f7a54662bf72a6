// The gradient bucket pass (bucket_gradients.h): plan the buckets over the
// gradients' node ids, then copy the function node by node, emitting each
// bucket's all_reduce and its slices after the node that completes it.
#include "ir/passes/bucket_gradients.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>

#include "ir/passes.h"

namespace sexpgpu::ir {

namespace {

struct Gradient {
  NodeId node;    // in the function before the pass
  size_t output;  // the output it is (outputs form), else unused
  int64_t numel;
  int64_t bytes;
};

struct Bucket {
  std::vector<Gradient> members;
  int64_t bytes = 0;
  NodeId last() const { return members.back().node; }
};

// Greedy buckets over gradients sorted by node id, one open bucket per dtype.
std::vector<Bucket> plan_buckets(const Function& fn, std::vector<Gradient> grads,
                                 int64_t bucket_bytes) {
  std::stable_sort(grads.begin(), grads.end(),
                   [](const Gradient& a, const Gradient& b) { return a.node < b.node; });
  std::vector<Bucket> done;
  std::map<DType, Bucket> open;
  for (const Gradient& g : grads) {
    Bucket& b = open[fn.type(g.node).dtype];
    if (!b.members.empty() && b.bytes + g.bytes > bucket_bytes) {
      done.push_back(std::move(b));
      b = Bucket{};
    }
    b.members.push_back(g);
    b.bytes += g.bytes;
  }
  for (auto& [dtype, b] : open)
    if (!b.members.empty()) done.push_back(std::move(b));
  // Emitted in order of completion (stable: equal ends keep planning order).
  std::stable_sort(done.begin(), done.end(),
                   [](const Bucket& a, const Bucket& b) { return a.last() < b.last(); });
  return done;
}

// Copies `fn` with each bucket emitted after its last member. `use` says,
// per old node, which new node its later readers (and, for inputs, the
// outputs) see; `reduced` receives, per bucket member, the new node of its
// averaged value.
struct Rebuilt {
  std::vector<NodeId> new_id;
  std::vector<std::vector<NodeId>> reduced;  // [bucket][member]
};

Rebuilt rebuild(Function& fn, const std::vector<Bucket>& buckets, bool repoint_uses) {
  Function out;
  out.name = fn.name;
  Builder b(out);
  Rebuilt r;
  r.new_id.assign(fn.nodes.size(), -1);
  std::vector<NodeId> use(fn.nodes.size(), -1);
  r.reduced.resize(buckets.size());
  // Each member's averaged value: reshape(slice(bucket)). For outputs these
  // come after every other node, so nothing but the outputs waits for a
  // reduction and a device can run it while the rest of the backward runs;
  // for uses inside the function, right after the bucket.
  auto unpack = [&](size_t k, NodeId all) {
    const Bucket& bucket = buckets[k];
    int64_t at = 0;
    for (const Gradient& g : bucket.members) {
      NodeId v = all;
      if (bucket.members.size() > 1) {
        Attrs s;
        s.starts = Dims{at};
        s.ends = Dims{at + g.numel};
        s.steps = Dims{1};
        v = b.must(Op::Slice, {all}, std::move(s));
      }
      at += g.numel;
      const Shape& shape = out.type(r.new_id[size_t(g.node)]).shape;
      if (!(out.type(v).shape == shape)) {
        Attrs s;
        s.shape = Dims(shape.dims().begin(), shape.dims().end());
        v = b.must(Op::Reshape, {v}, std::move(s));
      }
      r.reduced[k].push_back(v);
      if (repoint_uses) use[size_t(g.node)] = v;
    }
  };
  std::vector<NodeId> reductions;
  size_t next = 0;
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    Node n = std::move(fn.nodes[i]);
    for (NodeId& in : n.inputs) in = use[size_t(in)];
    out.nodes.push_back(std::move(n));
    r.new_id[i] = use[i] = NodeId(out.nodes.size() - 1);
    for (; next < buckets.size() && size_t(buckets[next].last()) == i; ++next) {
      const Bucket& bucket = buckets[next];
      b.set_loc(out.nodes[size_t(r.new_id[i])].loc);
      NodeIds operands;
      for (const Gradient& g : bucket.members) operands.push_back(r.new_id[size_t(g.node)]);
      Attrs mean;
      mean.reduction = "mean";
      NodeId all = b.must(Op::AllReduce, std::span<const NodeId>(operands.data(), operands.size()),
                          std::move(mean));
      reductions.push_back(all);
      if (repoint_uses) unpack(next, all);
    }
  }
  if (!repoint_uses)
    for (size_t k = 0; k < reductions.size(); ++k) {
      b.set_loc(out.nodes[size_t(reductions[k])].loc);
      unpack(k, reductions[k]);
    }
  if (next != buckets.size()) throw std::logic_error("bucket_gradients: a bucket was not placed");
  for (NodeId& id : fn.inputs) id = r.new_id[size_t(id)];
  for (Output& o : fn.outputs) o.node = use[size_t(o.node)];
  fn.nodes = std::move(out.nodes);
  return r;
}

Gradient gradient_of(const Function& fn, NodeId node, size_t output) {
  const TensorType& t = fn.type(node);
  int64_t numel = t.shape.numel().value_or(0);
  return Gradient{node, output, numel, numel * int64_t(size_bytes(t.dtype))};
}

}  // namespace

GradientBuckets bucket_gradient_outputs(Function& fn, std::span<const std::string> outputs,
                                        int64_t bucket_bytes) {
  std::vector<Gradient> grads;
  for (const std::string& name : outputs)
    for (size_t k = 0; k < fn.outputs.size(); ++k)
      if (fn.outputs[k].name == name && is_float(fn.type(fn.outputs[k].node).dtype))
        grads.push_back(gradient_of(fn, fn.outputs[k].node, k));
  std::vector<Bucket> buckets = plan_buckets(fn, std::move(grads), bucket_bytes);
  Rebuilt r = rebuild(fn, buckets, false);
  for (size_t k = 0; k < buckets.size(); ++k)
    for (size_t m = 0; m < buckets[k].members.size(); ++m)
      fn.outputs[buckets[k].members[m].output].node = r.reduced[k][m];
  return GradientBuckets{int(buckets.size()), std::move(r.new_id)};
}

GradientBuckets bucket_gradient_inputs(Function& fn, std::span<const std::string> inputs,
                                       int64_t bucket_bytes) {
  std::vector<Gradient> grads;
  for (const std::string& name : inputs)
    for (NodeId id : fn.inputs) {
      const Node& n = fn.node(id);
      if (n.op == Op::Input && n.attrs.name == name && is_float(n.type.dtype))
        grads.push_back(gradient_of(fn, id, 0));
    }
  std::vector<Bucket> buckets = plan_buckets(fn, std::move(grads), bucket_bytes);
  Rebuilt r = rebuild(fn, buckets, true);
  return GradientBuckets{int(buckets.size()), std::move(r.new_id)};
}

int elide_buckets(Function& fn) {
  // same[id]: the node a reader may read instead (itself unless an unpacked
  // member); flat[id]: the member whose elements, flattened, node id holds.
  std::vector<NodeId> same(fn.nodes.size()), flat(fn.nodes.size(), -1);
  std::iota(same.begin(), same.end(), NodeId(0));
  struct Member {
    NodeId node;
    int64_t at, numel;
  };
  std::map<NodeId, std::vector<Member>> buckets;
  auto as_member = [&](NodeId id, NodeId member) {
    flat[size_t(id)] = member;
    if (fn.type(id) == fn.type(member)) same[size_t(id)] = member;
  };
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    const Node& n = fn.nodes[i];
    const NodeId id = NodeId(i);
    if (n.op == Op::AllReduce) {
      std::vector<Member>& members = buckets[id];
      int64_t at = 0;
      for (NodeId in : n.inputs) {
        int64_t numel = fn.type(in).shape.numel().value_or(0);
        members.push_back({in, at, numel});
        at += numel;
      }
      if (n.inputs.size() == 1) as_member(id, n.inputs[0]);
    } else if (n.op == Op::Slice && buckets.count(n.inputs[0]) && n.attrs.starts && n.attrs.ends &&
               n.attrs.starts->size() == 1 && n.attrs.ends->size() == 1 &&
               (!n.attrs.steps || (n.attrs.steps->size() == 1 && (*n.attrs.steps)[0] == 1))) {
      const int64_t from = (*n.attrs.starts)[0], to = (*n.attrs.ends)[0];
      for (const Member& m : buckets[n.inputs[0]])
        if (m.at == from && m.at + m.numel == to) as_member(id, m.node);
    } else if (n.op == Op::Reshape && flat[size_t(n.inputs[0])] >= 0) {
      NodeId member = flat[size_t(n.inputs[0])];
      if (fn.type(id) == fn.type(member)) same[size_t(id)] = member;
    }
  }
  if (buckets.empty()) return 0;
  for (Node& n : fn.nodes)
    for (NodeId& in : n.inputs) in = same[size_t(in)];
  for (Output& o : fn.outputs) o.node = same[size_t(o.node)];
  eliminate_dead_code(fn);
  int left = 0;
  for (const Node& n : fn.nodes) left += n.op == Op::AllReduce;
  return int(buckets.size()) - left;
}

Module without_buckets(Module module, std::string_view name) {
  if (Function* fn = module.find(name)) elide_buckets(*fn);
  return module;
}

}  // namespace sexpgpu::ir
