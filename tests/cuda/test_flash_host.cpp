// The tensor-core attention bodies of the CUDA device (flash_tensor.h,
// flash_tensor_grad.h) run on the host through flash_host_emulation.h,
// against an f64 reference of ops.def's attention and attention_grad, for
// small shapes that reach every edge: partial tiles, causality with Tq !=
// Tk, rows that see no key, bool and additive masks, head dimensions that
// are not a multiple of 8, f16. Also: the forward's log-sum-exp equals the
// backward's own bit for bit, and the backward given it gives the same bits.
// No GPU needed; the tilings are the launchers' (flash_forward.cu,
// flash_backward.cu). Compile with -Wno-unknown-pragmas: the kernels'
// #pragma unroll means nothing to the host compiler.
#include "cuda/flash_host_emulation.h"
// clang-format off
#include "cuda/kernels/attention_launch.h"
#include "cuda/kernels/flash_tensor.h"
#include "cuda/kernels/flash_tensor_grad.h"
// clang-format on

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>

#include "catch.hpp"

using namespace sexpgpu::cuda;
using flash::Bf16;
using flash::F16;

namespace {

template <class Half>
struct Data {
  std::vector<uint16_t> bits;
  std::vector<double> values;  // the rounded values
};

template <class Half>
Data<Half> random_data(size_t n, std::mt19937& rng, double scale) {
  std::normal_distribution<double> normal(0, scale);
  Data<Half> d;
  for (size_t i = 0; i < n; ++i) {
    d.bits.push_back(flash::to_bits<Half>(float(normal(rng))));
    d.values.push_back(flash::to_float<Half>(d.bits.back()));
  }
  return d;
}

struct Case {
  std::string name;
  int64_t b, h, tq, tk, d;
  bool causal;
  AttentionMask mask;  // broadcast over heads: [B,1,Tq,Tk]
  bool f16 = false;
  bool grad = true;
};

// out = softmax(q k^T scale + mask) v, and the gradients, in f64.
struct Reference {
  std::vector<double> out, lse2, dq, dk, dv;
};

Reference reference(const Case& c, const std::vector<double>& q, const std::vector<double>& k,
                    const std::vector<double>& v, const std::vector<double>& g,
                    const std::vector<uint8_t>& bmask, const std::vector<double>& fmask,
                    double scale) {
  const int64_t bh_n = c.b * c.h, tq = c.tq, tk = c.tk, d = c.d;
  Reference r;
  r.out.assign(bh_n * tq * d, 0);
  r.lse2.assign(bh_n * tq, -INFINITY);
  r.dq.assign(bh_n * tq * d, 0);
  r.dk.assign(bh_n * tk * d, 0);
  r.dv.assign(bh_n * tk * d, 0);
  for (int64_t bh = 0; bh < bh_n; ++bh) {
    const int64_t b = bh / c.h;
    for (int64_t i = 0; i < tq; ++i) {
      std::vector<double> s(tk, -INFINITY), p(tk, 0), dp(tk, 0);
      double mx = -INFINITY;
      for (int64_t j = 0; j < tk; ++j) {
        if (c.causal && j > i + tk - tq) continue;
        const int64_t m = (b * tq + i) * tk + j;
        if (c.mask == AttentionMask::Bool && !bmask[m]) continue;
        double dot = 0;
        for (int64_t x = 0; x < d; ++x) dot += q[(bh * tq + i) * d + x] * k[(bh * tk + j) * d + x];
        s[j] = dot * scale + (c.mask == AttentionMask::Additive ? fmask[m] : 0.0);
        mx = std::max(mx, s[j]);
      }
      if (mx == -INFINITY) continue;  // sees no key: zeros
      double sum = 0;
      for (int64_t j = 0; j < tk; ++j) sum += p[j] = s[j] == -INFINITY ? 0 : std::exp(s[j] - mx);
      for (int64_t j = 0; j < tk; ++j) p[j] /= sum;
      r.lse2[bh * tq + i] = (mx + std::log(sum)) / std::log(2.0);
      for (int64_t x = 0; x < d; ++x) {
        double o = 0;
        for (int64_t j = 0; j < tk; ++j) o += p[j] * v[(bh * tk + j) * d + x];
        r.out[(bh * tq + i) * d + x] = o;
      }
      double rowdot = 0;
      for (int64_t j = 0; j < tk; ++j) {
        for (int64_t x = 0; x < d; ++x)
          dp[j] += g[(bh * tq + i) * d + x] * v[(bh * tk + j) * d + x];
        rowdot += p[j] * dp[j];
      }
      for (int64_t j = 0; j < tk; ++j) {
        const double ds = p[j] * (dp[j] - rowdot);
        for (int64_t x = 0; x < d; ++x) {
          r.dq[(bh * tq + i) * d + x] += ds * k[(bh * tk + j) * d + x] * scale;
          r.dk[(bh * tk + j) * d + x] += ds * q[(bh * tq + i) * d + x] * scale;
          r.dv[(bh * tk + j) * d + x] += p[j] * g[(bh * tq + i) * d + x];
        }
      }
    }
  }
  return r;
}

// The largest |got - want| over the largest |want| (bf16: ~4e-3 a rounding).
template <class Half>
double relative_error(const uint16_t* got, const std::vector<double>& want, size_t offset,
                      size_t n) {
  double err = 0, mag = 1e-30;
  for (size_t i = 0; i < n; ++i) {
    const double x = flash::to_float<Half>(got[i]);
    if (!std::isfinite(x)) return INFINITY;
    err = std::max(err, std::fabs(x - want[offset + i]));
    mag = std::max(mag, std::fabs(want[offset + i]));
  }
  return err / mag;
}

void check(const std::string& what, double err, double limit) {
  INFO(what << ": " << err << " (at most " << limit << ")");
  CHECK(err <= limit);
}

int64_t tiles(int64_t n, int64_t per) {
  return (n + per - 1) / per;
}

// A shared-memory buffer with a guard after it that must stay untouched.
struct Shared {
  std::vector<unsigned char> bytes;
  size_t size;
  explicit Shared(size_t n) : bytes(n + 4096, 0xab), size(n) {}
  unsigned char* data() {
    return reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(bytes.data()) + 127) /
                                            128 * 128);
  }
  bool guard_intact() {
    unsigned char* end = data() + size;
    for (unsigned char* p = end; p < bytes.data() + bytes.size(); ++p)
      if (*p != 0xab) return false;
    return true;
  }
};

