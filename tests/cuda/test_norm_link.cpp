// layer_norm_grad linked to its layer_norm_param_grad (nn_launch.h
// layer_norm_grad_link_parts): the plan pairs them, both factories agree
// on the partials without a GPU, and cases the kernel cannot link fall
// back. On a GPU, the linked dx has the unlinked bits, and the param
// grads the last kernel adds up from the link match a double reference.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda/context.h"
#include "cuda/factories/kernel.h"
#include "cuda/kernels/nn_launch.h"
#include "gpu_or_skip.h"
#include "ir/graph.h"
#include "plan_context.h"

using namespace sexpgpu;
using cuda::testing::gpu_context;
using cuda::testing::gpu_missing;
using ir::DType;
using ir::Op;

namespace {

ir::TensorType type(DType d, ir::Shape s) {
  return ir::TensorType{d, std::move(s)};
}

// The pair for x [rows, dim] stored as x_dtype, g as g_dtype, computing in
// `compute` (f32 or f64): layer_norm_grad's (x, weight, g) -> dx and
// layer_norm_param_grad's (x, g) -> [2, dim].
struct Pair {
  std::vector<ir::TensorType> grad_inputs, param_inputs;
  ir::TensorType dx, params;
  Pair(int64_t rows, int64_t dim, DType x_dtype, DType g_dtype, DType compute)
      : grad_inputs{type(x_dtype, ir::Shape{{rows, dim}}), type(compute, ir::Shape{{dim}}),
                    type(g_dtype, ir::Shape{{rows, dim}})},
        param_inputs{grad_inputs[0], grad_inputs[2]},
        dx(type(compute, ir::Shape{{rows, dim}})),
        params(type(compute, ir::Shape{{2, dim}})) {}
};

cuda::Kernel grad_kernel(const Pair& p, cuda::Context& c, bool link) {
  ir::Attrs attrs;
  cuda::KernelResult k = cuda::make_nn_kernel(
      cuda::KernelRequest{Op::LayerNormGrad, attrs, p.grad_inputs, p.dx, c, {}, link});
  INFO(k.error());
  REQUIRE(k.ok());
  return std::move(k).value();
}

cuda::Kernel param_kernel(const Pair& p, cuda::Context& c, bool link) {
  ir::Attrs attrs;
  cuda::KernelResult k = cuda::make_norm_param_kernel(
      cuda::KernelRequest{Op::LayerNormParamGrad, attrs, p.param_inputs, p.params, c, {}, link});
  INFO(k.error());
  REQUIRE(k.ok());
  return std::move(k).value();
}

bool named_linked(const cuda::Kernel& k) {
  return k.name.find(" linked") != std::string::npos;
}

// ---------------------------------------------------------------------------
// On a GPU

uint16_t bf16_bits(float v) {
  return __nv_bfloat16_raw(__float2bfloat16_rn(v)).x;
}

float bf16_value(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &word, 4);
  return f;
}

