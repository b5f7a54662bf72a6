// matmul (NumPy semantics, as devices/cpu/kernels_matmul.cpp): float
// products through cuBLASLt, integer ones through matmul.cu. A row-major
// product C = A B is the column-major product C^T = B^T A^T, so cuBLASLt
// gets B as its first operand. Batches whose operands step by a fixed stride
// (stride 0 for a broadcast operand) are one strided-batched call; x [B, T,
// K] @ w [K, N] folds into one [B*T, K] @ [K, N]; other broadcasts make one
// call per batch element. The algorithm is chosen once, when the program is
// prepared on the GPU (the first heuristic answer), so every step runs the
// same kernels: results repeat bit for bit.
#include <cublasLt.h>

#include <vector>

#include "check.h"
#include "geometry.h"
#include "kernel.h"
#include "matmul_launch.h"

namespace sexpgpu::cuda {
namespace {

using ir::DType;

std::string cublas_error(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return {};
  return std::string(what) + ": " + cublasLtGetStatusName(s) + " (" + cublasLtGetStatusString(s) +
         ")";
}

#define SG_CUBLAS_RETURN_IF_ERROR(call)                                       \
  do {                                                                        \
    if (std::string e_ = cublas_error((call), #call); !e_.empty()) return e_; \
  } while (0)

struct Geometry {
  int64_t M = 1, K = 1, N = 1;
  std::vector<int64_t> a_offsets, b_offsets;  // per batch element, in elements
  bool folded = false;
  // When the offsets step by a fixed stride: one strided-batched call.
  bool strided = false;
  int64_t a_stride = 0, b_stride = 0;
};

Geometry geometry(const ir::Shape& a, const ir::Shape& b, bool trans_a) {
  Geometry g;
  ir::Dims da(a.begin(), a.end()), db(b.begin(), b.end());
  if (da.size() == 1) da.insert(da.begin(), 1);
  if (db.size() == 1) db.push_back(1);
  g.M = da[da.size() - 2];
  g.K = da.back();
  g.N = db.back();
  ir::Shape ba(ir::Dims(da.begin(), da.end() - 2)), bb(ir::Dims(db.begin(), db.end() - 2));
  ir::Shape batch = *ir::broadcast_shapes(ba, bb);
  int64_t count = batch.numel().value_or(0);
  if (bb.numel().value_or(0) == 1 && ba.numel().value_or(0) == count && !trans_a) {
    g.folded = g.strided = true;
    g.M *= count;
    g.a_offsets = g.b_offsets = {0};
    return g;
  }
  ir::Dims sa = cpu::broadcast_strides(ba, batch), sb = cpu::broadcast_strides(bb, batch);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rem = i, oa = 0, ob = 0;
    for (int64_t ax = batch.rank() - 1; ax >= 0; --ax) {
      int64_t idx = rem % batch[ax];
      rem /= batch[ax];
      oa += idx * sa[size_t(ax)];
      ob += idx * sb[size_t(ax)];
    }
    g.a_offsets.push_back(oa * g.M * g.K);
    g.b_offsets.push_back(ob * g.K * g.N);
  }
  g.strided = true;
  if (count > 1) {
    g.a_stride = g.a_offsets[1] - g.a_offsets[0];
    g.b_stride = g.b_offsets[1] - g.b_offsets[0];
  }
  for (int64_t i = 0; i < count && g.strided; ++i)
    g.strided =
        g.a_offsets[size_t(i)] == i * g.a_stride && g.b_offsets[size_t(i)] == i * g.b_stride;
  return g;
}

cudaDataType_t data_type(DType d) {
  switch (d) {
    case DType::BF16: return CUDA_R_16BF;
    case DType::F16: return CUDA_R_16F;
    case DType::F64: return CUDA_R_64F;
    default: return CUDA_R_32F;
  }
}

// The cuBLASLt objects of one product, made at compile time (host-only
// calls) and completed with an algorithm by prepare().
struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A (our B), B (our A)
  cublasLtMatmulAlgo_t algo{};
  bool has_algo = false;
  bool f64 = false;
  ~LtPlan() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

std::string set_batch(cublasLtMatrixLayout_t layout, int32_t count, int64_t stride) {
  SG_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(
      layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
  SG_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(
      layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  return {};
}

std::string describe(LtPlan& p, const Geometry& g, DType d, bool ta, bool tb, int32_t batch,
                     Precision precision) {
  p.f64 = d == DType::F64;
  cublasComputeType_t compute = p.f64 ? CUBLAS_COMPUTE_64F
                                : d == DType::F32 && precision != Precision::F32
                                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                                    : CUBLAS_COMPUTE_32F;
  SG_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescCreate(&p.op, compute, p.f64 ? CUDA_R_64F : CUDA_R_32F));
  // cuBLASLt's A is our B: stored [K, N] row-major = N x K column-major (op N),
  // or [N, K] when transposed = K x N column-major (op T).
  cublasOperation_t op_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  SG_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a));
  SG_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b));
  cudaDataType_t t = data_type(d);
  uint64_t a_rows = tb ? g.K : g.N, a_cols = tb ? g.N : g.K;
  uint64_t b_rows = ta ? g.M : g.K, b_cols = ta ? g.K : g.M;
  SG_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&p.a, t, a_rows, a_cols, int64_t(a_rows)));
  SG_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&p.b, t, b_rows, b_cols, int64_t(b_rows)));
  SG_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&p.c, t, g.N, g.M, g.N));
  if (batch > 1) {
    if (std::string e = set_batch(p.a, batch, g.b_stride); !e.empty()) return e;
    if (std::string e = set_batch(p.b, batch, g.a_stride); !e.empty()) return e;
    if (std::string e = set_batch(p.c, batch, g.M * g.N); !e.empty()) return e;
  }
  return {};
}

