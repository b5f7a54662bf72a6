// Generated elementwise kernels (elementwise.h): the source of one kernel
// per node or fusion group, registered with the device's NVRTC cache at
// compile time and launched over a grid-stride loop. Groups with views are
// planned by elementwise_views.h; the rest walk their operands with
// collapsed strides, each thread taking a vector of consecutive elements
// when the geometry allows.
#include "elementwise.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cuda/check.h"
#include "elementwise_codegen.h"
#include "elementwise_views.h"
#include "nvrtc_cache.h"
#include "plan/geometry.h"

namespace sexpgpu::cuda {

namespace {

using namespace codegen;
using ir::DType;
using ir::Op;

constexpr int kBlock = 256;

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

ir::Dims contiguous(const Walk& w) {
  ir::Dims c(w.dims.size(), 1);
  for (size_t a = w.dims.size(); a-- > 1;) c[a - 1] = c[a] * w.dims[a];
  return c;
}

// The offset expression of operand `k` at element i with coordinates c0...
std::string offset(const Walk& w, size_t k) {
  const ir::Dims& s = w.strides[k];
  bool zero = std::all_of(s.begin(), s.end(), [](int64_t v) { return v == 0; });
  if (zero) return "0";
  if (s == contiguous(w)) return "i";
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
  label += "<" + std::string(ir::ir_name(g.output.dtype)) + "> " + g.output.to_string();
  if (!g.stores.empty()) label += " +" + std::to_string(g.stores.size()) + " stored";
  return label;
}

// The name of the kernel's pointer to the group's result (0) or to its
// stored node k - 1 (1...).
std::string out_name(size_t k) {
  return k == 0 ? "out" : "out" + std::to_string(k);
}

// The dtype the kernel writes through out_name(k).
ir::DType out_dtype(const ElementwiseGroup& g, size_t k) {
  return k == 0 ? g.output.dtype : g.nodes[size_t(g.stores[k - 1])].dtype;
}

// The register holding what out_name(k) receives.
std::string out_value(const ElementwiseGroup& g, size_t k) {
  return "v" + std::to_string(k == 0 ? g.nodes.size() - 1 : size_t(g.stores[k - 1]));
}

// Where element `index` of each result goes: out[index], out1[index]...
std::vector<std::string> results_at(const ElementwiseGroup& g, const std::string& index) {
  std::vector<std::string> at;
  for (size_t k = 0; k <= g.stores.size(); ++k) at.push_back(out_name(k) + "[" + index + "]");
  return at;
}

// The loop body of a group's kernel: load each external from its element
// expression, compute every node, store the last at `results[0]` and the
// stored nodes at the others.
std::string body(const ElementwiseGroup& g, const std::vector<std::string>& elements,
                 const std::vector<std::string>& results, const std::string& indent = "    ") {
  std::string s;
  for (size_t k = 0; k < g.externals.size(); ++k)
    s += indent + "const " + value_type(g.externals[k].dtype) + " x" + std::to_string(k) + " = " +
         load(g.externals[k].dtype, elements[k]) + ";\n";
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const GroupNode& node = g.nodes[j];
    std::vector<Operand> in;
    for (int k : node.operands)
      in.push_back(k >= 0
                       ? Operand{"v" + std::to_string(k), g.nodes[size_t(k)].dtype}
                       : Operand{"x" + std::to_string(-1 - k), g.externals[size_t(-1 - k)].dtype});
    ir::Result<std::string> e = expression(node, in, g.output.dtype);
    if (!e) return "#error " + std::string(ir::info(node.op).ir_name) + ": " + e.error() + "\n";
    s += indent + "const " + value_type(node.dtype) + " v" + std::to_string(j) + " = " + *e + ";\n";
  }
  for (size_t k = 0; k <= g.stores.size(); ++k)
    s += indent + results[k] + " = " + store(out_dtype(g, k), out_value(g, k)) + ";\n";
  return s;
}

std::vector<std::string> elements_at(const std::vector<std::string>& offsets) {
  std::vector<std::string> e;
  for (size_t k = 0; k < offsets.size(); ++k)
    e.push_back("in" + std::to_string(k) + "[" + offsets[k] + "]");
  return e;
}

bool wide_index(int64_t n) {
  return n > int64_t(INT32_MAX) - 2 * 65536LL * kBlock;
}

std::string kernel_head(const ElementwiseGroup& g, const std::string& name) {
  std::string s = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
                  ") " + name + "(";
  for (size_t k = 0; k < g.externals.size(); ++k)
    s += std::string("const ") + storage_type(g.externals[k].dtype) + "* __restrict__ in" +
         std::to_string(k) + ", ";
  for (size_t k = 0; k <= g.stores.size(); ++k)
    s += std::string(storage_type(out_dtype(g, k))) + "* __restrict__ " + out_name(k) + ", ";
  return s + "long long n) {\n";
}

// The coordinates c0... of the walk at element `i`, for offsets that use them.
std::string coordinates(const Walk& w, const std::vector<std::string>& offsets,
                        const std::string& idx) {
  bool used = std::any_of(offsets.begin(), offsets.end(),
                          [](const std::string& o) { return o.find('c') != std::string::npos; });
  if (!used) return {};
  std::string s = "    " + idx + " rest = i;\n";
  for (size_t a = w.dims.size(); a-- > 0;) {
    std::string c = "c" + std::to_string(a);
    if (a == 0) {
      s += "    const " + idx + " " + c + " = rest;\n";
    } else {
      std::string d = std::to_string(w.dims[a]);
      s += "    const " + idx + " " + c + " = rest % " + d + "; rest /= " + d + ";\n";
    }
  }
  return s;
}

std::string scalar_source(const ElementwiseGroup& g, const Walk& w, const std::string& name) {
  const std::string idx = wide_index(g.output.shape.numel().value_or(0)) ? "long long" : "int";
  const std::string cast = "(" + idx + ")";
  std::string s = kernel_head(g, name);
  s += "  for (" + idx + " i = " + cast + "blockIdx.x * blockDim.x + threadIdx.x; i < " + cast +
       "n; i += " + cast + "gridDim.x * blockDim.x) {\n";
  std::vector<std::string> offsets;
  for (size_t k = 0; k < g.externals.size(); ++k) offsets.push_back(offset(w, k));
  s += coordinates(w, offsets, idx);
  s += body(g, elements_at(offsets), results_at(g, "i"));
  return s + "  }\n}\n";
}

// Elements a thread of the vector kernel takes: 16 bytes of the narrowest
// operand walked contiguously (at most 8), dividing the inner axis so that
// a vector never crosses a row; 1 when no vector kernel pays.
int vector_width(const ElementwiseGroup& g, const Walk& w) {
  if (w.dims.empty()) return 1;
  size_t narrowest = ir::size_bytes(g.output.dtype);
  for (size_t k = 1; k <= g.stores.size(); ++k)
    narrowest = std::min(narrowest, ir::size_bytes(out_dtype(g, k)));
  for (size_t k = 0; k < g.externals.size(); ++k)
    if (w.strides[k].back() == 1)
      narrowest = std::min(narrowest, ir::size_bytes(g.externals[k].dtype));
  int v = int(std::min<size_t>(8, 16 / narrowest));
  while (v > 1 && w.dims.back() % v != 0) v /= 2;
  return v;
}

// The v results of element i (elements: each external's j-th value):
// computed into registers o (the result), o1... (the stored nodes), then
// stored as vectors.
std::string vector_results(const ElementwiseGroup& g, const std::vector<std::string>& elements,
                           int v) {
  const std::string vs = std::to_string(v);
  std::string s;
  std::vector<std::string> registers, results;
  for (size_t k = 0; k <= g.stores.size(); ++k) {
    registers.push_back(k == 0 ? "o" : "o" + std::to_string(k));
    results.push_back(registers.back() + "[j]");
    s += "    " + std::string(storage_type(out_dtype(g, k))) + " " + registers.back() + "[" + vs +
         "];\n";
  }
  s += "#pragma unroll\n    for (int j = 0; j < " + vs + "; ++j) {\n";
  s += body(g, elements, results, "      ");
  s += "    }\n";
  for (size_t k = 0; k <= g.stores.size(); ++k)
    s += "    sg_store_vec<" + std::string(storage_type(out_dtype(g, k))) + ", " + vs + ">(" +
         out_name(k) + " + i, " + registers[k] + ");\n";
  return s;
}

// The kernel over vectors of v consecutive elements (v divides the inner
// axis): operands walked contiguously with whole aligned vectors load as
// vectors, stretched ones once, others element by element.
std::string vector_source(const ElementwiseGroup& g, const Walk& w, int v,
                          const std::string& name) {
  const std::string idx = wide_index(g.output.shape.numel().value_or(0)) ? "long long" : "int";
  const std::string cast = "(" + idx + ")", vs = std::to_string(v);
  std::string s = kernel_head(g, name);
  s += "  const " + idx + " vectors = " + cast + "(n / " + vs + ");\n";
  s += "  for (" + idx + " q = " + cast +
       "blockIdx.x * blockDim.x + threadIdx.x; q < vectors; q += " + cast +
       "gridDim.x * blockDim.x) {\n";
  s += "    const " + idx + " i = q * " + vs + ";\n";
  std::vector<std::string> offsets, elements;
  for (size_t k = 0; k < g.externals.size(); ++k) offsets.push_back(offset(w, k));
  s += coordinates(w, offsets, idx);
  for (size_t k = 0; k < g.externals.size(); ++k) {
    const ir::Dims& st = w.strides[k];
    std::string in = "in" + std::to_string(k), x = "a" + std::to_string(k);
    std::string type = storage_type(g.externals[k].dtype);
    bool whole = st.back() == 1 &&
                 std::all_of(st.begin(), st.end() - 1, [&](int64_t t) { return t % v == 0; });
    if (whole) {
      s += "    " + type + " " + x + "[" + vs + "];\n";
      s += "    sg_load_vec<" + type + ", " + vs + ">(" + in + " + (" + offsets[k] + "), " + x +
           ");\n";
      elements.push_back(x + "[j]");
    } else if (st.back() == 0) {
      s += "    const " + type + " " + x + " = " + in + "[" + offsets[k] + "];\n";
      elements.push_back(x);
    } else {
      elements.push_back(in + "[(" + offsets[k] + ") + j * " + std::to_string(st.back()) + "]");
    }
  }
  s += vector_results(g, elements, v);
  return s + "  }\n}\n";
}

std::string vector_name(const std::string& name) {
  return name + "_v";
}

// Grid of at most 32 blocks per multiprocessor (a few waves), grid-stride beyond.
unsigned grid_for(long long threads, const Context& context) {
  long long sms = std::max(context.sm_count, 1);
  return unsigned(std::max(1LL, std::min((threads + kBlock - 1) / kBlock, sms * 32)));
}

std::string launch_generated(const GeneratedKernel& kernel, unsigned blocks, const LaunchArgs& a,
                             size_t operands, size_t stores, long long n) {
  if (!kernel.function) return "the generated kernel " + kernel.name + " was not loaded";
  std::vector<const void*> pointers(a.inputs, a.inputs + operands);
  std::vector<void*> outs{a.output};
  outs.insert(outs.end(), a.stores, a.stores + stores);
  long long count = n;
  std::vector<void*> args;
  for (const void*& p : pointers) args.push_back(&p);
  for (void*& p : outs) args.push_back(&p);
  args.push_back(&count);
  return cuda_error(cudaLaunchKernel(reinterpret_cast<const void*>(kernel.function), dim3(blocks),
                                     dim3(kBlock), args.data(), 0, a.stream),
                    "cudaLaunchKernel");
}

bool all_aligned(const LaunchArgs& a, size_t operands, size_t stores, uintptr_t bytes) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(a.output);
  for (size_t k = 0; k < operands; ++k) bits |= reinterpret_cast<uintptr_t>(a.inputs[k]);
  for (size_t k = 0; k < stores; ++k) bits |= reinterpret_cast<uintptr_t>(a.stores[k]);
  return bits % bytes == 0;
}

}  // namespace

