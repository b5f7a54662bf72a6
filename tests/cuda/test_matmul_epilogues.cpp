// Half products that add their bias and a residual in cuBLASLt's epilogue
// (matmul_epilogues.h): the plans are checked without a GPU; on one, the
// product's f32 result must match a double reference from the same bf16
// operands.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda/codegen/nvrtc_cache.h"
#include "cuda/context.h"
#include "cuda/factories/kernel.h"
#include "cuda/program.h"
#include "gpu_or_skip.h"
#include "ir/graph.h"
#include "plan_context.h"

using namespace sexpgpu;
using cuda::testing::gpu_missing;
using cuda::testing::joined;
using cuda::testing::planned_kernels;
using cuda::testing::step_kernels;
using ir::DType;
using ir::NodeId;
using ir::Op;

namespace {

ir::Attrs cast_to(DType d) {
  ir::Attrs a;
  a.dtype = d;
  return a;
}

// A linear layer in bf16 with its residual: a [2, 8, 16] @ w [16, 24], the
// sum f32(product) + bias then `residual + sum` (operand orders swapped on
// request).
struct Layer {
  NodeId a, w, bias, x, sum;
};

void build_layer(Layer& l, ir::Builder& b, bool bias_first) {
  l.a = b.input("a", {DType::BF16, ir::Shape{{2, 8, 16}}});
  l.w = b.input("w", {DType::BF16, ir::Shape{{16, 24}}});
  l.bias = b.input("bias", {DType::F32, ir::Shape{{24}}});
  l.x = b.input("x", {DType::F32, ir::Shape{{2, 8, 24}}});
  NodeId product = b.must(Op::Cast, {b.must(Op::MatMul, {l.a, l.w})}, cast_to(DType::F32));
  l.sum = bias_first ? b.must(Op::Add, {l.bias, product}) : b.must(Op::Add, {product, l.bias});
}

ir::Function& new_function(ir::Module& module, const std::string& name) {
  module.functions.emplace_back();
  ir::Function& fn = module.functions.back();
  fn.name = name;
  return fn;
}

}  // namespace

TEST_CASE("a bf16 product adds its bias and residual in the epilogue", "[cuda][matmul]") {
  for (bool swapped : {false, true}) {
    ir::Module module;
    ir::Function& fn = new_function(module, "layer");
    ir::Builder b(fn);
    Layer l;
    build_layer(l, b, swapped);
    NodeId y = swapped ? b.must(Op::Add, {l.x, l.sum}) : b.must(Op::Add, {l.sum, l.x});
    fn.outputs.push_back({"y", y});
    std::vector<std::string> kernels = planned_kernels(module, "layer");
    INFO(joined(kernels));
    // The product writes the output itself: no generated kernel, no copy.
    REQUIRE(kernels.size() == 1);
    CHECK(kernels[0] == "matmul<bf16> cublasLt m=16 n=24 k=16 ->f32 +bias+addend");
  }
}

TEST_CASE("a sum read twice keeps its generated kernel", "[cuda][matmul]") {
  ir::Module module;
  ir::Function& fn = new_function(module, "layer");
  ir::Builder b(fn);
  Layer l;
  build_layer(l, b, false);
  fn.outputs.push_back({"y", b.must(Op::Add, {l.sum, l.x})});
  fn.outputs.push_back({"z", b.must(Op::Exp, {l.sum})});
  std::vector<std::string> kernels = planned_kernels(module, "layer");
  INFO(joined(kernels));
  for (const std::string& k : kernels) CHECK(k.find("+bias") == std::string::npos);
  CHECK(kernels[0] == "matmul<bf16> cublasLt m=16 n=24 k=16");
}

TEST_CASE("a bias sum read by a kernel of its own goes into the product", "[cuda][matmul]") {
  ir::Attrs rows;
  rows.axes = ir::Dims{2};
  {
    ir::Module module;
    ir::Function& fn = new_function(module, "layer");
    ir::Builder b(fn);
    Layer l;
    build_layer(l, b, false);
    fn.outputs.push_back({"s", b.must(Op::Sum, {l.sum}, rows)});
    std::vector<std::string> kernels = planned_kernels(module, "layer");
    INFO(joined(kernels));
    REQUIRE(kernels.size() == 2);
    CHECK(kernels[0] == "matmul<bf16> cublasLt m=16 n=24 k=16 ->f32 +bias");
  }
  {  // a gelu reads the half product and the bias in its own kernel: cheaper
    ir::Module module;
    ir::Function& fn = new_function(module, "layer");
    ir::Builder b(fn);
    Layer l;
    build_layer(l, b, false);
    fn.outputs.push_back({"s", b.must(Op::Sum, {b.must(Op::Gelu, {l.sum})}, rows)});
    std::vector<std::string> kernels = planned_kernels(module, "layer");
    INFO(joined(kernels));
    CHECK(kernels[0] == "matmul<bf16> cublasLt m=16 n=24 k=16");
  }
}

