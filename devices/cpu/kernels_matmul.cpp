// matmul (NumPy semantics): a [..., M, K] @ b [..., K, N] with the batch
// axes broadcast; a 1-D a is a row [1, K] and a 1-D b a column [K, 1], the
// added axis dropped from the result. One gemm per batch element, or one
// gemm for all of them when b has no batch (x [B, T, K] @ w [K, N] is then
// [B*T, K] @ [K, N]). An operand folded from a permute of its last two axes
// (KernelRequest::transposed) is read in place with gemm's transpose flag.
// A batch of small products is split across the worker pool.
#include <vector>

#include "gemm.h"
#include "kernel.h"
#include "parallel.h"
#include "storage.h"

namespace sexpgpu::cpu {
namespace {

struct MatmulGeometry {
  int64_t M = 1, K = 1, N = 1;
  std::vector<int64_t> a_offsets, b_offsets;  // per output batch element, in elements
  bool folded = false;                        // one gemm of M*batch rows
};

MatmulGeometry matmul_geometry(const ir::Shape& a, const ir::Shape& b, bool trans_a) {
  MatmulGeometry g;
  Dims da(a.begin(), a.end()), db(b.begin(), b.end());
  if (da.size() == 1) da.insert(da.begin(), 1);
  if (db.size() == 1) db.push_back(1);
  g.M = da[da.size() - 2];
  g.K = da.back();
  g.N = db.back();
  ir::Shape ba(Dims(da.begin(), da.end() - 2)), bb(Dims(db.begin(), db.end() - 2));
  ir::Shape batch = *ir::broadcast_shapes(ba, bb);
  int64_t count = numel(batch);
  bool b_unbatched = numel(bb) == 1;
  // A transposed a's rows are not contiguous across batch elements.
  if (b_unbatched && numel(ba) == count && !trans_a) {
    g.folded = true;
    g.M *= count;
    g.a_offsets = {0};
    g.b_offsets = {0};
    return g;
  }
  Dims sa = broadcast_strides(ba, batch), sb = broadcast_strides(bb, batch);
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
  return g;
}

template <class T>
Kernel matmul_kernel(const KernelRequest& r) {
  auto [ta, tb] = r.transposed;
  MatmulGeometry g = matmul_geometry(r.inputs[0].shape, r.inputs[1].shape, ta);
  std::string name = kernel_label(ir::Op::MatMul, r.output.dtype) +
                     (g.folded ? " folded" : " batched x" + std::to_string(g.a_offsets.size())) +
                     (ta ? " a^T" : "") + (tb ? " b^T" : "");
  // A transposed operand is stored [.., K, M] (a) or [.., N, K] (b).
  int64_t lda = ta ? g.M : g.K, ldb = tb ? g.K : g.N;
  int threads = r.threads;
  KernelFn fn = [g, ta, tb, lda, ldb, threads](const void* const* in, void* out) -> std::string {
    const T* a = static_cast<const T*>(in[0]);
    const T* b = static_cast<const T*>(in[1]);
    T* c = static_cast<T*>(out);
    auto products = [&](int64_t begin, int64_t end, int product_threads) {
      for (int64_t i = begin; i < end; ++i)
        gemm<T>(ta, tb, g.M, g.N, g.K, T(1), a + g.a_offsets[size_t(i)], lda,
                b + g.b_offsets[size_t(i)], ldb, T(0), c + i * g.M * g.N, g.N, product_threads);
    };
    int64_t count = int64_t(g.a_offsets.size()), work = g.M * g.N * g.K;
    // A batch of products too small to split (attention's) is split across
    // the pool by product instead.
    if (count > 1 && work < kGemmParallelWork)
      parallel_range(count, work, threads,
                     [&](int64_t begin, int64_t end) { products(begin, end, 1); });
    else
      products(0, count, threads);
    return {};
  };
  return Kernel{std::move(fn), std::move(name)};
}

}  // namespace

KernelResult make_matmul_kernel(const KernelRequest& r) {
  ir::DType d = r.output.dtype;
  if (d == ir::DType::BF16 || d == ir::DType::F16 || d == ir::DType::Bool ||
      r.inputs[0].dtype != d || r.inputs[1].dtype != d)
    return no_kernel(r, "operands must be lowered to the compute dtype first");
  return dispatch_compute(d, [&](auto t) -> KernelResult { return matmul_kernel<decltype(t)>(r); });
}

}  // namespace sexpgpu::cpu
