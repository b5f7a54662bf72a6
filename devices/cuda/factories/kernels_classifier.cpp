// linear_cross_entropy (ops.def): the fused classifier, composed of the
// device's own kernels a block of rows at a time. For each block of R rows:
// z = x w into scratch (cuBLASLt, in x's dtype), cross_entropy "sum" of the
// block into its slot (linked: each row's softmax state goes to the link),
// cross_entropy_grad "sum" scaled by g written over z in place (each row is
// read before it is written, by the same threads), dx = dz w^T for those
// rows straight into the result (f32, accumulated in f32), and dw += x^T dz
// (f32; the first block writes it, later ones add through cuBLASLt's
// addend). Last, the block losses are added into the result's last element.
// Blocks are sized so the logits of one block take at most
// kClassifierBlockBytes: GPT-2's [16384, 50304] bf16 logits (1.5 GiB, and
// as much again for their gradient) become four blocks of 393 MiB.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cuda/check.h"
#include "kernel.h"

namespace sexpgpu::cuda {

namespace {

using ir::DType;
using ir::Op;
using ir::Shape;
using ir::TensorType;

constexpr int64_t kClassifierBlockBytes = int64_t(512) << 20;

// SEXPGPU_CUDA_CLASSIFIER_BLOCK_BYTES: another bound for a block's logits,
// so small classifiers run several blocks too (the conformance suite's run
// of bench/device-run.sh test; devices.md).
ir::Result<int64_t> block_bytes() {
  const char* env = std::getenv("SEXPGPU_CUDA_CLASSIFIER_BLOCK_BYTES");
  if (!env) return kClassifierBlockBytes;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(env, &end, 10);
  if (end == env || *end != 0 || errno == ERANGE || v < 1)
    return ir::Result<int64_t>::failure(std::string("SEXPGPU_CUDA_CLASSIFIER_BLOCK_BYTES=") + env +
                                        ": write a byte count from 1 to 9223372036854775807");
  return int64_t(v);
}

// The kernels of one block size (the last block may be shorter).
struct BlockKernels {
  int64_t rows = 0;
  Kernel logits, loss, grad, dx, dw_first, dw_add;
};

struct Plan {
  int64_t rows = 0, C = 0, V = 0, block = 0, blocks = 0;
  size_t element = 2, target_bytes = 4,
         result_bytes = 4;          // of x's, the targets', the result's dtype
  std::vector<BlockKernels> sizes;  // [0]: full blocks; [1]: the shorter last one
  Kernel sum;                       // the block losses into the last element
  // Scratch offsets: the block's logits, the sub-kernels' scratch (one runs
  // at a time), the link, the block losses, a zero bias for the addend
  // epilogue, and dw when its place in the result is not aligned.
  size_t logits = 0, sub = 0, link = 0, losses = 0, zeros = 0, dw_temp = 0, bytes = 0;
  bool dw_in_place = true;
};

struct Req {
  Op op;
  ir::Attrs attrs;
  std::vector<TensorType> inputs;
  TensorType output;
  std::array<bool, 2> transposed{};
  bool link = false;
};

KernelResult make(const Req& q, Context& ctx) {
  KernelRequest r{q.op, q.attrs, q.inputs, q.output, ctx};
  r.transposed = q.transposed;
  r.link = q.link;
  return make_kernel(r);
}

ir::Result<BlockKernels> block_kernels(const KernelRequest& r, int64_t rows, int64_t C, int64_t V) {
  using Failure = ir::Result<BlockKernels>;
  const DType d = r.inputs[0].dtype, t = r.inputs[2].dtype, f = r.output.dtype;
  ir::Attrs sum;
  sum.reduction = "sum";
  sum.ignore_index = r.attrs.ignore_index;
  const TensorType z{d, Shape{rows, V}}, x{d, Shape{rows, C}}, targets{t, Shape{rows}};
  const TensorType scalar{f, Shape{}}, dw{f, Shape{C, V}};
  // w^T and x^T are w and x stored with their axes swapped (transposed).
  const TensorType wt{d, Shape{V, C}}, xt{d, Shape{C, rows}};
  const bool half = d == DType::BF16 || d == DType::F16;
  const Req reqs[6] = {
      {Op::MatMul, {}, {x, r.inputs[1]}, z},
      {Op::CrossEntropy, sum, {z, targets}, scalar, {}, true},
      {Op::CrossEntropyGrad, sum, {z, targets, scalar}, z, {}, true},
      {Op::MatMul, {}, {z, wt}, {f, Shape{rows, C}}, {false, true}},
      {Op::MatMul, {}, {xt, z}, dw, {true, false}},
      {Op::MatMul, {}, {xt, z, {f, Shape{V}}, dw}, dw, {true, false}},
  };
  const char* what[6] = {"z = x w", "the loss", "dz", "dx = dz w^T", "dw = x^T dz", "dw += x^T dz"};
  BlockKernels b;
  b.rows = rows;
  Kernel* into[6] = {&b.logits, &b.loss, &b.grad, &b.dx, &b.dw_first, &b.dw_add};
  for (int i = 0; i < (half ? 6 : 5); ++i) {  // one block unless half: no addend epilogue
    KernelResult k = make(reqs[i], r.context);
    if (!k) return Failure::failure(std::string(what[i]) + ": " + k.error());
    *into[i] = std::move(*k);
  }
  if (b.loss.link_bytes == 0 || !b.grad.reads_link)
    return Failure::failure("the loss and dz kernels do not link");
  return b;
}

std::string run(const Kernel& k, std::initializer_list<const void*> inputs, void* output,
                void* scratch, void* link, cudaStream_t stream) {
  std::vector<const void*> in(inputs);
  LaunchArgs a{in.data(), output, k.scratch_bytes ? scratch : nullptr, stream, link};
  return k.launch(a);
}

std::string launch_plan(const Plan& p, const LaunchArgs& a) {
  char* scratch = static_cast<char*>(a.scratch);
  void* z = scratch + p.logits;
  void* sub = scratch + p.sub;  // each sub-kernel's scratch, in turn
  void* link = scratch + p.link;
  char* losses = scratch + p.losses;
  char* zeros = scratch + p.zeros;
  char* out = static_cast<char*>(a.output);
  const size_t dx_bytes = size_t(p.rows * p.C) * p.result_bytes;
  const size_t dw_bytes = size_t(p.C * p.V) * p.result_bytes;
  char* dw = p.dw_in_place ? out + dx_bytes : scratch + p.dw_temp;
  const char* x = static_cast<const char*>(a.inputs[0]);
  const void* w = a.inputs[1];
  const char* targets = static_cast<const char*>(a.inputs[2]);
  const void* g = a.inputs[3];
  if (p.blocks > 1)  // the bias the addend epilogue of later blocks adds
    SG_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(zeros, 0, size_t(p.V) * 4, a.stream));
  for (int64_t blk = 0; blk < p.blocks; ++blk) {
    const int64_t r0 = blk * p.block;
    const BlockKernels& k = p.sizes[r0 + p.block <= p.rows ? 0 : 1];
    const void* xb = x + size_t(r0 * p.C) * p.element;
    const void* tb = targets + size_t(r0) * p.target_bytes;
    std::string e;
    if (e = run(k.logits, {xb, w}, z, sub, nullptr, a.stream); !e.empty()) return e;
    if (e = run(k.loss, {z, tb}, losses + blk * p.result_bytes, sub, link, a.stream); !e.empty())
      return e;
    if (e = run(k.grad, {z, tb, g}, z, sub, link, a.stream); !e.empty()) return e;
    if (e = run(k.dx, {z, w}, out + size_t(r0 * p.C) * p.result_bytes, sub, nullptr, a.stream);
        !e.empty())
      return e;
    e = blk == 0 ? run(k.dw_first, {xb, z}, dw, sub, nullptr, a.stream)
                 : run(k.dw_add, {xb, z, zeros, dw}, dw, sub, nullptr, a.stream);
    if (!e.empty()) return e;
  }
  if (!p.dw_in_place)
    SG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(out + dx_bytes, dw, dw_bytes, cudaMemcpyDeviceToDevice, a.stream));
  return run(p.sum, {losses}, out + dx_bytes + dw_bytes, sub, nullptr, a.stream);
}

}  // namespace

