// matmul (NumPy semantics, as devices/cpu/kernels_matmul.cpp): float
// products through cuBLASLt, integer ones through matmul.cu. A row-major
// product C = A B is the column-major product C^T = B^T A^T, so cuBLASLt
// gets B as its first operand. Batches whose operands step by a fixed stride
// (stride 0 for a broadcast operand) are one strided-batched call; x [B, T,
// K] @ w [K, N] folds into one [B*T, K] @ [K, N]; other broadcasts make one
// call per batch element. The algorithm is chosen once, when the program is
// prepared on the GPU, so every step runs the same kernels: results repeat
// bit for bit. Deterministic runs take the heuristic's first answer (the
// same on every run and machine); other runs time the heuristic's first few
// answers on scratch operands and keep the fastest, once per distinct
// product and GPU: the choice is kept in the process and on disk
// (disk_cache.h), so a later run reads it instead of timing. A half product may add an f32 bias per
// column and an f32 addend of the result's shape in cuBLASLt's epilogue (matmul_epilogues.h):
// operands 2 and 3; a half weight gradient a^T b may also write the column sums of b, its layer's
// bias gradient.
#include <cublasLt.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "cuda/check.h"
#include "cuda/disk_cache.h"
#include "cuda/kernels/matmul_launch.h"
#include "kernel.h"
#include "plan/geometry.h"
#include "sexpgpu/sdk/log.h"

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

// What a product adds to A B in cuBLASLt's epilogue: a bias per column of
// our result (per row of cuBLASLt's column-major D, which is our result
// transposed), and an addend of the result's layout (cuBLASLt's C, beta 1).
struct Epilogue {
  bool bias = false, addend = false;
  DType bias_dtype = DType::F32;  // the result's half type for a half result
  // cuBLASLt's BGRADA: the sums over K of its A (our B), f32, into the bias
  // pointer: a bias gradient (KernelRequest::bias_gradient).
  bool bias_gradient = false;
};

// The cuBLASLt objects of one product, made at compile time (host-only
// calls) and completed with an algorithm by prepare().
struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A (our B), B (our A)
  cublasLtMatmulAlgo_t algo{};
  bool has_algo = false;
  bool f64 = false;
  Epilogue epilogue;
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

// `in` is the operands' dtype, `out` the result's (f32 for half operands
// whose product is read in f32).
std::string describe(LtPlan& p, const Geometry& g, DType in, DType out, bool ta, bool tb,
                     int32_t batch, Precision precision, Epilogue epilogue) {
  p.f64 = in == DType::F64;
  p.epilogue = epilogue;
  cublasComputeType_t compute = p.f64 ? CUBLAS_COMPUTE_64F
                                : in == DType::F32 && precision != Precision::F32
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
  if (epilogue.bias || epilogue.bias_gradient) {
    cublasLtEpilogue_t bias = epilogue.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_BGRADA;
    cudaDataType_t bias_type = data_type(epilogue.bias_dtype);
    SG_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &bias, sizeof bias));
    SG_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
        p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type));
  }
  cudaDataType_t t = data_type(in);
  uint64_t a_rows = tb ? g.K : g.N, a_cols = tb ? g.N : g.K;
  uint64_t b_rows = ta ? g.M : g.K, b_cols = ta ? g.K : g.M;
  SG_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&p.a, t, a_rows, a_cols, int64_t(a_rows)));
  SG_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&p.b, t, b_rows, b_cols, int64_t(b_rows)));
  SG_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&p.c, data_type(out), g.N, g.M, g.N));
  if (batch > 1) {
    if (std::string e = set_batch(p.a, batch, g.b_stride); !e.empty()) return e;
    if (std::string e = set_batch(p.b, batch, g.a_stride); !e.empty()) return e;
    if (std::string e = set_batch(p.c, batch, g.M * g.N); !e.empty()) return e;
  }
  return {};
}

// Element counts of one cuBLASLt call's operands (strided batches included):
// what the timing allocates.
struct Extents {
  int64_t a = 0, b = 0, c = 0;   // our A, our B, the result
  int64_t bias = 0, addend = 0;  // f32; none without the epilogue
};

Extents extents(const Geometry& g, int32_t batch, Epilogue epilogue) {
  int64_t more = batch - 1, c = batch * g.M * g.N;
  return {g.M * g.K + more * g.a_stride, g.K * g.N + more * g.b_stride, c,
          epilogue.bias || epilogue.bias_gradient ? g.N : 0, epilogue.addend ? c : 0};
}

