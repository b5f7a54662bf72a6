// Generated elementwise kernels (elementwise.h): the source of one kernel
// per node or fusion group, registered with the device's NVRTC cache at
// compile time and launched over a grid-stride loop.
#include "elementwise.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "check.h"
#include "geometry.h"
#include "nvrtc_cache.h"

namespace sexpgpu::cuda {
namespace {

using ir::DType;
using ir::Op;
using ir::Rule;

constexpr int kBlock = 256;

// The register type a value of `d` lives in.
const char* value_type(DType d) {
  switch (d) {
    case DType::F32:
    case DType::BF16:
    case DType::F16: return "float";
    case DType::F64: return "double";
    case DType::I32: return "int";
    case DType::I64: return "long long";
    case DType::U8: return "unsigned char";
    case DType::U16: return "unsigned short";
    case DType::Bool: return "bool";
  }
  return "float";
}

// The type an element of `d` is stored as.
const char* storage_type(DType d) {
  switch (d) {
    case DType::BF16:
    case DType::F16: return "unsigned short";
    case DType::Bool: return "unsigned char";
    default: return value_type(d);
  }
}

std::string load(DType d, const std::string& element) {
  switch (d) {
    case DType::BF16: return "sg_from_bf16(" + element + ")";
    case DType::F16: return "sg_from_f16(" + element + ")";
    case DType::Bool: return "(" + element + " != 0)";
    default: return element;
  }
}

std::string store(DType d, const std::string& value) {
  switch (d) {
    case DType::BF16: return "sg_to_bf16(" + value + ")";
    case DType::F16: return "sg_to_f16(" + value + ")";
    case DType::Bool: return "(unsigned char)(" + value + ")";
    default: return value;
  }
}

// `value` (of dtype `from`) as dtype `to`, with elementwise.h's conversion.
std::string convert(const std::string& value, DType from, DType to) {
  if (from == to) return value;
  if (to == DType::BF16) return "sg_round_bf16(" + value + ")";
  if (to == DType::F16) return "sg_round_f16(" + value + ")";
  if (std::string(value_type(from)) == value_type(to)) return value;  // bf16/f16 -> f32
  return std::string("sg_convert<") + value_type(to) + ">(" + value + ")";
}

// One operand of a node: its register name and dtype.
struct Operand {
  std::string name;
  DType dtype;
};

ir::Result<std::string> float_unary(Op op, const ir::Attrs& attrs, const std::string& x,
                                    const std::string& t) {
  switch (op) {
    case Op::Neg: return "(-" + x + ")";
    case Op::Abs: return "sg_fabs(" + x + ")";
    case Op::Square: return "(" + x + " * " + x + ")";
    case Op::Sign: return "sg_fsign(" + x + ")";
    case Op::Relu: return "sg_frelu(" + x + ")";
    case Op::Floor: return "sg_floor(" + x + ")";
    case Op::Ceil: return "sg_ceil(" + x + ")";
    case Op::Round: return "sg_rint(" + x + ")";
    case Op::Exp: return "sg_exp(" + x + ")";
    case Op::Log: return "sg_log(" + x + ")";
    case Op::Log1p: return "sg_log1p(" + x + ")";
    case Op::Expm1: return "sg_expm1(" + x + ")";
    case Op::Sqrt: return "sg_sqrt(" + x + ")";
    case Op::Rsqrt: return "sg_rsqrt(" + x + ")";
    case Op::Sin: return "sg_sin(" + x + ")";
    case Op::Cos: return "sg_cos(" + x + ")";
    case Op::Tanh: return "sg_tanh(" + x + ")";
    case Op::Sigmoid: return "sg_sigmoid(" + x + ")";
    case Op::Silu: return "sg_silu(" + x + ")";
    case Op::Softplus: return "sg_softplus(" + x + ")";
    case Op::Reciprocal: return "((" + t + ")1 / " + x + ")";
    case Op::Erf: return "sg_erf(" + x + ")";
    case Op::Gelu:
      return (attrs.approximate.value_or("none") == "tanh" ? "sg_gelu_tanh(" : "sg_gelu(") + x +
             ")";
    default: return ir::Result<std::string>::failure("not a float unary op");
  }
}

ir::Result<std::string> int_unary(Op op, const std::string& x, const std::string& t) {
  switch (op) {
    case Op::Neg: return "sg_ineg<" + t + ">(" + x + ")";
    case Op::Abs: return "sg_iabs<" + t + ">(" + x + ")";
    case Op::Square: return "sg_isquare<" + t + ">(" + x + ")";
    case Op::Sign: return "sg_isign<" + t + ">(" + x + ")";
    case Op::Relu: return "sg_irelu<" + t + ">(" + x + ")";
    case Op::Floor:
    case Op::Ceil:
    case Op::Round: return x;
    default: return ir::Result<std::string>::failure("computes in floats, not " + t);
  }
}

ir::Result<std::string> binary(Op op, bool floating, const std::string& a, const std::string& b,
                               const std::string& t) {
  std::string args = "(" + a + ", " + b + ")";
  if (floating) {
    switch (op) {
      case Op::Add: return "(" + a + " + " + b + ")";
      case Op::Sub: return "(" + a + " - " + b + ")";
      case Op::Mul: return "(" + a + " * " + b + ")";
      case Op::Div: return "(" + a + " / " + b + ")";
      case Op::Pow: return "sg_pow" + args;
      case Op::Maximum: return "sg_fmaximum<" + t + ">" + args;
      case Op::Minimum: return "sg_fminimum<" + t + ">" + args;
      case Op::Atan2: return "sg_atan2" + args;
      case Op::Mod: return "sg_fmod<" + t + ">" + args;
      default: break;
    }
  } else {
    switch (op) {
      case Op::Add: return "sg_iadd<" + t + ">" + args;
      case Op::Sub: return "sg_isub<" + t + ">" + args;
      case Op::Mul: return "sg_imul<" + t + ">" + args;
      case Op::Pow: return "sg_int_pow<" + t + ">" + args;
      case Op::Maximum: return "sg_imaximum<" + t + ">" + args;
      case Op::Minimum: return "sg_iminimum<" + t + ">" + args;
      case Op::Mod: return "sg_int_mod<" + t + ">" + args;
      default: break;
    }
  }
  return ir::Result<std::string>::failure("no " + t + " form");
}

ir::Result<std::string> compare(Op op, const std::string& a, const std::string& b,
                                const std::string& t) {
  switch (op) {
    case Op::Lt: return "(" + a + " < " + b + ")";
    case Op::Le: return "(" + a + " <= " + b + ")";
    case Op::Gt: return "(" + a + " > " + b + ")";
    case Op::Ge: return "(" + a + " >= " + b + ")";
    case Op::Eq: return "(" + a + " == " + b + ")";
    case Op::Ne: return "(" + a + " != " + b + ")";
    case Op::LogicalAnd: return "(" + a + " != (" + t + ")0 && " + b + " != (" + t + ")0)";
    case Op::LogicalOr: return "(" + a + " != (" + t + ")0 || " + b + " != (" + t + ")0)";
    default: return ir::Result<std::string>::failure("not a comparison");
  }
}

// The expression computing `node` from its operands' registers.
ir::Result<std::string> expression(const GroupNode& node, const std::vector<Operand>& in) {
  using R = ir::Result<std::string>;
  DType d = node.dtype;
  std::string t = value_type(d);
  // Operand i as the node's compute type `as`.
  auto arg = [&](size_t i, DType as) { return convert(in[i].name, in[i].dtype, as); };
  switch (ir::info(node.op).rule) {
    case Rule::UnarySame:
    case Rule::UnaryFloat:
      if (d == DType::Bool) return R::failure("bool arithmetic must be lowered to u8 first");
      if (ir::is_float(d)) return float_unary(node.op, node.attrs, arg(0, d), t);
      return int_unary(node.op, arg(0, d), t);
    case Rule::UnaryBool: {
      DType od = in[0].dtype;
      std::string ot = value_type(od);
      if (node.op == Op::LogicalNot) return "(" + in[0].name + " == (" + ot + ")0)";
      return ir::is_float(od) ? "(bool)isfinite(" + in[0].name + ")" : std::string("true");
    }
    case Rule::BinaryPromote:
    case Rule::BinaryFloat:
      if (d == DType::Bool) return R::failure("bool arithmetic must be lowered to u8 first");
      return binary(node.op, ir::is_float(d), arg(0, d), arg(1, d), t);
    case Rule::Compare: {
      DType od = in[0].dtype;
      return compare(node.op, in[0].name, arg(1, od), value_type(od));
    }
    case Rule::Where: {
      std::string cond = in[0].dtype == DType::Bool
                             ? in[0].name
                             : "(" + in[0].name + " != (" + value_type(in[0].dtype) + ")0)";
      return "(" + cond + " ? " + arg(1, d) + " : " + arg(2, d) + ")";
    }
    case Rule::Clamp:
      return "sg_clamp<" + t + ">(" + arg(0, d) + ", " + arg(1, d) + ", " + arg(2, d) + ")";
    case Rule::Cast: return convert(in[0].name, in[0].dtype, d);
    default: return R::failure("not an elementwise op");
  }
}

// The output's axes after merging the ones every operand walks
// contiguously and dropping those of size 1; per operand, its strides.
struct Walk {
  ir::Dims dims;
  std::vector<ir::Dims> strides;
};

Walk collapse(const ir::Shape& out, const std::vector<ir::TensorType>& externals) {
  Walk w;
  std::vector<ir::Dims> full;
  for (const ir::TensorType& e : externals) full.push_back(cpu::broadcast_strides(e.shape, out));
  w.strides.resize(externals.size());
  for (int64_t a = 0; a < out.rank(); ++a) {
    if (out[a] == 1) continue;
    bool merge = !w.dims.empty();
    for (size_t k = 0; k < full.size() && merge; ++k)
      merge = w.strides[k].back() == full[k][size_t(a)] * out[a];
    if (merge) {
      w.dims.back() *= out[a];
      for (size_t k = 0; k < full.size(); ++k) w.strides[k].back() = full[k][size_t(a)];
      continue;
    }
    w.dims.push_back(out[a]);
    for (size_t k = 0; k < full.size(); ++k) w.strides[k].push_back(full[k][size_t(a)]);
  }
  return w;
}

// The offset expression of operand `k` at element i with coordinates c0...
std::string offset(const Walk& w, size_t k) {
  const ir::Dims& s = w.strides[k];
  bool zero = std::all_of(s.begin(), s.end(), [](int64_t v) { return v == 0; });
  if (zero) return "0";
  ir::Dims contiguous(w.dims.size(), 1);
  for (size_t a = w.dims.size(); a-- > 1;) contiguous[a - 1] = contiguous[a] * w.dims[a];
  if (s == contiguous) return "i";
  std::string e;
  for (size_t a = 0; a < s.size(); ++a) {
    if (s[a] == 0) continue;
    e += (e.empty() ? "" : " + ") + std::string("c") + std::to_string(a) +
         (s[a] == 1 ? "" : " * " + std::to_string(s[a]));
  }
  return e;
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string group_label(const ElementwiseGroup& g) {
  std::string ops;
  for (const GroupNode& n : g.nodes)
    ops += (ops.empty() ? "" : ",") + std::string(ir::info(n.op).ir_name);
  if (ops.size() > 60) ops = ops.substr(0, 48) + "...(" + std::to_string(g.nodes.size()) + " ops)";
  std::string label = g.nodes.size() == 1 ? ops : "fused[" + ops + "]";
  return label + "<" + std::string(ir::ir_name(g.output.dtype)) + "> " + g.output.to_string();
}

// The loop body of a group's kernel: load each external at its offset,
// compute every node, store the last. `in` and `out` name the pointers.
std::string body(const ElementwiseGroup& g, const std::vector<std::string>& offsets,
                 const std::string& in_prefix, const std::string& out) {
  std::string s;
  for (size_t k = 0; k < g.externals.size(); ++k)
    s += std::string("    const ") + value_type(g.externals[k].dtype) + " x" + std::to_string(k) +
         " = " +
         load(g.externals[k].dtype, in_prefix + std::to_string(k) + "[" + offsets[k] + "]") + ";\n";
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const GroupNode& node = g.nodes[j];
    std::vector<Operand> in;
    for (int k : node.operands)
      in.push_back(k >= 0
                       ? Operand{"v" + std::to_string(k), g.nodes[size_t(k)].dtype}
                       : Operand{"x" + std::to_string(-1 - k), g.externals[size_t(-1 - k)].dtype});
    ir::Result<std::string> e = expression(node, in);
    if (!e) return "#error " + std::string(ir::info(node.op).ir_name) + ": " + e.error() + "\n";
    s += std::string("    const ") + value_type(node.dtype) + " v" + std::to_string(j) + " = " +
         *e + ";\n";
  }
  s += "    " + out + "[i] = " + store(g.output.dtype, "v" + std::to_string(g.nodes.size() - 1)) +
       ";\n";
  return s;
}

}  // namespace

std::string group_source(const ElementwiseGroup& g, const std::string& name) {
  int64_t n = g.output.shape.numel().value_or(0);
  const char* idx = n > int64_t(INT32_MAX) - 2 * 65536LL * kBlock ? "long long" : "int";
  Walk w = collapse(g.output.shape, g.externals);
  std::string s = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
                  ") " + name + "(";
  for (size_t k = 0; k < g.externals.size(); ++k)
    s += std::string("const ") + storage_type(g.externals[k].dtype) + "* __restrict__ in" +
         std::to_string(k) + ", ";
  s += std::string(storage_type(g.output.dtype)) + "* __restrict__ out, long long n) {\n";
  const std::string cast = std::string("(") + idx + ")";
  s += std::string("  for (") + idx + " i = " + cast +
       "blockIdx.x * blockDim.x + threadIdx.x; i < " + cast + "n; i += " + cast +
       "gridDim.x * blockDim.x) {\n";
  std::vector<std::string> offsets;
  bool coordinates = false;
  for (size_t k = 0; k < g.externals.size(); ++k) {
    offsets.push_back(offset(w, k));
    coordinates = coordinates || offsets.back().find('c') != std::string::npos;
  }
  if (coordinates) {
    s += std::string("    ") + idx + " rest = i;\n";
    for (size_t a = w.dims.size(); a-- > 0;) {
      std::string c = "c" + std::to_string(a);
      if (a == 0) {
        s += std::string("    const ") + idx + " " + c + " = rest;\n";
      } else {
        std::string d = std::to_string(w.dims[a]);
        s +=
            std::string("    const ") + idx + " " + c + " = rest % " + d + "; rest /= " + d + ";\n";
      }
    }
  }
  s += body(g, offsets, "in", "out");
  s += "  }\n}\n";
  return s;
}

KernelResult make_group_kernel(const ElementwiseGroup& g, Context& context) {
  // Expressions that cannot be generated fail here, at compile time.
  for (const GroupNode& node : g.nodes) {
    std::vector<Operand> in;
    for (int k : node.operands)
      in.push_back(
          Operand{"x", k >= 0 ? g.nodes[size_t(k)].dtype : g.externals[size_t(-1 - k)].dtype});
    if (ir::Result<std::string> e = expression(node, in); !e)
      return KernelResult::failure("the CUDA device has no kernel for '" +
                                   std::string(ir::info(node.op).ir_name) + "' to " +
                                   std::string(ir::ir_name(node.dtype)) + ": " + e.error());
  }
  std::string source = group_source(g, "KERNEL");
  char hash[24];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a(source)));
  std::string name = std::string("sg_ew_") + hash;
  std::shared_ptr<GeneratedKernel> kernel = context.nvrtc->add(name, group_source(g, name));
  long long n = g.output.shape.numel().value_or(0);
  int sms = std::max(context.sm_count, 1);
  unsigned blocks = unsigned(std::min<long long>((n + kBlock - 1) / kBlock, int64_t(sms) * 32));
  size_t operands = g.externals.size();
  LaunchFn launch = [kernel, n, blocks, operands](const LaunchArgs& a) -> std::string {
    if (n == 0) return {};
    if (!kernel->function) return "the generated kernel " + kernel->name + " was not loaded";
    std::vector<const void*> pointers(a.inputs, a.inputs + operands);
    void* out = a.output;
    long long count = n;
    std::vector<void*> args;
    for (const void*& p : pointers) args.push_back(&p);
    args.push_back(&out);
    args.push_back(&count);
    return cuda_error(cudaLaunchKernel(reinterpret_cast<const void*>(kernel->function),
                                       dim3(blocks), dim3(kBlock), args.data(), 0, a.stream),
                      "cudaLaunchKernel");
  };
  return kernel_of(std::move(launch), group_label(g) + " " + name);
}