std::string choose_algorithm(LtPlan& p, const Context& ctx) {
  cublasLtMatmulPreference_t pref = nullptr;
  SG_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref));
  size_t workspace = ctx.cublas_workspace_bytes;
  cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmulAlgoGetHeuristic(ctx.cublas_lt, p.op, p.a, p.b, p.c, p.c, pref, 1, &result,
                                       &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (std::string e = cublas_error(s, "cublasLtMatmulAlgoGetHeuristic"); !e.empty()) return e;
  if (found == 0) return "cuBLASLt has no algorithm for this product";
  p.algo = result.algo;
  p.has_algo = true;
  return {};
}

KernelResult float_matmul(const KernelRequest& r, const Geometry& g, bool ta, bool tb) {
  DType d = r.output.dtype;
  size_t elem = ir::size_bytes(d);
  int64_t count = int64_t(g.a_offsets.size());
  bool one_call = g.strided || count == 1;
  auto plan = std::make_shared<LtPlan>();
  int32_t batch = one_call && !g.folded ? int32_t(count) : 1;
  if (std::string e = describe(*plan, g, d, ta, tb, batch, r.context.precision); !e.empty())
    return KernelResult::failure("cuBLASLt: " + e);
  std::string name = kernel_label(ir::Op::MatMul, d) + " cublasLt m=" + std::to_string(g.M) +
                     " n=" + std::to_string(g.N) + " k=" + std::to_string(g.K) +
                     (batch > 1 ? " batch=" + std::to_string(batch) : "") +
                     (!one_call ? " calls=" + std::to_string(count) : "") + (ta ? " a^T" : "") +
                     (tb ? " b^T" : "");
  if (d == DType::F32 && r.context.precision != Precision::F32) name += " tf32";
  Context* ctx = &r.context;
  int64_t out_bytes = g.M * g.N * int64_t(elem) * (g.folded ? 1 : count);
  LaunchFn launch = [plan, g, ctx, elem, one_call, count,
                     out_bytes](const LaunchArgs& a) -> std::string {
    if (g.M == 0 || g.N == 0 || count == 0) return {};
    if (g.K == 0)  // no terms: zeros (cuBLASLt rejects k = 0)
      return cuda_error(cudaMemsetAsync(a.output, 0, size_t(out_bytes), a.stream),
                        "cudaMemsetAsync");
    if (!plan->has_algo) return "the matmul was not prepared";
    float alpha32 = 1, beta32 = 0;
    double alpha64 = 1, beta64 = 0;
    const void* alpha = plan->f64 ? static_cast<const void*>(&alpha64) : &alpha32;
    const void* beta = plan->f64 ? static_cast<const void*>(&beta64) : &beta32;
    auto at = [elem](const void* p, int64_t offset) {
      return static_cast<const char*>(p) + size_t(offset) * elem;
    };
    int64_t calls = one_call ? 1 : count;
    for (int64_t i = 0; i < calls; ++i) {
      const void* A = at(a.inputs[0], g.a_offsets[size_t(i)]);
      const void* B = at(a.inputs[1], g.b_offsets[size_t(i)]);
      void* C = static_cast<char*>(a.output) + size_t(i * g.M * g.N) * elem;
      if (std::string e = cublas_error(
              cublasLtMatmul(ctx->cublas_lt, plan->op, alpha, B, plan->a, A, plan->b, beta, C,
                             plan->c, C, plan->c, &plan->algo, ctx->cublas_workspace,
                             ctx->cublas_workspace_bytes, a.stream),
              "cublasLtMatmul");
          !e.empty())
        return e;
    }
    return {};
  };
  Kernel k{std::move(launch), std::move(name), 0, plan, {}};
  k.prepare = [plan, ctx, g]() -> std::string {
    if (g.M == 0 || g.N == 0 || g.K == 0) return {};
    return choose_algorithm(*plan, *ctx);
  };
  return k;
}