// The epilogue's operands of one call (null where the plan has none); a
// bias gradient's buffer is `bias`, which cuBLASLt then writes.
struct Added {
  const void* bias = nullptr;
  const void* addend = nullptr;
};

cublasStatus_t multiply(const LtPlan& p, const Context& ctx, const cublasLtMatmulAlgo_t& algo,
                        const void* a, const void* b, void* c, Added added, void* workspace,
                        cudaStream_t stream) {
  // The bias pointer lives in the descriptor, which every binding's launch
  // (and the timing) shares: set before each call. Host-side only, so it
  // is allowed inside graph capture.
  if (p.epilogue.bias || p.epilogue.bias_gradient)
    if (cublasStatus_t s = cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                          &added.bias, sizeof added.bias);
        s != CUBLAS_STATUS_SUCCESS)
      return s;
  float alpha32 = 1, beta32 = p.epilogue.addend ? 1 : 0;
  double alpha64 = 1, beta64 = 0;
  const void* alpha = p.f64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = p.f64 ? static_cast<const void*>(&beta64) : &beta32;
  const void* addend = p.epilogue.addend ? added.addend : c;
  return cublasLtMatmul(ctx.cublas_lt, p.op, alpha, b, p.a, a, p.b, beta, addend, p.c, c, p.c,
                        &algo, workspace, ctx.cublas_workspace_bytes, stream);
}

std::string heuristic(const LtPlan& p, const Context& ctx, int wanted,
                      std::vector<cublasLtMatmulAlgo_t>& algos) {
  cublasLtMatmulPreference_t pref = nullptr;
  SG_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref));
  size_t workspace = ctx.cublas_workspace_bytes;
  cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace);
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(wanted));
  int found = 0;
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmulAlgoGetHeuristic(ctx.cublas_lt, p.op, p.a, p.b, p.c, p.c, pref, wanted,
                                       results.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (std::string e = cublas_error(s, "cublasLtMatmulAlgoGetHeuristic"); !e.empty()) return e;
  for (int i = 0; i < found; ++i)
    if (results[size_t(i)].state == CUBLAS_STATUS_SUCCESS) algos.push_back(results[size_t(i)].algo);
  if (algos.empty()) return "cuBLASLt has no algorithm for this product";
  return {};
}

// What timing the candidates borrows from the GPU, released on every path.
// It has its own workspace: the device's may be in use by a program still
// running on another stream.
struct Bench {
  void* memory = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  void *a = nullptr, *b = nullptr, *c = nullptr, *workspace = nullptr;
  Added added;
  ~Bench() {
    if (stream) cudaStreamSynchronize(stream);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
    if (memory) cudaFree(memory);
    cudaGetLastError();  // a failed allocation must not fail a later launch
  }
};

FillDType fill_dtype(DType d) {
  switch (d) {
    case DType::F64: return FillDType::F64;
    case DType::BF16: return FillDType::BF16;
    case DType::F16: return FillDType::F16;
    default: return FillDType::F32;
  }
}

bool open_bench(Bench& bench, const Extents& n, DType in, DType out, DType bias_dtype,
                const Context& ctx) {
  size_t elem = ir::size_bytes(in);
  size_t a = pointer_aligned(size_t(n.a) * elem), b = pointer_aligned(size_t(n.b) * elem);
  size_t c = pointer_aligned(size_t(n.c) * ir::size_bytes(out)),
         w = pointer_aligned(ctx.cublas_workspace_bytes);
  size_t bias = pointer_aligned(size_t(n.bias) * ir::size_bytes(bias_dtype));
  size_t addend = pointer_aligned(size_t(n.addend) * 4);
  if (cudaMalloc(&bench.memory, a + b + c + w + bias + addend) != cudaSuccess) return false;
  char* base = static_cast<char*>(bench.memory);
  bench.a = base;
  bench.b = base + a;
  bench.c = base + a + b;
  bench.workspace = w > 0 ? base + a + b + c : nullptr;
  char* added = base + a + b + c + w;
  if (n.bias > 0) bench.added.bias = added;
  if (n.addend > 0) bench.added.addend = added + bias;
  return cudaStreamCreateWithFlags(&bench.stream, cudaStreamNonBlocking) == cudaSuccess &&
         cudaEventCreate(&bench.start) == cudaSuccess &&
         cudaEventCreate(&bench.stop) == cudaSuccess &&
         launch_fill_uniform(bench.a, n.a, fill_dtype(in), bench.stream) == cudaSuccess &&
         launch_fill_uniform(bench.b, n.b, fill_dtype(in), bench.stream) == cudaSuccess &&
         launch_fill_uniform(added, n.bias, fill_dtype(bias_dtype), bench.stream) == cudaSuccess &&
         launch_fill_uniform(added + bias, n.addend, FillDType::F32, bench.stream) == cudaSuccess;
}

