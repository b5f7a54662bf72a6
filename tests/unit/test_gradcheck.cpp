// Gradient checks (STYLE.md, "Gradients are IR"): every differentiable op of
// ops.def, differentiated by autodiff and run on the CPU executor in f64,
// against central finite differences of the same forward function.
//
// Each case builds op(x...) from random operands (broadcast where the op
// broadcasts, away from kinks and ties), the loss sum(op(x...) * w) with
// random weights w, and its gradients; the analytic gradient of every
// element of every differentiated operand must match
// (L(x + h) - L(x - h)) / 2h. A differentiable op without a case fails the
// coverage test, so coverage cannot shrink silently.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "catch.hpp"
#include "cpu/program.h"
#include "conformance/unary_domain.h"
#include "ir/autodiff.h"
#include "ir/elementwise.h"
#include "ir/passes.h"

using namespace sexpgpu::ir;
using sexpgpu::cpu::HostTensor;
using sexpgpu::cpu::Program;

namespace {

using Values = std::vector<double>;

std::string param_name(size_t i) {
  return "p" + std::to_string(i);
}

// One forward function under test: its operands and their values.
class CaseBuilder {
 public:
  explicit CaseBuilder(uint64_t seed) : rng_(seed) { module_.functions.emplace_back().name = "f"; }

  Function& fn() { return module_.functions[0]; }
  Module& module() { return module_; }
  std::mt19937_64& rng() { return rng_; }

  // A differentiated operand (a parameter), named param_name(its index).
  NodeId param(const Shape& shape, const Values& values, DType dtype = DType::F64) {
    TensorType t{dtype, shape};
    std::string path = param_name(wrt_.size());
    NodeId id = Builder(fn()).param(path, t);
    module_.params.push_back({path, t, true});
    wrt_.push_back(id);
    values_[path] = values;
    return id;
  }
  NodeId param(const Shape& shape, const std::function<double()>& draw) {
    return param(shape, draw_n(shape, draw));
  }
  // An operand that is not differentiated: ids, targets, conditions, masks.
  NodeId input(const TensorType& t, const Values& values) {
    std::string name = "in" + std::to_string(values_.size());
    NodeId id = Builder(fn()).input(name, t);
    values_[name] = values;
    return id;
  }
  NodeId op(Op op, std::initializer_list<NodeId> in, Attrs attrs = {}) {
    return Builder(fn()).must(op, in, std::move(attrs));
  }

  Values draw_n(const Shape& shape, const std::function<double()>& draw) {
    Values v(size_t(*shape.numel()));
    for (double& x : v) x = draw();
    return v;
  }
  // Uniform in [lo, hi).
  std::function<double()> uniform(double lo, double hi) {
    return [this, lo, hi] { return std::uniform_real_distribution<double>(lo, hi)(rng_); };
  }
  // Magnitude in [lo, hi), either sign: away from the kink at 0.
  std::function<double()> away_from_zero(double lo, double hi) {
    return [this, lo, hi] {
      double m = std::uniform_real_distribution<double>(lo, hi)(rng_);
      return (rng_() & 1) ? m : -m;
    };
  }
  // n values, pairwise at least (hi - lo) / (2n) apart, in random order: no
  // ties for max, min and max pooling.
  Values distinct(size_t n, double lo = -2, double hi = 2) {
    Values v(n);
    double step = (hi - lo) / double(n);
    for (size_t i = 0; i < n; ++i) v[i] = lo + step * (double(i) + 0.25 + 0.5 * uniform(0, 1)());
    std::shuffle(v.begin(), v.end(), rng_);
    return v;
  }

  const std::vector<NodeId>& wrt() const { return wrt_; }
  // A leaf's values by its name (node ids change when a pass renumbers).
  const Values& values(const std::string& name) const { return values_.at(name); }

