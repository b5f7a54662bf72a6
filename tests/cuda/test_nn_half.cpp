// The fused neural kernels with bf16/f16 storage (devices/cuda/nn_launch.h):
// cross_entropy, cross_entropy_grad, layer_norm, rms_norm, layer_norm_grad,
// softmax and log_softmax read half operands and write half results in
// place of the casts around their f32 kernels, so each must give exactly
// the bits of its f32 kernel run on the operands converted to f32, rounded
// to the result's dtype to nearest even. layer_norm_param_grad likewise
// reads half x and g as their f32 values, and a cross_entropy_grad reading
// its forward's row statistics from the link gives the bits it computes
// unlinked. Which mixes the factories accept is checked everywhere; the
// bits need a GPU, and those tests skip without one.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "cuda/context.h"
#include "cuda/factories/kernel.h"
#include "gpu_or_skip.h"
#include "plan_context.h"

using namespace sexpgpu;
using cuda::testing::gpu_context;
using cuda::testing::gpu_missing;
using ir::DType;
using ir::Op;

namespace {

constexpr DType kHalves[] = {DType::BF16, DType::F16};

// ---------------------------------------------------------------------------
// Host values

uint16_t half_bits(float v, DType d) {
  if (d == DType::BF16) return __nv_bfloat16_raw(__float2bfloat16_rn(v)).x;
  return __half_raw(__float2half_rn(v)).x;
}

float half_value(uint16_t bits, DType d) {
  if (d == DType::BF16) {
    __nv_bfloat16_raw raw;
    raw.x = bits;
    return __bfloat162float(__nv_bfloat16(raw));
  }
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}

bool is_half(DType d) {
  return d == DType::BF16 || d == DType::F16;
}

// v rounded to what dtype d holds (exactly representable in f32).
float representable(float v, DType d) {
  return is_half(d) ? half_value(half_bits(v, d), d) : v;
}

struct Tensor {
  ir::TensorType type;
  std::vector<uint8_t> bytes;
};

// values (representable in d) stored as d: f32, bf16 or f16.
Tensor stored(const std::vector<float>& values, DType d, ir::Shape shape) {
  Tensor t{{d, std::move(shape)}, {}};
  t.bytes.resize(values.size() * ir::size_bytes(d));
  for (size_t i = 0; i < values.size(); ++i) {
    if (is_half(d)) {
      uint16_t bits = half_bits(values[i], d);
      std::memcpy(t.bytes.data() + 2 * i, &bits, 2);
    } else {
      std::memcpy(t.bytes.data() + 4 * i, &values[i], 4);
    }
  }
  return t;
}

template <class I>
Tensor integers(const std::vector<I>& values, DType d, ir::Shape shape) {
  Tensor t{{d, std::move(shape)}, std::vector<uint8_t>(values.size() * sizeof(I))};
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

std::vector<float> as_floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

// n values of stddev `scale`, each representable in d.
std::vector<float> random_values(std::mt19937& rng, size_t n, float scale, DType d) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = representable(normal(rng), d);
  return v;
}

// ---------------------------------------------------------------------------
// Running a kernel

// The kernel for op (a fused neural op, or layer_norm_param_grad); `link`
// as KernelRequest::link.
cuda::KernelResult make(Op op, const ir::Attrs& attrs, const std::vector<ir::TensorType>& inputs,
                        const ir::TensorType& output, cuda::Context& context, bool link = false) {
  cuda::KernelRequest request{op, attrs, inputs, output, context, {}, link};
  if (op == Op::LayerNormParamGrad) return cuda::make_norm_param_kernel(request);
  return cuda::make_nn_kernel(request);
}

void* device_copy(const std::vector<uint8_t>& bytes) {
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, bytes.empty() ? 1 : bytes.size()) == cudaSuccess);
  REQUIRE(cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice) == cudaSuccess);
  return p;
}

std::vector<ir::TensorType> types_of(const std::vector<Tensor>& inputs) {
  std::vector<ir::TensorType> types;
  for (const Tensor& t : inputs) types.push_back(t.type);
  return types;
}