KernelResult make_linear_cross_entropy_kernel(const KernelRequest& r) {
  const DType d = r.inputs[0].dtype;
  const bool half = d == DType::BF16 || d == DType::F16;
  if (!(half || d == DType::F32 || d == DType::F64) ||
      r.output.dtype != (d == DType::F64 ? DType::F64 : DType::F32))
    return no_kernel(r, "x and w of a float dtype, the result f32 (f64 for f64)");
  auto plan = std::make_shared<Plan>();
  Plan& p = *plan;
  p.C = r.inputs[1].shape[0];
  p.V = r.inputs[1].shape[1];
  p.rows = p.C == 0 ? 0 : r.inputs[0].shape.numel().value_or(0) / p.C;
  p.element = ir::size_bytes(d);
  p.target_bytes = ir::size_bytes(r.inputs[2].dtype);
  p.result_bytes = ir::size_bytes(r.output.dtype);
  if (p.V == 0) return no_kernel(r, "a classifier of no classes");
  if (p.rows == 0 || p.C == 0) {  // no products: zeros (and a loss of no terms)
    const size_t bytes = size_t(r.output.shape.numel().value_or(0)) * p.result_bytes;
    return kernel_of(
        [bytes](const LaunchArgs& a) {
          return cuda_error(cudaMemsetAsync(a.output, 0, bytes, a.stream), "memset");
        },
        kernel_label(r.op, d) + " empty");
  }
  // Blocks of a multiple of 64 rows, so each block's dx starts aligned.
  const int64_t row_bytes = p.V * int64_t(p.element);
  // Blocks only for half operands: cuBLASLt adds dw's earlier blocks only
  // in a half product's epilogue, so f32 and f64 classifiers take one.
  ir::Result<int64_t> budget = block_bytes();
  if (!budget) return no_kernel(r, budget.error());
  int64_t block = half ? std::max<int64_t>(*budget / row_bytes, 64) / 64 * 64 : p.rows;
  const int64_t count = (p.rows + block - 1) / block;
  block = std::min<int64_t>(p.rows, ((p.rows + count - 1) / count + 63) / 64 * 64);
  p.block = block;
  p.blocks = (p.rows + block - 1) / block;
  for (int64_t rows : {block, p.rows - (p.blocks - 1) * block}) {
    if (!p.sizes.empty() && rows == block) break;
    ir::Result<BlockKernels> k = block_kernels(r, rows, p.C, p.V);
    if (!k) return no_kernel(r, k.error());
    p.sizes.push_back(std::move(*k));
  }
  ir::Attrs all;
  const DType f = r.output.dtype;
  KernelResult sum = make({Op::Sum, all, {{f, Shape{p.blocks}}}, {f, Shape{}}}, r.context);
  if (!sum) return no_kernel(r, "the loss sum: " + sum.error());
  p.sum = std::move(*sum);
  size_t sub = p.sum.scratch_bytes, link = 0;
  for (const BlockKernels& k : p.sizes) {
    for (const Kernel* s : {&k.logits, &k.loss, &k.grad, &k.dx, &k.dw_first, &k.dw_add})
      sub = std::max(sub, s->scratch_bytes);
    link = std::max(link, k.loss.link_bytes);
  }
  p.dw_in_place = (size_t(p.rows * p.C) * p.result_bytes) % kPointerAlignment == 0;
  size_t at = 0;
  auto place = [&](size_t bytes) {
    size_t offset = at;
    at += pointer_aligned(bytes);
    return offset;
  };
  p.logits = place(size_t(block * p.V) * p.element);
  p.sub = place(sub);
  p.link = place(link);
  p.losses = place(size_t(p.blocks) * p.result_bytes);
  if (p.blocks > 1) p.zeros = place(size_t(p.V) * 4);
  if (!p.dw_in_place) p.dw_temp = place(size_t(p.C * p.V) * p.result_bytes);
  p.bytes = at;
  Kernel k;
  k.name = kernel_label(r.op, d) + " rows=" + std::to_string(p.rows) + " C=" + std::to_string(p.C) +
           " V=" + std::to_string(p.V) + " blocks=" + std::to_string(p.blocks) + "x" +
           std::to_string(block);
  k.scratch_bytes = p.bytes;
  k.resources = plan;
  k.prepare = [plan]() -> std::string {
    for (BlockKernels& b : plan->sizes)
      for (Kernel* s : {&b.logits, &b.loss, &b.grad, &b.dx, &b.dw_first, &b.dw_add})
        if (s->prepare)
          if (std::string e = s->prepare(); !e.empty()) return e;
    return plan->sum.prepare ? plan->sum.prepare() : std::string();
  };
  k.launch = [plan](const LaunchArgs& a) { return launch_plan(*plan, a); };
  return k;
}

}  // namespace sexpgpu::cuda
