// Fusion groups with views (elementwise_views.h): the per-element plan,
// built by walking back from the output, and its CUDA source.
#include "elementwise_views.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "elementwise_codegen.h"
#include "plan/geometry.h"

namespace sexpgpu::cuda {
namespace {

using ir::Op;
using ir::Shape;
using Coords = std::vector<Index>;

// A group whose nodes the views copy more often than this many steps a
// node is left to separate kernels.
constexpr size_t kMaxStepsPerNode = 16;

// ---- Index expressions, simplified as they are built -------------------------------------

Index make(IndexExpr e) {
  return std::make_shared<const IndexExpr>(std::move(e));
}

Index constant_index(int64_t v) {
  return make(IndexExpr{IndexExpr::Const, v, nullptr, nullptr, v, v});
}

Index flat_index(int64_t n) {
  if (n <= 1) return constant_index(0);
  return make(IndexExpr{IndexExpr::Flat, 0, nullptr, nullptr, 0, n - 1});
}

bool is_zero(const Index& e) {
  return e->lo == 0 && e->hi == 0;
}

// `e` known to stay in [lo, hi] where it is evaluated (a pad's operand,
// evaluated only inside the pad).
Index narrowed(const Index& e, int64_t lo, int64_t hi) {
  lo = std::max(lo, e->lo);
  hi = std::min(hi, e->hi);
  if (lo == hi) return constant_index(lo);
  if (lo == e->lo && hi == e->hi) return e;
  IndexExpr copy = *e;
  copy.lo = lo;
  copy.hi = hi;
  return make(std::move(copy));
}

Index add(Index a, Index b) {
  if (a->lo == a->hi && b->lo == b->hi) return constant_index(a->lo + b->lo);
  if (is_zero(a)) return b;
  if (is_zero(b)) return a;
  if (a->lo == a->hi) std::swap(a, b);  // the constant last
  int64_t lo = a->lo + b->lo, hi = a->hi + b->hi;
  return make(IndexExpr{IndexExpr::Add, 0, std::move(a), std::move(b), lo, hi});
}

Index mul(const Index& a, int64_t m) {
  if (m == 0 || is_zero(a)) return constant_index(0);
  if (m == 1) return a;
  if (a->lo == a->hi) return constant_index(a->lo * m);
  if (a->kind == IndexExpr::Mul) return mul(a->a, a->value * m);
  int64_t x = a->lo * m, y = a->hi * m;
  return make(IndexExpr{IndexExpr::Mul, m, a, nullptr, std::min(x, y), std::max(x, y)});
}

void terms(const Index& e, std::vector<Index>& out) {
  if (e->kind == IndexExpr::Add) {
    terms(e->a, out);
    terms(e->b, out);
  } else {
    out.push_back(e);
  }
}

Index sum(const std::vector<Index>& ts) {
  Index s = constant_index(0);
  for (const Index& t : ts) s = add(s, t);
  return s;
}

// e as q*m + r: q the terms that are multiples of m (divided by it).
void split(const Index& e, int64_t m, Index& q, Index& r) {
  std::vector<Index> ts, qs, rs;
  terms(e, ts);
  for (const Index& t : ts) {
    if (t->kind == IndexExpr::Mul && t->value % m == 0)
      qs.push_back(mul(t->a, t->value / m));
    else if (t->lo == t->hi && t->lo % m == 0)
      qs.push_back(constant_index(t->lo / m));
    else
      rs.push_back(t);
  }
  q = sum(qs);
  r = sum(rs);
}

// e / m and e % m, for e >= 0 where evaluated (C's and the floor's agree).
Index div(const Index& e, int64_t m) {
  if (m == 1) return e;
  if (e->lo >= 0 && e->hi < m) return constant_index(0);
  if (e->kind == IndexExpr::Div) return div(e->a, e->value * m);
  Index q, r;
  split(e, m, q, r);
  if (!is_zero(q) && r->lo >= 0) return add(q, div(r, m));
  return make(IndexExpr{IndexExpr::Div, m, e, nullptr, e->lo / m, e->hi / m});
}

Index mod(const Index& e, int64_t m) {
  if (m == 1) return constant_index(0);
  if (e->lo >= 0 && e->hi < m) return e;
  Index q, r;
  split(e, m, q, r);
  if (!is_zero(q) && r->lo >= 0) return mod(r, m);
  return make(IndexExpr{IndexExpr::Mod, m, e, nullptr, 0, std::min(m - 1, e->hi)});
}

std::string number(int64_t v) {
  return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v);
}

// e in C, `flat` naming the flat index.
std::string print(const Index& e, const std::string& flat = "i") {
  switch (e->kind) {
    case IndexExpr::Flat: return flat;
    case IndexExpr::Const: return number(e->value);
    case IndexExpr::Add: return "(" + print(e->a, flat) + " + " + print(e->b, flat) + ")";
    case IndexExpr::Mul: return "(" + print(e->a, flat) + " * " + number(e->value) + ")";
    case IndexExpr::Div: return "(" + print(e->a, flat) + " / " + number(e->value) + ")";
    case IndexExpr::Mod: return "(" + print(e->a, flat) + " % " + number(e->value) + ")";
  }
  return "0";
}

}  // namespace

