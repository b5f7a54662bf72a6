// Sums that read half-precision storage (absorb_casts.h): a bias gradient
// sums the bf16 copy its weight gradient's product reads, and a half
// product returned through a cast to f32 writes f32 itself. The plans are
// checked without a GPU; on one, an f32 sum of bf16/f16 columns (16-byte
// loads of 8 elements) must give the bits of the plain column kernel on the
// widened f32 values, split for split.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda/codegen/nvrtc_cache.h"
#include "cuda/context.h"
#include "cuda/factories/kernel.h"
#include "cuda/factories/kernels_reduce.h"
#include "cuda/kernels/reduce_launch.h"
#include "cuda/program.h"
#include "gpu_or_skip.h"
#include "ir/graph.h"
#include "plan_context.h"

using namespace sexpgpu;
using cuda::testing::gpu_missing;
using cuda::testing::planned_kernels;
using ir::DType;
using ir::NodeId;
using ir::Op;

namespace {

bool any_starts_with(const std::vector<std::string>& kernels, const std::string& prefix) {
  for (const std::string& k : kernels)
    if (k.rfind(prefix, 0) == 0) return true;
  return false;
}

uint16_t half_bits(float v, DType d) {
  if (d == DType::BF16) return __nv_bfloat16_raw(__float2bfloat16_rn(v)).x;
  return __half_raw(__float2half_rn(v)).x;
}

float widened(uint16_t bits, DType d) {
  if (d == DType::BF16) {
    uint32_t word = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &word, 4);
    return f;
  }
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}

