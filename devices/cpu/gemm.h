// One matrix product routine for every dtype the CPU kernels multiply:
// OpenBLAS sgemm/dgemm for f32/f64 (with its own threads), a plain loop for
// integers (wrapping, as integer ops do). Row-major, C = alpha op(A) op(B) +
// beta C, op transposing when asked.
#pragma once

#include <cblas.h>

#include <cstdint>
#include <type_traits>

#include "scalar_ops.h"

namespace sexpgpu::cpu {

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
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

}  // namespace sexpgpu::cpu
