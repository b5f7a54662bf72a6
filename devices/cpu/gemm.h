// One matrix product routine for every dtype the CPU kernels multiply:
// OpenBLAS sgemm/dgemm for f32/f64, a plain loop for integers (wrapping, as
// integer ops do). Row-major, C = alpha op(A) op(B) + beta C, op transposing
// when asked. OpenBLAS runs on the calling thread only (the plugin sets its
// thread count to 1): a big product is split into blocks of C's rows or
// columns across the pool (thread_pool.h), so the process has one set of
// threads, and every element of C is the same sum over K at any thread
// count (docs/devices.md).
#pragma once

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "scalar_ops.h"
#include "thread_pool.h"

namespace sexpgpu::cpu {

// Below this M*N*K a product stays on one thread (about 10 us of work at one
// core's rate: a split would cost more than it saves). OpenBLAS's own
// threading starts at about the same size.
inline constexpr int64_t kGemmParallelWork = int64_t(1) << 18;

template <class T>
void gemm_on_one_thread(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha,
                        const T* A, int64_t lda, const T* B, int64_t ldb, T beta, T* C,
                        int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // BLAS rejects lda = 0; the product is all zeros
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        C[i * ldc + j] = beta == T(0) ? T(0) : T(beta * C[i * ldc + j]);
    return;
  }
  auto ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, blasint(M), blasint(N), blasint(K), alpha, A, blasint(lda),
                B, blasint(ldb), beta, C, blasint(ldc));
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, ta, tb, blasint(M), blasint(N), blasint(K), alpha, A, blasint(lda),
                B, blasint(ldb), beta, C, blasint(ldc));
  } else {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        T acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          T a = trans_a ? A[k * lda + i] : A[i * lda + k];
          T b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
          acc = scalar::wrap_add(acc, scalar::wrap_mul(a, b));
        }
        T prior = beta == T(0) ? T(0) : scalar::wrap_mul(beta, C[i * ldc + j]);
        C[i * ldc + j] = scalar::wrap_add(scalar::wrap_mul(alpha, acc), prior);
      }
  }
}

// The product on up to `threads` threads of the pool; a caller that is itself
// a pool task passes 1.
template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc, int threads = 1) {
  int64_t t = std::min<int64_t>(threads, ThreadPool::instance().size());
  if (t <= 1 || M * N * K < kGemmParallelWork) {
    gemm_on_one_thread(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  // Blocks of the longer side, in multiples of 16 (the kernels' register
  // tiles divide it), so that no thread gets a sliver.
  const bool by_rows = M >= N;
  const int64_t side = by_rows ? M : N, align = 16;
  const int64_t units = (side + align - 1) / align;
  t = std::min(t, units);
  ThreadPool::instance().run(int(t), [&](int i) {
    int64_t begin = std::min(side, units * i / t * align);
    int64_t end = std::min(side, units * (i + 1) / t * align);
    if (begin >= end) return;
    if (by_rows)  // rows [begin, end) of op(A) and of C
      gemm_on_one_thread(trans_a, trans_b, end - begin, N, K, alpha,
                         A + (trans_a ? begin : begin * lda), lda, B, ldb, beta, C + begin * ldc,
                         ldc);
    else  // columns [begin, end) of op(B) and of C
      gemm_on_one_thread(trans_a, trans_b, M, end - begin, K, alpha, A, lda,
                         B + (trans_b ? begin * ldb : begin), ldb, beta, C + begin, ldc);
  });
}

}  // namespace sexpgpu::cpu
