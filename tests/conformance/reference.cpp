// The f64 reference and the comparison of a device's outputs with it.
#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "ir/json.h"

namespace conformance {

namespace {

DType widened(DType d) {
  return ir::is_float(d) ? DType::F64 : d;
}

// How many leading operands an op computes with as floats when its rule
// turns integer or bool operands into a float result (exp of an i32): those
// are cast to f64 in the reference. The others (targets, masks) keep their
// dtype, which carries their meaning.
size_t float_operands(Op op, size_t count) {
  switch (ir::info(op).rule) {
    case ir::Rule::UnaryFloat:
    case ir::Rule::BinaryFloat:
    case ir::Rule::ReduceFloat:
    case ir::Rule::AxisSameFloat:
    case ir::Rule::Norm:
    case ir::Rule::Conv2d:
    case ir::Rule::Conv2dGrad:
    case ir::Rule::Pool2d: return count;
    case ir::Rule::CrossEntropy: return 1;
    case ir::Rule::Attention: return 3;
    default: return 0;
  }
}

std::string node_label(const ir::Function& fn, size_t id) {
  return "%" + std::to_string(id) + " " + std::string(ir::info(fn.nodes[id].op).ir_name);
}

std::string describe(const Case& c, DType dtype, const ir::Function& fn) {
  const ir::Node& y = fn.node(fn.outputs.at(0).node);
  std::string s = std::string(ir::info(c.op).ir_name) + " " + std::string(ir::ir_name(dtype));
  if (!c.label.empty()) s += " (" + c.label + ")";
  s += ": " + std::string(ir::info(y.op).ir_name) + "(";
  for (size_t i = 0; i < y.inputs.size(); ++i)
    s += (i ? ", " : "") + fn.type(y.inputs[i]).to_string();
  return s + ") -> " + y.type.to_string();
}

}  // namespace

ir::Result<ir::Module> widen(const ir::Module& module) {
  using R = ir::Result<ir::Module>;
  const ir::Function& fn = module.functions.at(0);
  ir::Module out;
  out.functions.emplace_back().name = fn.name;
  ir::Function& wide = out.functions[0];
  ir::Builder b(wide);
  std::vector<NodeId> map(fn.nodes.size());
  for (size_t id = 0; id < fn.nodes.size(); ++id) {
    const ir::Node& n = fn.nodes[id];
    if (n.op == Op::Input) {
      map[id] = b.input(*n.attrs.name, {widened(n.type.dtype), n.type.shape});
      continue;
    }
    Attrs attrs = n.attrs;
    if (attrs.dtype) attrs.dtype = widened(*attrs.dtype);
    ir::NodeIds in;
    for (NodeId i : n.inputs) in.push_back(map[size_t(i)]);
    if (ir::is_float(n.type.dtype)) {
      Attrs to_f64;
      to_f64.dtype = DType::F64;
      for (size_t k = 0; k < float_operands(n.op, in.size()); ++k)
        if (!ir::is_float(b.type(in[k]).dtype)) in[k] = b.must(Op::Cast, {in[k]}, to_f64);
    }
    ir::Result<NodeId> r = b.add(n.op, std::span<const NodeId>(in.data(), in.size()), attrs);
    if (!r) return R::failure(node_label(fn, id) + " does not widen: " + r.error());
    if (ir::is_float(b.type(*r).dtype) && b.type(*r).dtype != DType::F64)
      return R::failure(node_label(fn, id) + " widens to " + b.type(*r).to_string());
    map[id] = *r;
  }
  for (const ir::Output& o : fn.outputs) wide.outputs.push_back({o.name, map[size_t(o.node)]});
  return out;
}

Preparation prepare(const Case& c, DType dtype, uint64_t seed) {
  Preparation out{Preparation::Broken, "", {}};
  Prepared& p = out.prepared;
  try {
    CaseBuilder b(seed, dtype);
    NodeId y = c.build(b);
    p.module = b.finish(y);
    p.inputs = b.take_inputs();
  } catch (const Refused& e) {
    out.status = Preparation::Refused;
    out.message = e.what();
    return out;
  }
  p.op = c.op;
  p.dtype = dtype;
  p.terms = c.terms;
  p.random = ir::info(c.op).rule == ir::Rule::Random;
  p.name = describe(c, dtype, p.module.functions[0]);
  p.ir_json = ir::to_json(p.module).dump();

  // Random draws are compared with the CPU executor in their own dtype.
  ir::Result<ir::Module> ref = p.random ? ir::Result<ir::Module>(p.module) : widen(p.module);
  if (!ref) {
    out.message = "widening to f64: " + ref.error();
    return out;
  }
  auto program = cpu::Program::compile(*ref, "f", cpu::Options{1});
  if (!program) {
    out.message = "the CPU executor cannot compile the reference: " + program.error();
    return out;
  }
  std::vector<cpu::HostTensor> ref_inputs;
  const ir::Function& ref_fn = ref->functions[0];
  for (size_t i = 0; i < p.inputs.size(); ++i)
    ref_inputs.push_back(
        cpu::HostTensor::from_doubles(ref_fn.type(ref_fn.inputs[i]), p.inputs[i].to_doubles()));
  auto result = (*program)->run(ref_inputs);
  if (!result) {
    out.message = "the reference run failed: " + result.error();
    return out;
  }
  p.expected = *std::move(result);
  out.status = Preparation::Ready;
  return out;
}

double relative_tolerance(DType d) {
  switch (d) {
    case DType::F64: return 1e-10;
    case DType::F32: return 1e-5;
    case DType::BF16: return 1e-2;
    case DType::F16: return 2e-3;
    default: return 0;
  }
}

namespace {

std::string index_text(const Shape& shape, size_t flat) {
  std::vector<int64_t> idx(static_cast<size_t>(shape.rank()));
  for (int64_t a = shape.rank() - 1; a >= 0; --a) {
    idx[size_t(a)] = int64_t(flat) % shape[a];
    flat /= size_t(shape[a]);
  }
  return Shape(std::span<const int64_t>(idx)).to_string();
}

std::string num(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

// Whether g matches r, as the fraction of the bound used (> 1: off).
double misfit(double g, double r, double bound) {
  if (std::isnan(g) || std::isnan(r)) return std::isnan(g) && std::isnan(r) ? 0 : INFINITY;
  if (std::isinf(g) || std::isinf(r)) return g == r ? 0 : INFINITY;
  if (bound == 0) return g == r ? 0 : INFINITY;
  return std::abs(g - r) / bound;
}

// Float outputs within relative_tolerance * (|ref| + terms); others exact.
// The tolerance is the output's dtype's, or the case's when that is looser
// and the output is a float (linear_cross_entropy's f32 result of half
// products).
std::string judge_values(const cpu::HostTensor& got, const cpu::HostTensor& want, double terms,
                         DType case_dtype = DType::F64) {
  DType d = got.type.dtype;
  std::vector<double> g = got.to_doubles(), r = want.to_doubles();
  double rtol = relative_tolerance(d), worst = 0;
  if (ir::is_float(d)) rtol = std::max(rtol, relative_tolerance(case_dtype));
  size_t worst_at = 0, off = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    double m = misfit(g[i], r[i], rtol * (std::abs(r[i]) + terms));
    if (m > 1) ++off;
    if (m > worst) worst = m, worst_at = i;
  }
  if (off == 0) return "";
  double bound = rtol * (std::abs(r[worst_at]) + terms);
  return std::to_string(off) + " of " + std::to_string(g.size()) + " elements off; worst " +
         index_text(got.type.shape, worst_at) + ": device " + num(g[worst_at]) + ", reference " +
         num(r[worst_at]) + " (|diff| " + num(std::abs(g[worst_at] - r[worst_at])) + " > bound " +
         num(bound) + ")";
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

double std_of(const std::vector<double>& v) {
  double m = mean_of(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / double(v.size() - 1));
}

// The draws' statistics against the distribution the node's attributes name:
// the mean within 6 standard errors, the spread within 10%, every value in
// the support.
std::string judge_statistics(const ir::Node& node, const cpu::HostTensor& got) {
  std::vector<double> v = got.to_doubles();
  double n = double(v.size()), mean = mean_of(v), sd = std_of(v);
  auto off = [&](const char* what, double value, double want, double within) {
    return std::abs(value - want) > within ? std::string(what) + " " + num(value) + ", expected " +
                                                 num(want) + " within " + num(within)
                                           : std::string();
  };
  std::string s;
  if (node.op == Op::RandomNormal) {
    double mu = *node.attrs.mean, sigma = *node.attrs.stddev;
    s = off("mean", mean, mu, 6 * sigma / std::sqrt(n));
    if (s.empty()) s = off("std", sd, sigma, 0.1 * sigma);
  } else if (node.op == Op::RandomUniform) {
    double lo = *node.attrs.low, hi = *node.attrs.high, width = hi - lo;
    bool exact_high = got.type.dtype == DType::F32 || got.type.dtype == DType::F64;
    for (double x : v)
      if (x < lo || x > hi || (exact_high && x == hi))
        return "value " + num(x) + " outside [" + num(lo) + ", " + num(hi) + ")";
    s = off("mean", mean, (lo + hi) / 2, 6 * width / std::sqrt(12 * n));
    if (s.empty()) s = off("std", sd, width / std::sqrt(12.0), 0.1 * width / std::sqrt(12.0));
  } else {
    double p = *node.attrs.p;
    for (double x : v)
      if (x != 0 && x != 1) return "value " + num(x) + " is neither 0 nor 1";
    s = off("mean", mean, p, 6 * std::sqrt(p * (1 - p) / n));
  }
  return s;
}

std::string judge_random(const ir::Node& node, const cpu::HostTensor& got,
                         const cpu::HostTensor& cpu) {
  if (got.type.dtype == DType::F32 && got.bytes != cpu.bytes) {
    size_t i = 0;
    while (std::memcmp(&got.bytes[i], &cpu.bytes[i], 4) == 0) i += 4;
    return "f32 bits differ from the CPU device's at " + index_text(got.type.shape, i / 4);
  }
  std::string s = judge_values(got, cpu, 1);
  return s.empty() ? judge_statistics(node, got) : s;
}

}  // namespace

std::string judge(const Prepared& p, const std::vector<cpu::HostTensor>& got) {
  const ir::Function& fn = p.module.functions[0];
  if (got.size() != fn.outputs.size())
    return std::to_string(got.size()) + " outputs, expected " + std::to_string(fn.outputs.size());
  for (size_t k = 0; k < got.size(); ++k) {
    const ir::Node& node = fn.node(fn.outputs[k].node);
    if (!(got[k].type == node.type))
      return "output is " + got[k].type.to_string() + ", declared " + node.type.to_string();
    std::string s = p.random ? judge_random(node, got[k], p.expected[k])
                             : judge_values(got[k], p.expected[k], p.terms, p.dtype);
    if (!s.empty()) return s;
  }
  return "";
}

}  // namespace conformance