// Milliseconds per product of `reps` back-to-back launches; none when a
// launch fails.
std::optional<float> time_algorithm(const LtPlan& p, const Context& ctx, const Bench& bench,
                                    const cublasLtMatmulAlgo_t& algo, int reps) {
  if (cudaEventRecord(bench.start, bench.stream) != cudaSuccess) return std::nullopt;
  for (int r = 0; r < reps; ++r)
    if (multiply(p, ctx, algo, bench.a, bench.b, bench.c, bench.added, bench.workspace,
                 bench.stream) != CUBLAS_STATUS_SUCCESS)
      return std::nullopt;
  float ms = 0;
  if (cudaEventRecord(bench.stop, bench.stream) != cudaSuccess ||
      cudaEventSynchronize(bench.stop) != cudaSuccess ||
      cudaEventElapsedTime(&ms, bench.start, bench.stop) != cudaSuccess)
    return std::nullopt;
  return ms / float(reps);
}

// The timing's bounds: the candidates asked of the heuristic, and the time
// one product's timed launches may take. Each candidate runs once untimed
// first, then in two rounds of up to kMaxReps launches, so that clock ramp-up
// and a noisy launch hit no single candidate; products too long for two
// rounds in the budget (an LM head, ~2 ms) get one round of one launch.
constexpr int kCandidates = 32;
constexpr float kTimedMsPerProduct = 8;
constexpr int kMaxReps = 4;
// Below a GFLOP (about a microsecond at the bf16 rate) a product is bound by
// its launch, whichever algorithm runs: it keeps the heuristic's first.
constexpr double kMinTunedFlops = 1e9;

// The fastest of `algos` on scratch operands of the product's extents; none
// when the timing could not run (no memory, a failed launch).
std::optional<cublasLtMatmulAlgo_t> fastest(const LtPlan& p, const Context& ctx,
                                            const std::vector<cublasLtMatmulAlgo_t>& algos,
                                            const Extents& n, DType in, DType out) {
  Bench bench;
  if (!open_bench(bench, n, in, out, p.epilogue.bias_dtype, ctx)) return std::nullopt;
  std::vector<cublasLtMatmulAlgo_t> usable;
  for (const cublasLtMatmulAlgo_t& algo : algos)
    if (multiply(p, ctx, algo, bench.a, bench.b, bench.c, bench.added, bench.workspace,
                 bench.stream) == CUBLAS_STATUS_SUCCESS)
      usable.push_back(algo);
  if (usable.empty() || cudaStreamSynchronize(bench.stream) != cudaSuccess) return std::nullopt;
  std::optional<float> probe = time_algorithm(p, ctx, bench, usable.front(), 1);
  if (!probe) return std::nullopt;
  float per_round = float(usable.size()) * std::max(*probe, 1e-3f);
  int rounds = 2 * per_round <= kTimedMsPerProduct ? 2 : 1;
  int reps = std::clamp(int(kTimedMsPerProduct / (float(rounds) * per_round)), 1, kMaxReps);
  std::vector<float> best(usable.size(), std::numeric_limits<float>::infinity());
  for (int round = 0; round < rounds; ++round)
    for (size_t i = 0; i < usable.size(); ++i) {
      std::optional<float> ms = time_algorithm(p, ctx, bench, usable[i], reps);
      if (!ms) return std::nullopt;
      best[i] = std::min(best[i], *ms);
    }
  size_t chosen = size_t(std::min_element(best.begin(), best.end()) - best.begin());
  // The choice, through the host's log: which of the heuristic's order won.
  char line[160];
  std::snprintf(line, sizeof line,
                "autotune: algorithm %zu of %zu usable (%zu asked) in %.3f ms, the heuristic's "
                "first %.3f ms",
                chosen, usable.size(), algos.size(), double(best[chosen]), double(best[0]));
  sexpgpu::sdk::log(SG_LOG_DEBUG, line);
  return usable[chosen];
}

// The algorithms chosen by timing, per device handle and product
// description: a model's many products of a few shapes time each once.
struct TunedCache {
  std::mutex mutex;
  std::map<std::string, cublasLtMatmulAlgo_t> chosen;
};