bool is_view(Op op) {
  return op == Op::Permute || op == Op::Slice || op == Op::Pad || op == Op::Reshape ||
         op == Op::Expand || op == Op::Flip;
}

bool has_views(const ElementwiseGroup& g) {
  return std::any_of(g.nodes.begin(), g.nodes.end(),
                     [](const GroupNode& n) { return is_view(n.op); });
}

std::string group_source(const ElementwiseGroup& g, const std::string& name) {
  if (has_views(g)) {
    ir::Result<ViewPlan> plan = plan_views(g);
    if (!plan) return "#error " + plan.error() + "\n";
    std::string s = view_source(g, *plan, 1, name);
    if (int v = view_vector_width(g, *plan); v > 1)
      s += view_source(g, *plan, v, vector_name(name));
    return s;
  }
  Walk w = collapse(g.output.shape, g.externals);
  std::string s = scalar_source(g, w, name);
  if (int v = vector_width(g, w); v > 1) s += vector_source(g, w, v, vector_name(name));
  return s;
}

KernelResult make_group_kernel(const ElementwiseGroup& g, Context& context) {
  // Expressions that cannot be generated fail here, at compile time.
  for (const GroupNode& node : g.nodes) {
    if (is_view(node.op)) continue;
    std::vector<Operand> in;
    for (int k : node.operands)
      in.push_back(
          Operand{"x", k >= 0 ? g.nodes[size_t(k)].dtype : g.externals[size_t(-1 - k)].dtype});
    if (ir::Result<std::string> e = expression(node, in); !e)
      return KernelResult::failure("the CUDA device has no kernel for '" +
                                   std::string(ir::info(node.op).ir_name) + "' to " +
                                   std::string(ir::ir_name(node.dtype)) + ": " + e.error());
  }
  if (has_views(g) && !g.stores.empty())
    return KernelResult::failure("a fused group with views writes its result alone");
  int v = 1;
  if (has_views(g)) {
    ir::Result<ViewPlan> plan = plan_views(g);
    if (!plan) return KernelResult::failure("a fused group with views: " + plan.error());
    v = view_vector_width(g, *plan);
  } else {
    v = vector_width(g, collapse(g.output.shape, g.externals));
  }
  std::string source = group_source(g, "KERNEL");
  char hash[24];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a(source)));
  std::string name = std::string("sg_ew_") + hash;
  std::shared_ptr<GeneratedKernel> scalar = context.nvrtc->add(name, group_source(g, name));
  const long long n = g.output.shape.numel().value_or(0);
  // The vector kernel is in the scalar one's source.
  std::shared_ptr<GeneratedKernel> vector =
      v > 1 ? context.nvrtc->add(vector_name(name), "") : nullptr;
  const unsigned blocks = grid_for(n, context), vector_blocks = grid_for(n / v, context);
  const size_t operands = g.externals.size(), stores = g.stores.size();
  LaunchFn launch = [scalar, vector, n, blocks, vector_blocks, operands,
                     stores](const LaunchArgs& a) -> std::string {
    if (n == 0) return {};
    if (vector && all_aligned(a, operands, stores, 16))
      return launch_generated(*vector, vector_blocks, a, operands, stores, n);
    return launch_generated(*scalar, blocks, a, operands, stores, n);
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

// Each entry of a multi-group launch's table: the member's externals',
// result's and stored nodes' pointers, its element count and its first block.
size_t entry_pointers(const ElementwiseGroup& g) {
  return g.externals.size() + 1 + g.stores.size();
}
size_t entry_bytes(const ElementwiseGroup& g) {
  return entry_pointers(g) * sizeof(void*) + 2 * sizeof(long long);
}

std::vector<std::string> shape_free_offsets(const ElementwiseGroup& g) {
  std::vector<std::string> offsets;
  for (const ir::TensorType& e : g.externals)
    offsets.push_back(e.shape.numel().value_or(0) == 1 ? "0" : "i");
  return offsets;
}

// Kernel parameters may take 32764 bytes (CUDA 12.1 and later, Volta on).
constexpr size_t kParameterBytes = 32000;

// The multi-group vector kernel's width: 16 bytes of the narrowest tensor
// it walks (at most 8 elements).
int multi_group_vector_width(const ElementwiseGroup& g) {
  size_t narrowest = 16;
  for (size_t k = 0; k <= g.stores.size(); ++k)
    narrowest = std::min(narrowest, ir::size_bytes(out_dtype(g, k)));
  for (const ir::TensorType& e : g.externals)
    if (e.shape.numel().value_or(0) != 1) narrowest = std::min(narrowest, ir::size_bytes(e.dtype));
  return int(std::min<size_t>(8, 16 / narrowest));
}

// One kernel over a multi-group table: each block finds its member, then
// walks it by vectors of v elements (v > 1) or one by one.
std::string multi_group_kernel(const ElementwiseGroup& g, size_t members, const std::string& table,
                               const std::string& name, int v) {
  const std::string m = std::to_string(members);
  std::string s = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
                  ") " + name + "(const " + table + "_table t) {\n";
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
  for (size_t k = 0; k <= g.stores.size(); ++k)
    s += std::string("  ") + storage_type(out_dtype(g, k)) + "* __restrict__ " + out_name(k) +
         " = t.e[lo]." + out_name(k) + ";\n";
  const std::vector<std::string> offsets = shape_free_offsets(g);
  std::string tail_start = "0";
  if (v > 1) {
    // Whole vectors of v elements (every pointer 16-byte aligned, checked
    // at launch), then the member's last n % v elements one by one.
    const std::string vs = std::to_string(v);
    s += "  const long long vectors = n / " + vs + ";\n";
    s += "  for (long long q = ((long long)blockIdx.x - first) * blockDim.x + threadIdx.x;\n";
    s += "       q < vectors; q += blocks * blockDim.x) {\n";
    s += "    const long long i = q * " + vs + ";\n";
    std::vector<std::string> elements;
    for (size_t k = 0; k < g.externals.size(); ++k) {
      std::string in = "in" + std::to_string(k), x = "a" + std::to_string(k);
      if (offsets[k] == "0") {
        elements.push_back(in + "[0]");
        continue;
      }
      std::string type = storage_type(g.externals[k].dtype);
      s += "    " + type + " " + x + "[" + vs + "];\n";
      s += "    sg_load_vec<" + type + ", " + vs + ">(" + in + " + i, " + x + ");\n";
      elements.push_back(x + "[j]");
    }
    s += vector_results(g, elements, v);
    s += "  }\n";
    tail_start = "vectors * " + vs;
  }
  s += "  for (long long i = " + tail_start +
       " + ((long long)blockIdx.x - first) * blockDim.x + threadIdx.x; i < n;\n";
  s += "       i += blocks * blockDim.x) {\n";
  s += body(g, elements_at(offsets), results_at(g, "i"));
  s += "  }\n}\n";
  return s;
}

}  // namespace

