// compose_views (devices/cuda/attention_views.h): a chain of slice, reshape
// and permute over a row-major buffer as one strided view, the way GPT-2's
// q, k and v sit in its qkv product, and the chains that are no view.
#include "catch.hpp"
#include "cuda/plan/attention_views.h"

using namespace sexpgpu;
using cpu::LoweredNode;
using ir::DType;
using ir::Op;

namespace {

LoweredNode node(Op op, ir::Shape shape, ir::Attrs attrs = {}) {
  LoweredNode n{op, {}, {DType::BF16, std::move(shape)}, std::move(attrs), -1, {}};
  return n;
}

LoweredNode slice_last(const ir::Shape& in, int64_t start, int64_t end) {
  ir::Attrs a;
  ir::Dims starts(size_t(in.rank()), 0), ends(in.begin(), in.end()), steps(size_t(in.rank()), 1);
  starts.back() = start;
  ends.back() = end;
  a.starts = starts, a.ends = ends, a.steps = steps;
  ir::Dims out(in.begin(), in.end());
  out.back() = end - start;
  return node(Op::Slice, ir::Shape(out), a);
}

LoweredNode permute(ir::Shape out, ir::Dims axes) {
  ir::Attrs a;
  a.axes = std::move(axes);
  return node(Op::Permute, std::move(out), a);
}

}  // namespace

TEST_CASE("k of a [B,T,3C] product is a strided [B,H,T,D] view", "[cuda][attention]") {
  const int64_t B = 2, T = 5, H = 3, D = 8, C = H * D;
  const ir::Shape qkv{B, T, 3 * C};
  const LoweredNode s = slice_last(qkv, C, 2 * C);
  const LoweredNode r = node(Op::Reshape, ir::Shape{B, T, H, D});
  const LoweredNode p = permute(ir::Shape{B, H, T, D}, ir::Dims{0, 2, 1, 3});
  std::optional<cuda::StridedView> v = cuda::compose_views(qkv, {&s, &r, &p});
  REQUIRE(v);
  CHECK(v->shape == ir::Dims{B, H, T, D});
  CHECK(v->strides == ir::Dims{T * 3 * C, D, 3 * C, 1});
  CHECK(v->offset == C);
}

TEST_CASE("chains that are no strided view are refused", "[cuda][attention]") {
  const int64_t B = 2, T = 5, H = 3, D = 8, C = H * D;
  // Merging H and D after the permute: they are no longer one inside the other.
  const ir::Shape bhtd{B, H, T, D};
  const LoweredNode p = permute(ir::Shape{B, T, H, D}, ir::Dims{0, 2, 1, 3});
  const LoweredNode r = node(Op::Reshape, ir::Shape{B, T, C});
  CHECK(!cuda::compose_views(bhtd, {&p, &r}));
  // An op that moves no data in place (a cast) ends the chain.
  const LoweredNode cast = node(Op::Cast, bhtd);
  CHECK(!cuda::compose_views(bhtd, {&cast}));
}