KernelResult int_matmul(const KernelRequest& r, const Geometry& g, bool ta, bool tb) {
  size_t elem = ir::size_bytes(r.output.dtype);
  // The offsets live on the device, uploaded once by prepare().
  struct Offsets {
    int64_t* device = nullptr;
    ~Offsets() {
      if (device) cudaFree(device);
    }
  };
  auto offsets = std::make_shared<Offsets>();
  std::vector<int64_t> host = g.a_offsets;
  host.insert(host.end(), g.b_offsets.begin(), g.b_offsets.end());
  int64_t batch = int64_t(g.a_offsets.size());
  IntMatmulParams params{int(elem), g.M,     g.N,     g.K,     batch,   ta,
                         tb,        nullptr, nullptr, nullptr, nullptr, nullptr};
  LaunchFn launch = [params, offsets, batch](const LaunchArgs& a) mutable -> std::string {
    params.a_offsets = offsets->device;
    params.b_offsets = offsets->device + batch;
    params.a = a.inputs[0];
    params.b = a.inputs[1];
    params.c = a.output;
    return cuda_error(launch_int_matmul(params, a.stream), "int_matmul");
  };
  Kernel k{
      std::move(launch), kernel_label(ir::Op::MatMul, r.output.dtype) + " direct", 0, offsets, {}};
  k.prepare = [offsets, host]() -> std::string {
    size_t bytes = host.size() * sizeof(int64_t);
    SG_CUDA_RETURN_IF_ERROR(cudaMalloc(reinterpret_cast<void**>(&offsets->device), bytes));
    SG_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(offsets->device, host.data(), bytes, cudaMemcpyHostToDevice));
    return {};
  };
  return k;
}

}  // namespace

KernelResult make_matmul_kernel(const KernelRequest& r) {
  DType d = r.output.dtype;
  if (d == DType::Bool || r.inputs[0].dtype != d || r.inputs[1].dtype != d)
    return no_kernel(r, "operands must be lowered to the compute dtype first");
  auto [ta, tb] = r.transposed;
  Geometry g = geometry(r.inputs[0].shape, r.inputs[1].shape, ta);
  bool floating = d == DType::F32 || d == DType::F64 || d == DType::BF16 || d == DType::F16;
  return floating ? float_matmul(r, g, ta, tb) : int_matmul(r, g, ta, tb);
}

}  // namespace sexpgpu::cuda
