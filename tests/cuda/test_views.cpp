// Fusion groups with views (elementwise_views.h): the per-element plan is
// run on the host against the unfused ops (slice, permute, pad, ... computed
// here from their definitions in ops.def), the vector form's assumptions
// are checked at every vector, and the kernels go through NVRTC, which
// needs no GPU. The values on a GPU are the conformance suite's.
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "catch.hpp"
#include "cuda/codegen/elementwise.h"
#include "cuda/codegen/elementwise_views.h"
#include "cuda/codegen/nvrtc_cache.h"
#include "cuda/context.h"
#include "plan_context.h"

using namespace sexpgpu;
using ir::DType;
using ir::Op;

namespace {

// Every test compiles for real: a fresh, empty kernel cache.
cuda::Context plan_context(cuda::NvrtcCache& cache) {
  return cuda::testing::plan_context(&cache);
}

// A row-major tensor of doubles, for the reference of the unfused ops.
struct HostTensor {
  std::vector<int64_t> dims;
  std::vector<double> v;
};

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> c(dims.size());
  for (size_t a = dims.size(); a-- > 0;) {
    c[a] = flat % dims[a];
    flat /= dims[a];
  }
  return c;
}

int64_t ravel(const std::vector<int64_t>& c, const std::vector<int64_t>& dims) {
  int64_t f = 0;
  for (size_t a = 0; a < dims.size(); ++a) f = f * dims[a] + c[a];
  return f;
}

// The output of `dims` whose element at c is x at where(c), or `fill`
// where that is outside x (nullopt).
template <class Where>
HostTensor gather(const HostTensor& x, std::vector<int64_t> dims, Where where) {
  HostTensor out{dims, {}};
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  for (int64_t i = 0; i < n; ++i) out.v.push_back(where(unravel(i, dims), x));
  return out;
}

HostTensor slice_ref(const HostTensor& x, int64_t axis, int64_t start, int64_t stop) {
  std::vector<int64_t> dims = x.dims;
  dims[size_t(axis)] = stop - start;
  return gather(x, dims, [&](std::vector<int64_t> c, const HostTensor& t) {
    c[size_t(axis)] += start;
    return t.v[size_t(ravel(c, t.dims))];
  });
}

HostTensor permute_ref(const HostTensor& x, const std::vector<int64_t>& axes) {
  std::vector<int64_t> dims;
  for (int64_t a : axes) dims.push_back(x.dims[size_t(a)]);
  return gather(x, dims, [&](const std::vector<int64_t>& c, const HostTensor& t) {
    std::vector<int64_t> in(c.size());
    for (size_t k = 0; k < axes.size(); ++k) in[size_t(axes[k])] = c[k];
    return t.v[size_t(ravel(in, t.dims))];
  });
}

HostTensor pad_ref(const HostTensor& x, int64_t axis, int64_t before, int64_t after, double fill) {
  std::vector<int64_t> dims = x.dims;
  dims[size_t(axis)] += before + after;
  return gather(x, dims, [&](std::vector<int64_t> c, const HostTensor& t) {
    c[size_t(axis)] -= before;
    if (c[size_t(axis)] < 0 || c[size_t(axis)] >= t.dims[size_t(axis)]) return fill;
    return t.v[size_t(ravel(c, t.dims))];
  });
}