 private:
  Module module_;
  std::mt19937_64 rng_;
  std::vector<NodeId> wrt_;
  std::map<std::string, Values> values_;
};

struct GradCase {
  std::string label;
  Op op;
  std::function<NodeId(CaseBuilder&)> build;  // returns op's node
};

Dims dims(std::initializer_list<int64_t> d) {
  Dims out;
  for (int64_t x : d) out.push_back(x);
  return out;
}

Attrs reduce_attrs(std::initializer_list<int64_t> axes, bool keepdims = false) {
  Attrs a;
  if (axes.size() > 0) a.axes = dims(axes);
  a.keepdims = keepdims;
  return a;
}

Attrs axis_attr(int64_t axis) {
  Attrs a;
  a.axis = axis;
  return a;
}

GradCase unary(Op op, double lo, double hi, bool away_from_zero = false) {
  return {std::string(info(op).ir_name), op, [=](CaseBuilder& c) {
            auto draw = away_from_zero ? c.away_from_zero(lo, hi) : c.uniform(lo, hi);
            return c.op(op, {c.param({3, 4}, draw)});
          }};
}

GradCase binary(Op op, Shape a, Shape b, std::function<double()> (*draw_a)(CaseBuilder&),
                std::function<double()> (*draw_b)(CaseBuilder&)) {
  std::string label = std::string(info(op).ir_name) + " " + a.to_string() + " " + b.to_string();
  return {label, op, [=](CaseBuilder& c) {
            NodeId x = c.param(a, draw_a(c)), y = c.param(b, draw_b(c));
            return c.op(op, {x, y});
          }};
}

std::function<double()> any(CaseBuilder& c) {
  return c.uniform(-2, 2);
}
std::function<double()> positive(CaseBuilder& c) {
  return c.uniform(0.5, 2);
}
std::function<double()> nonzero(CaseBuilder& c) {
  return c.away_from_zero(0.3, 2);
}

// Two operands with no ties between any of their elements.
GradCase extremum(Op op, Shape a, Shape b) {
  std::string label = std::string(info(op).ir_name) + " " + a.to_string() + " " + b.to_string();
  return {label, op, [=](CaseBuilder& c) {
            size_t na = size_t(*a.numel()), nb = size_t(*b.numel());
            Values v = c.distinct(na + nb);
            NodeId x = c.param(a, Values(v.begin(), v.begin() + long(na)));
            NodeId y = c.param(b, Values(v.begin() + long(na), v.end()));
            return c.op(op, {x, y});
          }};
}

GradCase reduction(Op op, std::initializer_list<int64_t> axes, bool keepdims = false,
                   bool distinct = false, std::optional<int64_t> correction = {}) {
  Attrs a = reduce_attrs(axes, keepdims);
  a.correction = correction;
  std::string label =
      std::string(info(op).ir_name) + " axes " +
      (axes.size() ? Shape(std::span<const int64_t>(axes.begin(), axes.size())).to_string()
                   : "all") +
      (keepdims ? " keepdims" : "") +
      (correction ? " correction " + std::to_string(*correction) : "");
  return {label, op, [=](CaseBuilder& c) {
            Shape s{2, 3, 4};
            NodeId x = distinct         ? c.param(s, c.distinct(24))
                       : op == Op::Prod ? c.param(s, c.away_from_zero(0.5, 1.5))
                                        : c.param(s, c.uniform(-2, 2));
            return c.op(op, {x}, a);
          }};
}

GradCase matmul(Shape a, Shape b) {
  return binary(Op::MatMul, a, b, any, any);
}

Attrs slice_attrs(Dims starts, Dims ends, Dims steps) {
  Attrs a;
  a.starts = starts;
  a.ends = ends;
  a.steps = steps;
  return a;
}

Attrs ce_attrs(std::string reduction, std::optional<int64_t> ignore = {}) {
  Attrs a;
  a.reduction = reduction;
  a.ignore_index = ignore;
  return a;
}

GradCase cross_entropy(std::string label, Shape logits, Values targets, Attrs attrs) {
  return {"cross_entropy " + label, Op::CrossEntropy, [=](CaseBuilder& c) {
            Shape rows(Dims(logits.begin(), logits.end() - 1));
            NodeId z = c.param(logits, c.uniform(-2, 2));
            NodeId t = c.input({DType::I32, rows}, targets);
            return c.op(Op::CrossEntropy, {z, t}, attrs);
          }};
}

Attrs norm_attrs(double eps) {
  Attrs a;
  a.eps = eps;
  return a;
}

// attention over [1,2,Tq,4] queries and [1,2,Tk,4] keys and values; mask_kind
// 0: none, 1: a float mask (a param), 2 and 3: bool masks. Only the float
// mask's gradient is written out; the others go through attention_grad.
GradCase attention(std::string label, int64_t tq, int64_t tk, bool causal, int mask_kind) {
  return {"attention " + label, Op::Attention, [=](CaseBuilder& c) {
            Attrs a;
            a.scale = 0.5;
            a.causal = causal;
            NodeId q = c.param({1, 2, tq, 4}, c.uniform(-1, 1));
            NodeId k = c.param({1, 2, tk, 4}, c.uniform(-1, 1));
            NodeId v = c.param({1, 2, tk, 4}, c.uniform(-1, 1));
            if (mask_kind == 0) return c.op(Op::Attention, {q, k, v}, a);
            if (mask_kind == 1)
              return c.op(Op::Attention, {q, k, v, c.param({1, 1, tq, tk}, c.uniform(-1, 1))}, a);
            // Hide key j from query i when (i + 2j) % 3 == 1; mask_kind 3 hides
            // every key of query 1 as well.
            Values keep(size_t(tq * tk));
            for (int64_t i = 0; i < tq; ++i)
              for (int64_t j = 0; j < tk; ++j)
                keep[size_t(i * tk + j)] = (i + 2 * j) % 3 != 1 && !(mask_kind == 3 && i == 1);
            return c.op(Op::Attention, {q, k, v, c.input({DType::Bool, {tq, tk}}, keep)}, a);
          }};
}

Attrs conv_attrs(Dims stride, Dims padding, Dims dilation, int64_t groups, Dims shape = {}) {
  Attrs a;
  a.stride = stride;
  a.padding = padding;
  a.dilation = dilation;
  a.groups = groups;
  if (!shape.empty()) a.shape = shape;
  return a;
}

Attrs pool_attrs(Dims kernel, Dims stride, Dims padding, Dims shape = {}) {
  Attrs a;
  a.kernel = kernel;
  a.stride = stride;
  a.padding = padding;
  if (!shape.empty()) a.shape = shape;
  return a;
}

std::vector<GradCase> elementwise_cases() {
  std::vector<GradCase> cases = {
      unary(Op::Neg, -2, 2),
      unary(Op::Abs, 0.2, 2, true),
      unary(Op::Square, -2, 2),
      unary(Op::Relu, 0.2, 2, true),
      binary(Op::Add, {3, 4}, {4}, any, any),
      binary(Op::Add, {2, 1, 3}, {4, 1}, any, any),
      binary(Op::Sub, {3, 1}, {3, 4}, any, any),
      binary(Op::Mul, {2, 3, 4}, {3, 1}, any, any),
      binary(Op::Div, {3, 4}, {4}, any, nonzero),
      binary(Op::Pow, {3, 4}, {4}, positive, any),
      binary(Op::Atan2, {3, 4}, {1, 4}, nonzero, nonzero),
      extremum(Op::Maximum, {3, 4}, {4}),
      extremum(Op::Minimum, {3, 1}, {3, 4}),
  };
  // Every differentiable float unary op (float_unary.def), over its domain
  // in the tests' table (tests/conformance/unary_domains.def).
  for (const OpInfo& oi : kOps) {
    if (!is_float_unary(oi.op) || !oi.differentiable) continue;
    sexpgpu::testing::UnaryDomain d = sexpgpu::testing::unary_domain(oi.op);
    cases.push_back(unary(oi.op, d.lo, d.hi, d.away_from_zero));
  }
  cases.push_back({"gelu through 0", Op::Gelu, [](CaseBuilder& c) {
                     return c.op(Op::Gelu, {c.param({4}, Values{0.0, -1.5, 0.7, 2.5})});
                   }});
  cases.push_back({"add f32 + f64 (promotion)", Op::Add, [](CaseBuilder& c) {
                     NodeId a = c.param({3}, Values{0.5, -1.25, 2.0}, DType::F32);
                     return c.op(Op::Add, {a, c.param({2, 3}, c.uniform(-1, 1))});
                   }});
  cases.push_back(
      {"where", Op::Where, [](CaseBuilder& c) {
         NodeId cond = c.input({DType::Bool, {3, 1}}, {1, 0, 1});
         NodeId a = c.param({3, 4}, c.uniform(-2, 2)), b = c.param({4}, c.uniform(-2, 2));
         return c.op(Op::Where, {cond, a, b});
       }});
  cases.push_back({"clamp", Op::Clamp, [](CaseBuilder& c) {
                     // x avoids lo (about -0.5) and hi (0.6) by 0.1 or more.
                     Values xs;
                     while (xs.size() < 12) {
                       double x = c.uniform(-1.5, 1.5)();
                       if (std::abs(x + 0.5) > 0.15 && std::abs(x - 0.6) > 0.1) xs.push_back(x);
                     }
                     NodeId x = c.param({3, 4}, xs);
                     NodeId lo = c.param({4}, c.uniform(-0.55, -0.45));
                     NodeId hi = c.param({}, Values{0.6});
                     return c.op(Op::Clamp, {x, lo, hi});
                   }});
  cases.push_back(
      {"cast f32 -> f64", Op::Cast, [](CaseBuilder& c) {
         Attrs a;
         a.dtype = DType::F64;
         return c.op(Op::Cast, {c.param({4}, Values{0.5, -1.5, 2.25, 3.0}, DType::F32)}, a);
       }});
  return cases;
}

std::vector<GradCase> reduction_cases() {
  return {
      reduction(Op::Sum, {1}),
      reduction(Op::Sum, {0, 2}, true),
      reduction(Op::Prod, {2}),
      {"prod with zeros", Op::Prod,
       [](CaseBuilder& c) {  // one zero in row 0, two in row 1
         NodeId x = c.param({2, 4}, Values{0.5, 0.0, -1.5, 1.25, 0.0, 2.0, 0.0, -0.75});
         return c.op(Op::Prod, {x}, reduce_attrs({1}));
       }},
      reduction(Op::Max, {1}, false, true),
      reduction(Op::Max, {}, false, true),
      reduction(Op::Min, {0, 2}, true, true),
      reduction(Op::Mean, {2}),
      reduction(Op::Var, {1}),
      reduction(Op::Var, {}, false, false, 0),
      reduction(Op::Std, {2}, true),
      reduction(Op::Std, {}),
      reduction(Op::LogSumExp, {1}),
      reduction(Op::Norm, {}),
      reduction(Op::Norm, {0}, true),
      matmul({2, 3}, {3, 4}),
      matmul({3}, {3, 4}),
      matmul({2, 3}, {3}),
      matmul({3}, {3}),
      matmul({2, 1, 2, 3}, {3, 3, 2}),
  };
}

std::vector<GradCase> shape_cases() {
  auto x234 = [](CaseBuilder& c) { return c.param({2, 3, 4}, c.uniform(-2, 2)); };
  return {
      {"reshape", Op::Reshape,
       [=](CaseBuilder& c) {
         Attrs a;
         a.shape = dims({4, 6});
         return c.op(Op::Reshape, {x234(c)}, a);
       }},
      {"permute", Op::Permute,
       [=](CaseBuilder& c) {
         Attrs a;
         a.axes = dims({2, 0, 1});
         return c.op(Op::Permute, {x234(c)}, a);
       }},
      {"expand", Op::Expand,
       [](CaseBuilder& c) {
         Attrs a;
         a.shape = dims({2, 3, 4});
         return c.op(Op::Expand, {c.param({3, 1}, c.uniform(-2, 2))}, a);
       }},
      {"concat", Op::Concat,
       [](CaseBuilder& c) {
         NodeId a = c.param({2, 1}, c.uniform(-2, 2)), b = c.param({2, 3}, c.uniform(-2, 2));
         NodeId d = c.param({2, 2}, c.uniform(-2, 2));
         return c.op(Op::Concat, {a, b, d}, axis_attr(1));
       }},
      {"slice with steps", Op::Slice,
       [](CaseBuilder& c) {
         NodeId x = c.param({5, 7}, c.uniform(-2, 2));
         return c.op(Op::Slice, {x}, slice_attrs(dims({1, 0}), dims({5, 7}), dims({2, 3})));
       }},
      {"slice inner block", Op::Slice,
       [](CaseBuilder& c) {
         NodeId x = c.param({4, 7}, c.uniform(-2, 2));
         return c.op(Op::Slice, {x}, slice_attrs(dims({0, 2}), dims({3, 6}), dims({1, 4})));
       }},
      {"take rows (repeated ids)", Op::Take,
       [](CaseBuilder& c) {
         NodeId table = c.param({5, 3}, c.uniform(-2, 2));
         NodeId ids = c.input({DType::I32, {2, 3}}, {4, 0, 4, 2, 2, 1});
         return c.op(Op::Take, {table, ids}, axis_attr(0));
       }},
      {"take along axis 1", Op::Take,
       [](CaseBuilder& c) {
         NodeId x = c.param({3, 5}, c.uniform(-2, 2));
         NodeId ids = c.input({DType::I64, {4}}, {3, 0, 3, 1});
         return c.op(Op::Take, {x, ids}, axis_attr(1));
       }},
      {"index_add", Op::IndexAdd,
       [](CaseBuilder& c) {
         NodeId g = c.param({4, 3}, c.uniform(-2, 2));
         NodeId ids = c.input({DType::I32, {4}}, {1, 3, 1, 0});
         Attrs a = axis_attr(0);
         a.shape = dims({5, 3});
         return c.op(Op::IndexAdd, {g, ids}, a);
       }},
      {"pad", Op::Pad,
       [](CaseBuilder& c) {
         Attrs a;
         a.pads = dims({1, 0, 2, 1});
         a.value = 0.5;
         return c.op(Op::Pad, {c.param({2, 3}, c.uniform(-2, 2))}, a);
       }},
      {"flip", Op::Flip,
       [=](CaseBuilder& c) {
         Attrs a;
         a.axes = dims({0, 2});
         return c.op(Op::Flip, {x234(c)}, a);
       }},
  };
}

std::vector<GradCase> neural_cases() {
  auto logits = [](CaseBuilder& c) { return c.param({3, 5}, c.uniform(-2, 2)); };
  return {
      {"softmax axis 1", Op::Softmax,
       [=](CaseBuilder& c) { return c.op(Op::Softmax, {logits(c)}, axis_attr(1)); }},
      {"softmax axis 0", Op::Softmax,
       [=](CaseBuilder& c) { return c.op(Op::Softmax, {logits(c)}, axis_attr(0)); }},
      {"log_softmax", Op::LogSoftmax,
       [=](CaseBuilder& c) { return c.op(Op::LogSoftmax, {logits(c)}, axis_attr(-1)); }},
      cross_entropy("mean", {4, 5}, {1, 0, 4, 1}, ce_attrs("mean")),
      cross_entropy("mean, ignore -1", {4, 5}, {1, -1, 4, 1}, ce_attrs("mean", -1)),
      cross_entropy("sum", {4, 5}, {3, 0, 2, 2}, ce_attrs("sum")),
      cross_entropy("none", {4, 5}, {3, 0, 2, 2}, ce_attrs("none")),
      cross_entropy("3-D, ignore class 2", {2, 3, 4}, {2, 0, 1, 3, 2, 1}, ce_attrs("mean", 2)),
      {"layer_norm", Op::LayerNorm,
       [](CaseBuilder& c) {
         NodeId x = c.param({3, 5}, c.uniform(-2, 2));
         NodeId w = c.param({5}, c.uniform(0.5, 1.5)), b = c.param({5}, c.uniform(-1, 1));
         return c.op(Op::LayerNorm, {x, w, b}, norm_attrs(1e-5));
       }},
      {"rms_norm", Op::RmsNorm,
       [](CaseBuilder& c) {
         NodeId x = c.param({2, 3, 4}, c.uniform(-2, 2)), w = c.param({4}, c.uniform(0.5, 1.5));
         return c.op(Op::RmsNorm, {x, w}, norm_attrs(1e-6));
       }},
      attention("plain", 3, 3, false, 0),
      attention("causal, Tq < Tk", 3, 5, true, 0),
      attention("float mask", 3, 4, false, 1),
      attention("bool mask and causal", 3, 3, true, 2),
      attention("causal, Tq > Tk: queries 0, 1 see no key", 5, 3, true, 0),
      attention("bool mask hiding every key of query 1, Tq < Tk", 3, 5, false, 3),
      {"conv2d groups, stride, padding, dilation", Op::Conv2d,
       [](CaseBuilder& c) {
         NodeId x = c.param({1, 4, 6, 7}, c.uniform(-1, 1));
         NodeId w = c.param({6, 2, 3, 3}, c.uniform(-1, 1));
         return c.op(Op::Conv2d, {x, w}, conv_attrs(dims({2, 1}), dims({1, 0}), dims({1, 2}), 2));
       }},
      {"conv2d", Op::Conv2d,
       [](CaseBuilder& c) {
         NodeId x = c.param({2, 2, 4, 4}, c.uniform(-1, 1));
         NodeId w = c.param({3, 2, 3, 3}, c.uniform(-1, 1));
         return c.op(Op::Conv2d, {x, w}, conv_attrs(dims({1, 1}), dims({1, 1}), dims({1, 1}), 1));
       }},
      {"conv2d_grad_input", Op::Conv2dGradInput,
       [](CaseBuilder& c) {
         NodeId g = c.param({1, 2, 3, 3}, c.uniform(-1, 1));
         NodeId w = c.param({2, 2, 3, 3}, c.uniform(-1, 1));
         return c.op(Op::Conv2dGradInput, {g, w},
                     conv_attrs(dims({2, 2}), dims({1, 1}), dims({1, 1}), 1, dims({1, 2, 6, 5})));
       }},
      {"conv2d_grad_weight", Op::Conv2dGradWeight,
       [](CaseBuilder& c) {
         NodeId x = c.param({1, 2, 5, 5}, c.uniform(-1, 1));
         NodeId g = c.param({1, 2, 3, 3}, c.uniform(-1, 1));
         return c.op(Op::Conv2dGradWeight, {x, g},
                     conv_attrs(dims({2, 2}), dims({1, 1}), dims({1, 1}), 1, dims({2, 2, 3, 3})));
       }},
      {"max_pool2d, padded", Op::MaxPool2d,
       [](CaseBuilder& c) {
         NodeId x = c.param({1, 2, 5, 5}, c.distinct(50));
         return c.op(Op::MaxPool2d, {x}, pool_attrs(dims({2, 2}), dims({2, 2}), dims({1, 1})));
       }},
      {"max_pool2d, overlapping", Op::MaxPool2d,
       [](CaseBuilder& c) {
         NodeId x = c.param({1, 2, 4, 5}, c.distinct(40));
         return c.op(Op::MaxPool2d, {x}, pool_attrs(dims({3, 2}), dims({1, 1}), dims({0, 0})));
       }},
      {"avg_pool2d", Op::AvgPool2d,
       [](CaseBuilder& c) {
         NodeId x = c.param({1, 2, 5, 5}, c.uniform(-1, 1));
         return c.op(Op::AvgPool2d, {x}, pool_attrs(dims({3, 3}), dims({2, 2}), dims({1, 1})));
       }},
      {"max_pool2d_grad", Op::MaxPool2dGrad,
       [](CaseBuilder& c) {
         NodeId x = c.input({DType::F64, {1, 2, 5, 5}}, c.distinct(50));
         NodeId g = c.param({1, 2, 3, 3}, c.uniform(-1, 1));
         return c.op(Op::MaxPool2dGrad, {x, g},
                     pool_attrs(dims({3, 3}), dims({2, 2}), dims({1, 1}), dims({1, 2, 5, 5})));
       }},
      {"avg_pool2d_grad", Op::AvgPool2dGrad,
       [](CaseBuilder& c) {
         NodeId g = c.param({1, 2, 3, 3}, c.uniform(-1, 1));
         return c.op(Op::AvgPool2dGrad, {g},
                     pool_attrs(dims({3, 3}), dims({2, 2}), dims({1, 1}), dims({1, 2, 5, 5})));
       }},
  };
}

std::vector<GradCase> all_cases() {
  std::vector<GradCase> all;
  for (auto part : {elementwise_cases, reduction_cases, shape_cases, neural_cases})
    for (GradCase& c : part()) all.push_back(std::move(c));
  return all;
}

// Leaves have no rule: every case differentiates with respect to them.
const std::set<Op> kLeaves = {Op::Input, Op::Param};

HostTensor tensor_of(const TensorType& t, const Values& v) {
  return HostTensor::from_doubles(t, v);
}

// Whether analytic and numeric derivatives agree: relative 1e-5, with an
// absolute floor for derivatives that are (nearly) zero.
bool close(double analytic, double numeric) {
  return std::abs(analytic - numeric) <=
         1e-5 * std::max(std::abs(analytic), std::abs(numeric)) + 1e-7;
}

// The first node from `first` on that no output depends on, "" if none:
// autodiff builds only what the gradients need.
std::string dead_node(const Function& fn, size_t first) {
  std::vector<bool> live(fn.nodes.size());
  for (const Output& o : fn.outputs) live[size_t(o.node)] = true;
  for (size_t id = fn.nodes.size(); id-- > 0;)
    if (live[id])
      for (NodeId in : fn.nodes[id].inputs) live[size_t(in)] = true;
  for (size_t id = first; id < fn.nodes.size(); ++id)
    if (!live[id])
      return "%" + std::to_string(id) + " " + std::string(info(fn.nodes[id].op).ir_name);
  return "";
}

// The loss sum(y * weights) of a built case, its gradients with respect to
// every param, compiled: outputs "loss" then one gradient per param.
struct Prepared {
  std::shared_ptr<Program> program;
  std::vector<HostTensor> inputs;      // in calling order
  std::map<std::string, size_t> slot;  // leaf name -> index in inputs
  std::string error;

