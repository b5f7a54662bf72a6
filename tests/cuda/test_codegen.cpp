// The generated elementwise kernels compile: every elementwise op of
// ops.def at every dtype its shape rule accepts (as the CUDA lowering hands
// them over: bf16/f16 computed in f32, bool arithmetic in u8), plus a fused
// group with casts and broadcasting, go through NVRTC in one unit. NVRTC
// needs no GPU, so this runs in CI; the values are checked on a GPU by the
// conformance suite. Groups with views: test_views.cpp. The fusion plan
// recomputing a node read by several groups is checked here too.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "catch.hpp"
#include "cuda/codegen/elementwise.h"
#include "cuda/codegen/nvrtc_cache.h"
#include "cuda/context.h"
#include "cuda/disk_cache.h"
#include "cuda/plan/fusion.h"
#include "ir/elementwise.h"
#include "plan/lower.h"
#include "plan_context.h"

using namespace sexpgpu;
using ir::DType;
using ir::Op;

namespace {

// Appends a node of no attributes to `lowered`, returning its id.
auto node_adder(cpu::Lowered& lowered) {
  return [&lowered](Op op, ir::NodeIds inputs, const ir::TensorType& type) {
    lowered.nodes.push_back(cpu::LoweredNode{op, inputs, type, {}, -1, {}});
    return ir::NodeId(lowered.nodes.size() - 1);
  };
}

// Every test compiles for real: a fresh, empty kernel cache.
cuda::Context plan_context(cuda::NvrtcCache& cache) {
  return cuda::testing::plan_context(&cache);
}

// The dtype a lowered kernel computes `d` in (devices/cpu/lower.cpp).
DType compute(DType d) {
  if (d == DType::BF16 || d == DType::F16) return DType::F32;
  if (d == DType::Bool) return DType::U8;
  return d;
}

ir::Attrs to_bf16_attrs() {
  ir::Attrs a;
  a.dtype = DType::BF16;
  return a;
}

}  // namespace

TEST_CASE("every elementwise op at every dtype generates a kernel NVRTC compiles",
          "[cuda][codegen]") {
  cuda::NvrtcCache cache(90);
  cuda::Context ctx = plan_context(cache);
  // Rows of 8: every dtype also gets its vector kernel.
  ir::Shape shape{{3, 8}};
  int kernels = 0;
  for (size_t o = 0; o < ir::kOpCount; ++o) {
    Op op = Op(o);
    if (!ir::is_elementwise(op) || op == Op::StopGradient) continue;
    for (DType d : ir::kAllDTypes) {
      ir::Attrs attrs;
      if (op == Op::Cast) attrs.dtype = DType::BF16;
      std::vector<ir::TensorType> in(size_t(ir::info(op).arity), ir::TensorType{d, shape});
      if (op == Op::Where) in[0].dtype = DType::Bool;
      ir::Result<ir::TensorType> out = ir::infer_type(op, in, attrs);
      if (!out) continue;
      // Operands as the lowering leaves them.
      for (size_t k = 0; k < in.size(); ++k)
        if (!(op == Op::Where && k == 0) && op != Op::Cast) in[k].dtype = compute(in[k].dtype);
      ir::TensorType result = *out;
      bool computes = op != Op::Cast && op != Op::Where && ir::info(op).rule != ir::Rule::Compare &&
                      ir::info(op).rule != ir::Rule::UnaryBool;
      if (computes) result.dtype = compute(result.dtype);
      if (op == Op::Where) in[1].dtype = in[2].dtype = result.dtype;
      if (ir::info(op).rule == ir::Rule::Compare) in[1].dtype = in[0].dtype;
      cuda::ElementwiseGroup g{{{op, attrs, result.dtype, {}}}, in, result};
      for (size_t k = 0; k < in.size(); ++k) g.nodes[0].operands.push_back(-1 - int(k));
      cuda::KernelResult k = cuda::make_group_kernel(g, ctx);
      INFO(ir::info(op).ir_name << " " << ir::ir_name(d));
      REQUIRE(k);
      ++kernels;
    }
  }
  // Casts between every pair of dtypes.
  for (DType from : ir::kAllDTypes)
    for (DType to : ir::kAllDTypes) {
      ir::Attrs attrs;
      attrs.dtype = to;
      cuda::ElementwiseGroup g{
          {{Op::Cast, attrs, to, {-1}}}, {ir::TensorType{from, shape}}, ir::TensorType{to, shape}};
      REQUIRE(cuda::make_group_kernel(g, ctx));
      ++kernels;
    }
  CHECK(kernels > 300);
  std::string e = cache.build(false);
  INFO(e);
  CHECK(e.empty());
  CHECK(cache.stats().kernels > 0);
  CHECK(cache.stats().builds > 0);  // compiled, not read from a cache
  CHECK(cache.stats().cache_hits == 0);
}