// Kernel k run once on the GPU on `inputs`, with LaunchArgs::link `link`:
// the output's bytes.
std::vector<uint8_t> launch_once(const cuda::Kernel& k, const std::vector<Tensor>& inputs,
                                 const ir::TensorType& output, void* link = nullptr) {
  std::vector<void*> buffers;
  for (const Tensor& t : inputs) buffers.push_back(device_copy(t.bytes));
  size_t out_bytes = size_t(ir::size_bytes(output.dtype));
  for (int64_t d : output.shape.dims()) out_bytes *= size_t(d);
  void* out = device_copy(std::vector<uint8_t>(out_bytes, 0xAB));
  void* scratch = nullptr;
  if (k.scratch_bytes) REQUIRE(cudaMalloc(&scratch, k.scratch_bytes) == cudaSuccess);
  if (k.prepare) REQUIRE(k.prepare() == "");
  REQUIRE(k.launch(cuda::LaunchArgs{buffers.data(), out, scratch, nullptr, link}) == "");
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  std::vector<uint8_t> result(out_bytes);
  REQUIRE(cudaMemcpy(result.data(), out, out_bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
  for (void* p : buffers) cudaFree(p);
  cudaFree(out);
  cudaFree(scratch);
  return result;
}

// The kernel for op on `inputs`, run once on the GPU: the output's bytes.
std::vector<uint8_t> run(cuda::Context& context, Op op, const ir::Attrs& attrs,
                         const std::vector<Tensor>& inputs, const ir::TensorType& output) {
  cuda::KernelResult k = make(op, attrs, types_of(inputs), output, context);
  INFO("kernel for " << output.to_string());
  REQUIRE(k.error() == "");
  return launch_once(*k, inputs, output);
}

// got (stored as d) holds exactly want (f32) rounded to d; NaN matches NaN.
void require_rounded(const std::vector<uint8_t>& got, DType d, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size() * ir::size_bytes(d));
  size_t mismatches = 0, first = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    bool same;
    if (is_half(d)) {
      uint16_t bits;
      std::memcpy(&bits, got.data() + 2 * i, 2);
      same = std::isnan(want[i]) ? std::isnan(half_value(bits, d)) : bits == half_bits(want[i], d);
    } else {
      float v;
      std::memcpy(&v, got.data() + 4 * i, 4);
      same = std::isnan(want[i]) ? std::isnan(v) : std::memcmp(&v, &want[i], 4) == 0;
    }
    if (!same && mismatches++ == 0) first = i;
  }
  INFO(mismatches << " of " << want.size() << " differ, first at " << first << " (f32 kernel "
                  << want[first] << ")");
  CHECK(mismatches == 0);
}

// got holds exactly want's bytes.
void require_same_bytes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  REQUIRE(got.size() == want.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < want.size(); ++i) mismatches += got[i] != want[i];
  INFO(mismatches << " of " << want.size() << " bytes differ");
  CHECK(mismatches == 0);
}

// The (x, g) storage mixes of layer_norm_param_grad with half h.
std::vector<std::pair<DType, DType>> half_mixes(DType h) {
  return {{h, h}, {h, DType::F32}, {DType::F32, h}};
}

std::string label(DType a) {
  return std::string(ir::ir_name(a));
}

}  // namespace