template <class Half, int kD>
void run_grad(const Case& c, const AttentionParams& p, const Data<Half>& q, const Data<Half>& k,
              const Data<Half>& v, const Data<Half>& g, const Reference& ref,
              std::vector<float>& lse, const std::vector<uint16_t>& out) {
  using Fwd = flash::ForwardTiling<kD>;
  const int64_t bh_n = c.b * c.h;
  (void)q, (void)k, (void)v;

  // attention_grad: o is the reference's output rounded.
  std::vector<uint16_t> o_bits(out.size());
  for (size_t i = 0; i < o_bits.size(); ++i) o_bits[i] = flash::to_bits<Half>(float(ref.out[i]));
  using Keys = typename flash::GradTilingFor<kD>::Keys;
  using Queries = typename flash::GradTilingFor<kD>::Queries;
  auto backward = [&](bool with_lse) {
    AttentionGradParams gp;
    gp.attention = p;
    gp.attention.out = nullptr;
    gp.attention.lse = nullptr;
    gp.o = o_bits.data();
    gp.g = g.bits.data();
    std::vector<uint16_t> grads(bh_n * (c.tq + 2 * c.tk) * c.d, 0xffff);
    std::vector<float> stats(2 * bh_n * c.tq, NAN);
    gp.out = grads.data();
    gp.row_stats = stats.data();
    gp.lse = with_lse ? lse.data() : nullptr;
    const AttentionGradParams resolved = with_dense_strides(gp);  // as the launcher does
    if (!with_lse) {
      Shared shared(sizeof(uint16_t) * Fwd::kStride * (Fwd::kRows + 2 * Fwd::kKeysPerLoad));
      host::run_grid({unsigned(bh_n), unsigned(tiles(c.tq, Fwd::kRows)), 1}, flash::kThreads,
                     [&] { flash::row_stats_block<Half, Fwd>(resolved, shared.data()); });
      if (!shared.guard_intact()) check("row statistics shared memory overrun", 1, 0);
      bool same = true;
      for (int64_t i = 0; i < bh_n * c.tq; ++i) same &= float_bits(stats[i]) == float_bits(lse[i]);
      check("row statistics' lse == forward's", same ? 0 : 1, 0);
    }
    {  // dq first: it leaves rowsum(g o) for dk and dv
      Shared shared(sizeof(uint16_t) * Queries::kStride *
                    (2 * Queries::kRows + 4 * Queries::kKeysPerLoad));
      host::run_grid({unsigned(bh_n), unsigned(tiles(c.tq, Queries::kRows)), 1}, flash::kThreads,
                     [&] { flash::dq_block<Half, Queries>(resolved, shared.data()); });
      if (!shared.guard_intact()) check("dq shared memory overrun", 1, 0);
    }
    if (c.tk > 0) {
      Shared shared(sizeof(uint16_t) *
                    (2 * size_t(Keys::kKeys) * Keys::kStride + 2 * size_t(Keys::kQueryBuffer)));
      host::run_grid({unsigned(bh_n), unsigned(tiles(c.tk, Keys::kKeys)), 1}, flash::kThreads,
                     [&] { flash::dkdv_block<Half, Keys>(resolved, shared.data()); });
      if (!shared.guard_intact()) check("dkdv shared memory overrun", 1, 0);
    }
    return grads;
  };
  const std::vector<uint16_t> grads = backward(true);
  const int64_t per_bh = (c.tq + 2 * c.tk) * c.d;
  double eq = 0, ek = 0, ev = 0;
  for (int64_t bh = 0; bh < bh_n; ++bh) {
    const uint16_t* base = grads.data() + bh * per_bh;
    eq = std::max(eq, relative_error<Half>(base, ref.dq, bh * c.tq * c.d, c.tq * c.d));
    ek = std::max(ek, relative_error<Half>(base + c.tq * c.d, ref.dk, bh * c.tk * c.d, c.tk * c.d));
    ev = std::max(
        ev, relative_error<Half>(base + (c.tq + c.tk) * c.d, ref.dv, bh * c.tk * c.d, c.tk * c.d));
  }
  check("dq", eq, 3e-2);
  check("dk", ek, 3e-2);
  check("dv", ev, 3e-2);
  const std::vector<uint16_t> again = backward(false);
  check("gradients without lse == with", again == grads ? 0 : 1, 0);
}

