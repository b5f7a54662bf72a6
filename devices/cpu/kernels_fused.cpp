// Fused elementwise kernels (kernel.h, make_fused_kernel): a fusion group
// runs as one pass over its output in blocks of kBlock elements. Each node
// of the group computes its block into a small scratch block (reused once
// its last reader in the group has run), the last node into the output, so
// the intermediates never go through memory in full and only the output
// needs an arena buffer. External operands of the output's size are read in
// place, one-element ones as a broadcast value, and any other broadcast is
// gathered into a scratch block first. Each node's block function is chosen
// when the kernel is made; running is an indirect call per node per block.
#include <algorithm>
#include <memory>
#include <optional>

#include "elementwise_rows.h"
#include "kernel.h"
#include "parallel.h"
#include "scalar_ops.h"
#include "storage.h"
#include "vector_math.h"

namespace sexpgpu::cpu {
namespace {

using ir::DType;
using ir::Op;

// Small enough that a group's live blocks stay in L1/L2, big enough that the
// per-block calls are noise.
constexpr int64_t kBlock = 1024;

// One operand of a block function: its elements, with stride 1 or 0.
struct Arg {
  const void* data;
  int64_t stride;
};

using BlockFn = void (*)(int64_t n, const Arg* args, void* out);

template <class T, Op op>
void unary_block(int64_t n, const Arg* a, void* out) {
  const T* x = static_cast<const T*>(a[0].data);
  T* o = static_cast<T*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = scalar::unary<op, T>(x[i]);
}

// A unary operand has the output's shape, so its stride is 0 only when the
// block is one element.
template <void (*F)(const float*, float*, int64_t)>
void vector_block(int64_t n, const Arg* a, void* out) {
  F(static_cast<const float*>(a[0].data), static_cast<float*>(out), n);
}

template <class T, Op op>
void predicate_block(int64_t n, const Arg* a, void* out) {
  const T* x = static_cast<const T*>(a[0].data);
  uint8_t* o = static_cast<uint8_t*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = scalar::predicate<op, T>(x[i]);
}

template <class T, Op op>
void binary_block(int64_t n, const Arg* a, void* out) {
  binary_row(n, static_cast<const T*>(a[0].data), a[0].stride, static_cast<const T*>(a[1].data),
             a[1].stride, static_cast<T*>(out),
             [](T x, T y) { return scalar::binary<op, T>(x, y); });
}

template <class T, Op op>
void compare_block(int64_t n, const Arg* a, void* out) {
  binary_row(n, static_cast<const T*>(a[0].data), a[0].stride, static_cast<const T*>(a[1].data),
             a[1].stride, static_cast<uint8_t*>(out),
             [](T x, T y) { return scalar::compare<op, T>(x, y); });
}

template <class T>
void where_block(int64_t n, const Arg* a, void* out) {
  ternary_row(n, static_cast<const uint8_t*>(a[0].data), a[0].stride,
              static_cast<const T*>(a[1].data), a[1].stride, static_cast<const T*>(a[2].data),
              a[2].stride, static_cast<T*>(out), [](uint8_t c, T x, T y) { return c ? x : y; });
}

template <class T>
void clamp_block(int64_t n, const Arg* a, void* out) {
  ternary_row(n, static_cast<const T*>(a[0].data), a[0].stride, static_cast<const T*>(a[1].data),
              a[1].stride, static_cast<const T*>(a[2].data), a[2].stride, static_cast<T*>(out),
              [](T x, T lo, T hi) { return scalar::clamp(x, lo, hi); });
}

#define SG_CASE(OP, BLOCK) \
  case Op::OP: return BLOCK<T, Op::OP>

// The block function of one node computing in T, or nullptr.
template <class T>
BlockFn block_fn(const FusedNode& n) {
  if constexpr (std::is_same_v<T, float>) {
    if (n.op == Op::Exp) return vector_block<vmath::exp_f32>;
    if (n.op == Op::Erf) return vector_block<vmath::erf_f32>;
    if (n.op == Op::Gelu) return vector_block<vmath::gelu_f32>;
  }
  switch (n.op) {
    SG_CASE(Neg, unary_block);
    SG_CASE(Abs, unary_block);
    SG_CASE(Square, unary_block);
    SG_CASE(Sign, unary_block);
    SG_CASE(Relu, unary_block);
    SG_CASE(Floor, unary_block);
    SG_CASE(Ceil, unary_block);
    SG_CASE(Round, unary_block);
    SG_CASE(StopGradient, unary_block);
#define SG_FLOAT_PRIMITIVE(id, fn) SG_CASE(id, unary_block);
#define SG_FLOAT_UNARY(id, fn, ...) SG_CASE(id, unary_block);
#include "ir/float_unary.def"
#undef SG_FLOAT_PRIMITIVE
#undef SG_FLOAT_UNARY
    SG_CASE(LogicalNot, predicate_block);
    SG_CASE(IsFinite, predicate_block);
    SG_CASE(Add, binary_block);
    SG_CASE(Sub, binary_block);
    SG_CASE(Mul, binary_block);
    SG_CASE(Div, binary_block);
    SG_CASE(Pow, binary_block);
    SG_CASE(Maximum, binary_block);
    SG_CASE(Minimum, binary_block);
    SG_CASE(Atan2, binary_block);
    SG_CASE(Mod, binary_block);
    SG_CASE(Lt, compare_block);
    SG_CASE(Le, compare_block);
    SG_CASE(Gt, compare_block);
    SG_CASE(Ge, compare_block);
    SG_CASE(Eq, compare_block);
    SG_CASE(Ne, compare_block);
    SG_CASE(LogicalAnd, compare_block);
    SG_CASE(LogicalOr, compare_block);
    case Op::Where: return where_block<T>;
    case Op::Clamp: return clamp_block<T>;
    default: return nullptr;
  }
}
#undef SG_CASE

// The dtypes a node's operands must have when it computes in `t`, and its
// result's, or an empty string when the node is not fusable in `t`.
std::string check_node_dtypes(const FusedNode& n, const std::vector<DType>& operands, DType t) {
  ir::Rule rule = ir::info(n.op).rule;
  bool bool_result = rule == ir::Rule::UnaryBool || rule == ir::Rule::Compare;
  if (n.dtype != (bool_result ? DType::Bool : t))
    return "a " + std::string(ir::ir_name(n.dtype)) + " " + std::string(ir::info(n.op).ir_name);
  for (size_t k = 0; k < operands.size(); ++k) {
    DType want = n.op == Op::Where && k == 0 ? DType::Bool : t;
    if (operands[k] != want)
      return std::string(ir::info(n.op).ir_name) + " of a " +
             std::string(ir::ir_name(operands[k])) + " operand";
  }
  return {};
}

// How a block reads one external operand.
struct External {
  enum Kind : uint8_t { Contiguous, Scalar, Gathered } kind;
  size_t element_bytes;
  Space space;   // Gathered: (output, operand)
  int slot = 0;  // Gathered: its scratch block
};

// Copies elements [begin, begin + n) of the broadcast operand (in output
// order) into dst, row by row of its collapsed space.
template <class E>
void gather(const Space& sp, const E* src, int64_t begin, int64_t n, E* dst) {
  int64_t inner = sp.inner(), stride = sp.inner_stride(1);
  int64_t row = begin / inner, col = begin % inner;
  for (int64_t i = 0; i < n; col = 0, ++row) {
    int64_t len = std::min(inner - col, n - i);
    const E* p = src + sp.row_offset(1, row) + col * stride;
    if (stride == 0)
      std::fill_n(dst + i, len, *p);
    else
      for (int64_t j = 0; j < len; ++j) dst[i + j] = p[j * stride];
    i += len;
  }
}

// Fusable externals hold f32, f64 or bool elements.
void gather_bytes(const External& e, const void* src, int64_t begin, int64_t n, void* dst) {
  auto as = [&](auto tag) {
    using E = decltype(tag);
    gather(e.space, static_cast<const E*>(src), begin, n, static_cast<E*>(dst));
  };
  if (e.element_bytes == 1) return as(uint8_t{});
  if (e.element_bytes == 4) return as(uint32_t{});
  as(uint64_t{});
}

struct Instruction {
  BlockFn fn;
  std::vector<int> operands;  // k >= 0: scratch slot k; k < 0: external -1 - k
  int slot;                   // -1: the output
};

struct FusedPlan {
  std::vector<Instruction> program;
  std::vector<External> externals;
  int slots = 0;
  int64_t numel = 0;
  size_t out_bytes = 0;  // per element
  int threads = 1;
  int64_t work_per_element = 1;
};

// Runs blocks [first, last) of the plan with one thread's scratch.
void run_blocks(const FusedPlan& p, int64_t first, int64_t last, std::vector<double>& scratch,
                const void* const* in, void* out) {
  if (scratch.empty()) scratch.resize(size_t(std::max(p.slots, 1) * kBlock));
  auto slot = [&](int s) { return static_cast<void*>(scratch.data() + s * kBlock); };
  std::vector<Arg> ext(p.externals.size());
  Arg args[3];
  for (int64_t block = first; block < last; ++block) {
    int64_t begin = block * kBlock, n = std::min(kBlock, p.numel - begin);
    for (size_t k = 0; k < ext.size(); ++k) {
      const External& e = p.externals[k];
      const auto* base = static_cast<const std::byte*>(in[k]);
      switch (e.kind) {
        case External::Contiguous: ext[k] = {base + size_t(begin) * e.element_bytes, 1}; break;
        case External::Scalar: ext[k] = {base, 0}; break;
        case External::Gathered:
          gather_bytes(e, base, begin, n, slot(e.slot));
          ext[k] = {slot(e.slot), 1};
          break;
      }
    }
    for (const Instruction& ins : p.program) {
      for (size_t j = 0; j < ins.operands.size(); ++j) {
        int o = ins.operands[j];
        args[j] = o >= 0 ? Arg{slot(o), 1} : ext[size_t(-1 - o)];
      }
      void* dst = ins.slot >= 0 ? slot(ins.slot)
                                : static_cast<std::byte*>(out) + size_t(begin) * p.out_bytes;
      ins.fn(n, args, dst);
    }
  }
}

// The compute type of the group: the dtype of its non-bool values.
std::optional<DType> compute_dtype(const FusedRequest& r) {
  std::optional<DType> t;
  auto see = [&](DType d) {
    if (d != DType::Bool && !t) t = d;
  };
  for (const FusedNode& n : r.nodes) see(n.dtype);
  for (const ir::TensorType& e : r.externals) see(e.dtype);
  return t;
}

template <class T>
KernelResult fused_kernel(const FusedRequest& r, DType t) {
  auto fail = [&](const std::string& why) {
    return KernelResult::failure("fusion group not fused: " + why);
  };
  auto plan = std::make_shared<FusedPlan>();
  FusedPlan& p = *plan;
  const ir::Shape& shape = r.output.shape;
  p.numel = numel(shape);
  p.out_bytes = ir::size_bytes(r.output.dtype);
  p.threads = std::max(r.threads, 1);
  p.work_per_element = int64_t(r.nodes.size());

  // Last reader of each node, for reusing its scratch block.
  std::vector<size_t> last_read(r.nodes.size(), 0);
  for (size_t i = 0; i < r.nodes.size(); ++i)
    for (int o : r.nodes[i].operands)
      if (o >= 0) last_read[size_t(o)] = i;
  std::vector<int> free_slots, slot_of(r.nodes.size(), -1);
  auto take_slot = [&] {
    if (free_slots.empty()) return p.slots++;
    int s = free_slots.back();
    free_slots.pop_back();
    return s;
  };

  for (const ir::TensorType& e : r.externals) {
    int64_t count = numel(e.shape);
    External x{External::Contiguous, ir::size_bytes(e.dtype), {}, 0};
    if (count == 1 && p.numel != 1) {
      x.kind = External::Scalar;
    } else if (count != p.numel) {
      x.kind = External::Gathered;
      Dims strides[] = {contiguous_strides(shape), broadcast_strides(e.shape, shape)};
      x.space = make_space(shape, strides);
      x.slot = take_slot();
    }
    p.externals.push_back(std::move(x));
  }
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const FusedNode& n = r.nodes[i];
    std::vector<DType> operand_dtypes;
    Instruction ins{block_fn<T>(n), {}, -1};
    for (int o : n.operands) {
      operand_dtypes.push_back(o >= 0 ? r.nodes[size_t(o)].dtype
                                      : r.externals[size_t(-1 - o)].dtype);
      ins.operands.push_back(o >= 0 ? slot_of[size_t(o)] : o);
    }
    if (!ins.fn) return fail("no fused '" + std::string(ir::info(n.op).ir_name) + "'");
    if (std::string e = check_node_dtypes(n, operand_dtypes, t); !e.empty()) return fail(e);
    if (i + 1 < r.nodes.size()) ins.slot = slot_of[i] = take_slot();
    // Operands are released after the result has its block: a bool block
    // and a float block overlapping would not be safe.
    for (int o : n.operands)
      if (o >= 0 && last_read[size_t(o)] == i && slot_of[size_t(o)] >= 0) {
        free_slots.push_back(slot_of[size_t(o)]);
        slot_of[size_t(o)] = -1;
      }
    p.program.push_back(std::move(ins));
  }