// Runs the plan for every output element as the generated kernel does,
// with doubles for values (the groups here only cast, add and move).
std::vector<double> run_plan(const cuda::ElementwiseGroup& g, const cuda::ViewPlan& plan,
                             const std::vector<HostTensor>& externals) {
  int64_t n = g.output.shape.numel().value_or(0);
  std::vector<double> out;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> reg(plan.registers.size(), -1e300);
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      const cuda::ViewStep& st = plan.steps[s];
      const cuda::GroupNode& node = g.nodes[size_t(std::max(st.source, 0))];
      switch (st.kind) {
        case cuda::ViewStep::Load: {
          int64_t at = cuda::evaluate(st.offset, i);
          const HostTensor& x = externals[size_t(st.source)];
          REQUIRE(at >= 0);
          REQUIRE(at < int64_t(x.v.size()));
          reg[size_t(st.reg)] = x.v[size_t(at)];
          break;
        }
        case cuda::ViewStep::Compute: {
          double a = reg[size_t(st.operands[0])];
          if (node.op == Op::Add)
            a += reg[size_t(st.operands[1])];
          else
            REQUIRE(node.op == Op::Cast);
          reg[size_t(st.reg)] = a;
          break;
        }
        case cuda::ViewStep::Fill: reg[size_t(st.reg)] = node.attrs.value.value_or(0.0); break;
        case cuda::ViewStep::Guarded: {
          bool inside = true;
          for (const cuda::Bound& b : st.bounds) {
            int64_t at = cuda::evaluate(b.index, i);
            if (b.index->lo < b.lo) inside = inside && at >= b.lo;
            if (b.index->hi >= b.hi) inside = inside && at < b.hi;
          }
          for (int depth = 0; !inside; ++s) {
            if (plan.steps[s].kind == cuda::ViewStep::Guarded) ++depth;
            if (plan.steps[s].kind == cuda::ViewStep::EndGuard && --depth == 0) break;
          }
          break;
        }
        case cuda::ViewStep::EndGuard: reg[size_t(st.reg)] = reg[size_t(st.operands[0])]; break;
      }
    }
    out.push_back(reg[size_t(plan.result)]);
  }
  return out;
}

// What the vector form assumes of the plan at width v, checked at every
// vector: offsets it loads as vectors step by one from a multiple of v,
// those it loads once stay, and guards hold alike for the whole vector.
void check_vector_form(const cuda::ViewPlan& plan, int64_t v, int64_t n) {
  auto holds = [&](const cuda::Index& e, int64_t i0) {
    cuda::Along a = cuda::along(e, v);
    int64_t first = cuda::evaluate(e, i0);
    if (a == cuda::Along::FixedAligned && first % v != 0) return false;
    if (a == cuda::Along::Step && first % v != 0) return false;
    for (int64_t j = 1; j < v; ++j) {
      int64_t at = cuda::evaluate(e, i0 + j);
      if (a == cuda::Along::Step && at != first + j) return false;
      if ((a == cuda::Along::Fixed || a == cuda::Along::FixedAligned) && at != first) return false;
    }
    return true;
  };
  for (int64_t i0 = 0; i0 < n; i0 += v)
    for (const cuda::ViewStep& st : plan.steps) {
      if (st.offset) REQUIRE(holds(st.offset, i0));
      for (const cuda::Bound& b : st.bounds) {
        // Only the guard's outcome must not change: compare it element by element.
        auto inside = [&](int64_t i) {
          int64_t at = cuda::evaluate(b.index, i);
          return at >= b.lo && at < b.hi;
        };
        for (int64_t j = 1; j < v; ++j) REQUIRE(inside(i0 + j) == inside(i0));
      }
    }
}

HostTensor iota(std::vector<int64_t> dims) {
  HostTensor t{dims, {}};
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  for (int64_t i = 0; i < n; ++i) t.v.push_back(double(i + 1));
  return t;
}

ir::Attrs attrs_of(std::function<void(ir::Attrs&)> set) {
  ir::Attrs a;
  set(a);
  return a;
}

ir::Shape shape_of(const std::vector<int64_t>& d) {
  return ir::Shape{ir::Dims(d.begin(), d.end())};
}

}  // namespace

