// The gradient bucket pass (core/ir/passes/bucket_gradients.h) and the CPU
// all_reduce kernel it relies on: buckets in the order the gradients are
// computed, one dtype each, filled greedily, a large gradient alone, each
// all_reduce right after its last gradient; the function verifies and
// computes the same values as before; the kernel packs, sums over a
// Collective and divides by its world size for "mean".
#include <algorithm>
#include <map>
#include <memory>

#include "catch.hpp"
#include "cpu/collective.h"
#include "cpu/program.h"
#include "ir/autodiff.h"
#include "ir/graph.h"
#include "ir/passes.h"
#include "ir/passes/bucket_gradients.h"
#include "ir/print.h"
#include "ir/verify.h"

using namespace sexpgpu;
using namespace sexpgpu::ir;

namespace {

TensorType T(std::string_view text) {
  return *parse_tensor_type(text);
}

std::vector<const Node*> all_reduces(const Function& fn) {
  std::vector<const Node*> out;
  for (const Node& n : fn.nodes)
    if (n.op == Op::AllReduce) out.push_back(&n);
  return out;
}

// Inputs of `fn` in calling order, element i of the k-th (i % 11) * 0.25 - 1 + k / 8.
std::vector<cpu::HostTensor> inputs_of(const Function& fn) {
  std::vector<cpu::HostTensor> out;
  for (size_t k = 0; k < fn.inputs.size(); ++k) {
    const TensorType& t = fn.type(fn.inputs[k]);
    std::vector<double> v(size_t(t.shape.numel().value_or(0)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = double(i % 11) * 0.25 - 1 + double(k) * 0.125;
    out.push_back(cpu::HostTensor::from_doubles(t, v));
  }
  return out;
}

// Every output of function `name`, by output name, run on the CPU.
std::map<std::string, std::vector<std::byte>> run_cpu(const Module& m, const std::string& name,
                                                      cpu::Options options = {}) {
  auto program = cpu::Program::compile(m, name, options);
  INFO(program.error());
  REQUIRE(program.ok());
  const Function& fn = (*program)->function();
  auto outputs = (*program)->run(inputs_of(fn));
  INFO(outputs.error());
  REQUIRE(outputs.ok());
  std::map<std::string, std::vector<std::byte>> out;
  for (size_t k = 0; k < fn.outputs.size(); ++k) out[fn.outputs[k].name] = (*outputs)[k].bytes;
  return out;
}

// A Collective of `size` processes that all hold the same values: the sum
// over them is `size` times the data. `fail` makes every call fail.
class SameValues : public cpu::Collective {
 public:
  explicit SameValues(int size, std::string fail = "") : size_(size), fail_(std::move(fail)) {}
  int rank() const override { return 0; }
  int world_size() const override { return size_; }
  std::string all_reduce_sum(void* data, size_t count, DType dtype) override {
    if (!fail_.empty()) return fail_;
    calls++;
    if (dtype == DType::F32)
      for (size_t i = 0; i < count; ++i) static_cast<float*>(data)[i] *= float(size_);
    if (dtype == DType::F64)
      for (size_t i = 0; i < count; ++i) static_cast<double*>(data)[i] *= double(size_);
    return "";
  }
  std::string broadcast(void*, size_t, int) override { return ""; }
  int calls = 0;

 private:
  int size_;
  std::string fail_;
};

}  // namespace

TEST_CASE("gradient buckets: order, dtypes, greedy sizes, a large gradient alone",
          "[ir][buckets]") {
  Module m;
  Function& fn = m.functions.emplace_back();
  fn.name = "f";
  Builder b(fn);
  // Five "gradients" computed in this order: g1 f32[2] (8 bytes), g2 f32[3]
  // (12), g3 f32[4,5] (80, above the 40-byte buckets), g4 f64[2] (16),
  // g5 f32[2,2] (16).
  const char* types[] = {"f32[2]", "f32[3]", "f32[4,5]", "f64[2]", "f32[2,2]"};
  std::vector<NodeId> g;
  for (int i = 0; i < 5; ++i) {
    NodeId x = b.input("x" + std::to_string(i), T(types[i]));
    g.push_back(b.must(Op::Mul, {x, b.scalar(2.0, T(types[i]).dtype)}));
  }
  // Outputs in another order than the nodes', and one that is not a gradient.
  const std::vector<std::string> names = {"grad:e", "grad:c", "grad:a", "grad:d", "grad:b"};
  const int of_name[] = {4, 2, 0, 3, 1};
  fn.outputs.push_back({"loss", g[0]});
  for (size_t k = 0; k < names.size(); ++k) fn.outputs.push_back({names[k], g[of_name[k]]});
  REQUIRE(verify(m, fn) == "");
  Module before = m;

  GradientBuckets r = bucket_gradient_outputs(fn, names, 40);
  INFO(to_text(m, fn));
  REQUIRE(verify(m, fn) == "");
  CHECK(r.buckets == 4);
  std::vector<const Node*> ars = all_reduces(fn);
  REQUIRE(ars.size() == 4);
  // [g1 g2] (20 bytes; g3 does not fit), [g3] alone, [g4] (f64), [g5].
  auto operands = [&](const Node* n) {
    std::vector<NodeId> v(n->inputs.begin(), n->inputs.end());
    return v;
  };
  CHECK(operands(ars[0]) == std::vector<NodeId>{r.new_id[size_t(g[0])], r.new_id[size_t(g[1])]});
  CHECK(operands(ars[1]) == std::vector<NodeId>{r.new_id[size_t(g[2])]});
  CHECK(operands(ars[2]) == std::vector<NodeId>{r.new_id[size_t(g[3])]});
  CHECK(operands(ars[3]) == std::vector<NodeId>{r.new_id[size_t(g[4])]});
  CHECK(ars[0]->type == T("f32[5]"));
  CHECK(ars[1]->type == T("f32[20]"));
  CHECK(ars[2]->type == T("f64[2]"));
  CHECK(ars[0]->attrs.reduction == "mean");
  // Each right after the node that completes it.
  for (const Node* n : ars) {
    NodeId id = NodeId(n - fn.nodes.data());
    CHECK(id == n->inputs.back() + 1);
  }
  // The outputs: reshape(slice(bucket)), a slice alone for 1-D, the bucket
  // itself reshaped when it has one gradient; "loss" keeps g1 itself.
  auto output = [&](const std::string& name) -> const Node& {
    for (const Output& o : fn.outputs)
      if (o.name == name) return fn.node(o.node);
    FAIL(name);
    return fn.nodes[0];
  };
  CHECK(output("loss").op == Op::Mul);
  CHECK(output("grad:a").op == Op::Slice);
  CHECK(*output("grad:a").attrs.starts == Dims{0});
  CHECK(*output("grad:b").attrs.starts == Dims{2});
  CHECK(*output("grad:b").attrs.ends == Dims{5});
  CHECK(output("grad:c").op == Op::Reshape);
  CHECK(fn.node(output("grad:c").inputs[0]).op == Op::AllReduce);
  CHECK(output("grad:d").op == Op::AllReduce);
  CHECK(output("grad:e").type == T("f32[2,2]"));

  // Same values, bit for bit, in a world of one; optimized too.
  auto want = run_cpu(before, "f");
  CHECK(run_cpu(m, "f") == want);
  REQUIRE(optimize(m, fn) == "");
  CHECK(all_reduces(fn).size() == 4);
  CHECK(run_cpu(m, "f") == want);
}

TEST_CASE("gradient buckets: a model's gradients keep their values", "[ir][buckets]") {
  Module m;
  Function& fn = m.functions.emplace_back();
  fn.name = "train_step";
  Builder b(fn);
  NodeId x = b.input("x", T("f32[5,4]"));
  std::vector<std::pair<std::string, TensorType>> params = {
      {"w1", T("f32[4,3]")}, {"b1", T("f32[3]")}, {"w2", T("f32[3,2]")}, {"p", T("f64[6]")}};
  std::vector<NodeId> wrt;
  for (auto& [path, t] : params) {
    m.params.push_back({path, t, true});
    wrt.push_back(b.param(path, t));
  }
  NodeId h = b.must(Op::Relu, {b.must(Op::Add, {b.must(Op::MatMul, {x, wrt[0]}), wrt[1]})});
  NodeId y = b.must(Op::Sum, {b.must(Op::MatMul, {h, wrt[2]})});
  Attrs f32;
  f32.dtype = DType::F32;
  NodeId extra = b.must(Op::Cast, {b.must(Op::Sum, {b.must(Op::Square, {wrt[3]})})}, f32);
  NodeId loss = b.must(Op::Add, {y, extra});
  Gradients grads = differentiate(fn, loss, wrt);
  fn.outputs.push_back({"loss", loss});
  std::vector<std::string> names;
  for (size_t i = 0; i < params.size(); ++i) {
    names.push_back("grad:" + params[i].first);
    fn.outputs.push_back({names.back(), grads.grads[i]});
  }
  REQUIRE(verify(m, fn) == "");
  Module before = m, plain = m;
  for (Function& f : before.functions) REQUIRE(optimize(before, f) == "");
  auto want = run_cpu(before, "train_step");

  SECTION("buckets of 1 KiB: one per dtype") {
    CHECK(bucket_gradient_outputs(fn, names, 1024).buckets == 2);
  }
  SECTION("buckets of 16 bytes: w1 (48 bytes) and p (48) alone") {
    CHECK(bucket_gradient_outputs(fn, names, 16).buckets == 4);
    for (const Node* n : all_reduces(fn)) {
      int64_t bytes = 0;
      for (NodeId in : n->inputs)
        bytes += fn.type(in).shape.numel().value_or(0) * int64_t(size_bytes(fn.type(in).dtype));
      if (n->inputs.size() > 1) CHECK(bytes <= 16);
    }
  }
  INFO(to_text(m, fn));
  REQUIRE(verify(m, fn) == "");
  // Buckets in order of their last gradient, each of one dtype.
  NodeId previous = -1;
  for (const Node* n : all_reduces(fn)) {
    for (NodeId in : n->inputs) CHECK(fn.type(in).dtype == n->type.dtype);
    CHECK(n->inputs.back() > previous);
    previous = n->inputs.back();
  }
  // A device without other ranks takes the buckets out again: the
  // outputs are the backward's gradients, the values the same.
  Module elided = m;
  Function& e = elided.functions[0];
  CHECK(elide_buckets(e) == int(all_reduces(fn).size()));
  CHECK(all_reduces(e).empty());
  REQUIRE(verify(elided, e) == "");
  // The function as before the bucket pass (both without dead nodes).
  Module unbucketed = plain;
  eliminate_dead_code(unbucketed.functions[0]);
  CHECK(to_text(elided, e) == to_text(unbucketed, unbucketed.functions[0]));
  REQUIRE(optimize(elided, e) == "");
  CHECK(run_cpu(elided, "train_step") == want);
  REQUIRE(optimize(m, fn) == "");
  CHECK(run_cpu(m, "train_step") == want);
}

TEST_CASE("elide_buckets keeps a bucket that is read whole", "[ir][buckets]") {
  Module m;
  Function& fn = m.functions.emplace_back();
  fn.name = "f";
  Builder b(fn);
  NodeId a = b.input("a", T("f32[3]"));
  NodeId c = b.input("c", T("f32[2,2]"));
  std::vector<NodeId> both = {a, c};
  Attrs mean;
  mean.reduction = "mean";
  NodeId all = b.must(Op::AllReduce, std::span<const NodeId>(both.data(), 2), mean);
  NodeId one = b.must(Op::AllReduce, std::span<const NodeId>(&a, 1), mean);
  fn.outputs.push_back({"whole", all});
  fn.outputs.push_back({"alone", one});
  REQUIRE(verify(m, fn) == "");
  CHECK(elide_buckets(fn) == 1);  // the bucket of one, which is `a` itself
  REQUIRE(all_reduces(fn).size() == 1);
  CHECK(fn.node(fn.outputs[0].node).op == Op::AllReduce);
  CHECK(fn.node(fn.outputs[1].node).op == Op::Input);
  REQUIRE(verify(m, fn) == "");
}

TEST_CASE("gradient buckets of update's grad inputs repoint every use", "[ir][buckets]") {
  Module m;
  Function& fn = m.functions.emplace_back();
  fn.name = "update";
  Builder b(fn);
  NodeId ga = b.input("grad:a", T("f32[3]"));
  NodeId gb = b.input("grad:b", T("f32[2,2]"));
  NodeId other = b.input("other", T("f32[3]"));
  NodeId scaled = b.must(Op::Mul, {ga, b.scalar(0.5, DType::F32)});
  fn.outputs.push_back({"a", b.must(Op::Add, {scaled, other})});
  fn.outputs.push_back({"b", gb});
  REQUIRE(verify(m, fn) == "");
  Module before = m;
  const std::vector<std::string> names = {"grad:a", "grad:b"};
  GradientBuckets r = bucket_gradient_inputs(fn, names, 1024);
  INFO(to_text(m, fn));
  REQUIRE(verify(m, fn) == "");
  CHECK(r.buckets == 1);
  std::vector<const Node*> ars = all_reduces(fn);
  REQUIRE(ars.size() == 1);
  CHECK(ars[0]->type == T("f32[7]"));
  // Right after the last grad input; the mul and the output read the bucket.
  CHECK(NodeId(ars[0] - fn.nodes.data()) == r.new_id[size_t(gb)] + 1);
  const Node& mul = fn.node(r.new_id[size_t(scaled)]);
  CHECK(fn.node(mul.inputs[0]).op == Op::Slice);
  CHECK(fn.node(fn.outputs[1].node).op == Op::Reshape);
  CHECK(fn.node(r.new_id[size_t(other)]).op == Op::Input);
  CHECK(run_cpu(m, "update") == run_cpu(before, "update"));
}

TEST_CASE("the CPU all_reduce kernel sums over the Collective", "[ir][buckets][cpu]") {
  Module m;
  Function& fn = m.functions.emplace_back();
  fn.name = "f";
  Builder b(fn);
  NodeId x = b.input("x", T("f32[2,3]"));
  NodeId y = b.input("y", T("f32[]"));
  Attrs mean, sum;
  mean.reduction = "mean";
  sum.reduction = "sum";
  fn.outputs.push_back({"mean", b.must(Op::AllReduce, {x, y}, mean)});
  fn.outputs.push_back({"sum", b.must(Op::AllReduce, {y, x}, sum)});
  REQUIRE(verify(m, fn) == "");
  auto program = cpu::Program::compile(m, "f");
  REQUIRE(program.ok());
  std::vector<cpu::HostTensor> in = inputs_of(fn);
  std::vector<double> xs = in[0].to_doubles(), ys = in[1].to_doubles();
  auto one = (*program)->run(in);
  REQUIRE(one.ok());
  std::vector<double> packed = xs;
  packed.push_back(ys[0]);
  CHECK((*one)[0].to_doubles() == packed);  // a world of one packs

  auto three = std::make_shared<SameValues>(3);
  auto p3 = cpu::Program::compile(m, "f", cpu::Options{0, three});
  REQUIRE(p3.ok());
  auto out = (*p3)->run(in);
  REQUIRE(out.ok());
  CHECK(three->calls == 2);
  std::vector<double> got_mean = (*out)[0].to_doubles(), got_sum = (*out)[1].to_doubles();
  for (size_t i = 0; i < packed.size(); ++i) CHECK(got_mean[i] == Approx(packed[i]));
  CHECK(got_sum[0] == Approx(3 * ys[0]));
  CHECK(got_sum[1] == Approx(3 * xs[0]));

  auto gone = std::make_shared<SameValues>(2, "rank 1 is gone");
  auto p2 = cpu::Program::compile(m, "f", cpu::Options{0, gone});
  REQUIRE(p2.ok());
  auto failed = (*p2)->run(in);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().find("rank 1 is gone") != std::string::npos);
}

TEST_CASE("all_reduce's shape rule", "[ir][buckets]") {
  Attrs mean;
  mean.reduction = "mean";
  std::vector<TensorType> ok = {T("bf16[2,3]"), T("bf16[]"), T("bf16[4]")};
  CHECK(infer_type(Op::AllReduce, ok, mean).value() == T("bf16[11]"));
  std::vector<TensorType> mixed = {T("f32[2]"), T("f64[2]")};
  CHECK(infer_type(Op::AllReduce, mixed, mean).error().find("same dtype") != std::string::npos);
  std::vector<TensorType> ints = {T("i32[2]")};
  CHECK(infer_type(Op::AllReduce, ints, mean).error().find("floats") != std::string::npos);
  CHECK_FALSE(infer_type(Op::AllReduce, {}, mean).ok());
  std::vector<TensorType> one = {T("f32[2]")};
  CHECK_FALSE(infer_type(Op::AllReduce, one, {}).ok());
  Attrs max;
  max.reduction = "max";
  CHECK_FALSE(infer_type(Op::AllReduce, one, max).ok());
}