TEST_CASE("a fused group with casts and broadcast operands generates one kernel",
          "[cuda][codegen]") {
  cuda::NvrtcCache cache(90);
  cuda::Context ctx = plan_context(cache);
  // y = bf16(gelu(f32(x) * w + b)), x bf16 [4, 8, 16], w f32 [16], b f32 [1, 8, 1]
  ir::TensorType x{DType::BF16, ir::Shape{{4, 8, 16}}}, w{DType::F32, ir::Shape{{16}}},
      b{DType::F32, ir::Shape{{1, 8, 1}}};
  ir::Attrs to_f32, to_bf16, none;
  to_f32.dtype = DType::F32;
  to_bf16.dtype = DType::BF16;
  cuda::ElementwiseGroup g{{{Op::Cast, to_f32, DType::F32, {-1}},
                            {Op::Mul, none, DType::F32, {0, -2}},
                            {Op::Add, none, DType::F32, {1, -3}},
                            {Op::Gelu, none, DType::F32, {2}},
                            {Op::Cast, to_bf16, DType::BF16, {3}}},
                           {x, w, b},
                           ir::TensorType{DType::BF16, x.shape}};
  std::string source = cuda::group_source(g, "fused_test");
  // w walks the last axis, b the middle one: coordinates, not the flat index.
  CHECK(source.find("in1[c") != std::string::npos);
  CHECK(source.find("in2[c") != std::string::npos);
  CHECK(source.find("in0[i]") != std::string::npos);
  CHECK(source.find("sg_to_bf16") != std::string::npos);
  cuda::KernelResult k = cuda::make_group_kernel(g, ctx);
  REQUIRE(k);
  CHECK(k->name.find("fused[cast,mul,add,gelu,cast]") != std::string::npos);
  std::string e = cache.build(false);
  INFO(e);
  CHECK(e.empty());
}

TEST_CASE("outputs of more than 2^31 elements index in 64 bits", "[cuda][codegen]") {
  cuda::NvrtcCache cache(90);
  cuda::Context ctx = plan_context(cache);
  ir::TensorType big{DType::BF16, ir::Shape{{3, int64_t(1) << 30}}};
  ir::TensorType row{DType::BF16, ir::Shape{{int64_t(1) << 30}}};
  ir::Attrs none;
  cuda::ElementwiseGroup g{
      {{Op::Add, none, DType::F32, {-1, -2}}}, {big, row}, ir::TensorType{DType::F32, big.shape}};
  std::string source = cuda::group_source(g, "wide");
  CHECK(source.find("for (long long i") != std::string::npos);
  REQUIRE(cuda::make_group_kernel(g, ctx));
  std::string e = cache.build(false);
  INFO(e);
  CHECK(e.empty());
}