Along along(const Index& e, int64_t v) {
  auto fixed = [](Along a) { return a == Along::Fixed || a == Along::FixedAligned; };
  switch (e->kind) {
    case IndexExpr::Flat: return Along::Step;
    case IndexExpr::Const: return e->value % v == 0 ? Along::FixedAligned : Along::Fixed;
    case IndexExpr::Add: {
      Along a = along(e->a, v), b = along(e->b, v);
      if (fixed(a) && fixed(b))
        return a == Along::FixedAligned && b == Along::FixedAligned ? a : Along::Fixed;
      if (a == Along::Step && b == Along::FixedAligned) return a;
      if (b == Along::Step && a == Along::FixedAligned) return b;
      return Along::Other;
    }
    case IndexExpr::Mul: {
      Along a = along(e->a, v);
      if (!fixed(a)) return Along::Other;
      return a == Along::FixedAligned || e->value % v == 0 ? Along::FixedAligned : Along::Fixed;
    }
    case IndexExpr::Div:
    case IndexExpr::Mod: {
      Along a = along(e->a, v);
      if (fixed(a)) return Along::Fixed;
      if (a != Along::Step || e->value % v != 0) return Along::Other;
      return e->kind == IndexExpr::Div ? Along::Fixed : Along::Step;
    }
  }
  return Along::Other;
}

namespace {

// The largest magnitude e or a part of it reaches.
int64_t reach(const Index& e) {
  int64_t r = std::max(std::llabs(e->lo), std::llabs(e->hi));
  if (e->a) r = std::max(r, reach(e->a));
  if (e->b) r = std::max(r, reach(e->b));
  return r;
}

// ---- Positions: where in a node's shape an element is read -------------------------------

// The flat row-major index, or one index per axis.
struct Position {
  Index flat;
  Coords coords;
};

Coords coords_of(const Position& p, const Shape& s) {
  if (!p.flat) return p.coords;
  Coords c(size_t(s.rank()));
  Index rest = p.flat;
  for (int64_t a = s.rank(); a-- > 0;) {
    c[size_t(a)] = mod(rest, s[a]);
    rest = div(rest, s[a]);
  }
  return c;
}

Index flat_of(const Position& p, const Shape& s) {
  if (p.flat) return p.flat;
  Index f = constant_index(0);
  ir::Dims strides = cpu::contiguous_strides(s);
  for (size_t a = 0; a < strides.size(); ++a) f = add(f, mul(p.coords[a], strides[a]));
  return f;
}

// Where operand `x` (broadcastable to `s`) is read for element p of s.
Position broadcast(const Position& p, const Shape& s, const Shape& x) {
  if (x == s) return p;
  Coords c = coords_of(p, s), q;
  int64_t skip = s.rank() - x.rank();
  for (int64_t a = 0; a < x.rank(); ++a)
    q.push_back(x[a] == 1 ? constant_index(0) : c[size_t(a + skip)]);
  return Position{nullptr, std::move(q)};
}

// reshape from x to s, read at coordinates c of s: per group of axes whose
// sizes multiply alike (axes of size 1 aside), the group's flat index split
// over x's axes.
Coords reshape_coords(const Coords& c, const Shape& s, const Shape& x) {
  std::vector<int64_t> out_axes, in_axes;
  for (int64_t a = 0; a < s.rank(); ++a)
    if (s[a] != 1) out_axes.push_back(a);
  for (int64_t a = 0; a < x.rank(); ++a)
    if (x[a] != 1) in_axes.push_back(a);
  Coords q(size_t(x.rank()), constant_index(0));
  size_t u = 0, v = 0;
  while (u < out_axes.size() && v < in_axes.size()) {
    int64_t out_size = s[out_axes[u]], in_size = x[in_axes[v]];
    std::vector<int64_t> group_out{out_axes[u++]}, group_in{in_axes[v++]};
    while (out_size != in_size) {
      if (out_size < in_size && u < out_axes.size()) {
        out_size *= s[out_axes[u]];
        group_out.push_back(out_axes[u++]);
      } else if (v < in_axes.size()) {
        in_size *= x[in_axes[v]];
        group_in.push_back(in_axes[v++]);
      } else {
        break;
      }
    }
    Index flat = constant_index(0);
    for (int64_t a : group_out) flat = add(mul(flat, s[a]), c[size_t(a)]);
    for (size_t k = group_in.size(); k-- > 1;) {
      q[size_t(group_in[k])] = mod(flat, x[group_in[k]]);
      flat = div(flat, x[group_in[k]]);
    }
    q[size_t(group_in[0])] = flat;
  }
  return q;
}

// ---- The plan ----------------------------------------------------------------------------

class Planner {
 public:
  explicit Planner(const ElementwiseGroup& g) : g_(g) {}