TunedCache& tuned_cache() {
  static TunedCache cache;
  return cache;
}

// Choices also outlive the process, in <cache>/cuda/autotune (disk_cache.h):
// the entry records everything that makes a choice valid (cuBLASLt's
// version, the GPU, its driver, the workspace and the product), and is used
// only when that record matches and cuBLASLt still accepts the algorithm.
std::string choice_record(const Context& ctx, const std::string& product) {
  int driver = 0;
  (void)cudaDriverGetVersion(&driver);
  return "cublasLt " + std::to_string(cublasLtGetVersion()) + "; " + ctx.name + " sm_" +
         std::to_string(ctx.compute_capability) + " " + std::to_string(ctx.sm_count) +
         " SMs; driver " + std::to_string(driver) + "; workspace " +
         std::to_string(ctx.cublas_workspace_bytes) + "; " + product;
}

std::filesystem::path choice_path(const std::string& record) {
  std::string dir = disk_cache::directory();
  if (dir.empty()) return {};
  return std::filesystem::path(dir) / "autotune" /
         (disk_cache::hex(disk_cache::fnv1a(record)) + ".algo");
}

std::optional<cublasLtMatmulAlgo_t> saved_choice(const LtPlan& p, const Context& ctx,
                                                 const std::string& record) {
  std::filesystem::path path = choice_path(record);
  std::vector<char> payload;
  if (path.empty() || !disk_cache::read(path, payload)) return std::nullopt;
  cublasLtMatmulAlgo_t algo{};
  if (payload.size() != record.size() + 1 + sizeof algo ||
      std::string_view(payload.data(), record.size()) != record)
    return std::nullopt;
  std::memcpy(&algo, payload.data() + record.size() + 1, sizeof algo);
  cublasLtMatmulHeuristicResult_t check{};
  if (cublasLtMatmulAlgoCheck(ctx.cublas_lt, p.op, p.a, p.b, p.c, p.c, &algo, &check) !=
          CUBLAS_STATUS_SUCCESS ||
      check.workspaceSize > ctx.cublas_workspace_bytes)
    return std::nullopt;
  return algo;
}

void save_choice(const std::string& record, const cublasLtMatmulAlgo_t& algo) {
  std::filesystem::path path = choice_path(record);
  if (path.empty()) return;
  std::vector<char> payload(record.begin(), record.end());
  payload.push_back('\0');
  const char* bytes = reinterpret_cast<const char*>(&algo);
  payload.insert(payload.end(), bytes, bytes + sizeof algo);
  disk_cache::write(path, payload);
}

// The heuristic's first algorithm, or (non-deterministic runs) the fastest
// of its first few, as this process or an earlier one timed it; a timing
// that cannot run falls back to the first (and is not saved).
std::string choose_algorithm(LtPlan& p, const Context& ctx, const Extents& n, DType in, DType out,
                             double flops, const std::string& product) {
  auto use = [&p](const cublasLtMatmulAlgo_t& algo) {
    p.algo = algo;
    p.has_algo = true;
    return std::string();
  };
  std::vector<cublasLtMatmulAlgo_t> algos;
  if (ctx.deterministic || flops < kMinTunedFlops) {
    if (std::string e = heuristic(p, ctx, 1, algos); !e.empty()) return e;
    return use(algos.front());
  }
  std::string key = std::to_string(ctx.ordinal) + " " +
                    std::to_string(reinterpret_cast<uintptr_t>(ctx.cublas_lt)) + " " +
                    std::to_string(ctx.cublas_workspace_bytes) + " " + product;
  TunedCache& cache = tuned_cache();
  std::lock_guard lock(cache.mutex);
  if (auto it = cache.chosen.find(key); it != cache.chosen.end()) return use(it->second);
  const std::string record = choice_record(ctx, product);
  if (std::optional<cublasLtMatmulAlgo_t> saved = saved_choice(p, ctx, record)) {
    sexpgpu::sdk::log(SG_LOG_DEBUG, "autotune: " + product + " from the cache");
    return use(cache.chosen[key] = *saved);
  }
  if (std::string e = heuristic(p, ctx, kCandidates, algos); !e.empty()) return e;
  cublasLtMatmulAlgo_t chosen = algos.front();
  if (algos.size() > 1) {
    sexpgpu::sdk::log(SG_LOG_DEBUG, "autotune: timing " + product);
    if (std::optional<cublasLtMatmulAlgo_t> best = fastest(p, ctx, algos, n, in, out)) {
      chosen = *best;
      save_choice(record, chosen);
    } else {
      sexpgpu::sdk::log(SG_LOG_DEBUG, "autotune: timing could not run; the heuristic's first");
    }
  }
  return use(cache.chosen[key] = chosen);
}