TEST_CASE("shape-free groups of one code make one multi-tensor kernel", "[cuda][codegen]") {
  cuda::NvrtcCache cache(90);
  cuda::Context ctx = plan_context(cache);
  // An AdamW-like moment update p' = b*m + (1-b)*g over three parameter
  // shapes, the coefficient a scalar: the same code for every shape.
  ir::Attrs none;
  auto moment = [&](ir::Shape shape) {
    ir::TensorType t{DType::F32, shape}, scalar{DType::F32, ir::Shape{}};
    return cuda::ElementwiseGroup{{{Op::Mul, none, DType::F32, {-1, -2}},
                                   {Op::Mul, none, DType::F32, {-3, -4}},
                                   {Op::Add, none, DType::F32, {0, 1}}},
                                  {scalar, t, scalar, t},
                                  t};
  };
  std::vector<cuda::ElementwiseGroup> groups = {moment(ir::Shape{{768, 2304}}),
                                                moment(ir::Shape{{2304}}), moment(ir::Shape{{7}})};
  for (const auto& g : groups) REQUIRE(cuda::shape_free(g));
  CHECK(cuda::shape_free_key(groups[0]) == cuda::shape_free_key(groups[2]));
  // Broadcasting other than from a scalar is not shape-free.
  cuda::ElementwiseGroup bias = moment(ir::Shape{{4, 8}});
  bias.externals[0] = ir::TensorType{DType::F32, ir::Shape{{8}}};
  CHECK_FALSE(cuda::shape_free(bias));
  // 5 pointers and two counts a member: hundreds fit in a launch's parameters.
  CHECK(cuda::multi_group_capacity(groups[0]) >= 500);
  cuda::KernelResult k = cuda::make_multi_group_kernel(groups, ctx);
  REQUIRE(k);
  CHECK(k->name.find("multi-tensor x3") == 0);
  std::string source = cuda::multi_group_source(groups[0], 3, "mt");
  CHECK(source.find("e[3]") != std::string::npos);
  std::string e = cache.build(false);
  INFO(e);
  CHECK(e.empty());
  // Groups of other code are refused.
  groups.push_back(bias);
  CHECK_FALSE(cuda::make_multi_group_kernel(groups, ctx));
}

TEST_CASE("contiguous groups load and store vectors of 16 bytes", "[cuda][codegen]") {
  // GPT-2's bias add: f32 [16,1024,768] + f32 [768] and its bf16 cast.
  ir::Attrs none, to_bf16 = to_bf16_attrs();
  ir::TensorType x{DType::F32, ir::Shape{{16, 1024, 768}}}, b{DType::F32, ir::Shape{{768}}};
  cuda::ElementwiseGroup g{
      {{Op::Add, none, DType::F32, {-1, -2}}, {Op::Cast, to_bf16, DType::BF16, {0}}},
      {x, b},
      ir::TensorType{DType::BF16, x.shape}};
  std::string source = cuda::group_source(g, "bias");
  INFO(source);
  CHECK(source.find("bias_v(") != std::string::npos);
  CHECK(source.find("sg_load_vec<float, 8>(in0") != std::string::npos);
  CHECK(source.find("sg_load_vec<float, 8>(in1") != std::string::npos);  // the row of biases
  CHECK(source.find("sg_store_vec<unsigned short, 8>") != std::string::npos);
  CHECK(source.find("for (int i") != std::string::npos);  // 32-bit indices
  // An inner axis of odd length: elements one at a time.
  cuda::ElementwiseGroup odd = g;
  odd.externals = {ir::TensorType{DType::F32, ir::Shape{{5, 7}}},
                   ir::TensorType{DType::F32, ir::Shape{{7}}}};
  odd.output = ir::TensorType{DType::BF16, ir::Shape{{5, 7}}};
  CHECK(cuda::group_source(odd, "odd").find("odd_v") == std::string::npos);

  cuda::NvrtcCache cache(90);
  cuda::Context ctx = plan_context(cache);
  REQUIRE(cuda::make_group_kernel(g, ctx));
  REQUIRE(cuda::make_group_kernel(odd, ctx));
  std::string e = cache.build(false);
  INFO(e);
  CHECK(e.empty());
}