TEST_CASE("a bias sum rounded back to bf16 is one product rounding once", "[cuda][matmul]") {
  ir::Module module;
  ir::Function& fn = new_function(module, "layer");
  ir::Builder b(fn);
  Layer l;
  build_layer(l, b, false);
  // Two casts of the sum: the first becomes the product, the second reads
  // it; the bias is rounded to bf16 first (a cast of an input, hoisted).
  NodeId first = b.must(Op::Cast, {l.sum}, cast_to(DType::BF16));
  NodeId second = b.must(Op::Cast, {l.sum}, cast_to(DType::BF16));
  fn.outputs.push_back({"y", b.must(Op::Mul, {first, second})});
  std::vector<std::string> kernels = planned_kernels(module, "layer");
  INFO(joined(kernels));
  REQUIRE(kernels.size() == 3);
  CHECK(kernels[0].rfind("cast<bf16> bf16[24]", 0) == 0);
  CHECK(kernels[1] == "matmul<bf16> cublasLt m=16 n=24 k=16 +bias");
  CHECK(kernels[2].find(",mul,") != std::string::npos);  // the product, read twice
}

namespace {

// A linear layer's weight and bias gradients in bf16 training: x [2, 8, 16]
// and its output's f32 gradient dy [2, 8, 24], dw = x^T bf16(dy) (read in
// f32) and db = the sum of dy over the rows, which reads the bf16 copy
// (absorb_casts.h). With `early`, something reads db before dw's product.
void build_gradients(ir::Module& module, bool early) {
  ir::Function& fn = new_function(module, "grads");
  ir::Builder b(fn);
  NodeId x = b.input("x", {DType::BF16, ir::Shape{{2, 8, 16}}});
  NodeId dy = b.input("dy", {DType::F32, ir::Shape{{16, 24}}});
  ir::Attrs rows, to_matrix_x, swap;
  rows.axes = ir::Dims{0};
  to_matrix_x.shape = ir::Dims{16, 16};
  swap.axes = ir::Dims{1, 0};
  NodeId db = b.must(Op::Sum, {dy}, rows);
  if (early) fn.outputs.push_back({"e", b.must(Op::Exp, {db})});
  NodeId xt = b.must(Op::Permute, {b.must(Op::Reshape, {x}, to_matrix_x)}, swap);
  NodeId product = b.must(Op::MatMul, {xt, b.must(Op::Cast, {dy}, cast_to(DType::BF16))});
  fn.outputs.push_back({"dw", b.must(Op::Cast, {product}, cast_to(DType::F32))});
  fn.outputs.push_back({"db", db});
}

}  // namespace

TEST_CASE("a weight gradient's product writes its bias gradient too", "[cuda][matmul]") {
  ir::Module module;
  build_gradients(module, false);
  std::vector<std::string> kernels = planned_kernels(module, "grads");
  INFO(joined(kernels));
  REQUIRE(kernels.size() == 2);
  CHECK(kernels[0].rfind("cast<bf16> bf16[16,24]", 0) == 0);
  CHECK(kernels[1] == "matmul<bf16> cublasLt m=16 n=24 k=16 a^T ->f32 +bgrad");
}

TEST_CASE("a bias gradient read before the product, or in a deterministic run, is its own sum",
          "[cuda][matmul]") {
  {
    ir::Module module;
    build_gradients(module, true);
    std::vector<std::string> kernels = planned_kernels(module, "grads");
    INFO(joined(kernels));
    for (const std::string& k : kernels) CHECK(k.find("+bgrad") == std::string::npos);
    CHECK(joined(kernels).find("sum<f32>") != std::string::npos);
  }
  ir::Module module;
  build_gradients(module, false);
  cuda::NvrtcCache cache(90);
  cuda::Context ctx = cuda::testing::plan_context(&cache);
  ctx.deterministic = true;
  auto program = cuda::Program::compile(module, "grads", ctx);
  INFO(program.error());
  REQUIRE(program.ok());
  std::string kernels = joined(step_kernels(**program));
  INFO(kernels);
  CHECK(kernels.find("+bgrad") == std::string::npos);
  CHECK(kernels.find("sum<f32>") != std::string::npos);
}