  ir::Result<ViewPlan> run() {
    int64_t n = g_.output.shape.numel().value_or(0);
    plan_.result = value(int(g_.nodes.size()) - 1, Position{flat_index(n), {}});
    if (!error_.empty()) return ir::Result<ViewPlan>::failure(error_);
    int64_t most = n;
    for (const ViewStep& s : plan_.steps) {
      if (s.offset) most = std::max(most, reach(s.offset));
      for (const Bound& b : s.bounds) most = std::max({most, reach(b.index), b.hi});
    }
    plan_.wide = most >= int64_t(INT32_MAX) / 2;
    return plan_;
  }

 private:
  const Shape& shape_of(int ref) const {
    return ref >= 0 ? g_.shapes[size_t(ref)] : g_.externals[size_t(-1 - ref)].shape;
  }

  int new_register(ir::DType d) {
    plan_.registers.push_back(d);
    return int(plan_.registers.size()) - 1;
  }

  static std::string key(const Position& p) {
    if (p.flat) return "f" + print(p.flat);
    std::string k = "c";
    for (const Index& c : p.coords) k += print(c) + ",";
    return k;
  }

  // The register holding operand `ref` (a node, or an external when < 0)
  // at position p of its shape.
  int value(int ref, const Position& p) {
    if (plan_.steps.size() > kMaxStepsPerNode * g_.nodes.size()) {
      error_ = "the views read the group's nodes at too many places";
      return 0;
    }
    if (ref < 0) return load(-1 - ref, p);
    const GroupNode& node = g_.nodes[size_t(ref)];
    if (!is_view(node.op)) return compute(ref, p);
    if (node.op == Op::Pad) return pad(ref, p);
    return value(node.operands[0], view_operand(ref, p));
  }

  int load(int k, const Position& p) {
    Index offset = flat_of(p, g_.externals[size_t(k)].shape);
    std::string memo = "x" + std::to_string(k) + "@" + print(offset);
    if (auto it = memo_.find(memo); it != memo_.end()) return it->second;
    int reg = new_register(g_.externals[size_t(k)].dtype);
    plan_.steps.push_back(ViewStep{ViewStep::Load, reg, k, offset, {}, {}});
    return memo_[memo] = reg;
  }

  int compute(int j, const Position& p) {
    std::string memo = "n" + std::to_string(j) + "@" + key(p);
    if (auto it = memo_.find(memo); it != memo_.end()) return it->second;
    const GroupNode& node = g_.nodes[size_t(j)];
    std::vector<int> operands;
    for (int r : node.operands)
      operands.push_back(value(r, broadcast(p, shape_of(j), shape_of(r))));
    int reg = new_register(node.dtype);
    plan_.steps.push_back(ViewStep{ViewStep::Compute, reg, j, nullptr, std::move(operands), {}});
    return memo_[memo] = reg;
  }