TEST_CASE("a cheap node read by several groups is recomputed in each", "[cuda][codegen]") {
  cuda::NvrtcCache cache(90);
  cuda::Context ctx = plan_context(cache);
  // AdamW's moments of the clipped gradient d = g * coef: m' = m*b + d*b
  // and v' = v*b + square(d)*b, both function outputs.
  ir::TensorType t{DType::F32, ir::Shape{{4, 8}}}, scalar{DType::F32, ir::Shape{}};
  cpu::Lowered lowered;
  auto add_node = node_adder(lowered);
  ir::NodeId g = add_node(Op::Input, {}, t), coef = add_node(Op::Input, {}, scalar);
  ir::NodeId m = add_node(Op::Input, {}, t), v = add_node(Op::Input, {}, t);
  ir::NodeId b = add_node(Op::Input, {}, scalar);
  ir::NodeId d = add_node(Op::Mul, {g, coef}, t);
  ir::NodeId m1 = add_node(Op::Mul, {m, b}, t), m2 = add_node(Op::Mul, {d, b}, t);
  ir::NodeId m_out = add_node(Op::Add, {m1, m2}, t);
  ir::NodeId sq = add_node(Op::Square, {d}, t);
  ir::NodeId v1 = add_node(Op::Mul, {v, b}, t), v2 = add_node(Op::Mul, {sq, b}, t);
  ir::NodeId v_out = add_node(Op::Add, {v1, v2}, t);
  size_t count = lowered.nodes.size();
  std::vector<bool> live(count, true), is_output(count, false), keep(count, false);
  is_output[size_t(m_out)] = is_output[size_t(v_out)] = true;

  cuda::FusionPlan plan = cuda::fusion_groups(lowered, live, is_output, keep);
  CHECK(plan.group[size_t(d)] == -1);
  REQUIRE(plan.recomputed_in[size_t(d)].size() == 2);
  int m_group = plan.group[size_t(m_out)], v_group = plan.group[size_t(v_out)];
  CHECK(m_group != v_group);
  CHECK(plan.group[size_t(m2)] == m_group);
  CHECK(plan.group[size_t(sq)] == v_group);
  std::vector<ir::NodeId> m_members = {d, m1, m2, m_out}, v_members = {d, sq, v1, v2, v_out};
  ir::NodeIds externals;
  std::optional<cuda::ElementwiseGroup> m_fused =
      cuda::fused_group(lowered, m_members, live, plan, externals);
  REQUIRE(m_fused);
  CHECK(std::find(externals.begin(), externals.end(), g) != externals.end());
  CHECK(std::find(externals.begin(), externals.end(), d) == externals.end());
  REQUIRE(cuda::fused_group(lowered, v_members, live, plan, externals));
  // Still shape-free: the parameters' updates stay one multi-tensor launch.
  REQUIRE(cuda::shape_free(*m_fused));
  cuda::ElementwiseGroup other = *m_fused;
  ir::TensorType wide{DType::F32, ir::Shape{{768, 2304}}};
  other.output = wide;
  for (ir::TensorType& e : other.externals)
    if (e.shape == t.shape) e = wide;
  CHECK(cuda::shape_free_key(other) == cuda::shape_free_key(*m_fused));
  REQUIRE(cuda::make_multi_group_kernel({*m_fused, other}, ctx));
  std::string e = cache.build(false);
  INFO(e);
  CHECK(e.empty());

  // Kept (its groups could not be one kernel), the node is its own group's last.
  keep[size_t(d)] = true;
  cuda::FusionPlan kept = cuda::fusion_groups(lowered, live, is_output, keep);
  CHECK(kept.recomputed_in[size_t(d)].empty());
  CHECK(kept.group[size_t(d)] >= 0);
  CHECK(kept.group[size_t(d)] != kept.group[size_t(m_out)]);
  CHECK(kept.group[size_t(d)] != kept.group[size_t(v_out)]);
}

TEST_CASE("scalar groups read only by later steps share one kernel", "[cuda][codegen]") {
  // An optimizer's schedule and bias corrections: two scalar groups, each
  // read (broadcast) by the update's group, run as one kernel that stores
  // the first's value beside its own.
  ir::TensorType t{DType::F32, ir::Shape{{8, 8}}}, scalar{DType::F32, ir::Shape{}};
  cpu::Lowered lowered;
  auto add_node = node_adder(lowered);
  ir::NodeId x = add_node(Op::Input, {}, t), a = add_node(Op::Input, {}, scalar);
  ir::NodeId b = add_node(Op::Input, {}, scalar);
  ir::NodeId s1 = add_node(Op::Neg, {add_node(Op::Exp, {a}, scalar)}, scalar);
  ir::NodeId s2 = add_node(Op::Neg, {add_node(Op::Sqrt, {b}, scalar)}, scalar);
  ir::NodeId out = add_node(Op::Add, {add_node(Op::Mul, {x, s1}, t), s2}, t);
  size_t count = lowered.nodes.size();
  std::vector<bool> live(count, true), is_output(count, false);
  is_output[size_t(out)] = true;
  cuda::GroupPlan groups = cuda::plan_groups(lowered, live, is_output);
  int g = groups.fusion.group[size_t(s2)];
  REQUIRE(g >= 0);
  CHECK(groups.fusion.group[size_t(s1)] == g);
  CHECK(groups.stored[g] == std::vector<ir::NodeId>{s1});
  REQUIRE(groups.fused.count(g));
  CHECK(groups.fused[g].first.stores.size() == 1);
  CHECK(groups.fusion.group[size_t(out)] != g);
}