  KernelFn fn = [plan, scratch = std::make_shared<std::vector<std::vector<double>>>(p.threads)](
                    const void* const* in, void* out) -> std::string {
    const FusedPlan& p = *plan;
    int64_t blocks = (p.numel + kBlock - 1) / kBlock;
    int64_t t = std::min(p.threads, ThreadPool::instance().size());
    if (p.numel * p.work_per_element < kParallelMinWork) t = 1;
    t = std::min(t, blocks);
    if (t <= 1) {
      run_blocks(p, 0, blocks, (*scratch)[0], in, out);
      return {};
    }
    ThreadPool::instance().run(int(t), [&](int i) {
      run_blocks(p, blocks * i / t, blocks * (i + 1) / t, (*scratch)[size_t(i)], in, out);
    });
    return {};
  };
  std::string name = "fused<" + std::string(ir::ir_name(t)) + ">";
  for (const FusedNode& n : r.nodes) name += " " + std::string(ir::info(n.op).ir_name);
  return Kernel{std::move(fn), std::move(name)};
}

}  // namespace

KernelResult make_fused_kernel(const FusedRequest& r) {
  std::optional<DType> t = compute_dtype(r);
  if (!t || (*t != DType::F32 && *t != DType::F64))
    return KernelResult::failure("fusion group not fused: it computes in " +
                                 std::string(t ? ir::ir_name(*t) : "bool") +
                                 ", the fused kernels only in f32 and f64");
  if (*t == DType::F32) return fused_kernel<float>(r, *t);
  return fused_kernel<double>(r, *t);
}

}  // namespace sexpgpu::cpu