  // Where the operand of view j (not pad) is read for its element at p.
  Position view_operand(int j, const Position& p) {
    const GroupNode& node = g_.nodes[size_t(j)];
    const Shape &s = shape_of(j), &x = shape_of(node.operands[0]);
    if (node.op == Op::Expand) return broadcast(p, s, x);
    if (node.op == Op::Reshape)
      return p.flat ? p : Position{nullptr, reshape_coords(p.coords, s, x)};
    Coords c = coords_of(p, s), q = c;
    const ir::Attrs& at = node.attrs;
    if (node.op == Op::Permute)
      for (size_t a = 0; a < c.size(); ++a)
        q[size_t(cpu::norm_axis((*at.axes)[a], x.rank()))] = c[a];
    if (node.op == Op::Slice)
      for (size_t a = 0; a < c.size(); ++a)
        q[a] = add(mul(c[a], (*at.steps)[a]), constant_index((*at.starts)[a]));
    if (node.op == Op::Flip)
      for (int64_t axis : *at.axes) {
        size_t a = size_t(cpu::norm_axis(axis, x.rank()));
        q[a] = add(mul(c[a], -1), constant_index(x[int64_t(a)] - 1));
      }
    return Position{nullptr, std::move(q)};
  }

  // The pad's value outside its operand, the operand's inside: a guarded
  // block, whose registers stay inside it.
  int pad(int j, const Position& p) {
    std::string memo = "n" + std::to_string(j) + "@" + key(p);
    if (auto it = memo_.find(memo); it != memo_.end()) return it->second;
    const GroupNode& node = g_.nodes[size_t(j)];
    const Shape &s = shape_of(j), &x = shape_of(node.operands[0]);
    Coords c = coords_of(p, s), q;
    std::vector<Bound> bounds;
    bool outside = false;
    for (int64_t a = 0; a < s.rank(); ++a) {
      int64_t before = (*node.attrs.pads)[size_t(2 * a)], size = x[a];
      Index shifted = add(c[size_t(a)], constant_index(-before));
      if (shifted->hi < 0 || shifted->lo >= size) outside = true;
      if (shifted->lo < 0 || shifted->hi >= size)
        bounds.push_back(Bound{c[size_t(a)], before, before + size});
      q.push_back(narrowed(shifted, 0, size - 1));
    }
    if (!outside && bounds.empty()) return value(node.operands[0], Position{nullptr, q});
    int reg = new_register(node.dtype);
    plan_.steps.push_back(ViewStep{ViewStep::Fill, reg, j, nullptr, {}, {}});
    if (!outside) {
      plan_.steps.push_back(ViewStep{ViewStep::Guarded, -1, j, nullptr, {}, std::move(bounds)});
      std::map<std::string, int> outer = memo_;
      int inner = value(node.operands[0], Position{nullptr, q});
      memo_ = std::move(outer);
      plan_.steps.push_back(ViewStep{ViewStep::EndGuard, reg, j, nullptr, {inner}, {}});
    }
    return memo_[memo] = reg;
  }

  const ElementwiseGroup& g_;
  ViewPlan plan_;
  std::map<std::string, int> memo_;
  std::string error_;
};

std::string condition(const std::vector<Bound>& bounds) {
  std::string c;
  for (const Bound& b : bounds) {
    std::string index = print(b.index);
    if (b.index->lo < b.lo) c += (c.empty() ? "" : " && ") + index + " >= " + std::to_string(b.lo);
    if (b.index->hi >= b.hi) c += (c.empty() ? "" : " && ") + index + " < " + std::to_string(b.hi);
  }
  return c.empty() ? "true" : c;
}

// Whether the plan only moves elements: its registers then hold the stored
// bits, so that every value (a NaN's payload too) arrives unchanged.
bool moves_only(const ViewPlan& plan) {
  return std::none_of(plan.steps.begin(), plan.steps.end(),
                      [](const ViewStep& s) { return s.kind == ViewStep::Compute; });
}

// The one-element form's steps.
std::string scalar_steps(const ElementwiseGroup& g, const ViewPlan& plan, bool raw,
                         std::string& indent) {
  using namespace codegen;
  auto type = [&](int reg) {
    ir::DType d = plan.registers[size_t(reg)];
    return std::string(raw ? storage_type(d) : value_type(d));
  };
  auto r = [](int reg) { return "r" + std::to_string(reg); };
  std::string s;
  for (const ViewStep& step : plan.steps) {
    switch (step.kind) {
      case ViewStep::Load: {
        ir::DType d = g.externals[size_t(step.source)].dtype;
        std::string element = "in" + std::to_string(step.source) + "[" + print(step.offset) + "]";
        s += indent + "const " + type(step.reg) + " " + r(step.reg) + " = " +
             (raw ? element : load(d, element)) + ";\n";
        break;
      }
      case ViewStep::Compute: {
        std::vector<Operand> in;
        for (int o : step.operands) in.push_back(Operand{r(o), plan.registers[size_t(o)]});
        ir::Result<std::string> e = expression(g.nodes[size_t(step.source)], in, g.output.dtype);
        if (!e) return "#error " + e.error() + "\n";
        s += indent + "const " + type(step.reg) + " " + r(step.reg) + " = " + *e + ";\n";
        break;
      }
      case ViewStep::Fill: {
        const GroupNode& pad = g.nodes[size_t(step.source)];
        double fill = pad.attrs.value.value_or(0.0);
        std::string v = raw ? raw_constant(fill, pad.dtype) : constant(fill, pad.dtype);
        s += indent + type(step.reg) + " " + r(step.reg) + " = " + v + ";\n";
        break;
      }
      case ViewStep::Guarded:
        s += indent + "if (" + condition(step.bounds) + ") {\n";
        indent += "  ";
        break;
      case ViewStep::EndGuard:
        s += indent + r(step.reg) + " = " + r(step.operands[0]) + ";\n";
        indent.resize(indent.size() - 2);
        s += indent + "}\n";
        break;
    }
  }
  return s;
}

// Whether every element of a vector of v takes the same side of each bound.
bool same_side(const Bound& b, int64_t v) {
  Along a = along(b.index, v);
  if (a == Along::Fixed || a == Along::FixedAligned) return true;
  bool low = b.index->lo < b.lo, high = b.index->hi >= b.hi;
  return a == Along::Step && (!low || b.lo % v == 0) && (!high || b.hi % v == 0);
}

}  // namespace