TEST_CASE("a sum of a square of an input squares on load", "[cuda][codegen]") {
  // The global norm's sum(square(g)), alone; beside a group that then
  // recomputes the square (an unclipped AdamW's second moment); a square
  // also read by a product stays in memory.
  ir::TensorType t{DType::F32, ir::Shape{{8, 8}}}, scalar{DType::F32, ir::Shape{}};
  cpu::Lowered lowered;
  auto add_node = node_adder(lowered);
  ir::NodeId g = add_node(Op::Input, {}, t), h = add_node(Op::Input, {}, t);
  ir::NodeId k = add_node(Op::Input, {}, t);
  ir::NodeId g2 = add_node(Op::Square, {g}, t), g_sum = add_node(Op::Sum, {g2}, scalar);
  ir::NodeId h2 = add_node(Op::Square, {h}, t), h_sum = add_node(Op::Sum, {h2}, scalar);
  ir::NodeId h_neg = add_node(Op::Neg, {h2}, t);
  ir::NodeId k2 = add_node(Op::Square, {k}, t), k_sum = add_node(Op::Sum, {k2}, scalar);
  ir::NodeId k_product = add_node(Op::MatMul, {k2, k2}, t);
  size_t count = lowered.nodes.size();
  std::vector<bool> live(count, true), is_output(count, false);
  for (ir::NodeId o : {g_sum, h_sum, h_neg, k_sum, k_product}) is_output[size_t(o)] = true;
  cuda::GroupPlan groups = cuda::plan_groups(lowered, live, is_output);
  std::map<size_t, size_t> summed = cuda::squares_to_sum_on_load(lowered, live, is_output, groups);
  CHECK(summed.size() == 2);
  CHECK(summed[size_t(g_sum)] == size_t(g2));
  CHECK(summed[size_t(h_sum)] == size_t(h2));
  CHECK(groups.fusion.recomputed_in[size_t(h2)] ==
        std::vector<int>{groups.fusion.group[size_t(h_neg)]});
  CHECK(groups.fusion.recomputed_in[size_t(k2)].empty());
}

TEST_CASE("kernels with a bf16 result take tanh from tanh.approx, others from tanhf",
          "[cuda][codegen]") {
  cuda::NvrtcCache cache(90);
  cuda::Context ctx = plan_context(cache);
  ir::TensorType x{DType::F32, ir::Shape{{64, 32}}};
  ir::Attrs to_bf16 = to_bf16_attrs(), none;
  auto group = [&](DType result) {
    std::vector<cuda::GroupNode> nodes{{Op::GeluTanh, none, DType::F32, {-1}},
                                       {Op::Tanh, none, DType::F32, {0}}};
    if (result == DType::BF16) nodes.push_back({Op::Cast, to_bf16, DType::BF16, {1}});
    return cuda::ElementwiseGroup{nodes, {x}, ir::TensorType{result, x.shape}};
  };
  std::string half = cuda::group_source(group(DType::BF16), "tanh_bf16");
  CHECK(half.find("sg_gelu_tanh_approx(") != std::string::npos);
  CHECK(half.find("sg_tanh_approx(") != std::string::npos);
  std::string full = cuda::group_source(group(DType::F32), "tanh_f32");
  CHECK(full.find("_approx(") == std::string::npos);
  CHECK(full.find("sg_tanh(") != std::string::npos);
  REQUIRE(cuda::make_group_kernel(group(DType::BF16), ctx));
  REQUIRE(cuda::make_group_kernel(group(DType::F32), ctx));
  std::string e = cache.build(false);
  INFO(e);
  CHECK(e.empty());
}