  Result<std::vector<HostTensor>> run() const { return program->run(inputs); }
};

Prepared prepare(CaseBuilder& c, NodeId y, const Values& weights, bool optimized = false) {
  Function& fn = c.fn();
  Builder b(fn);
  NodeId w = c.input(fn.type(y), weights);
  NodeId loss = b.must(Op::Sum, {b.must(Op::Mul, {y, w})});
  std::vector<NonDifferentiable> nondiff;
  Gradients grads = differentiate(fn, loss, c.wrt(), &nondiff);
  Prepared p;
  if (!nondiff.empty() || !grads.unreached.empty()) {
    p.error = "a param was not reached";
    return p;
  }
  fn.outputs.push_back({"loss", loss});
  for (size_t i = 0; i < grads.grads.size(); ++i)
    fn.outputs.push_back({"grad:" + std::to_string(i), grads.grads[i]});
  if (std::string dead = dead_node(fn, size_t(loss) + 1); !dead.empty()) {
    p.error = "differentiate made a node no output uses: " + dead;
    return p;
  }
  std::stable_partition(fn.inputs.begin(), fn.inputs.end(),
                        [&](NodeId id) { return fn.node(id).op == Op::Input; });
  if (optimized) {
    if (std::string m = optimize(c.module(), fn); !m.empty()) {
      p.error = "ir::optimize broke the function: " + m;
      return p;
    }
  }
  Result<std::shared_ptr<Program>> program = Program::compile(c.module(), "f");
  if (!program) {
    p.error = "cpu::Program::compile failed: " + program.error();
    return p;
  }
  p.program = *program;
  for (NodeId id : fn.inputs) {
    const std::string& name = *fn.node(id).attrs.name;
    p.slot[name] = p.inputs.size();
    p.inputs.push_back(tensor_of(fn.type(id), c.values(name)));
  }
  return p;
}

// Every element's analytic derivative against central differences; ""
// when all agree, else the ones that do not.
std::string compare_with_differences(const CaseBuilder& c, Prepared& p) {
  Result<std::vector<HostTensor>> base = p.run();
  if (!base) return "run failed: " + base.error();
  std::string problems;
  for (size_t i = 0; i < c.wrt().size(); ++i) {
    std::string name = param_name(i);
    HostTensor& in = p.inputs[p.slot[name]];
    Values x = c.values(name), analytic = (*base)[1 + i].to_doubles();
    double h = in.type.dtype == DType::F64 ? 1e-6 : 1e-3;
    double largest = 0;  // of the numeric derivatives: all 0 would make the check vacuous
    for (size_t e = 0; e < x.size(); ++e) {
      Values moved = x;
      double loss_at[2], x_at[2];
      for (int side = 0; side < 2; ++side) {
        moved[e] = x[e] + (side ? -h : h) * std::max(1.0, std::abs(x[e]));
        in = tensor_of(in.type, moved);
        x_at[side] = in.to_doubles()[e];  // after rounding to the dtype
        Result<std::vector<HostTensor>> r = p.run();
        if (!r) return "run failed: " + r.error();
        loss_at[side] = (*r)[0].to_doubles()[0];
      }
      in = tensor_of(in.type, x);
      double numeric = (loss_at[0] - loss_at[1]) / (x_at[0] - x_at[1]);
      largest = std::max(largest, std::abs(numeric));
      if (!close(analytic[e], numeric) && problems.size() < 600)
        problems += "operand " + std::to_string(i) + " element " + std::to_string(e) +
                    ": autodiff " + std::to_string(analytic[e]) + ", finite differences " +
                    std::to_string(numeric) + "\n";
    }
    if (largest == 0) problems += "the loss does not depend on operand " + std::to_string(i) + "\n";
  }
  return problems;
}

// Runs one case: "" when every derivative matches, else what did not.
// With `optimized`, through ir::optimize first (as a train step is): the
// passes must keep the gradients' values.
std::string check_case(const GradCase& gc, uint64_t seed, bool optimized) {
  CaseBuilder c(seed);
  NodeId y = gc.build(c);
  Prepared p = prepare(c, y, c.draw_n(c.fn().type(y).shape, c.uniform(-1, 1)), optimized);
  if (!p.error.empty()) return p.error;
  return compare_with_differences(c, p);
}

// The gradients of sum(y) (weights of 1), one list per param; empty with a
// failed check when the executor could not run it.
std::vector<Values> gradients_of_sum(CaseBuilder& c, NodeId y) {
  Prepared p = prepare(c, y, Values(size_t(*c.fn().type(y).shape.numel()), 1.0));
  INFO(p.error);
  REQUIRE(p.error.empty());
  Result<std::vector<HostTensor>> r = p.run();
  INFO(r.error());
  REQUIRE(r.ok());
  std::vector<Values> out;
  for (size_t i = 1; i < r->size(); ++i) out.push_back((*r)[i].to_doubles());
  return out;
}

}  // namespace