TEST_CASE("only one half product with an f32 result takes an epilogue", "[cuda][matmul]") {
  cuda::Context ctx = cuda::testing::plan_context();
  ir::Attrs none;
  struct Types {
    std::vector<ir::TensorType> inputs;
    ir::TensorType output;
  };
  std::vector<Types> cases;
  cases.reserve(16);
  auto request = [&](DType in, ir::Shape a, ir::Shape bias, DType out, bool addend) {
    ir::Shape result{{a[0], 24}};
    if (a.rank() == 3) result = ir::Shape{{a[0], a[1], 24}};
    Types t{{{in, a}, {in, ir::Shape{{a[a.rank() - 1], 24}}}, {DType::F32, bias}}, {out, result}};
    if (addend) t.inputs.push_back({DType::F32, result});
    cases.push_back(std::move(t));
    return cuda::KernelRequest{Op::MatMul, none, cases.back().inputs, cases.back().output, ctx, {}};
  };
  const ir::Shape n{{24}}, row{{1, 24}};
  cuda::KernelResult ok =
      cuda::make_matmul_kernel(request(DType::BF16, ir::Shape{{4, 8, 16}}, n, DType::F32, true));
  REQUIRE(ok.ok());
  CHECK((*ok).name == "matmul<bf16> cublasLt m=32 n=24 k=16 ->f32 +bias+addend");
  CHECK(cuda::make_matmul_kernel(request(DType::F16, ir::Shape{{8, 16}}, row, DType::F32, false))
            .ok());
  // A half result adds a bias of its own type alone, rounded once.
  cases.push_back(
      {{{DType::BF16, ir::Shape{{8, 16}}}, {DType::BF16, ir::Shape{{16, 24}}}, {DType::BF16, n}},
       {DType::BF16, ir::Shape{{8, 24}}}});
  cuda::KernelResult rounded = cuda::make_matmul_kernel(
      cuda::KernelRequest{Op::MatMul, none, cases.back().inputs, cases.back().output, ctx, {}});
  REQUIRE(rounded.ok());
  CHECK((*rounded).name == "matmul<bf16> cublasLt m=8 n=24 k=16 +bias");
  // f32 products, a half result with an f32 bias, an addend or of the
  // other half type, a bias of the wrong length, no terms.
  CHECK(!cuda::make_matmul_kernel(request(DType::F32, ir::Shape{{8, 16}}, n, DType::F32, false))
             .ok());
  CHECK(!cuda::make_matmul_kernel(request(DType::BF16, ir::Shape{{8, 16}}, n, DType::BF16, false))
             .ok());
  CHECK(!cuda::make_matmul_kernel(request(DType::BF16, ir::Shape{{8, 16}}, n, DType::BF16, true))
             .ok());
  CHECK(!cuda::make_matmul_kernel(request(DType::F16, ir::Shape{{8, 16}}, n, DType::BF16, false))
             .ok());
  CHECK(!cuda::make_matmul_kernel(
             request(DType::BF16, ir::Shape{{8, 16}}, ir::Shape{{16}}, DType::F32, false))
             .ok());
  CHECK(!cuda::make_matmul_kernel(request(DType::BF16, ir::Shape{{8, 0}}, n, DType::F32, false))
             .ok());
  // An addend of another shape.
  cases.push_back({{{DType::BF16, ir::Shape{{8, 16}}},
                    {DType::BF16, ir::Shape{{16, 24}}},
                    {DType::F32, n},
                    {DType::F32, ir::Shape{{1, 24}}}},
                   {DType::F32, ir::Shape{{8, 24}}}});
  CHECK(
      !cuda::make_matmul_kernel(
           cuda::KernelRequest{Op::MatMul, none, cases.back().inputs, cases.back().output, ctx, {}})
           .ok());
}