TEST_CASE("a group whose result a later group reads is computed and stored by that group",
          "[cuda][codegen]") {
  cuda::NvrtcCache cache(90);
  cuda::Context ctx = plan_context(cache);
  // An optimizer's step: m' = m*b + g*b and v' = v*b + square(g)*b are
  // function outputs, and p' = p - m' / sqrt(v') reads both. Without
  // stores, three kernels; with them, one writing p', m' and v'.
  ir::TensorType t{DType::F32, ir::Shape{{4, 8}}}, scalar{DType::F32, ir::Shape{}};
  cpu::Lowered lowered;
  auto add_node = node_adder(lowered);
  ir::NodeId g = add_node(Op::Input, {}, t), p = add_node(Op::Input, {}, t);
  ir::NodeId m = add_node(Op::Input, {}, t), v = add_node(Op::Input, {}, t);
  ir::NodeId b = add_node(Op::Input, {}, scalar);
  ir::NodeId m1 = add_node(Op::Mul, {m, b}, t), m2 = add_node(Op::Mul, {g, b}, t);
  ir::NodeId m_out = add_node(Op::Add, {m1, m2}, t);
  ir::NodeId sq = add_node(Op::Square, {g}, t);
  ir::NodeId v1 = add_node(Op::Mul, {v, b}, t), v2 = add_node(Op::Mul, {sq, b}, t);
  ir::NodeId v_out = add_node(Op::Add, {v1, v2}, t);
  ir::NodeId root = add_node(Op::Sqrt, {v_out}, t);
  ir::NodeId step = add_node(Op::Div, {m_out, root}, t);
  ir::NodeId p_out = add_node(Op::Sub, {p, step}, t);
  size_t count = lowered.nodes.size();
  std::vector<bool> live(count, true), is_output(count, false);
  is_output[size_t(m_out)] = is_output[size_t(v_out)] = is_output[size_t(p_out)] = true;

  cuda::GroupPlan plan = cuda::plan_groups(lowered, live, is_output);
  int group = plan.fusion.group[size_t(p_out)];
  CHECK(plan.fusion.group[size_t(m_out)] == group);
  CHECK(plan.fusion.group[size_t(v_out)] == group);
  CHECK(plan.members.size() == 1);
  REQUIRE(plan.stored.count(group));
  CHECK(plan.stored[group] == std::vector<ir::NodeId>{m_out, v_out});
  REQUIRE(plan.fused.count(group));
  const cuda::ElementwiseGroup& fused = plan.fused.at(group).first;
  REQUIRE(fused.stores.size() == 2);
  CHECK(plan.members[group][size_t(fused.stores[0])] == m_out);
  CHECK(plan.members[group][size_t(fused.stores[1])] == v_out);
  const ir::NodeIds& externals = plan.fused.at(group).second;
  CHECK(std::find(externals.begin(), externals.end(), m_out) == externals.end());
  CHECK(std::find(externals.begin(), externals.end(), v_out) == externals.end());

  // Its kernel writes all three, element by element and as vectors; the
  // multi-tensor form of a parameter list's updates too.
  std::string source = cuda::group_source(fused, "stores");
  CHECK(source.find("out1[i] = v") != std::string::npos);
  CHECK(source.find("out2[i] = v") != std::string::npos);
  CHECK(source.find("sg_store_vec<float, 4>(out2 + i, o2)") != std::string::npos);
  REQUIRE(cuda::shape_free(fused));
  cuda::ElementwiseGroup other = fused;
  ir::TensorType wide{DType::F32, ir::Shape{{768, 2304}}};
  other.output = wide;
  for (ir::TensorType& e : other.externals)
    if (e.shape == t.shape) e = wide;
  CHECK(cuda::shape_free_key(other) == cuda::shape_free_key(fused));
  std::string multi = cuda::multi_group_source(fused, 2, "mt");
  CHECK(multi.find("float* out2;") != std::string::npos);
  // Also a kernel over vectors of 4 floats, for when every pointer is aligned.
  CHECK(multi.find("mt_v(const mt_table t)") != std::string::npos);
  CHECK(multi.find("sg_load_vec<float, 4>(in") != std::string::npos);
  CHECK(multi.find("sg_store_vec<float, 4>(out2 + i, o2)") != std::string::npos);
  REQUIRE(cuda::make_group_kernel(fused, ctx));
  REQUIRE(cuda::make_multi_group_kernel({fused, other}, ctx));
  std::string e = cache.build(false);
  INFO(e);
  CHECK(e.empty());
}