TEST_CASE("attention heads' backward: slice, cast, permute, reshape, pad, add as one kernel",
          "[cuda][codegen][views]") {
  // g [B,H,3T,D] bf16 -> per part: slice T rows, cast f32, permute to
  // [B,T,H,D], reshape [B,T,C], pad to [B,T,3C]; then add the three.
  const int64_t B = 2, H = 3, T = 5, D = 4, C = H * D;
  ir::Attrs none, to_f32 = attrs_of([](ir::Attrs&a) { a.dtype = DType::F32; });
  cuda::ElementwiseGroup g;
  g.externals = {ir::TensorType{DType::BF16, shape_of({B, H, 3 * T, D})}};
  g.output = ir::TensorType{DType::F32, shape_of({B, T, 3 * C})};
  std::vector<int> padded;
  for (int64_t part = 0; part < 3; ++part) {
    int base = int(g.nodes.size());
    g.nodes.push_back({Op::Slice,
                       attrs_of([&](ir::Attrs& a) {
                         a.starts = ir::Dims{0, 0, part * T, 0};
                         a.ends = ir::Dims{B, H, (part + 1) * T, D};
                         a.steps = ir::Dims{1, 1, 1, 1};
                       }),
                       DType::BF16,
                       {-1}});
    g.shapes.push_back(shape_of({B, H, T, D}));
    g.nodes.push_back({Op::Cast, to_f32, DType::F32, {base}});
    g.shapes.push_back(shape_of({B, H, T, D}));
    g.nodes.push_back({Op::Permute,
                       attrs_of([](ir::Attrs& a) {
                         a.axes = ir::Dims{0, 2, 1, 3};
                       }),
                       DType::F32,
                       {base + 1}});
    g.shapes.push_back(shape_of({B, T, H, D}));
    g.nodes.push_back({Op::Reshape,
                       attrs_of([&](ir::Attrs& a) {
                         a.shape = ir::Dims{B, T, C};
                       }),
                       DType::F32,
                       {base + 2}});
    g.shapes.push_back(shape_of({B, T, C}));
    g.nodes.push_back({Op::Pad,
                       attrs_of([&](ir::Attrs& a) {
                         a.pads = ir::Dims{0, 0, 0, 0, part * C, (2 - part) * C};
                         a.value = 0.0;
                       }),
                       DType::F32,
                       {base + 3}});
    g.shapes.push_back(shape_of({B, T, 3 * C}));
    padded.push_back(base + 4);
  }
  g.nodes.push_back({Op::Add, none, DType::F32, {padded[0], padded[1]}});
  g.shapes.push_back(g.output.shape);
  g.nodes.push_back({Op::Add, none, DType::F32, {int(g.nodes.size()) - 1, padded[2]}});
  g.shapes.push_back(g.output.shape);
  REQUIRE(cuda::has_views(g));
  CHECK_FALSE(cuda::shape_free(g));

  ir::Result<cuda::ViewPlan> plan = cuda::plan_views(g);
  REQUIRE(plan);
  HostTensor x = iota({B, H, 3 * T, D});
  std::vector<HostTensor> parts;
  for (int64_t part = 0; part < 3; ++part) {
    HostTensor p = permute_ref(slice_ref(x, 2, part * T, (part + 1) * T), {0, 2, 1, 3});
    p.dims = {B, T, C};
    parts.push_back(pad_ref(p, 2, part * C, (2 - part) * C, 0.0));
  }
  std::vector<double> want;
  for (size_t i = 0; i < parts[0].v.size(); ++i)
    want.push_back(parts[0].v[i] + parts[1].v[i] + parts[2].v[i]);
  CHECK(run_plan(g, *plan, {x}) == want);
  // Four f32 a thread: the pads' bounds (multiples of 4) split no vector.
  REQUIRE(cuda::view_vector_width(g, *plan) == 4);
  check_vector_form(*plan, 4, g.output.shape.numel().value_or(0));

  cuda::NvrtcCache cache(90);
  cuda::Context ctx = plan_context(cache);
  std::string source = cuda::group_source(g, "heads_backward");
  INFO(source);
  CHECK(source.find("if (") != std::string::npos);  // the pads' guards
  CHECK(source.find("heads_backward_v(") != std::string::npos);
  CHECK(source.find("sg_load_vec<unsigned short, 4>") != std::string::npos);
  CHECK(source.find("sg_from_bf16") != std::string::npos);
  cuda::KernelResult k = cuda::make_group_kernel(g, ctx);
  REQUIRE(k);
  std::string e = cache.build(false);
  INFO(e);
  CHECK(e.empty());
}