int view_vector_width(const ElementwiseGroup& g, const ViewPlan& plan) {
  int64_t n = g.output.shape.numel().value_or(0);
  int v = int(std::min<size_t>(8, 16 / ir::size_bytes(g.output.dtype)));
  auto fits = [&](int w) {
    if (n % w != 0) return false;
    for (const ViewStep& s : plan.steps)
      for (const Bound& b : s.bounds)
        if (!same_side(b, w)) return false;
    return true;
  };
  while (v > 1 && !fits(v)) v /= 2;
  return v;
}

namespace {

// The vector form's steps: every register an array of v values; loads
// that step along the vector move as one aligned vector, loads fixed along
// it once, others element by element. Bounds are the same for the whole
// vector (view_vector_width), so a guard tests its first element.
std::string vector_steps(const ElementwiseGroup& g, const ViewPlan& plan, int v, bool raw,
                         std::string& indent) {
  using namespace codegen;
  const std::string vs = std::to_string(v), each = "#pragma unroll\n";
  auto type = [&](int reg) {
    ir::DType d = plan.registers[size_t(reg)];
    return std::string(raw ? storage_type(d) : value_type(d));
  };
  auto r = [](int reg) { return "r" + std::to_string(reg); };
  auto loop = [&](const std::string& line) {
    return each + indent + "for (int j = 0; j < " + vs + "; ++j) " + line + "\n";
  };
  std::string s;
  for (const ViewStep& step : plan.steps) {
    std::string declare =
        indent + (step.reg >= 0 ? type(step.reg) + " " + r(step.reg) + "[" + vs + "];\n" : "");
    switch (step.kind) {
      case ViewStep::Load: {
        ir::DType d = g.externals[size_t(step.source)].dtype;
        std::string in = "in" + std::to_string(step.source), st = storage_type(d);
        auto value = [&](const std::string& e) { return raw ? e : load(d, e); };
        Along a = along(step.offset, v);
        s += declare;
        if (a == Along::Step) {
          std::string words = "w" + std::to_string(step.reg);
          s += indent + st + " " + words + "[" + vs + "];\n";
          s += indent + "sg_load_vec<" + st + ", " + vs + ">(" + in + " + " + print(step.offset) +
               ", " + words + ");\n";
          s += loop(r(step.reg) + "[j] = " + value(words + "[j]") + ";");
        } else if (a == Along::Other) {
          s += loop(r(step.reg) + "[j] = " + value(in + "[" + print(step.offset, "(i + j)") + "]") +
                    ";");
        } else {
          s += loop(r(step.reg) + "[j] = " + value(in + "[" + print(step.offset) + "]") + ";");
        }
        break;
      }
      case ViewStep::Compute: {
        std::vector<Operand> in;
        for (int o : step.operands) in.push_back(Operand{r(o) + "[j]", plan.registers[size_t(o)]});
        ir::Result<std::string> e = expression(g.nodes[size_t(step.source)], in, g.output.dtype);
        if (!e) return "#error " + e.error() + "\n";
        s += declare + loop(r(step.reg) + "[j] = " + *e + ";");
        break;
      }
      case ViewStep::Fill: {
        const GroupNode& pad = g.nodes[size_t(step.source)];
        double fill = pad.attrs.value.value_or(0.0);
        s +=
            declare + loop(r(step.reg) + "[j] = " +
                           (raw ? raw_constant(fill, pad.dtype) : constant(fill, pad.dtype)) + ";");
        break;
      }
      case ViewStep::Guarded:
        s += indent + "if (" + condition(step.bounds) + ") {\n";
        indent += "  ";
        break;
      case ViewStep::EndGuard:
        s += loop(r(step.reg) + "[j] = " + r(step.operands[0]) + "[j];");
        indent.resize(indent.size() - 2);
        s += indent + "}\n";
        break;
    }
  }
  return s;
}

}  // namespace