TEST_CASE("fused neural kernels accept half storage mixes, and only those", "[cuda][nn]") {
  cuda::Context c = cuda::testing::plan_context();
  ir::Shape x{{4, 768}}, row{{768}}, rows{{4}}, scalar;
  auto t = [](DType d, ir::Shape s) { return ir::TensorType{d, std::move(s)}; };
  ir::Attrs attrs;
  for (DType h : kHalves) {
    CHECK(make(Op::CrossEntropy, attrs, {t(h, x), t(DType::I64, rows)}, t(DType::F32, scalar), c));
    CHECK(!make(Op::CrossEntropy, attrs, {t(h, x), t(DType::I64, rows)}, t(h, scalar), c));
    CHECK(make(Op::CrossEntropyGrad, attrs, {t(h, x), t(DType::I32, rows), t(DType::F32, scalar)},
               t(h, x), c));
    CHECK(make(Op::CrossEntropyGrad, attrs, {t(h, x), t(DType::I32, rows), t(DType::F32, scalar)},
               t(DType::F32, x), c));
    CHECK(!make(Op::CrossEntropyGrad, attrs, {t(h, x), t(DType::I32, rows), t(h, scalar)}, t(h, x),
                c));
    CHECK(
        make(Op::LayerNorm, attrs, {t(h, x), t(DType::F32, row), t(DType::F32, row)}, t(h, x), c));
    CHECK(!make(Op::LayerNorm, attrs, {t(h, x), t(h, row), t(DType::F32, row)}, t(h, x), c));
    CHECK(make(Op::LayerNormGrad, attrs, {t(DType::F32, x), t(DType::F32, row), t(h, x)}, t(h, x),
               c));
    CHECK(make(Op::Softmax, attrs, {t(h, x)}, t(DType::F32, x), c));
    CHECK(!make(Op::LayerNorm, attrs, {t(h, x), t(DType::F32, row), t(DType::F32, row)},
                t(DType::F64, x), c));
    ir::Shape wide{{2, 10000}};
    CHECK(!make(Op::Softmax, attrs, {t(h, wide)}, t(h, wide), c));
  }
  CHECK(!make(Op::LayerNormGrad, attrs, {t(DType::BF16, x), t(DType::F32, row), t(DType::F16, x)},
              t(DType::F32, x), c));
  CHECK(!make(Op::CrossEntropy, attrs, {t(DType::F64, x), t(DType::I64, rows)},
              t(DType::F32, scalar), c));
  ir::Shape params{{2, 768}};
  for (DType h : kHalves)
    for (auto [x_dtype, g_dtype] : half_mixes(h))
      CHECK(make(Op::LayerNormParamGrad, attrs, {t(x_dtype, x), t(g_dtype, x)},
                 t(DType::F32, params), c));
  CHECK(!make(Op::LayerNormParamGrad, attrs, {t(DType::BF16, x), t(DType::F16, x)},
              t(DType::F32, params), c));
  CHECK(!make(Op::LayerNormParamGrad, attrs, {t(DType::BF16, x), t(DType::F64, x)},
              t(DType::F64, params), c));
}

TEST_CASE("cross_entropy writes the link its gradient reads only when asked", "[cuda][nn]") {
  cuda::Context c = cuda::testing::plan_context();
  ir::Shape x{{6, 1000}}, rows{{6}}, scalar;
  auto t = [](DType d, ir::Shape s) { return ir::TensorType{d, std::move(s)}; };
  ir::Attrs attrs;
  for (bool link : {false, true}) {
    cuda::KernelResult f = make(Op::CrossEntropy, attrs, {t(DType::BF16, x), t(DType::I64, rows)},
                                t(DType::F32, scalar), c, link);
    REQUIRE(f);
    CHECK(f->link_bytes == (link ? 6u * 2 * sizeof(float) : 0u));
    cuda::KernelResult g = make(Op::CrossEntropyGrad, attrs,
                                {t(DType::BF16, x), t(DType::I64, rows), t(DType::F32, scalar)},
                                t(DType::BF16, x), c, link);
    REQUIRE(g);
    CHECK(g->reads_link == link);
  }
}

TEST_CASE("cross_entropy on half logits gives its f32 kernel's bits", "[cuda][nn][gpu]") {
  if (std::string why = gpu_missing(); !why.empty()) SG_SKIP_TEST(why);
  cuda::Context c = gpu_context();
  std::mt19937 rng(1234);
  const int64_t rows = 48;
  for (DType h : kHalves)
    for (int64_t classes : {50304, 1000, 37}) {
      std::vector<float> logits = random_values(rng, size_t(rows * classes), 3.0f, h);
      for (int64_t r = 1; r < rows; r += 5)  // large logits
        for (int64_t k = 0; k < classes; ++k)
          logits[size_t(r * classes + k)] =
              representable(logits[size_t(r * classes + k)] * 30 + 80, h);
      std::vector<int64_t> targets(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r)
        targets[size_t(r)] = r % 7 == 3 ? -100 : (r * 7919) % classes;
      ir::Shape shape{{rows, classes}};
      Tensor t = integers(targets, DType::I64, ir::Shape{{rows}});
      for (std::string reduction : {"none", "mean", "sum"}) {
        {
          INFO(label(h) << " classes=" << classes << " " << reduction);
          ir::Attrs attrs;
          attrs.ignore_index = -100;
          attrs.reduction = reduction;
          ir::TensorType out{DType::F32, reduction == "none" ? ir::Shape{{rows}} : ir::Shape()};
          std::vector<uint8_t> mixed =
              run(c, Op::CrossEntropy, attrs, {stored(logits, h, shape), t}, out);
          std::vector<uint8_t> f32 =
              run(c, Op::CrossEntropy, attrs, {stored(logits, DType::F32, shape), t}, out);
          require_rounded(mixed, DType::F32, as_floats(f32));
        }
      }
    }
}