TEST_CASE("attention heads' forward: slice, reshape, permute, cast as one kernel",
          "[cuda][codegen][views]") {
  const int64_t B = 2, H = 3, T = 5, D = 4, C = H * D;
  ir::Attrs to_bf16 = attrs_of([](ir::Attrs& a) { a.dtype = DType::BF16; });
  for (int64_t part = 0; part < 3; ++part) {
    cuda::ElementwiseGroup g;
    g.externals = {ir::TensorType{DType::F32, shape_of({B, T, 3 * C})}};
    g.output = ir::TensorType{DType::BF16, shape_of({B, H, T, D})};
    g.nodes = {{Op::Slice,
                attrs_of([&](ir::Attrs& a) {
                  a.starts = ir::Dims{0, 0, part * C};
                  a.ends = ir::Dims{B, T, (part + 1) * C};
                  a.steps = ir::Dims{1, 1, 1};
                }),
                DType::F32,
                {-1}},
               {Op::Reshape,
                attrs_of([&](ir::Attrs& a) {
                  a.shape = ir::Dims{B, T, H, D};
                }),
                DType::F32,
                {0}},
               {Op::Permute,
                attrs_of([](ir::Attrs& a) {
                  a.axes = ir::Dims{0, 2, 1, 3};
                }),
                DType::F32,
                {1}},
               {Op::Cast, to_bf16, DType::BF16, {2}}};
    g.shapes = {shape_of({B, T, C}), shape_of({B, T, H, D}), shape_of({B, H, T, D}),
                shape_of({B, H, T, D})};
    ir::Result<cuda::ViewPlan> plan = cuda::plan_views(g);
    REQUIRE(plan);
    HostTensor x = iota({B, T, 3 * C});
    HostTensor s = slice_ref(x, 2, part * C, (part + 1) * C);
    s.dims = {B, T, H, D};
    CHECK(run_plan(g, *plan, {x}) == permute_ref(s, {0, 2, 1, 3}).v);
    // One load a thread: the reshape merges (h, d) back into the slice's axis.
    CHECK(plan->steps.size() == 2);
    CHECK_FALSE(plan->wide);
    for (int64_t v : {2, 4, 8}) check_vector_form(*plan, v, g.output.shape.numel().value_or(0));
  }
  // GPT-2's sizes: 8 bf16 a thread, from vectors of 8 f32 of the slice.
  {
    const int64_t B = 16, H = 12, T = 1024, D = 64, C = H * D;
    cuda::ElementwiseGroup g;
    g.externals = {ir::TensorType{DType::F32, shape_of({B, T, 3 * C})}};
    g.output = ir::TensorType{DType::BF16, shape_of({B, H, T, D})};
    g.nodes = {{Op::Slice,
                attrs_of([&](ir::Attrs& a) {
                  a.starts = ir::Dims{0, 0, C};
                  a.ends = ir::Dims{B, T, 2 * C};
                  a.steps = ir::Dims{1, 1, 1};
                }),
                DType::F32,
                {-1}},
               {Op::Reshape,
                attrs_of([&](ir::Attrs& a) {
                  a.shape = ir::Dims{B, T, H, D};
                }),
                DType::F32,
                {0}},
               {Op::Permute,
                attrs_of([](ir::Attrs& a) {
                  a.axes = ir::Dims{0, 2, 1, 3};
                }),
                DType::F32,
                {1}},
               {Op::Cast, to_bf16, DType::BF16, {2}}};
    g.shapes = {shape_of({B, T, C}), shape_of({B, T, H, D}), shape_of({B, H, T, D}),
                shape_of({B, H, T, D})};
    ir::Result<cuda::ViewPlan> plan = cuda::plan_views(g);
    REQUIRE(plan);
    REQUIRE(cuda::view_vector_width(g, *plan) == 8);
    REQUIRE(plan->steps.size() == 2);
    CHECK(cuda::along(plan->steps[0].offset, 8) == cuda::Along::Step);
    std::string source = cuda::group_source(g, "heads_forward");
    INFO(source);
    CHECK(source.find("sg_load_vec<float, 8>(in0") != std::string::npos);
    CHECK(source.find("sg_store_vec<unsigned short, 8>") != std::string::npos);
    cuda::NvrtcCache cache(90);
    cuda::Context ctx = plan_context(cache);
    REQUIRE(cuda::make_group_kernel(g, ctx));
    std::string e = cache.build(false);
    INFO(e);
    CHECK(e.empty());
  }
}