KernelResult make_elementwise_kernel(const KernelRequest& r) {
  ElementwiseGroup g;
  g.output = r.output;
  g.externals.assign(r.inputs.begin(), r.inputs.end());
  GroupNode node{r.op, r.attrs, r.output.dtype, {}};
  for (size_t k = 0; k < r.inputs.size(); ++k) node.operands.push_back(-1 - int(k));
  g.nodes.push_back(std::move(node));
  return make_group_kernel(g, r.context);
}

// ---- Several shape-free groups of one code in one launch ---------------------------------

namespace {

// Each entry of a multi-group launch's table: the member's externals and
// output pointers, its element count and its first block.
size_t entry_bytes(const ElementwiseGroup& g) {
  return (g.externals.size() + 1) * sizeof(void*) + 2 * sizeof(long long);
}

std::vector<std::string> shape_free_offsets(const ElementwiseGroup& g) {
  std::vector<std::string> offsets;
  for (const ir::TensorType& e : g.externals)
    offsets.push_back(e.shape.numel().value_or(0) == 1 ? "0" : "i");
  return offsets;
}

// Kernel parameters may take 32764 bytes (CUDA 12.1 and later, Volta on).
constexpr size_t kParameterBytes = 32000;

}  // namespace

bool shape_free(const ElementwiseGroup& g) {
  if (g.output.shape.numel().value_or(0) <= 0) return false;
  for (const ir::TensorType& e : g.externals)
    if (e.shape.numel().value_or(0) != 1 && !(e.shape == g.output.shape)) return false;
  return true;
}