TEST_CASE("cross_entropy_grad on half logits gives its f32 kernel's bits", "[cuda][nn][gpu]") {
  if (std::string why = gpu_missing(); !why.empty()) SG_SKIP_TEST(why);
  cuda::Context c = gpu_context();
  std::mt19937 rng(99);
  const int64_t rows = 40;
  for (DType h : kHalves)
    for (int64_t classes : {50304, 1000, 37}) {
      std::vector<float> logits = random_values(rng, size_t(rows * classes), 3.0f, h);
      for (int64_t r = 2; r < rows; r += 6)
        for (int64_t k = 0; k < classes; ++k)
          logits[size_t(r * classes + k)] =
              representable(logits[size_t(r * classes + k)] * 30 + 80, h);
      std::vector<int32_t> targets(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r)
        targets[size_t(r)] = r % 5 == 4 ? -1 : int32_t((r * 104729) % classes);
      ir::Shape shape{{rows, classes}};
      Tensor t = integers(targets, DType::I32, ir::Shape{{rows}});
      for (std::string reduction : {"none", "mean"})
        for (DType out_dtype : {DType::F32, h}) {
          {
            INFO(label(h) << "->" << label(out_dtype) << " classes=" << classes << " "
                          << reduction);
            ir::Attrs attrs;
            attrs.ignore_index = -1;
            attrs.reduction = reduction;
            ir::Shape g_shape = reduction == "none" ? ir::Shape{{rows}} : ir::Shape();
            Tensor g =
                stored(random_values(rng, size_t(reduction == "none" ? rows : 1), 1.0f, DType::F32),
                       DType::F32, g_shape);
            std::vector<uint8_t> mixed = run(c, Op::CrossEntropyGrad, attrs,
                                             {stored(logits, h, shape), t, g}, {out_dtype, shape});
            std::vector<uint8_t> f32 =
                run(c, Op::CrossEntropyGrad, attrs, {stored(logits, DType::F32, shape), t, g},
                    {DType::F32, shape});
            require_rounded(mixed, out_dtype, as_floats(f32));
          }
        }
    }
}

TEST_CASE("layer_norm and rms_norm with half storage give their f32 kernel's bits",
          "[cuda][nn][gpu]") {
  if (std::string why = gpu_missing(); !why.empty()) SG_SKIP_TEST(why);
  cuda::Context c = gpu_context();
  std::mt19937 rng(7);
  const int64_t rows = 40;
  for (DType h : kHalves)
    for (int64_t dim : {768, 100, 4096})
      for (Op op : {Op::LayerNorm, Op::RmsNorm})
        for (DType x_dtype : {DType::F32, h})
          for (DType out_dtype : {DType::F32, h}) {
            if (x_dtype == DType::F32 && out_dtype == DType::F32) continue;
            {
              INFO(ir::info(op).ir_name << " " << label(x_dtype) << "->" << label(out_dtype)
                                        << " dim=" << dim);
              ir::Shape shape{{rows, dim}}, param{{dim}};
              std::vector<float> x = random_values(rng, size_t(rows * dim), 2.0f, h);
              for (int64_t k = 0; k < dim; ++k)
                x[size_t(3 * dim + k)] = representable(x[size_t(3 * dim + k)] + 500, h);
              Tensor w =
                  stored(random_values(rng, size_t(dim), 1.0f, DType::F32), DType::F32, param);
              Tensor b =
                  stored(random_values(rng, size_t(dim), 1.0f, DType::F32), DType::F32, param);
              std::vector<Tensor> mixed_in{stored(x, x_dtype, shape), w},
                  f32_in{stored(x, DType::F32, shape), w};
              if (op == Op::LayerNorm) {
                mixed_in.push_back(b);
                f32_in.push_back(b);
              }
              ir::Attrs attrs;
              std::vector<uint8_t> mixed = run(c, op, attrs, mixed_in, {out_dtype, shape});
              std::vector<uint8_t> f32 = run(c, op, attrs, f32_in, {DType::F32, shape});
              require_rounded(mixed, out_dtype, as_floats(f32));
            }
          }
}