template <class Half, int kD>
void run_case(const Case& c) {
  std::mt19937 rng(1234 + c.tq * 7 + c.tk * 13 + c.d);
  const int64_t bh_n = c.b * c.h;
  auto q = random_data<Half>(bh_n * c.tq * c.d, rng, 1.0);
  auto k = random_data<Half>(bh_n * c.tk * c.d, rng, 1.0);
  auto v = random_data<Half>(bh_n * c.tk * c.d, rng, 1.0);
  auto g = random_data<Half>(bh_n * c.tq * c.d, rng, 1.0);
  std::vector<uint8_t> bmask(c.b * c.tq * c.tk, 1);
  std::vector<double> fmask(c.b * c.tq * c.tk, 0);
  std::vector<uint16_t> fmask_bits(c.b * c.tq * c.tk, 0);
  std::bernoulli_distribution keep(0.7);
  std::normal_distribution<double> normal(0, 1);
  for (size_t i = 0; i < bmask.size(); ++i) {
    bmask[i] = keep(rng);
    fmask_bits[i] = flash::to_bits<Half>(keep(rng) ? float(normal(rng)) : -INFINITY);
    fmask[i] = flash::to_float<Half>(fmask_bits[i]);
  }
  // Some fully masked rows.
  if (c.mask == AttentionMask::Bool)
    for (int64_t j = 0; j < c.tk; ++j) bmask[(0 * c.tq + c.tq / 2) * c.tk + j] = 0;
  const double scale = 1.0 / std::sqrt(double(c.d));
  const Reference ref = reference(c, q.values, k.values, v.values, g.values, bmask, fmask, scale);

  AttentionParams p;
  p.q = q.bits.data();
  p.k = k.bits.data();
  p.v = v.bits.data();
  p.batch = c.b;
  p.heads = c.h;
  p.tq = c.tq;
  p.tk = c.tk;
  p.d = c.d;
  p.scale = scale;
  p.causal = c.causal;
  p.mask_kind = c.mask;
  p.dtype = c.f16 ? AttentionDType::F16 : AttentionDType::BF16;
  if (c.mask != AttentionMask::None) {
    p.mask = c.mask == AttentionMask::Bool ? static_cast<const void*>(bmask.data())
                                           : static_cast<const void*>(fmask_bits.data());
    p.mask_strides[0] = c.tq * c.tk;
    p.mask_strides[1] = 0;
    p.mask_strides[2] = c.tk;
    p.mask_strides[3] = 1;
  }

  // Forward, with the log-sum-exp.
  using Fwd = flash::ForwardTiling<kD>;
  std::vector<uint16_t> out(bh_n * c.tq * c.d, 0xffff);
  std::vector<float> lse(bh_n * c.tq, NAN);
  p.out = out.data();
  p.lse = lse.data();
  {
    const AttentionParams resolved = with_dense_strides(p);  // as the launcher does
    Shared shared(sizeof(uint16_t) * Fwd::kStride * (Fwd::kRows + 4 * Fwd::kKeysPerLoad));
    host::run_grid({unsigned(bh_n), unsigned(tiles(c.tq, Fwd::kRows)), 1}, flash::kThreads,
                   [&] { flash::forward_block<Half, Fwd>(resolved, shared.data()); });
    if (!shared.guard_intact()) check("forward shared memory overrun", 1, 0);
  }
  check("out", relative_error<Half>(out.data(), ref.out, 0, out.size()), 1.5e-2);
  double lse_err = 0;
  for (size_t i = 0; i < lse.size(); ++i) {
    if (std::isinf(ref.lse2[i]) || std::isinf(lse[i]))
      lse_err = std::max(lse_err, ref.lse2[i] == double(lse[i]) ? 0.0 : INFINITY);
    else
      lse_err = std::max(lse_err, std::fabs(lse[i] - ref.lse2[i]));
  }
  check("lse (absolute, base 2)", lse_err, 2e-2);
  if constexpr (kD <= 128)
    if (c.grad) run_grad<Half, kD>(c, p, q, k, v, g, ref, lse, out);
}