std::string shape_free_key(const ElementwiseGroup& g) {
  std::string key = body(g, shape_free_offsets(g), "in", "out");
  for (const ir::TensorType& e : g.externals) key += std::string(ir::ir_name(e.dtype)) + ",";
  return key + std::string(ir::ir_name(g.output.dtype));
}

size_t multi_group_capacity(const ElementwiseGroup& g) {
  return std::max<size_t>(1, kParameterBytes / entry_bytes(g));
}

std::string multi_group_source(const ElementwiseGroup& g, size_t members, const std::string& name) {
  std::string m = std::to_string(members);
  std::string s = "struct " + name + "_entry {";
  for (size_t k = 0; k < g.externals.size(); ++k)
    s += std::string(" const ") + storage_type(g.externals[k].dtype) + "* in" + std::to_string(k) +
         ";";
  s += std::string(" ") + storage_type(g.output.dtype) + "* out; long long n, first_block; };\n";
  s += "struct " + name + "_table { " + name + "_entry e[" + m + "]; };\n";
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) + ") " + name +
       "(const " + name + "_table t) {\n";
  // The member whose block range holds this block: the last first_block
  // at or below blockIdx.x.
  s += "  int lo = 0, hi = " + m + " - 1;\n";
  s += "  while (lo < hi) {\n    const int mid = (lo + hi + 1) / 2;\n";
  s += "    if (t.e[mid].first_block <= (long long)blockIdx.x) lo = mid; else hi = mid - 1;\n  }\n";
  s += "  const long long first = t.e[lo].first_block, n = t.e[lo].n;\n";
  s += "  const long long blocks = (lo + 1 < " + m +
       " ? t.e[lo + 1].first_block : (long long)gridDim.x) - first;\n";
  for (size_t k = 0; k < g.externals.size(); ++k)
    s += std::string("  const ") + storage_type(g.externals[k].dtype) + "* __restrict__ in" +
         std::to_string(k) + " = t.e[lo].in" + std::to_string(k) + ";\n";
  s += std::string("  ") + storage_type(g.output.dtype) + "* __restrict__ out = t.e[lo].out;\n";
  s += "  for (long long i = ((long long)blockIdx.x - first) * blockDim.x + threadIdx.x; i < n;\n";
  s += "       i += blocks * blockDim.x) {\n";
  s += body(g, shape_free_offsets(g), "in", "out");
  s += "  }\n}\n";
  return s;
}