TEST_CASE("a group whose result is read before its reading group's kernel keeps its own",
          "[cuda][codegen]") {
  // x = a + b is read by the group of y = x * a and, earlier, by a sum:
  // y's kernel runs after the sum, too late to write x for it.
  ir::TensorType t{DType::F32, ir::Shape{{4, 8}}}, scalar{DType::F32, ir::Shape{}};
  cpu::Lowered lowered;
  auto add_node = node_adder(lowered);
  ir::NodeId a = add_node(Op::Input, {}, t), b = add_node(Op::Input, {}, t);
  ir::NodeId x = add_node(Op::Add, {a, b}, t);
  ir::NodeId total = add_node(Op::Sum, {x}, scalar);
  ir::NodeId scaled = add_node(Op::Mul, {a, total}, t);
  ir::NodeId y = add_node(Op::Mul, {x, scaled}, t);
  size_t count = lowered.nodes.size();
  std::vector<bool> live(count, true), is_output(count, false);
  is_output[size_t(y)] = is_output[size_t(total)] = true;
  cuda::GroupPlan plan = cuda::plan_groups(lowered, live, is_output);
  CHECK(plan.stored.empty());
  CHECK(plan.fusion.group[size_t(x)] != plan.fusion.group[size_t(y)]);

  // With the sum reading x after y, y's kernel stores x for it.
  cpu::Lowered later;
  for (ir::NodeId id : {a, b, x}) later.nodes.push_back(lowered.nodes[size_t(id)]);
  later.nodes.push_back(cpu::LoweredNode{Op::Mul, {0, 0}, t, {}, -1, {}});  // 3: a * a
  later.nodes.push_back(cpu::LoweredNode{Op::Mul, {2, 3}, t, {}, -1, {}});  // 4: y
  later.nodes.push_back(cpu::LoweredNode{Op::Sum, {2}, scalar, {}, -1, {}});
  std::vector<bool> later_live(6, true), later_output(6, false);
  later_output[4] = later_output[5] = true;
  cuda::GroupPlan stored = cuda::plan_groups(later, later_live, later_output);
  int group = stored.fusion.group[4];
  REQUIRE(stored.stored.count(group));
  CHECK(stored.stored[group] == std::vector<ir::NodeId>{2});
}

TEST_CASE("a build splits into units the cache keeps; a corrupt entry is compiled again",
          "[cuda][codegen]") {
  cuda::testing::fresh_kernel_cache();
  const std::string dir = cuda::disk_cache::directory();
  // Eleven kernels in three units of at least four each; the fourth kernel's
  // source also defines another, which stays in its unit.
  auto add_all = [](cuda::NvrtcCache& cache) {
    for (int i = 0; i < 10; ++i) {
      std::string name = "sg_test_scale_" + std::to_string(i);
      std::string body = "(float* x) { x[threadIdx.x] *= " + std::to_string(i + 2) + ".0f; }";
      std::string source = "extern \"C\" __global__ void " + name + body;
      if (i == 3) source += "\nextern \"C\" __global__ void " + name + "_v" + body;
      cache.add(name, source);
      if (i == 3) cache.add(name + "_v", "");
    }
  };
  {
    cuda::NvrtcCache cold(90);
    add_all(cold);
    REQUIRE(cold.build(false).empty());
    CHECK(cold.stats().builds == 3);
    CHECK(cold.stats().cache_hits == 0);
    CHECK(cold.stats().kernels == 11);
  }
  std::vector<std::filesystem::path> entries;
  for (const auto& e : std::filesystem::directory_iterator(dir)) entries.push_back(e.path());
  REQUIRE(entries.size() == 3);
  {
    cuda::NvrtcCache warm(90);
    add_all(warm);
    REQUIRE(warm.build(false).empty());
    CHECK(warm.stats().builds == 0);
    CHECK(warm.stats().cache_hits == 3);
  }
  // One byte of one image changed: its checksum fails, that unit compiles again.
  {
    std::fstream f(entries[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(64);
    f.put('\x5a');
  }
  std::vector<char> payload;
  CHECK_FALSE(cuda::disk_cache::read(entries[0], payload));
  {
    cuda::NvrtcCache again(90);
    add_all(again);
    REQUIRE(again.build(false).empty());
    CHECK(again.stats().builds == 1);
    CHECK(again.stats().cache_hits == 2);
  }
  CHECK(cuda::disk_cache::read(entries[0], payload));
}