namespace {

// A Context on GPU 0 as plugin.cpp opens it, with its cuBLASLt handle.
struct Gpu {
  cuda::Context ctx;
  std::unique_ptr<cuda::NvrtcCache> nvrtc;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  cudaStream_t stream = nullptr;
  Gpu() {
    cudaDeviceProp p{};
    REQUIRE(cudaGetDeviceProperties(&p, 0) == cudaSuccess);
    ctx.name = p.name;
    ctx.memory_bytes = p.totalGlobalMem;
    ctx.sm_count = p.multiProcessorCount;
    ctx.compute_capability = p.major * 10 + p.minor;
    ctx.shared_memory_per_block = p.sharedMemPerBlockOptin;
    REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
    REQUIRE(cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS);
    ctx.cublas_workspace_bytes = size_t(32) << 20;
    REQUIRE(cudaMalloc(&workspace, ctx.cublas_workspace_bytes) == cudaSuccess);
    ctx.cublas_lt = lt;
    ctx.cublas_workspace = workspace;
    cuda::testing::fresh_kernel_cache();
    nvrtc = std::make_unique<cuda::NvrtcCache>(ctx.compute_capability);
    ctx.nvrtc = nvrtc.get();
  }
  ~Gpu() {
    cudaFree(workspace);
    cublasLtDestroy(lt);
    cudaStreamDestroy(stream);
  }
};

void* upload(const void* data, size_t bytes) {
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, bytes) == cudaSuccess);
  REQUIRE(cudaMemcpy(p, data, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
  return p;
}

float bf16_value(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &word, 4);
  return f;
}

}  // namespace

