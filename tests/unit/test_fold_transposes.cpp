// fold_transposes (devices/cpu/lower.h) on a tied embedding in bf16: the
// f32 weight is transposed, cast to bf16 and read by the head's product and,
// transposed back, by the gradient's. With native half products (the CUDA
// lowering) the cast then reads the untransposed weight and neither product
// needs a transposed copy; a cast read by anything but products is left
// alone.
#include "catch.hpp"
#include "ir/graph.h"
#include "plan/lower.h"

using namespace sexpgpu::ir;
using sexpgpu::cpu::Lowered;
using sexpgpu::cpu::LowerOptions;

namespace {

TensorType T(std::string_view text) {
  return *parse_tensor_type(text);
}

Attrs axes(Dims a) {
  Attrs at;
  at.axes = std::move(a);
  return at;
}

Attrs to(DType d) {
  Attrs at;
  at.dtype = d;
  return at;
}

struct TiedHead {
  Function fn;
  NodeId w = -1, cast = -1, head = -1, grad = -1;

  // head = x @ bf16(w^T); grad = g @ (bf16(w^T))^T; with `also_added`, the
  // cast is read by an add too.
  explicit TiedHead(bool also_added) {
    Builder b(fn);
    NodeId x = b.input("x", T("bf16[2,3]")), g = b.input("g", T("bf16[2,4]"));
    w = b.input("w", T("f32[4,3]"));
    cast = b.must(Op::Cast, {b.must(Op::Permute, {w}, axes({1, 0}))}, to(DType::BF16));
    head = b.must(Op::MatMul, {x, cast});
    grad = b.must(Op::MatMul, {g, b.must(Op::Permute, {cast}, axes({1, 0}))});
    fn.outputs = {{"head", head}, {"grad", grad}};
    if (also_added) fn.outputs.push_back({"sum", b.must(Op::Add, {cast, cast})});
  }

  Lowered lowered() const {
    Lowered l = sexpgpu::cpu::lower(fn, LowerOptions{.native_half_matmul = true});
    sexpgpu::cpu::fold_transposes(l);
    return l;
  }
};

}  // namespace

TEST_CASE("fold_transposes: a tied embedding's cast reads the weight untransposed",
          "[lower][fold_transposes]") {
  TiedHead f(false);
  Lowered l = f.lowered();
  const auto& cast = l.nodes[size_t(l.of_original[size_t(f.cast)])];
  CHECK(cast.inputs[0] == l.of_original[size_t(f.w)]);
  CHECK(cast.type == T("bf16[4,3]"));
  const auto& head = l.nodes[size_t(l.of_original[size_t(f.head)])];
  CHECK(head.inputs[1] == l.of_original[size_t(f.cast)]);
  CHECK(head.transposed[1]);
  // The gradient's transpose back is the cast's values themselves: a
  // reshape read in place, not transposed.
  const auto& grad = l.nodes[size_t(l.of_original[size_t(f.grad)])];
  const auto& back = l.nodes[size_t(grad.inputs[1])];
  CHECK(back.op == Op::Reshape);
  CHECK(back.inputs[0] == l.of_original[size_t(f.cast)]);
  CHECK(back.type == T("bf16[4,3]"));
  CHECK_FALSE(grad.transposed[1]);
}

TEST_CASE("fold_transposes: a cast that something else reads keeps its transpose",
          "[lower][fold_transposes]") {
  TiedHead f(true);
  Lowered l = f.lowered();
  const auto& cast = l.nodes[size_t(l.of_original[size_t(f.cast)])];
  CHECK(cast.type == T("bf16[3,4]"));
  CHECK(l.nodes[size_t(cast.inputs[0])].op == Op::Permute);
  const auto& head = l.nodes[size_t(l.of_original[size_t(f.head)])];
  CHECK_FALSE(head.transposed[1]);
  const auto& grad = l.nodes[size_t(l.of_original[size_t(f.grad)])];
  CHECK(grad.inputs[1] == l.of_original[size_t(f.cast)]);  // its transpose folded as before
  CHECK(grad.transposed[1]);
}