bool shape_free(const ElementwiseGroup& g) {
  if (g.output.shape.numel().value_or(0) <= 0 || has_views(g)) return false;
  for (const ir::TensorType& e : g.externals)
    if (e.shape.numel().value_or(0) != 1 && !(e.shape == g.output.shape)) return false;
  return true;
}

std::string shape_free_key(const ElementwiseGroup& g) {
  std::string key = body(g, elements_at(shape_free_offsets(g)), results_at(g, "i"));
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
  for (size_t k = 0; k <= g.stores.size(); ++k)
    s += std::string(" ") + storage_type(out_dtype(g, k)) + "* " + out_name(k) + ";";
  s += " long long n, first_block; };\n";
  s += "struct " + name + "_table { " + name + "_entry e[" + m + "]; };\n";
  s += multi_group_kernel(g, members, name, name, 1);
  if (int v = multi_group_vector_width(g); v > 1)
    s += multi_group_kernel(g, members, name, vector_name(name), v);
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
  // The vector kernel is in the scalar one's source; it runs when every
  // pointer it reads vectors through is 16-byte aligned.
  std::shared_ptr<GeneratedKernel> vector =
      multi_group_vector_width(g) > 1 ? context.nvrtc->add(vector_name(name), "") : nullptr;
  const size_t pointers = entry_pointers(g), entry = entry_bytes(g);
  std::vector<bool> walked(pointers, true);  // per pointer of an entry: read or written as vectors
  for (size_t k = 0; k < g.externals.size(); ++k)
    walked[k] = g.externals[k].shape.numel().value_or(0) != 1;
  LaunchFn launch = [kernel, vector, walked, counts, first_blocks, blocks, pointers,
                     entry](const LaunchArgs& a) -> std::string {
    bool aligned = vector != nullptr;
    for (size_t m = 0; m < counts.size() && aligned; ++m)
      for (size_t k = 0; k < pointers; ++k)
        if (walked[k] && reinterpret_cast<uintptr_t>(a.inputs[m * pointers + k]) % 16 != 0)
          aligned = false;
    const GeneratedKernel& chosen = aligned ? *vector : *kernel;
    if (!chosen.function) return "the generated kernel " + chosen.name + " was not loaded";
    std::vector<unsigned char> table(entry * counts.size());
    for (size_t m = 0; m < counts.size(); ++m) {
      unsigned char* at = table.data() + m * entry;
      std::memcpy(at, a.inputs + m * pointers, pointers * sizeof(void*));
      std::memcpy(at + pointers * sizeof(void*), &counts[m], sizeof(long long));
      std::memcpy(at + pointers * sizeof(void*) + sizeof(long long), &first_blocks[m],
                  sizeof(long long));
    }
    void* args[] = {table.data()};
    return cuda_error(cudaLaunchKernel(reinterpret_cast<const void*>(chosen.function),
                                       dim3(unsigned(blocks)), dim3(kBlock), args, 0, a.stream),
                      "cudaLaunchKernel");
  };
  return kernel_of(std::move(launch), "multi-tensor x" + std::to_string(groups.size()) + " " +
                                          group_label(g) + " " + name);
}

}  // namespace sexpgpu::cuda