// launch_reduce of p on `bytes` of input: the f32 outputs.
std::vector<float> reduce_on_gpu(const cuda::ReduceParams& p, const void* bytes, size_t size) {
  void *in = nullptr, *out = nullptr, *scratch = nullptr;
  REQUIRE(cudaMalloc(&in, size) == cudaSuccess);
  REQUIRE(cudaMemcpy(in, bytes, size, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMalloc(&out, size_t(p.outputs) * 4) == cudaSuccess);
  size_t scratch_bytes = cuda::reduce_scratch_bytes(p);
  if (scratch_bytes) REQUIRE(cudaMalloc(&scratch, scratch_bytes) == cudaSuccess);
  REQUIRE(cuda::launch_reduce(p, in, out, scratch, nullptr) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  std::vector<float> result(size_t(p.outputs));
  REQUIRE(cudaMemcpy(result.data(), out, result.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  cudaFree(in);
  cudaFree(out);
  cudaFree(scratch);
  return result;
}

}  // namespace

TEST_CASE("a bias gradient sums the bf16 copy its weight gradient's product reads",
          "[cuda][reduce]") {
  ir::Module module;
  module.functions.emplace_back();
  ir::Function& fn = module.functions.back();
  fn.name = "grads";
  ir::Builder b(fn);
  // g: a layer's f32 output gradient; x: its bf16 input. The weight
  // gradient x^T cast(g) is returned in f32, the bias gradient sum(g, 0).
  NodeId g0 = b.input("g", {DType::F32, ir::Shape{{256, 96}}});
  NodeId x = b.input("x", {DType::BF16, ir::Shape{{256, 64}}});
  NodeId g = b.must(Op::Exp, {g0});  // a computed gradient, as autodiff's
  ir::Attrs to_bf16, to_f32, rows, swap;
  to_bf16.dtype = DType::BF16;
  to_f32.dtype = DType::F32;
  rows.axes = ir::Dims{0};
  swap.axes = ir::Dims{1, 0};
  NodeId g_half = b.must(Op::Cast, {g}, to_bf16);
  NodeId x_t = b.must(Op::Permute, {x}, swap);
  NodeId weight_grad = b.must(Op::Cast, {b.must(Op::MatMul, {x_t, g_half})}, to_f32);
  fn.outputs.push_back({"weight", weight_grad});
  fn.outputs.push_back({"bias", b.must(Op::Sum, {g}, rows)});

  // Deterministic runs sum it in a kernel of its own; the others in the
  // weight gradient's product (+bgrad, matmul_epilogues.h), which reads
  // the same bf16 copy.
  for (bool deterministic : {true, false}) {
    cuda::NvrtcCache cache(90);
    cuda::Context ctx = cuda::testing::plan_context(&cache);
    ctx.deterministic = deterministic;
    auto program = cuda::Program::compile(module, "grads", ctx);
    INFO(program.error());
    REQUIRE(program.ok());
    std::vector<std::string> kernels = cuda::testing::step_kernels(**program);
    INFO(cuda::testing::joined(kernels));
    if (deterministic) {
      CHECK(any_starts_with(kernels, "sum<f32> columns outputs=96 count=256"));
      CHECK(cuda::testing::joined(kernels).find("stored=bf16") != std::string::npos);
      CHECK(any_starts_with(kernels, "matmul<bf16> cublasLt m=64 n=96 k=256 a^T ->f32"));
    } else {
      CHECK(!any_starts_with(kernels, "sum<f32>"));
      CHECK(any_starts_with(kernels, "matmul<bf16> cublasLt m=64 n=96 k=256 a^T ->f32 +bgrad"));
    }
    // exp and its cast are one kernel writing only bf16; nothing casts to
    // f32 or copies an output.
    CHECK(any_starts_with(kernels, "fused[exp,cast]<bf16>"));
    CHECK(!any_starts_with(kernels, "cast<f32>"));
    CHECK(!any_starts_with(kernels, "copy"));
    CHECK(kernels.size() == (deterministic ? 3u : 2u));
  }
}

TEST_CASE("only a plain sum into f32 reads half storage", "[cuda][reduce]") {
  cuda::Context ctx = cuda::testing::plan_context();
  ir::Attrs rows;
  rows.axes = ir::Dims{0};
  // Kernel requests hold references: each case's types live in `cases`.
  struct Types {
    std::vector<ir::TensorType> inputs;
    ir::TensorType output;
  };
  std::vector<Types> cases;
  cases.reserve(8);
  auto request = [&](Op op, DType in, DType out) {
    cases.push_back(
        {{ir::TensorType{in, ir::Shape{{512, 768}}}}, ir::TensorType{out, ir::Shape{{768}}}});
    return cuda::KernelRequest{op, rows, cases.back().inputs, cases.back().output, ctx, {}};
  };
  cuda::KernelResult bf16 = cuda::make_reduce_kernel(request(Op::Sum, DType::BF16, DType::F32));
  REQUIRE(bf16.ok());
  CHECK((*bf16).name.find(" x8 stored=bf16") != std::string::npos);
  CHECK(cuda::make_reduce_kernel(request(Op::Sum, DType::F16, DType::F32)).ok());
  CHECK(!cuda::make_reduce_kernel(request(Op::Max, DType::BF16, DType::F32)).ok());
  CHECK(!cuda::make_reduce_kernel(request(Op::Sum, DType::BF16, DType::BF16)).ok());
  CHECK(!cuda::make_sum_of_squares_kernel(request(Op::Sum, DType::BF16, DType::F32)).ok());
}

TEST_CASE("f32 sums of half columns give the plain kernel's bits on the widened values",
          "[cuda][reduce][gpu]") {
  if (std::string why = gpu_missing(); !why.empty()) SG_SKIP_TEST(why);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  struct Case {
    int64_t rows, inner;
    int splits;
  };
  for (DType d : {DType::BF16, DType::F16})
    for (Case c : {Case{16384, 3072, 88}, Case{4096, 768, 7}, Case{37, 24, 1}, Case{5, 16, 3},
                   Case{1000, 2304, 1}}) {
      size_t n = size_t(c.rows * c.inner);
      std::vector<uint16_t> bits(n);
      std::vector<float> values(n);
      for (size_t i = 0; i < n; ++i) {
        bits[i] = half_bits(normal(rng), d);
        values[i] = widened(bits[i], d);
      }
      cuda::ReduceParams half;
      half.op = cuda::ReduceOp::Sum;
      half.type = cuda::ReduceType::F32;
      half.layout = cuda::ReduceLayout::Columns;
      half.outputs = c.inner;
      half.count = c.rows;
      half.inner = c.inner;
      half.splits = c.splits;
      half.storage = d == DType::BF16 ? cuda::ReduceStorage::BF16 : cuda::ReduceStorage::F16;
      half.vector_columns = true;
      cuda::ReduceParams plain = half;
      plain.storage = cuda::ReduceStorage::Same;
      plain.vector_columns = false;
      std::vector<float> got = reduce_on_gpu(half, bits.data(), n * 2);
      std::vector<float> want = reduce_on_gpu(plain, values.data(), n * 4);
      INFO(ir::ir_name(d) << " rows " << c.rows << " inner " << c.inner << " splits " << c.splits);
      CHECK(std::memcmp(got.data(), want.data(), want.size() * 4) == 0);
      // And the vector kernel of f32 gives the same bits as well.
      plain.vector_columns = true;
      std::vector<float> vector = reduce_on_gpu(plain, values.data(), n * 4);
      CHECK(std::memcmp(vector.data(), want.data(), want.size() * 4) == 0);
    }
}