TEST_CASE("layer_norm_grad with half storage gives its f32 kernel's bits", "[cuda][nn][gpu]") {
  if (std::string why = gpu_missing(); !why.empty()) SG_SKIP_TEST(why);
  cuda::Context c = gpu_context();
  std::mt19937 rng(11);
  const int64_t rows = 40;
  for (DType h : kHalves)
    for (int64_t dim : {768, 100})
      for (DType x_dtype : {DType::F32, h})
        for (DType g_dtype : {DType::F32, h})
          for (DType out_dtype : {DType::F32, h}) {
            if (!is_half(x_dtype) && !is_half(g_dtype) && !is_half(out_dtype)) continue;
            {
              INFO(label(x_dtype) << "," << label(g_dtype) << "->" << label(out_dtype)
                                  << " dim=" << dim);
              ir::Shape shape{{rows, dim}};
              std::vector<float> x = random_values(rng, size_t(rows * dim), 2.0f, h);
              std::vector<float> g = random_values(rng, size_t(rows * dim), 0.5f, h);
              Tensor w = stored(random_values(rng, size_t(dim), 1.0f, DType::F32), DType::F32,
                                ir::Shape{{dim}});
              ir::Attrs attrs;
              std::vector<uint8_t> mixed = run(
                  c, Op::LayerNormGrad, attrs,
                  {stored(x, x_dtype, shape), w, stored(g, g_dtype, shape)}, {out_dtype, shape});
              std::vector<uint8_t> f32 =
                  run(c, Op::LayerNormGrad, attrs,
                      {stored(x, DType::F32, shape), w, stored(g, DType::F32, shape)},
                      {DType::F32, shape});
              require_rounded(mixed, out_dtype, as_floats(f32));
            }
          }
}

TEST_CASE("softmax and log_softmax with half storage give their f32 kernel's bits",
          "[cuda][nn][gpu]") {
  if (std::string why = gpu_missing(); !why.empty()) SG_SKIP_TEST(why);
  cuda::Context c = gpu_context();
  std::mt19937 rng(5);
  const int64_t rows = 33;
  for (DType h : kHalves)
    for (int64_t count : {768, 50, 8192})
      for (Op op : {Op::Softmax, Op::LogSoftmax})
        for (DType in_dtype : {DType::F32, h})
          for (DType out_dtype : {DType::F32, h}) {
            if (in_dtype == DType::F32 && out_dtype == DType::F32) continue;
            {
              INFO(ir::info(op).ir_name << " " << label(in_dtype) << "->" << label(out_dtype)
                                        << " count=" << count);
              ir::Shape shape{{rows, count}};
              std::vector<float> x = random_values(rng, size_t(rows * count), 4.0f, h);
              for (int64_t k = 0; k < count; ++k)
                x[size_t(2 * count + k)] = representable(x[size_t(2 * count + k)] * 20 + 60, h);
              ir::Attrs attrs;
              std::vector<uint8_t> mixed =
                  run(c, op, attrs, {stored(x, in_dtype, shape)}, {out_dtype, shape});
              std::vector<uint8_t> f32 =
                  run(c, op, attrs, {stored(x, DType::F32, shape)}, {DType::F32, shape});
              require_rounded(mixed, out_dtype, as_floats(f32));
            }
          }
}