template <class Half>
void run(const Case& c) {
  if (c.d <= 32) return run_case<Half, 32>(c);
  if (c.d <= 64) return run_case<Half, 64>(c);
  if (c.d <= 128) return run_case<Half, 128>(c);
  Case forward_only = c;
  forward_only.grad = false;
  run_case<Half, 256>(forward_only);
}

}  // namespace

TEST_CASE("tensor-core flash attention on the host emulation", "[cuda][attention]") {
  const Case cases[] = {
      {"square causal", 1, 2, 150, 150, 64, true, AttentionMask::None},
      {"more keys, causal", 1, 1, 50, 200, 40, true, AttentionMask::None},
      {"more queries, causal (rows see no key)", 2, 1, 140, 50, 32, true, AttentionMask::None},
      {"bool mask", 2, 2, 33, 70, 24, false, AttentionMask::Bool},
      {"bool mask, causal, odd d", 1, 2, 70, 70, 20, true, AttentionMask::Bool},
      {"float mask", 1, 2, 40, 90, 64, false, AttentionMask::Additive, false, false},
      {"d 100", 1, 1, 70, 100, 100, true, AttentionMask::None},
      {"f16", 1, 1, 65, 65, 64, true, AttentionMask::None, true},
      {"no keys", 1, 1, 20, 0, 64, false, AttentionMask::None},
      {"d 200", 1, 1, 40, 75, 200, true, AttentionMask::None},
  };
  for (const Case& c : cases) {
    INFO(c.name << ": B=" << c.b << " H=" << c.h << " Tq=" << c.tq << " Tk=" << c.tk
                << " D=" << c.d);
    c.f16 ? run<F16>(c) : run<Bf16>(c);
  }
}

// The forward's block order (grouped_query_tile) must give every (batch*head,
// query tile) to exactly one block, also when the keys and values of all
// batch*heads outgrow a group (sizes too large to run here, so only the map).
TEST_CASE("tensor-core flash attention block order covers every tile once", "[cuda][attention]") {
  struct Grid {
    unsigned heads, tiles;
    int64_t tk, d;
  };
  const Grid grids[] = {{192, 8, 1024, 64},   {7, 3, 3 << 20, 64}, {5, 4, 1 << 20, 32},
                        {33, 2, 1 << 14, 64}, {4, 5, 0, 64},       {1, 1, 50, 20},
                        {300, 16, 4096, 128}, {6, 1, 1 << 22, 256}};
  for (const Grid& g : grids) {
    INFO("heads " << g.heads << " tiles " << g.tiles << " tk " << g.tk << " d " << g.d);
    AttentionParams p;
    p.tk = g.tk;
    p.d = g.d;
    gridDim = {g.heads, g.tiles, 1};
    std::vector<int> seen(size_t(g.heads) * g.tiles, 0);
    bool in_range = true;
    for (unsigned y = 0; y < g.tiles; ++y)
      for (unsigned x = 0; x < g.heads; ++x) {
        blockIdx = {x, y, 0};
        const flash::BlockTile t = flash::grouped_query_tile<128>(p);
        const bool ok =
            t.bh >= 0 && t.bh < g.heads && t.q0 >= 0 && t.q0 % 128 == 0 && t.q0 / 128 < g.tiles;
        in_range &= ok;
        if (ok) ++seen[size_t(t.bh) * g.tiles + size_t(t.q0 / 128)];
      }
    CHECK(in_range);
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  }
}