// Device memory freed with it.
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) { REQUIRE(cudaMalloc(&p, bytes ? bytes : 1) == cudaSuccess); }
  DeviceBuffer(const void* data, size_t bytes) : DeviceBuffer(bytes) {
    REQUIRE(cudaMemcpy(p, data, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(p); }
};

std::vector<float> download(const DeviceBuffer& b, size_t count) {
  std::vector<float> v(count);
  REQUIRE(cudaMemcpy(v.data(), b.p, count * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  return v;
}

// k launched once on `inputs` into `out`, with its scratch and `link`.
void launch(const cuda::Kernel& k, const std::vector<const void*>& inputs, void* out, void* link) {
  DeviceBuffer scratch(k.scratch_bytes);
  std::vector<const void*> args = inputs;
  REQUIRE(k.launch(cuda::LaunchArgs{args.data(), out, scratch.p, nullptr, link}) == "");
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

// The [2, dim] sums in double of g xhat and g over x and g [rows, dim]
// (eps 1e-5), and for each the sum of its terms' magnitudes.
struct Reference {
  std::vector<double> sums, magnitudes;
};

Reference reference(const std::vector<float>& x, const std::vector<float>& g, int64_t rows,
                    int64_t dim) {
  Reference r{std::vector<double>(size_t(2 * dim)), std::vector<double>(size_t(2 * dim))};
  for (int64_t i = 0; i < rows; ++i) {
    const float* xr = x.data() + i * dim;
    const float* gr = g.data() + i * dim;
    double mean = 0, var = 0;
    for (int64_t k = 0; k < dim; ++k) mean += xr[k];
    mean /= double(dim);
    for (int64_t k = 0; k < dim; ++k) var += (xr[k] - mean) * (xr[k] - mean);
    const double rstd = 1 / std::sqrt(var / double(dim) + 1e-5);
    for (int64_t k = 0; k < dim; ++k) {
      const double t = gr[k] * ((xr[k] - mean) * rstd);
      r.sums[size_t(k)] += t;
      r.magnitudes[size_t(k)] += std::fabs(t);
      r.sums[size_t(dim + k)] += gr[k];
      r.magnitudes[size_t(dim + k)] += std::fabs(gr[k]);
    }
  }
  return r;
}

// got within the f32 error of a sum in any order of terms each rounded a
// few times: far inside the conformance suite's rtol 1e-5 times the terms.
void require_close(const std::vector<float>& got, const Reference& want) {
  REQUIRE(got.size() == want.sums.size());
  size_t bad = 0, first = 0;
  for (size_t j = 0; j < got.size(); ++j) {
    const double tolerance = 1e-5 * want.magnitudes[j] + 1e-30;
    if (!(std::fabs(double(got[j]) - want.sums[j]) <= tolerance) && bad++ == 0) first = j;
  }
  INFO(bad << " of " << got.size() << " off, first at " << first << ": " << got[first]
           << " against " << want.sums[first]);
  CHECK(bad == 0);
}

// x ~ N(offset, 1) in f32, weight ~ N(1, 0.1), g ~ N(0, 1) rounded to
// g_dtype (f32 or bf16); layer_norm_grad then layer_norm_param_grad, linked
// and not, compared.
void check_linked_pair(int64_t rows, int64_t dim, DType g_dtype, uint32_t seed) {
  INFO("x [" << rows << ", " << dim << "] f32, g " << ir::ir_name(g_dtype));
  cuda::Context c = gpu_context();
  Pair pair(rows, dim, DType::F32, g_dtype, DType::F32);
  const size_t n = size_t(rows * dim);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n), weight(static_cast<size_t>(dim)), g(n);
  for (float& v : x) v = 0.5f + normal(rng);
  for (float& v : weight) v = 1.0f + 0.1f * normal(rng);
  std::vector<uint16_t> g_bits(n);
  for (size_t i = 0; i < n; ++i) {
    g[i] = normal(rng);
    if (g_dtype == DType::BF16) g[i] = bf16_value(g_bits[i] = bf16_bits(g[i]));
  }
  DeviceBuffer dx_in(x.data(), n * 4), dweight(weight.data(), size_t(dim) * 4);
  const bool half_g = g_dtype == DType::BF16;
  DeviceBuffer dg(half_g ? static_cast<const void*>(g_bits.data()) : g.data(),
                  n * (half_g ? 2 : 4));
  const std::vector<const void*> grad_in{dx_in.p, dweight.p, dg.p}, param_in{dx_in.p, dg.p};

  cuda::Kernel writer = grad_kernel(pair, c, true);
  REQUIRE(writer.link_bytes > 0);
  cuda::Kernel reader = param_kernel(pair, c, true);
  REQUIRE(reader.reads_link);
  DeviceBuffer link(writer.link_bytes), dx_linked(n * 4), params_linked(size_t(2 * dim) * 4);
  DeviceBuffer dx_plain(n * 4), params_plain(size_t(2 * dim) * 4);
  std::vector<float> first_params;
  for (int run = 0; run < 2; ++run) {  // the same bits twice
    REQUIRE(cudaMemset(link.p, 0xAB, writer.link_bytes) == cudaSuccess);
    launch(writer, grad_in, dx_linked.p, link.p);
    launch(reader, param_in, params_linked.p, link.p);
    std::vector<float> got = download(params_linked, size_t(2 * dim));
    if (run == 0)
      first_params = got;
    else
      CHECK(std::memcmp(got.data(), first_params.data(), got.size() * 4) == 0);
  }
  launch(grad_kernel(pair, c, false), grad_in, dx_plain.p, nullptr);
  launch(param_kernel(pair, c, false), param_in, params_plain.p, nullptr);

  std::vector<float> linked_dx = download(dx_linked, n), plain_dx = download(dx_plain, n);
  CHECK(std::memcmp(linked_dx.data(), plain_dx.data(), n * 4) == 0);
  const Reference want = reference(x, g, rows, dim);
  require_close(first_params, want);
  require_close(download(params_plain, size_t(2 * dim)), want);
}

}  // namespace

TEST_CASE("layer_norm_grad and layer_norm_param_grad agree on the link", "[cuda][nn][link]") {
  cuda::Context c = cuda::testing::plan_context();
  // GPT-2's: 16384 rows of 768, x f32, g bf16; odd f32 shapes; rows of
  // two warps, four to a block.
  struct Case {
    int64_t rows, dim;
    DType g;
    int64_t parts;  // on an H200's 132 multiprocessors
  };
  for (Case s : {Case{16384, 768, DType::BF16, 256}, Case{1000, 96, DType::F32, 125},
                 Case{999, 100, DType::F32, 125}, Case{1000, 1536, DType::BF16, 250}}) {
    INFO(s.rows << " x " << s.dim);
    Pair p(s.rows, s.dim, DType::F32, s.g, DType::F32);
    const cuda::Storage g = s.g == DType::BF16 ? cuda::Storage::BF16 : cuda::Storage::F32;
    CHECK(cuda::layer_norm_grad_link_parts(s.rows, s.dim, cuda::Storage::F32, g, c.sm_count) ==
          s.parts);
    cuda::Kernel writer = grad_kernel(p, c, true), reader = param_kernel(p, c, true);
    CHECK(writer.link_bytes == size_t(s.parts) * 2 * size_t(s.dim) * sizeof(float));
    CHECK(reader.reads_link);
    CHECK(reader.scratch_bytes == 0);
    CHECK(reader.name.find(" parts=" + std::to_string(s.parts) + " ") != std::string::npos);
    CHECK(named_linked(writer));
    CHECK(named_linked(reader));
    cuda::Kernel plain_writer = grad_kernel(p, c, false), plain_reader = param_kernel(p, c, false);
    CHECK(plain_writer.link_bytes == 0);
    CHECK(!plain_reader.reads_link);
    CHECK(!named_linked(plain_writer));
    CHECK(!named_linked(plain_reader));
  }
}

TEST_CASE("layer norm gradients the kernel cannot link stay unlinked", "[cuda][nn][link]") {
  cuda::Context c = cuda::testing::plan_context();
  struct Case {
    const char* why;
    int64_t rows, dim;
    DType x, g, compute;
  };
  for (Case s : {Case{"f64", 64, 768, DType::F64, DType::F64, DType::F64},
                 Case{"wider than a register row", 4, 10000, DType::F32, DType::F32, DType::F32},
                 Case{"too many registers", 64, 768, DType::F32, DType::F32, DType::F32},
                 Case{"no rows", 0, 768, DType::F32, DType::BF16, DType::F32}}) {
    INFO(s.why);
    Pair p(s.rows, s.dim, s.x, s.g, s.compute);
    cuda::Kernel writer = grad_kernel(p, c, true), reader = param_kernel(p, c, true);
    CHECK(writer.link_bytes == 0);
    CHECK(!reader.reads_link);
    CHECK(!named_linked(writer));
    CHECK(!named_linked(reader));
  }
}

TEST_CASE("the plan links layer_norm_param_grad to an earlier layer_norm_grad",
          "[cuda][nn][link]") {
  for (bool grad_first : {true, false}) {
    INFO((grad_first ? "layer_norm_grad first" : "layer_norm_param_grad first"));
    ir::Module module;
    ir::Function& fn = module.functions.emplace_back();
    fn.name = "grads";
    ir::Builder b(fn);
    const ir::TensorType rows = type(DType::F32, ir::Shape{{64, 96}});
    ir::NodeId x = b.input("x", rows), w = b.input("w", type(DType::F32, ir::Shape{{96}})),
               g = b.input("g", rows);
    ir::Attrs eps;
    eps.eps = 1e-5;
    auto grad = [&] { fn.outputs.push_back({"dx", b.must(Op::LayerNormGrad, {x, w, g}, eps)}); };
    auto params = [&] {
      fn.outputs.push_back({"dwb", b.must(Op::LayerNormParamGrad, {x, g}, eps)});
    };
    if (grad_first) {
      grad();
      params();
    } else {
      params();
      grad();
    }
    std::vector<std::string> kernels = cuda::testing::planned_kernels(module, "grads");
    std::string all;
    for (const std::string& k : kernels) all += k + "\n";
    INFO(all);
    int linked = 0;
    for (const std::string& k : kernels) linked += k.find(" linked") != std::string::npos;
    CHECK(linked == (grad_first ? 2 : 0));
  }
}

TEST_CASE("linked layer norm gradients: dx bit for bit, param grads to f32 accuracy",
          "[cuda][nn][link][gpu]") {
  if (std::string why = gpu_missing(); !why.empty()) SG_SKIP_TEST(why);
  check_linked_pair(16384, 768, DType::BF16, 21);
  check_linked_pair(1000, 96, DType::F32, 22);
  check_linked_pair(999, 100, DType::F32, 23);
  check_linked_pair(1000, 1536, DType::BF16, 24);
}