TEST_CASE("the epilogue's f32 sum matches a double reference", "[cuda][matmul][gpu]") {
  if (std::string why = gpu_missing(); !why.empty()) SG_SKIP_TEST(why);
  // GPT-2's projection shape at a smaller batch: x [4, 256, 768] @ w [768, 768].
  const int64_t B = 4, T = 256, K = 768, N = 768, M = B * T;
  for (bool deterministic : {true, false}) {
    ir::Module module;
    ir::Function& fn = new_function(module, "proj");
    ir::Builder b(fn);
    NodeId a = b.input("a", {DType::BF16, ir::Shape{{B, T, K}}});
    NodeId w = b.input("w", {DType::BF16, ir::Shape{{K, N}}});
    NodeId bias = b.input("bias", {DType::F32, ir::Shape{{N}}});
    NodeId x = b.input("x", {DType::F32, ir::Shape{{B, T, N}}});
    NodeId product = b.must(Op::Cast, {b.must(Op::MatMul, {a, w})}, cast_to(DType::F32));
    fn.outputs.push_back({"y", b.must(Op::Add, {x, b.must(Op::Add, {product, bias})})});

    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto bf16_bits = [&](float v) { return __nv_bfloat16_raw(__float2bfloat16_rn(v)).x; };
    std::vector<uint16_t> ha(size_t(M * K)), hw(size_t(K * N));
    for (uint16_t& v : ha) v = bf16_bits(normal(rng));
    for (uint16_t& v : hw) v = bf16_bits(0.05f * normal(rng));
    std::vector<float> hbias(static_cast<size_t>(N)), hx(size_t(M * N));
    for (float& v : hbias) v = normal(rng);
    for (float& v : hx) v = 4.0f * normal(rng);

    Gpu gpu;
    gpu.ctx.deterministic = deterministic;
    auto program = cuda::Program::compile(module, "proj", gpu.ctx);
    INFO(program.error());
    REQUIRE(program.ok());
    nlohmann::json report = nlohmann::json::parse((*program)->report_json());
    REQUIRE(report["steps"].size() == 1);
    CHECK(report["steps"][0]["kernel"].get<std::string>().find("+bias+addend") !=
          std::string::npos);

    void* da = upload(ha.data(), ha.size() * 2);
    void* dw = upload(hw.data(), hw.size() * 2);
    void* dbias = upload(hbias.data(), hbias.size() * 4);
    void* dx = upload(hx.data(), hx.size() * 4);
    void* dy = nullptr;
    REQUIRE(cudaMalloc(&dy, size_t(M * N) * 4) == cudaSuccess);
    std::vector<const void*> inputs{da, dw, dbias, dx};
    std::vector<void*> outputs{dy};
    // Twice: the eager run, then the captured graph's.
    for (int run = 0; run < 2; ++run) {
      REQUIRE((*program)->run(inputs, outputs, gpu.stream) == "");
      REQUIRE(cudaStreamSynchronize(gpu.stream) == cudaSuccess);
    }
    std::vector<float> hy(size_t(M * N));
    REQUIRE(cudaMemcpy(hy.data(), dy, hy.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (void* p : {da, dw, dbias, dx, dy}) cudaFree(p);

    // f32 accumulation of K terms: rtol 1e-5 per term of the largest
    // magnitude summed, as the conformance suite bounds f32 sums.
    int64_t bad = 0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double ref = double(hbias[size_t(j)]) + double(hx[size_t(i * N + j)]), scale = 0;
        for (int64_t k = 0; k < K; ++k) {
          double term =
              double(bf16_value(ha[size_t(i * K + k)])) * double(bf16_value(hw[size_t(k * N + j)]));
          ref += term;
          scale = std::max(scale, std::abs(term));
        }
        scale = std::max(
            {scale, std::abs(double(hbias[size_t(j)])), std::abs(double(hx[size_t(i * N + j)]))});
        if (std::abs(double(hy[size_t(i * N + j)]) - ref) > 1e-5 * double(K + 2) * scale) ++bad;
      }
    INFO("deterministic " << deterministic);
    CHECK(bad == 0);
  }
}

TEST_CASE("the bf16 epilogue rounds x w + bf16(b) once", "[cuda][matmul][gpu]") {
  if (std::string why = gpu_missing(); !why.empty()) SG_SKIP_TEST(why);
  // GPT-2's qkv shape at a smaller batch: x [4, 256, 768] @ w [768, 2304].
  const int64_t B = 4, T = 256, K = 768, N = 2304, M = B * T;
  ir::Module module;
  ir::Function& fn = new_function(module, "qkv");
  ir::Builder b(fn);
  NodeId a = b.input("a", {DType::BF16, ir::Shape{{B, T, K}}});
  NodeId w = b.input("w", {DType::BF16, ir::Shape{{K, N}}});
  NodeId bias = b.input("bias", {DType::F32, ir::Shape{{N}}});
  NodeId product = b.must(Op::Cast, {b.must(Op::MatMul, {a, w})}, cast_to(DType::F32));
  NodeId sum = b.must(Op::Add, {product, bias});
  fn.outputs.push_back({"y", b.must(Op::Cast, {sum}, cast_to(DType::BF16))});

  std::mt19937 rng(12);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto bf16_bits = [&](float v) { return __nv_bfloat16_raw(__float2bfloat16_rn(v)).x; };
  std::vector<uint16_t> ha(size_t(M * K)), hw(size_t(K * N));
  for (uint16_t& v : ha) v = bf16_bits(normal(rng));
  for (uint16_t& v : hw) v = bf16_bits(0.05f * normal(rng));
  std::vector<float> hbias(static_cast<size_t>(N));
  for (float& v : hbias) v = normal(rng);

  Gpu gpu;
  auto program = cuda::Program::compile(module, "qkv", gpu.ctx);
  INFO(program.error());
  REQUIRE(program.ok());
  std::string kernels = joined(step_kernels(**program));
  INFO(kernels);
  CHECK(kernels.find("+bias") != std::string::npos);  // cuBLASLt took it on this GPU

  void* da = upload(ha.data(), ha.size() * 2);
  void* dw = upload(hw.data(), hw.size() * 2);
  void* dbias = upload(hbias.data(), hbias.size() * 4);
  void* dy = nullptr;
  REQUIRE(cudaMalloc(&dy, size_t(M * N) * 2) == cudaSuccess);
  std::vector<const void*> inputs{da, dw, dbias};
  std::vector<void*> outputs{dy};
  for (int run = 0; run < 2; ++run) {  // eager, then the captured graph
    REQUIRE((*program)->run(inputs, outputs, gpu.stream) == "");
    REQUIRE(cudaStreamSynchronize(gpu.stream) == cudaSuccess);
  }
  std::vector<uint16_t> hy(size_t(M * N));
  REQUIRE(cudaMemcpy(hy.data(), dy, hy.size() * 2, cudaMemcpyDeviceToHost) == cudaSuccess);
  for (void* p : {da, dw, dbias, dy}) cudaFree(p);

  // Against x w + bf16(b) in double: within the f32 sum's bound plus one
  // bf16 rounding (2^-8 relative) of the result.
  int64_t bad = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double ref = double(bf16_value(bf16_bits(hbias[size_t(j)]))), scale = std::abs(ref);
      for (int64_t k = 0; k < K; ++k) {
        double term =
            double(bf16_value(ha[size_t(i * K + k)])) * double(bf16_value(hw[size_t(k * N + j)]));
        ref += term;
        scale = std::max(scale, std::abs(term));
      }
      double got = double(bf16_value(hy[size_t(i * N + j)]));
      if (std::abs(got - ref) > 1e-5 * double(K + 1) * scale + std::ldexp(std::abs(ref), -8)) ++bad;
    }
  CHECK(bad == 0);
}