TEST_CASE("every differentiable op has a gradient check", "[gradcheck]") {
  std::set<Op> covered;
  for (const GradCase& c : all_cases()) covered.insert(c.op);
  for (const OpInfo& oi : kOps) {
    if (!oi.differentiable || kLeaves.count(oi.op)) continue;
    INFO("no gradcheck case for the differentiable op '" << oi.ir_name << "'");
    CHECK(covered.count(oi.op) == 1);
  }
}

TEST_CASE("gradients match central finite differences in f64", "[gradcheck]") {
  uint64_t seed = 1;
  for (const GradCase& c : all_cases()) {
    INFO("gradcheck case: " << c.label);
    std::string problems;
    try {
      problems = check_case(c, seed, false);
      if (problems.empty()) {
        std::string after = check_case(c, seed, true);
        if (!after.empty()) problems = "after ir::optimize: " + after;
      }
      ++seed;
    } catch (const std::exception& e) {
      problems = std::string("threw: ") + e.what();
    }
    CHECK(problems == "");
  }
}

// Where finite differences cannot judge: the subgradient each rule picks at
// a kink or tie (grad_rules*.cpp say which).
TEST_CASE("gradients at kinks and ties", "[gradcheck]") {
  CaseBuilder c(7);
  SECTION("maximum splits a tie evenly") {
    NodeId a = c.param({3}, Values{1, 2, 3}), b = c.param({3}, Values{1, 0, 5});
    auto g = gradients_of_sum(c, c.op(Op::Maximum, {a, b}));
    CHECK(g[0] == Values{0.5, 1, 0});
    CHECK(g[1] == Values{0.5, 0, 1});
  }
  SECTION("max over an axis splits among tied maxima") {
    NodeId x = c.param({2, 3}, Values{3, 1, 3, 0, 2, -1});
    auto g = gradients_of_sum(c, c.op(Op::Max, {x}, reduce_attrs({1})));
    CHECK(g[0] == Values{0.5, 0, 0.5, 0, 1, 0});
  }
  SECTION("relu and abs give 0 at 0") {
    NodeId x = c.param({3}, Values{0, 1.5, -1.5});
    NodeId y = c.op(Op::Add, {c.op(Op::Relu, {x}), c.op(Op::Abs, {x})});
    CHECK(gradients_of_sum(c, y)[0] == Values{0, 2, -1});
  }
  SECTION("norm of zeros gives 0") {
    NodeId x = c.param({2}, Values{0, 0});
    CHECK(gradients_of_sum(c, c.op(Op::Norm, {x}))[0] == Values{0, 0});
  }
  SECTION("max_pool2d routes to the first maximum of a window") {
    NodeId x = c.param({1, 1, 2, 2}, Values{1, 1, 1, 1});
    auto g = gradients_of_sum(
        c, c.op(Op::MaxPool2d, {x}, pool_attrs(dims({2, 2}), dims({2, 2}), dims({0, 0}))));
    CHECK(g[0] == Values{1, 0, 0, 0});
  }
  SECTION("pow at a zero base") {
    NodeId a = c.param({2}, Values{0, 0}), b = c.param({2}, Values{2, 1});
    auto g = gradients_of_sum(c, c.op(Op::Pow, {a, b}));
    CHECK(g[0] == Values{0, 1});
    CHECK(g[1] == Values{0, 0});
  }
}
