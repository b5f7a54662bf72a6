// core/ir/philox: Philox-4x32-10 against Random123's known answers,
// SipHash-2-4 against its reference vectors, the keying scheme (pinned so
// that any other implementation, such as the CUDA one, can be checked against
// the same numbers), the bits-to-float conversions and distribution sanity.
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "catch.hpp"
#include "ir/philox.h"

using namespace sexpgpu::stage;

namespace {

void check_block(PhiloxCounter got, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  CHECK(got.v[0] == a);
  CHECK(got.v[1] == b);
  CHECK(got.v[2] == c);
  CHECK(got.v[3] == d);
}

RngStream stream_of(uint64_t seed, std::string_view path, uint64_t step = 0, uint32_t mb = 0) {
  std::optional<RngStream> s = make_rng_stream(seed, param_stream_id(path), step, mb);
  REQUIRE(s);
  return *s;
}

struct Moments {
  double mean = 0, var = 0;
};

template <class F>
Moments moments(int n, F draw) {
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    double x = draw(static_cast<uint64_t>(i));
    sum += x;
    sum2 += x * x;
  }
  Moments m;
  m.mean = sum / n;
  m.var = sum2 / n - m.mean * m.mean;
  return m;
}

}  // namespace

// Known-answer vectors of Random123 (D. E. Shaw Research,
// https://github.com/DEShawResearch/random123), file tests/kat_vectors, the
// three "philox4x32 10" lines: counter (4 words), key (2 words), expected.
//   philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000
//                 6627e8d5 e169c58d bc57ac4c 9b00dbd8
//   philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
//                 408f276d 41c83b0e a20bc7c6 6d5451fd
//   philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0
//                 d16cfe09 94fdcceb 5001e420 24126ea1
TEST_CASE("Philox-4x32-10 matches Random123's known answers", "[philox]") {
  check_block(philox4x32_10({{0, 0, 0, 0}}, {{0, 0}}), 0x6627e8d5, 0xe169c58d, 0xbc57ac4c,
              0x9b00dbd8);
  const uint32_t f = 0xffffffffu;
  check_block(philox4x32_10({{f, f, f, f}}, {{f, f}}), 0x408f276d, 0x41c83b0e, 0xa20bc7c6,
              0x6d5451fd);
  check_block(
      philox4x32_10({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, {{0xa4093822, 0x299f31d0}}),
      0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1);
}

// The same file's "philox4x32 7" lines check the round and the key schedule
// independently of the round count.
TEST_CASE("Philox-4x32 rounds compose as Random123's 7-round vectors say", "[philox]") {
  auto seven = [](PhiloxCounter c, PhiloxKey k) {
    c = philox4x32_round(c, k);
    for (int r = 1; r < 7; ++r) {
      k = philox4x32_bumpkey(k);
      c = philox4x32_round(c, k);
    }
    return c;
  };
  check_block(seven({{0, 0, 0, 0}}, {{0, 0}}), 0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48);
  check_block(seven({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, {{0xa4093822, 0x299f31d0}}),
              0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a);
}

// Reference vectors of SipHash-2-4 (https://github.com/veorq/SipHash,
// vectors.h, vectors_sip64): key 00 01 .. 0f, message 00 01 .. (n-1) for
// entry n; the eight output bytes read little-endian. Entry 15 is also the
// example of the SipHash paper's appendix A.
TEST_CASE("SipHash-2-4 matches the reference vectors", "[philox]") {
  unsigned char key[16], msg[64];
  for (int i = 0; i < 16; ++i) key[i] = static_cast<unsigned char>(i);
  for (int i = 0; i < 64; ++i) msg[i] = static_cast<unsigned char>(i);
  uint64_t k0 = 0, k1 = 0;
  for (int i = 0; i < 8; ++i) {
    k0 |= static_cast<uint64_t>(key[i]) << (8 * i);
    k1 |= static_cast<uint64_t>(key[8 + i]) << (8 * i);
  }
  struct Vec {
    size_t n;
    uint64_t expected;
  };
  const Vec vecs[] = {
      {0, 0x726fdb47dd0e0e31ull},  {1, 0x74f839c593dc67fdull},  {7, 0xab0200f58b01d137ull},
      {8, 0x93f5f5799a932462ull},  {15, 0xa129ca6149be45e5ull}, {16, 0x3f2acc7f57c29bdbull},
      {63, 0x958a324ceb064572ull},
  };
  for (const Vec& v : vecs) {
    INFO("length " << v.n);
    CHECK(siphash24(k0, k1, msg, v.n) == v.expected);
  }
}

TEST_CASE("stream ids and keys are SipHash of tagged paths", "[philox]") {
  CHECK(stream_id("") == siphash24(0, 0, nullptr, 0));
  CHECK(param_stream_id("mlp.fc1.weight") == stream_id("param:mlp.fc1.weight"));
  CHECK(op_stream_id("train_step", 12) == stream_id("op:train_step:12"));
  CHECK(param_stream_id("a") != param_stream_id("b"));
  CHECK(param_stream_id("a") != stream_id("a"));  // domain tags keep kinds of stream apart
  CHECK(op_stream_id("f", 1) != op_stream_id("f", 2));
  CHECK(op_stream_id("f", 12) != op_stream_id("f1", 2));

  // Pinned values: the exact numbers every implementation must reproduce.
  CHECK(stream_id("") == 0x1e924b9d737700d7ull);
  CHECK(param_stream_id("mlp.fc1.weight") == 0xf7a3d1ae8f724b8dull);
  CHECK(op_stream_id("train_step", 12) == 0xd4bee3d6c9c787aeull);
  PhiloxKey k = derive_philox_key(42, param_stream_id("mlp.fc1.weight"));
  CHECK(k.k[0] == 0x16aeadb9u);
  CHECK(k.k[1] == 0x992f176eu);
  uint64_t h = siphash24(42, param_stream_id("mlp.fc1.weight"), nullptr, 0);
  CHECK(k.k[0] == static_cast<uint32_t>(h));
  CHECK(k.k[1] == static_cast<uint32_t>(h >> 32));
}

TEST_CASE("the counter holds block, step and microbatch", "[philox]") {
  RngStream s = stream_of(42, "mlp.fc1.weight", 7, 3);
  CHECK(s.c2 == 7u);
  CHECK(s.c3 == 0x00030000u);
  RngStream big = *make_rng_stream(1, 2, 0x0000123456789abcull, 0xffff);
  CHECK(big.c2 == 0x56789abcu);
  CHECK(big.c3 == 0xffff1234u);
  CHECK(make_rng_stream(1, 2, kMaxRngStep, kMaxRngMicrobatch).has_value());
  CHECK_FALSE(make_rng_stream(1, 2, kMaxRngStep + 1, 0).has_value());
  CHECK_FALSE(make_rng_stream(1, 2, 0, kMaxRngMicrobatch + 1).has_value());

  // A block is Philox of {block lo, block hi, c2, c3} under the derived key.
  uint64_t block = 0x100000002ull;
  PhiloxCounter want = philox4x32_10({{2, 1, 7, 0x00030000}}, s.key);
  check_block(rng_block(s, block), want.v[0], want.v[1], want.v[2], want.v[3]);
}

TEST_CASE("draws are pinned and deterministic", "[philox]") {
  RngStream s = stream_of(42, "mlp.fc1.weight", 7, 3);
  const uint32_t u32[4] = {0x26b5f920u, 0x68841fa8u, 0x726aea52u, 0x8f05edfeu};
  for (uint64_t i = 0; i < 4; ++i) {
    CHECK(rng_u32(s, i) == u32[i]);
    CHECK(rng_uniform_f32(s, i) == static_cast<float>(u32[i] >> 8) / 16777216.0f);
  }
  CHECK(rng_u64(s, 0) == join_u64(u32[0], u32[1]));
  CHECK(rng_u64(s, 1) == join_u64(u32[2], u32[3]));
  CHECK(rng_uniform_f64(s, 0) == 0.40826604705099345);
  CHECK(rng_uniform_f64(s, 1) == 0.55868422948916996);
  // Normals go through libm: pinned to within rounding, not bit for bit.
  CHECK(rng_normal_f32(s, 0) == Approx(-1.62970781).epsilon(1e-6));
  CHECK(rng_normal_f32(s, 1) == Approx(1.0593245).epsilon(1e-6));
  CHECK(rng_normal_f32(s, 2) == Approx(-1.18381214).epsilon(1e-6));
  CHECK(rng_normal_f32(s, 3) == Approx(-0.457420051).epsilon(1e-6));
  CHECK(rng_normal_f64(s, 0) == Approx(-1.2485682427107108).epsilon(1e-13));
  CHECK(rng_normal_f64(s, 1) == Approx(-0.48244152522143074).epsilon(1e-13));
  // Box-Muller pairs: element 2j and 2j+1 share a radius.
  NormalPair z = box_muller_u32(u32[0], u32[1]);
  CHECK(rng_normal_f32(s, 0) == static_cast<float>(z.z0));
  CHECK(rng_normal_f32(s, 1) == static_cast<float>(z.z1));

  // Same coordinates, same numbers; any coordinate changed, other numbers.
  RngStream again = stream_of(42, "mlp.fc1.weight", 7, 3);
  for (uint64_t i = 0; i < 1000; ++i) REQUIRE(rng_u32(again, i) == rng_u32(s, i));
  std::set<uint32_t> firsts;
  for (const RngStream& t :
       {s, stream_of(43, "mlp.fc1.weight", 7, 3), stream_of(42, "mlp.fc2.weight", 7, 3),
        stream_of(42, "mlp.fc1.weight", 8, 3), stream_of(42, "mlp.fc1.weight", 7, 4)})
    firsts.insert(rng_u32(t, 0));
  CHECK(firsts.size() == 5);
}

TEST_CASE("uniform conversions stay in [0, 1) and are exact", "[philox]") {
  CHECK(uniform_f32(0) == 0.0f);
  CHECK(uniform_f32(0xffffffffu) < 1.0f);
  CHECK(uniform_f32(0xffffffffu) == 1.0f - 0x1p-24f);
  CHECK(uniform_f32(0x80000000u) == 0.5f);
  CHECK(uniform_f32(0xffffffffu, kUniformBitsF16) == 1.0f - 0x1p-11f);
  CHECK(uniform_f32(0xffffffffu, kUniformBitsBF16) == 1.0f - 0x1p-8f);
  CHECK(uniform_f32(0x00ffffffu, kUniformBitsBF16) == 0.0f);  // only the top bits count
  CHECK(uniform_f64(0) == 0.0);
  CHECK(uniform_f64(~uint64_t{0}) == 1.0 - 0x1p-53);
  CHECK(uniform_f64(~uint64_t{0}) < 1.0);
  CHECK(uniform_f64(uint64_t{1} << 63) == 0.5);
  CHECK(join_u64(0x89abcdefu, 0x01234567u) == 0x0123456789abcdefull);
  // The extreme radii of Box-Muller are finite.
  NormalPair lo = box_muller_u32(0, 0);
  CHECK(std::isfinite(lo.z0));
  CHECK(lo.z0 == Approx(std::sqrt(2 * 33 * std::log(2.0))).epsilon(1e-12));
  CHECK(std::isfinite(box_muller_u64(0, 0).z0));
  CHECK(box_muller_u32(0xffffffffu, 0).z0 == Approx(0.0).margin(1e-4));
}

TEST_CASE("a million uniforms and normals have the right moments", "[philox]") {
  const int n = 1000000;
  RngStream s = stream_of(20260101, "stats");
  // Standard errors at n = 1e6: uniform mean 2.9e-4, variance 7.5e-5; normal
  // mean 1e-3, variance 1.4e-3. The bounds are about five of them.
  Moments u32 = moments(n, [&](uint64_t i) { return double(rng_uniform_f32(s, i)); });
  CHECK(std::abs(u32.mean - 0.5) < 1.5e-3);
  CHECK(std::abs(u32.var - 1.0 / 12) < 4e-4);
  Moments u64 = moments(n, [&](uint64_t i) { return rng_uniform_f64(s, i); });
  CHECK(std::abs(u64.mean - 0.5) < 1.5e-3);
  CHECK(std::abs(u64.var - 1.0 / 12) < 4e-4);
  Moments n32 = moments(n, [&](uint64_t i) { return double(rng_normal_f32(s, i)); });
  CHECK(std::abs(n32.mean) < 5e-3);
  CHECK(std::abs(n32.var - 1.0) < 7e-3);
  Moments n64 = moments(n, [&](uint64_t i) { return rng_normal_f64(s, i); });
  CHECK(std::abs(n64.mean) < 5e-3);
  CHECK(std::abs(n64.var - 1.0) < 7e-3);

  // Every uniform in [0, 1); the 16 bins of f32 uniforms each within 2% of n/16 (five standard
  // errors).
  int bins[16] = {};
  for (uint64_t i = 0; i < static_cast<uint64_t>(n); ++i) {
    float u = rng_uniform_f32(s, i);
    REQUIRE(u >= 0.0f);
    REQUIRE(u < 1.0f);
    ++bins[static_cast<int>(u * 16)];
  }
  for (int b : bins) CHECK(std::abs(b - n / 16) < n / 16 / 50);
  // Normal tails: P(|z| > 2) = 0.0455.
  int tail = 0;
  for (uint64_t i = 0; i < static_cast<uint64_t>(n); ++i)
    if (std::abs(rng_normal_f32(s, i)) > 2.0f) ++tail;
  CHECK(std::abs(tail / double(n) - 0.0455) < 1.1e-3);
}