TEST_CASE("the bias gradient beside a weight gradient matches a double reference",
          "[cuda][matmul][gpu]") {
  if (std::string why = gpu_missing(); !why.empty()) SG_SKIP_TEST(why);
  // GPT-2's MLP projection at a smaller batch: x [1024, 768], dy [1024, 3072].
  const int64_t K = 1024, M = 768, N = 3072;
  ir::Module module;
  ir::Function& fn = new_function(module, "grads");
  ir::Builder b(fn);
  NodeId x = b.input("x", {DType::BF16, ir::Shape{{K, M}}});
  NodeId dy = b.input("dy", {DType::F32, ir::Shape{{K, N}}});
  ir::Attrs rows, swap;
  rows.axes = ir::Dims{0};
  swap.axes = ir::Dims{1, 0};
  NodeId db = b.must(Op::Sum, {dy}, rows);
  NodeId xt = b.must(Op::Permute, {x}, swap);
  NodeId product = b.must(Op::MatMul, {xt, b.must(Op::Cast, {dy}, cast_to(DType::BF16))});
  fn.outputs.push_back({"dw", b.must(Op::Cast, {product}, cast_to(DType::F32))});
  fn.outputs.push_back({"db", db});

  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto bf16_bits = [&](float v) { return __nv_bfloat16_raw(__float2bfloat16_rn(v)).x; };
  // dy's values are bf16 values, so its bf16 copy is exact.
  std::vector<uint16_t> hx(size_t(K * M)), hdy(size_t(K * N));
  for (uint16_t& v : hx) v = bf16_bits(normal(rng));
  for (uint16_t& v : hdy) v = bf16_bits(0.05f * normal(rng));
  std::vector<float> hdy32(hdy.size());
  for (size_t i = 0; i < hdy.size(); ++i) hdy32[i] = bf16_value(hdy[i]);

  Gpu gpu;
  auto program = cuda::Program::compile(module, "grads", gpu.ctx);
  INFO(program.error());
  REQUIRE(program.ok());
  std::string kernels = joined(step_kernels(**program));
  INFO(kernels);
  CHECK(kernels.find("+bgrad") != std::string::npos);  // cuBLASLt took it on this GPU

  void* dx = upload(hx.data(), hx.size() * 2);
  void* ddy = upload(hdy32.data(), hdy32.size() * 4);
  void *ddw = nullptr, *ddb = nullptr;
  REQUIRE(cudaMalloc(&ddw, size_t(M * N) * 4) == cudaSuccess);
  REQUIRE(cudaMalloc(&ddb, size_t(N) * 4) == cudaSuccess);
  std::vector<const void*> inputs{dx, ddy};
  std::vector<void*> outputs{ddw, ddb};
  for (int run = 0; run < 2; ++run) {  // eager, then the captured graph
    REQUIRE((*program)->run(inputs, outputs, gpu.stream) == "");
    REQUIRE(cudaStreamSynchronize(gpu.stream) == cudaSuccess);
  }
  std::vector<float> hdw(size_t(M * N)), hdb(static_cast<size_t>(N));
  REQUIRE(cudaMemcpy(hdw.data(), ddw, hdw.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(hdb.data(), ddb, hdb.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  for (void* p : {dx, ddy, ddw, ddb}) cudaFree(p);

  // Both f32 sums of K terms, bounded as the conformance suite bounds them.
  int64_t bad_db = 0, bad_dw = 0;
  for (int64_t j = 0; j < N; ++j) {
    double ref = 0, scale = 0;
    for (int64_t k = 0; k < K; ++k) {
      double term = double(bf16_value(hdy[size_t(k * N + j)]));
      ref += term;
      scale = std::max(scale, std::abs(term));
    }
    if (std::abs(double(hdb[size_t(j)]) - ref) > 1e-5 * double(K) * scale) ++bad_db;
  }
  for (int64_t i = 0; i < M; i += 7)  // every 7th row of dw: the product itself
    for (int64_t j = 0; j < N; ++j) {
      double ref = 0, scale = 0;
      for (int64_t k = 0; k < K; ++k) {
        double term =
            double(bf16_value(hx[size_t(k * M + i)])) * double(bf16_value(hdy[size_t(k * N + j)]));
        ref += term;
        scale = std::max(scale, std::abs(term));
      }
      if (std::abs(double(hdw[size_t(i * N + j)]) - ref) > 1e-5 * double(K) * scale) ++bad_dw;
    }
  CHECK(bad_db == 0);
  CHECK(bad_dw == 0);
}