TEST_CASE("views alone move stored bits; flip, expand and stepped slices index right",
          "[cuda][codegen][views]") {
  // y = flip(permute(slice(x, step 2)), axis 0) + expand(b), all f32;
  // then a bf16 copy through slice and permute only.
  ir::Attrs none;
  cuda::ElementwiseGroup g;
  g.externals = {ir::TensorType{DType::F32, shape_of({6, 4})},
                 ir::TensorType{DType::F32, shape_of({1, 3})}};
  g.output = ir::TensorType{DType::F32, shape_of({4, 3})};
  g.nodes = {{Op::Slice,
              attrs_of([](ir::Attrs& a) {
                a.starts = ir::Dims{1, 0};
                a.ends = ir::Dims{6, 4};
                a.steps = ir::Dims{2, 1};
              }),
              DType::F32,
              {-1}},
             {Op::Permute,
              attrs_of([](ir::Attrs& a) {
                a.axes = ir::Dims{1, 0};
              }),
              DType::F32,
              {0}},
             {Op::Flip, attrs_of([](ir::Attrs& a) { a.axes = ir::Dims{0}; }), DType::F32, {1}},
             {Op::Expand,
              attrs_of([](ir::Attrs& a) {
                a.shape = ir::Dims{4, 3};
              }),
              DType::F32,
              {-2}},
             {Op::Add, none, DType::F32, {2, 3}}};
  g.shapes = {shape_of({3, 4}), shape_of({4, 3}), shape_of({4, 3}), shape_of({4, 3}),
              shape_of({4, 3})};
  ir::Result<cuda::ViewPlan> plan = cuda::plan_views(g);
  REQUIRE(plan);
  HostTensor x = iota({6, 4}), b{{1, 3}, {100, 200, 300}};
  std::vector<double> want;
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 3; ++c)
      want.push_back(x.v[size_t((1 + 2 * c) * 4 + (3 - r))] + b.v[size_t(c)]);
  CHECK(run_plan(g, *plan, {x, b}) == want);
  check_vector_form(*plan, 2, 12);
  check_vector_form(*plan, 4, 12);

  cuda::ElementwiseGroup copy;
  copy.externals = {ir::TensorType{DType::BF16, shape_of({4, 6})}};
  copy.output = ir::TensorType{DType::BF16, shape_of({6, 2})};
  copy.nodes = {{Op::Slice,
                 attrs_of([](ir::Attrs& a) {
                   a.starts = ir::Dims{1, 0};
                   a.ends = ir::Dims{3, 6};
                   a.steps = ir::Dims{1, 1};
                 }),
                 DType::BF16,
                 {-1}},
                {Op::Permute,
                 attrs_of([](ir::Attrs& a) {
                   a.axes = ir::Dims{1, 0};
                 }),
                 DType::BF16,
                 {0}}};
  copy.shapes = {shape_of({2, 6}), shape_of({6, 2})};
  std::string source = cuda::group_source(copy, "copy");
  INFO(source);
  CHECK(source.find("sg_to_bf16") == std::string::npos);  // bits, not values

  cuda::NvrtcCache cache(90);
  cuda::Context ctx = plan_context(cache);
  REQUIRE(cuda::make_group_kernel(g, ctx));
  REQUIRE(cuda::make_group_kernel(copy, ctx));
  std::string e = cache.build(false);
  INFO(e);
  CHECK(e.empty());
}
TEST_CASE("every view at every dtype fuses into kernels NVRTC compiles", "[cuda][codegen][views]") {
  // x [2,1,6] -> expand [2,3,6] -> slice [2,3,4] (step 1 from 1) -> permute
  // [4,2,3] -> flip axis 0 -> reshape [8,3] -> pad [9,5]; alone (bits
  // moved) and then cast to f32 (values), with a NaN pad value.
  cuda::NvrtcCache cache(90);
  cuda::Context ctx = plan_context(cache);
  for (DType d : ir::kAllDTypes) {
    cuda::ElementwiseGroup g;
    g.externals = {ir::TensorType{d, shape_of({2, 1, 6})}};
    g.nodes = {{Op::Expand,
                attrs_of([](ir::Attrs& a) {
                  a.shape = ir::Dims{2, 3, 6};
                }),
                d,
                {-1}},
               {Op::Slice,
                attrs_of([](ir::Attrs& a) {
                  a.starts = ir::Dims{0, 0, 1};
                  a.ends = ir::Dims{2, 3, 5};
                  a.steps = ir::Dims{1, 1, 1};
                }),
                d,
                {0}},
               {Op::Permute,
                attrs_of([](ir::Attrs& a) {
                  a.axes = ir::Dims{2, 0, 1};
                }),
                d,
                {1}},
               {Op::Flip, attrs_of([](ir::Attrs& a) { a.axes = ir::Dims{0}; }), d, {2}},
               {Op::Reshape,
                attrs_of([](ir::Attrs& a) {
                  a.shape = ir::Dims{8, 3};
                }),
                d,
                {3}},
               {Op::Pad,
                attrs_of([](ir::Attrs& a) {
                  a.pads = ir::Dims{1, 0, 1, 1};
                  a.value = std::nan("");
                }),
                d,
                {4}}};
    g.shapes = {shape_of({2, 3, 6}), shape_of({2, 3, 4}), shape_of({4, 2, 3}),
                shape_of({4, 2, 3}), shape_of({8, 3}),    shape_of({9, 5})};
    g.output = ir::TensorType{d, shape_of({9, 5})};
    INFO(ir::ir_name(d));
    ir::Result<cuda::ViewPlan> plan = cuda::plan_views(g);
    REQUIRE(plan);
    REQUIRE(cuda::make_group_kernel(g, ctx));
    if (d == DType::F32) {
      // The same chain on the host, with a pad value that compares.
      cuda::ElementwiseGroup numbered = g;
      numbered.nodes[5].attrs.value = -7.0;
      HostTensor x = iota({2, 1, 6});
      HostTensor e = gather(x, {2, 3, 6}, [](std::vector<int64_t> c, const HostTensor& t) {
        c[1] = 0;
        return t.v[size_t(ravel(c, t.dims))];
      });
      HostTensor p = permute_ref(slice_ref(e, 2, 1, 5), {2, 0, 1});
      HostTensor f = gather(p, p.dims, [](std::vector<int64_t> c, const HostTensor& t) {
        c[0] = t.dims[0] - 1 - c[0];
        return t.v[size_t(ravel(c, t.dims))];
      });
      f.dims = {8, 3};
      HostTensor want = pad_ref(pad_ref(f, 0, 1, 0, -7.0), 1, 1, 1, -7.0);
      ir::Result<cuda::ViewPlan> numbered_plan = cuda::plan_views(numbered);
      REQUIRE(numbered_plan);
      CHECK(run_plan(numbered, *numbered_plan, {x}) == want.v);
    }
    ir::Attrs to_f32 = attrs_of([](ir::Attrs& a) { a.dtype = DType::F32; });
    g.nodes.push_back({Op::Cast, to_f32, DType::F32, {5}});
    g.shapes.push_back(shape_of({9, 5}));
    g.output.dtype = DType::F32;
    REQUIRE(cuda::make_group_kernel(g, ctx));
  }
  std::string e = cache.build(false);
  INFO(e);
  CHECK(e.empty());
}