TEST_CASE("cross_entropy_grad linked to its forward gives its unlinked bits", "[cuda][nn][gpu]") {
  if (std::string why = gpu_missing(); !why.empty()) SG_SKIP_TEST(why);
  cuda::Context c = gpu_context();
  std::mt19937 rng(4321);
  const int64_t rows = 30;
  const float inf = INFINITY;
  for (DType d : {DType::F32, DType::BF16})
    for (int64_t classes : {50304, 1000, 37}) {
      std::vector<float> logits = random_values(rng, size_t(rows * classes), 3.0f, d);
      auto row = [&](int64_t r) { return logits.begin() + r * classes; };
      for (int64_t r = 1; r < rows; r += 7)  // large logits
        for (auto v = row(r); v != row(r + 1); ++v) *v = representable(*v * 30 + 80, d);
      std::fill(row(2), row(3), -inf);  // no finite maximum
      row(4)[classes / 2] = NAN;
      row(5)[classes - 1] = inf;
      row(6)[0] = -inf;
      std::vector<int64_t> targets(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r)
        targets[size_t(r)] = r % 4 == 3 ? -100 : (r * 7919) % classes;
      ir::Shape shape{{rows, classes}};
      std::vector<Tensor> in{stored(logits, d, shape),
                             integers(targets, DType::I64, ir::Shape{{rows}})};
      std::vector<ir::TensorType> types = types_of(in);
      for (std::string reduction : {"none", "mean", "sum"}) {
        INFO(label(d) << " classes=" << classes << " " << reduction);
        ir::Attrs attrs;
        attrs.ignore_index = -100;
        attrs.reduction = reduction;
        ir::Shape per_row = reduction == "none" ? ir::Shape{{rows}} : ir::Shape();
        ir::TensorType loss{DType::F32, per_row};
        cuda::KernelResult writer = make(Op::CrossEntropy, attrs, types, loss, c, true);
        REQUIRE(writer);
        REQUIRE(writer->link_bytes > 0);
        void* link = nullptr;
        REQUIRE(cudaMalloc(&link, writer->link_bytes) == cudaSuccess);
        std::vector<uint8_t> linked_loss = launch_once(*writer, in, loss, link);
        require_same_bytes(linked_loss, run(c, Op::CrossEntropy, attrs, in, loss));

        std::vector<Tensor> grad_in = in;
        grad_in.push_back(
            stored(random_values(rng, size_t(reduction == "none" ? rows : 1), 1.0f, DType::F32),
                   DType::F32, per_row));
        ir::TensorType out{d, shape};
        cuda::KernelResult reader =
            make(Op::CrossEntropyGrad, attrs, types_of(grad_in), out, c, true);
        REQUIRE(reader);
        REQUIRE(reader->reads_link);
        std::vector<uint8_t> linked = launch_once(*reader, grad_in, out, link);
        cudaFree(link);
        require_same_bytes(linked, run(c, Op::CrossEntropyGrad, attrs, grad_in, out));
      }
    }
}

TEST_CASE("layer_norm_param_grad on half x and g gives its f32 kernel's bits", "[cuda][nn][gpu]") {
  if (std::string why = gpu_missing(); !why.empty()) SG_SKIP_TEST(why);
  cuda::Context c = gpu_context();
  std::mt19937 rng(17);
  for (DType h : kHalves)
    for (auto [rows, dim] :
         std::vector<std::pair<int64_t, int64_t>>{{300, 768}, {40, 100}, {50, 2000}})
      for (auto [x_dtype, g_dtype] : half_mixes(h)) {
        INFO(label(x_dtype) << "," << label(g_dtype) << " rows=" << rows << " dim=" << dim);
        ir::Shape shape{{rows, dim}};
        std::vector<float> x = random_values(rng, size_t(rows * dim), 2.0f, h);
        std::vector<float> g = random_values(rng, size_t(rows * dim), 0.5f, h);
        for (int64_t k = 0; k < dim; ++k)
          x[size_t(dim + k)] = representable(x[size_t(dim + k)] + 300, h);
        ir::Attrs attrs;
        ir::TensorType out{DType::F32, ir::Shape{{2, dim}}};
        std::vector<uint8_t> mixed =
            run(c, Op::LayerNormParamGrad, attrs,
                {stored(x, x_dtype, shape), stored(g, g_dtype, shape)}, out);
        std::vector<uint8_t> f32 =
            run(c, Op::LayerNormParamGrad, attrs,
                {stored(x, DType::F32, shape), stored(g, DType::F32, shape)}, out);
        require_same_bytes(mixed, f32);
      }
}