KernelResult float_matmul(const KernelRequest& r, const Geometry& g, bool ta, bool tb,
                          Epilogue epilogue) {
  const DType d = r.inputs[0].dtype, out = r.output.dtype;
  const size_t elem = ir::size_bytes(d), out_elem = ir::size_bytes(out);
  int64_t count = int64_t(g.a_offsets.size());
  bool one_call = g.strided || count == 1;
  auto plan = std::make_shared<LtPlan>();
  int32_t batch = one_call && !g.folded ? int32_t(count) : 1;
  if (std::string e = describe(*plan, g, d, out, ta, tb, batch, r.context.precision, epilogue);
      !e.empty())
    return KernelResult::failure("cuBLASLt: " + e);
  // An epilogue cuBLASLt has no algorithm for is refused here, where the
  // GPU is at hand (asking is host-side), so that matmul_epilogues keeps
  // the plain product and its kernel after it.
  if ((epilogue.bias || epilogue.bias_gradient) && !r.context.plan_only) {
    std::vector<cublasLtMatmulAlgo_t> algos;
    if (std::string e = heuristic(*plan, r.context, 1, algos); !e.empty())
      return no_kernel(r, "cuBLASLt: " + e);
  }
  std::string name = kernel_label(ir::Op::MatMul, d) + " cublasLt m=" + std::to_string(g.M) +
                     " n=" + std::to_string(g.N) + " k=" + std::to_string(g.K) +
                     (batch > 1 ? " batch=" + std::to_string(batch) : "") +
                     (!one_call ? " calls=" + std::to_string(count) : "") + (ta ? " a^T" : "") +
                     (tb ? " b^T" : "") + (out != d ? " ->" + std::string(ir::ir_name(out)) : "") +
                     (epilogue.bias ? " +bias" : "") + (epilogue.addend ? "+addend" : "") +
                     (epilogue.bias_gradient ? " +bgrad" : "");
  if (d == DType::F32 && r.context.precision != Precision::F32) name += " tf32";
  Context* ctx = &r.context;
  int64_t out_bytes = g.M * g.N * int64_t(out_elem) * (g.folded ? 1 : count);
  LaunchFn launch = [plan, g, ctx, elem, out_elem, one_call, count, out_bytes,
                     epilogue](const LaunchArgs& a) -> std::string {
    if (g.M == 0 || g.N == 0 || count == 0) return {};
    if (g.K == 0)  // no terms: zeros (cuBLASLt rejects k = 0)
      return cuda_error(cudaMemsetAsync(a.output, 0, size_t(out_bytes), a.stream),
                        "cudaMemsetAsync");
    if (!plan->has_algo) return "the matmul was not prepared";
    auto at = [elem](const void* p, int64_t offset) {
      return static_cast<const char*>(p) + size_t(offset) * elem;
    };
    int64_t calls = one_call ? 1 : count;
    // One call when there is an epilogue (make_matmul_kernel).
    Added added{epilogue.bias            ? a.inputs[2]
                : epilogue.bias_gradient ? a.stores[0]
                                         : nullptr,
                epilogue.addend ? a.inputs[3] : nullptr};
    for (int64_t i = 0; i < calls; ++i) {
      const void* A = at(a.inputs[0], g.a_offsets[size_t(i)]);
      const void* B = at(a.inputs[1], g.b_offsets[size_t(i)]);
      void* C = static_cast<char*>(a.output) + size_t(i * g.M * g.N) * out_elem;
      if (std::string e = cublas_error(
              multiply(*plan, *ctx, plan->algo, A, B, C, added, ctx->cublas_workspace, a.stream),
              "cublasLtMatmul");
          !e.empty())
        return e;
    }
    return {};
  };
  // Everything that selects cuBLASLt's kernels, for the tuned-algorithm cache.
  std::string product =
      name + " strides=" + std::to_string(g.a_stride) + "," + std::to_string(g.b_stride);
  Extents n = extents(g, batch, epilogue);
  double flops = 2.0 * double(g.M) * double(g.N) * double(g.K) * batch;
  Kernel k{std::move(launch), std::move(name), 0, plan, {}};
  k.prepare = [plan, ctx, g, n, d, out, flops, product]() -> std::string {
    if (g.M == 0 || g.N == 0 || g.K == 0) return {};
    return choose_algorithm(*plan, *ctx, n, d, out, flops, product);
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

// Why the epilogue cannot add operands 2 and 3 of `r`, or "": the product
// is one cuBLASLt call of half matrices, the bias along the last axis alone
// ([N] or [1, .., N]), the addend f32 of the result's shape. An f32 result
// takes an f32 bias and may take the addend; a half result takes a bias of
// its own type and no addend (cuBLASLt 13 on the H200 has no algorithm for
// an f32 bias with a bf16 result).
std::string epilogue_unsupported(const KernelRequest& r, const Geometry& g, Epilogue epilogue) {
  const DType d = r.inputs[0].dtype;
  if (d != DType::BF16 && d != DType::F16) return "only half products add a bias in cuBLASLt";
  const bool half_result = r.output.dtype != DType::F32;
  if (half_result && (r.output.dtype != d || epilogue.addend))
    return "a half result adds a bias only, rounded once";
  const DType bias_dtype = half_result ? d : DType::F32;
  if (r.inputs[0].shape.rank() < 2 || r.inputs[1].shape.rank() < 2 || g.a_offsets.size() != 1)
    return "a bias is added to one product of matrices";
  if (g.K == 0) return "a product of no terms has no epilogue";
  const ir::TensorType& bias = r.inputs[2];
  if (bias.dtype != bias_dtype || bias.shape.rank() < 1 ||
      bias.shape[bias.shape.rank() - 1] != g.N || bias.shape.numel() != g.N)
    return "the bias must be along the result's last axis, f32 (or the half result's type)";
  if (epilogue.addend && r.inputs[3] != ir::TensorType{DType::F32, r.output.shape})
    return "the addend must be f32 of the result's shape";
  return {};
}

// Why the product cannot also sum its b over the rows (BGRADA), or "":
// one cuBLASLt call of half matrices a^T b (cuBLASLt's A, our b, not
// transposed), without --deterministic (whether cuBLASLt's reduction
// repeats bit for bit is not documented).
std::string bias_gradient_unsupported(const KernelRequest& r, const Geometry& g) {
  const DType d = r.inputs[0].dtype;
  if (d != DType::BF16 && d != DType::F16) return "only half products sum a bias gradient";
  if (r.context.deterministic) return "--deterministic sums bias gradients on their own";
  if (r.inputs.size() != 2) return "a bias gradient beside a bias or addend";
  if (!r.transposed[0] || r.transposed[1]) return "a bias gradient sums the b of a^T b";
  if (g.a_offsets.size() != 1) return "a bias gradient beside one product of matrices";
  if (g.K == 0) return "a product of no terms has no epilogue";
  return {};
}

}  // namespace

KernelResult make_matmul_kernel(const KernelRequest& r) {
  if (r.inputs.size() < 2 || r.inputs.size() > 4)
    return no_kernel(r, "a product reads two operands, a bias and an addend at most");
  const DType d = r.inputs[0].dtype;
  // Half operands may give an f32 result (accumulated in f32, not rounded):
  // absorb_casts plans that for a product read only through a cast to f32.
  const bool widened = (d == DType::BF16 || d == DType::F16) && r.output.dtype == DType::F32;
  if (d == DType::Bool || r.inputs[1].dtype != d || (r.output.dtype != d && !widened))
    return no_kernel(r, "operands must be lowered to the compute dtype first");
  auto [ta, tb] = r.transposed;
  Geometry g = geometry(r.inputs[0].shape, r.inputs[1].shape, ta);
  Epilogue epilogue{r.inputs.size() > 2, r.inputs.size() > 3,
                    r.inputs.size() > 2 ? r.inputs[2].dtype : DType::F32};
  if (epilogue.bias)
    if (std::string why = epilogue_unsupported(r, g, epilogue); !why.empty())
      return no_kernel(r, why);
  if (r.bias_gradient) {
    if (std::string why = bias_gradient_unsupported(r, g); !why.empty()) return no_kernel(r, why);
    epilogue.bias_gradient = true;
  }
  bool floating = d == DType::F32 || d == DType::F64 || d == DType::BF16 || d == DType::F16;
  return floating ? float_matmul(r, g, ta, tb, epilogue) : int_matmul(r, g, ta, tb);
}

}  // namespace sexpgpu::cuda