int64_t evaluate(const Index& e, int64_t flat) {
  switch (e->kind) {
    case IndexExpr::Flat: return flat;
    case IndexExpr::Const: return e->value;
    case IndexExpr::Add: return evaluate(e->a, flat) + evaluate(e->b, flat);
    case IndexExpr::Mul: return evaluate(e->a, flat) * e->value;
    case IndexExpr::Div: return evaluate(e->a, flat) / e->value;
    case IndexExpr::Mod: return evaluate(e->a, flat) % e->value;
  }
  return 0;
}

ir::Result<ViewPlan> plan_views(const ElementwiseGroup& g) {
  using R = ir::Result<ViewPlan>;
  if (g.shapes.size() != g.nodes.size()) return R::failure("a group with views needs every shape");
  for (const Shape& s : g.shapes)
    if (s.numel().value_or(0) == 0) return R::failure("an empty member");
  for (const ir::TensorType& e : g.externals)
    if (e.shape.numel().value_or(0) == 0) return R::failure("an empty operand");
  return Planner(g).run();
}

std::string view_source(const ElementwiseGroup& g, const ViewPlan& plan, int v,
                        const std::string& name) {
  using namespace codegen;
  const bool raw = moves_only(plan);
  std::string s = "extern \"C\" __global__ void __launch_bounds__(256) " + name + "(";
  for (size_t k = 0; k < g.externals.size(); ++k)
    s += std::string("const ") + storage_type(g.externals[k].dtype) + "* __restrict__ in" +
         std::to_string(k) + ", ";
  s += std::string(storage_type(g.output.dtype)) + "* __restrict__ out, long long n) {\n";
  const std::string idx = plan.wide ? "long long" : "int", cast = "(" + idx + ")";
  const std::string vs = std::to_string(v), out_type = storage_type(g.output.dtype);
  const std::string result = "r" + std::to_string(plan.result);
  std::string indent = "    ";
  if (v == 1) {
    s += "  for (" + idx + " i = " + cast + "blockIdx.x * blockDim.x + threadIdx.x; i < " + cast +
         "n; i += " + cast + "gridDim.x * blockDim.x) {\n";
    s += scalar_steps(g, plan, raw, indent);
    s += indent + "out[i] = " + (raw ? result : store(g.output.dtype, result)) + ";\n";
    return s + "  }\n}\n";
  }
  s += "  const " + idx + " vectors = " + cast + "(n / " + vs + ");\n";
  s += "  for (" + idx + " q = " + cast +
       "blockIdx.x * blockDim.x + threadIdx.x; q < vectors; q += " + cast +
       "gridDim.x * blockDim.x) {\n";
  s += "    const " + idx + " i = q * " + vs + ";\n";
  s += vector_steps(g, plan, v, raw, indent);
  s += indent + out_type + " o[" + vs + "];\n";
  std::string element = result + "[j]";
  s += "#pragma unroll\n" + indent + "for (int j = 0; j < " + vs +
       "; ++j) o[j] = " + (raw ? element : store(g.output.dtype, element)) + ";\n";
  s += indent + "sg_store_vec<" + out_type + ", " + vs + ">(out + i, o);\n";
  return s + "  }\n}\n";
}

}  // namespace sexpgpu::cuda