namespace {

// [B,H,T,D] dense bits to a layout of HeadStrides (inside a buffer of n).
std::vector<uint16_t> scatter(const std::vector<uint16_t>& dense, const HeadStrides& s,
                              int64_t offset, size_t n, int64_t b_n, int64_t h_n, int64_t t_n,
                              int64_t d) {
  std::vector<uint16_t> out(n, 0x7fc1);  // NaN bits: a read outside the view shows
  for (int64_t b = 0; b < b_n; ++b)
    for (int64_t h = 0; h < h_n; ++h)
      for (int64_t t = 0; t < t_n; ++t)
        for (int64_t c = 0; c < d; ++c)
          out[size_t(offset + b * s.batch + h * s.head + t * s.row + c)] =
              dense[size_t(((b * h_n + h) * t_n + t) * d + c)];
  return out;
}

template <class Half, int kD>
struct HostKernels {
  using Fwd = flash::ForwardTiling<kD>;
  using Keys = typename flash::GradTilingFor<kD>::Keys;
  using Queries = typename flash::GradTilingFor<kD>::Queries;

  static void forward(const AttentionParams& p) {
    const AttentionParams resolved = with_dense_strides(p);
    Shared shared(sizeof(uint16_t) * Fwd::kStride * (Fwd::kRows + 4 * Fwd::kKeysPerLoad));
    host::run_grid({unsigned(p.batch * p.heads), unsigned(tiles(p.tq, Fwd::kRows)), 1},
                   flash::kThreads,
                   [&] { flash::forward_block<Half, Fwd>(resolved, shared.data()); });
  }
  static void backward(const AttentionGradParams& gp) {
    const AttentionGradParams resolved = with_dense_strides(gp);
    const AttentionParams& p = gp.attention;
    Shared dq(sizeof(uint16_t) * Queries::kStride *
              (2 * Queries::kRows + 4 * Queries::kKeysPerLoad));
    host::run_grid({unsigned(p.batch * p.heads), unsigned(tiles(p.tq, Queries::kRows)), 1},
                   flash::kThreads, [&] { flash::dq_block<Half, Queries>(resolved, dq.data()); });
    Shared dkdv(sizeof(uint16_t) *
                (2 * size_t(Keys::kKeys) * Keys::kStride + 2 * size_t(Keys::kQueryBuffer)));
    host::run_grid({unsigned(p.batch * p.heads), unsigned(tiles(p.tk, Keys::kKeys)), 1},
                   flash::kThreads, [&] { flash::dkdv_block<Half, Keys>(resolved, dkdv.data()); });
  }
};

// q, k and v read where a [B,T,3,H,D] product leaves them, o written and
// read as [B,T,H,D], g read as [B,T,H,D]: the same bits as dense operands.
template <class Half, int kD>
void check_strided(int64_t b_n, int64_t h_n, int64_t t_n, int64_t d) {
  std::mt19937 rng(99 + d);
  const int64_t n = b_n * h_n * t_n * d, width = h_n * d;
  auto q = random_data<Half>(n, rng, 1.0), k = random_data<Half>(n, rng, 1.0);
  auto v = random_data<Half>(n, rng, 1.0), g = random_data<Half>(n, rng, 1.0);
  AttentionParams dense;
  dense.batch = b_n, dense.heads = h_n, dense.tq = dense.tk = t_n, dense.d = d;
  dense.scale = 1.0 / std::sqrt(double(d));
  dense.causal = true;
  dense.dtype = std::is_same_v<Half, F16> ? AttentionDType::F16 : AttentionDType::BF16;
  dense.q = q.bits.data(), dense.k = k.bits.data(), dense.v = v.bits.data();
  std::vector<uint16_t> out(n), lse_bits;
  std::vector<float> lse(b_n * h_n * t_n);
  dense.out = out.data(), dense.lse = lse.data();
  HostKernels<Half, kD>::forward(dense);

  // [B,T,3,H,D]: q at 0, k at H*D, v at 2*H*D; o and g [B,T,H,D].
  const HeadStrides packed{t_n * 3 * width, d, 3 * width}, merged{t_n * width, d, width};
  const size_t packed_n = size_t(b_n * t_n * 3 * width);
  std::vector<uint16_t> qkv = scatter(q.bits, packed, 0, packed_n, b_n, h_n, t_n, d);
  for (int64_t i = 0; i < 2; ++i) {
    const auto& part = i == 0 ? k.bits : v.bits;
    std::vector<uint16_t> one = scatter(part, packed, (i + 1) * width, packed_n, b_n, h_n, t_n, d);
    for (size_t e = 0; e < packed_n; ++e)
      if (one[e] != 0x7fc1) qkv[e] = one[e];
  }
  AttentionParams strided = dense;
  strided.q = qkv.data(), strided.k = qkv.data() + width, strided.v = qkv.data() + 2 * width;
  strided.q_strides = strided.k_strides = strided.v_strides = packed;
  strided.out_strides = merged;
  std::vector<uint16_t> out_strided(size_t(n), 0x7fc1);
  std::vector<float> lse_strided(lse.size());
  strided.out = out_strided.data(), strided.lse = lse_strided.data();
  HostKernels<Half, kD>::forward(strided);
  CHECK(scatter(out, merged, 0, size_t(n), b_n, h_n, t_n, d) == out_strided);
  CHECK(std::memcmp(lse.data(), lse_strided.data(), lse.size() * sizeof(float)) == 0);

  auto backward = [&](const AttentionParams& p, const void* o, const void* grad, HeadStrides layout,
                      bool packed_gradients) {
    AttentionGradParams gp;
    gp.attention = p;
    gp.o = o, gp.g = grad, gp.o_strides = gp.g_strides = layout;
    gp.lse = lse.data();
    if (packed_gradients) {
      gp.dq_strides = gp.dk_strides = gp.dv_strides = packed;
      for (int64_t i = 0; i < 3; ++i) gp.part_offsets[i] = i * width;
    }
    std::vector<uint16_t> grads(size_t(3 * n), 0xffff);
    std::vector<float> stats(size_t(2 * b_n * h_n * t_n));
    gp.out = grads.data(), gp.row_stats = stats.data();
    HostKernels<Half, kD>::backward(gp);
    return grads;
  };
  const std::vector<uint16_t> g_merged = scatter(g.bits, merged, 0, size_t(n), b_n, h_n, t_n, d);
  const std::vector<uint16_t> dense_grads =
      backward(dense, out.data(), g.bits.data(), HeadStrides{}, false);
  CHECK(dense_grads == backward(strided, out_strided.data(), g_merged.data(), merged, false));
  // dq, dk, dv written where a [B,T,3,H,D] gradient of qkv has them.
  const std::vector<uint16_t> packed_grads =
      backward(strided, out_strided.data(), g_merged.data(), merged, true);
  bool same = true;
  for (int64_t b = 0; b < b_n; ++b)
    for (int64_t h = 0; h < h_n; ++h)
      for (int64_t part = 0; part < 3; ++part)
        for (int64_t t = 0; t < t_n; ++t)
          for (int64_t c = 0; c < d; ++c)
            same &= dense_grads[size_t((((b * h_n + h) * 3 + part) * t_n + t) * d + c)] ==
                    packed_grads[size_t(part * width + b * packed.batch + h * packed.head +
                                        t * packed.row + c)];
  CHECK(same);
}

}  // namespace

TEST_CASE("tensor-core flash attention reads and writes strided heads", "[cuda][attention]") {
  SECTION("d 64") {
    check_strided<Bf16, 64>(2, 3, 70, 64);
  }
  SECTION("d 32, f16") {
    check_strided<F16, 32>(1, 2, 45, 32);
  }
  SECTION("d 40 (rows not 16-byte aligned)") {
    check_strided<Bf16, 64>(1, 2, 33, 40);
  }
}