KernelResult make_multi_group_kernel(const std::vector<ElementwiseGroup>& groups,
                                     Context& context) {
  if (groups.empty()) return KernelResult::failure("no groups");
  const ElementwiseGroup& g = groups.front();
  const std::string key = shape_free_key(g);
  for (const ElementwiseGroup& other : groups)
    if (!shape_free(other) || shape_free_key(other) != key)
      return KernelResult::failure("the groups of a multi-tensor launch must share their code");
  if (groups.size() > multi_group_capacity(g))
    return KernelResult::failure("too many groups for one launch's parameters");
  std::string source = multi_group_source(g, groups.size(), "KERNEL");
  char hash[24];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a(source)));
  std::string name = std::string("sg_mt_") + hash;
  std::shared_ptr<GeneratedKernel> kernel =
      context.nvrtc->add(name, multi_group_source(g, groups.size(), name));
  // Blocks per member in proportion to its size, capped so that a big one
  // loops instead of taking the whole grid.
  const long long cap = std::max(context.sm_count, 1) * 8LL;
  std::vector<long long> counts, first_blocks;
  long long blocks = 0;
  for (const ElementwiseGroup& m : groups) {
    long long n = m.output.shape.numel().value_or(0);
    counts.push_back(n);
    first_blocks.push_back(blocks);
    blocks += std::max(1LL, std::min(cap, (n + kBlock - 1) / kBlock));
  }
  const size_t pointers = g.externals.size() + 1, entry = entry_bytes(g);
  LaunchFn launch = [kernel, counts, first_blocks, blocks, pointers,
                     entry](const LaunchArgs& a) -> std::string {
    if (!kernel->function) return "the generated kernel " + kernel->name + " was not loaded";
    std::vector<unsigned char> table(entry * counts.size());
    for (size_t m = 0; m < counts.size(); ++m) {
      unsigned char* at = table.data() + m * entry;
      std::memcpy(at, a.inputs + m * pointers, pointers * sizeof(void*));
      std::memcpy(at + pointers * sizeof(void*), &counts[m], sizeof(long long));
      std::memcpy(at + pointers * sizeof(void*) + sizeof(long long), &first_blocks[m],
                  sizeof(long long));
    }
    void* args[] = {table.data()};
    return cuda_error(cudaLaunchKernel(reinterpret_cast<const void*>(kernel->function),
                                       dim3(unsigned(blocks)), dim3(kBlock), args, 0, a.stream),
                      "cudaLaunchKernel");
  };
  return kernel_of(std::move(launch), "multi-tensor x" + std::to_string(groups.size()) + " " +
                                          group_label(g) + " " + name);
}

}  // namespace sexpgpu::cuda
