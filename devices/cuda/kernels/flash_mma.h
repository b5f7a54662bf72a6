// The warp-level primitives of the tensor-core attention kernels
// (flash_tensor.h): bf16/f16 matrix fragments moved with ldmatrix and
// multiplied with mma.sync m16n8k16 (f32 accumulation), 16-byte cp.async
// copies into shared memory, and round-to-nearest-even packing. Everything
// 16-bit travels as raw bits (uint16_t); Bf16 and F16 only pick the
// instruction and the conversions. Every function here is one PTX
// instruction or intrinsic with the fragment layouts of the PTX ISA
// ("Matrix Fragments for mma.m16n8k16", "ldmatrix"): the kernel bodies use
// nothing else of the GPU beyond CUDA's built-ins, so they also compile on
// the host against an emulation of this interface
// (tests/cuda/flash_host_emulation.h, run by tests/cuda/test_flash_host.cpp).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace sexpgpu::cuda::flash {

struct Bf16 {};
struct F16 {};

__device__ __forceinline__ float negative_infinity() {
  return __int_as_float(int(0xff800000u));
}

// 2^x in one special-function instruction; results below 2^-126 flush to
// zero (a probability that small never shows in an f32 sum of ones).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

template <class Half>
__device__ __forceinline__ float to_float(uint16_t bits);
template <>
__device__ __forceinline__ float to_float<Bf16>(uint16_t bits) {
  return __uint_as_float(uint32_t(bits) << 16);
}
template <>
__device__ __forceinline__ float to_float<F16>(uint16_t bits) {
  return __half2float(__ushort_as_half(bits));
}

// x rounded to nearest even.
template <class Half>
__device__ __forceinline__ uint16_t to_bits(float x);
template <>
__device__ __forceinline__ uint16_t to_bits<Bf16>(float x) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}
template <>
__device__ __forceinline__ uint16_t to_bits<F16>(float x) {
  return __half_as_ushort(__float2half_rn(x));
}

// Two values rounded to nearest even, `lo` in the low 16 bits (the lower
// column of a fragment register).
template <class Half>
__device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
  return uint32_t(to_bits<Half>(lo)) | uint32_t(to_bits<Half>(hi)) << 16;
}

// c += a b for one 16x16 (a, row-major) by 16x8 (b, column-major) product;
// a: a0..a3, b: b0, b1, c: c0..c3 in the PTX ISA's m16n8k16 layouts.
template <class Half>
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1);
template <>
__device__ __forceinline__ void mma_16816<Bf16>(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                                uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma_16816<F16>(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                               uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8x8 matrices of 16-bit elements: lanes 8i..8i+7 give the addresses
// of matrix i's rows (16 bytes each); r[i] is matrix i's fragment (lane l:
// row l/4, columns 2(l%4) and 2(l%4)+1). _trans: the matrices transposed.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const uint16_t* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const uint16_t* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

// 16 bytes from global to shared memory, asynchronously; zeros instead when
// !fill (the source is then not read, but must be a valid address).
__device__ __forceinline__ void cp_async_16(uint16_t* shared, const uint16_t* global, bool fill) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared)),
               "l"(global), "r"(fill ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Every copy this thread issued has landed, committed or not (other
// threads' copies need a __syncthreads after it).
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

}  // namespace sexpgpu::cuda::flash
