// Host half of the RNG keying (philox.h): SipHash-2-4, stream ids from paths
// and the derivation of a draw's Philox key and counter words. These run once
// per draw on the host; the device receives the resulting RngStream.
#include "ir/philox.h"

#include <cstring>
#include <string>

namespace sexpgpu::stage {

namespace {

constexpr uint64_t rotl(uint64_t x, int b) {
  return (x << b) | (x >> (64 - b));
}

struct SipState {
  uint64_t v0, v1, v2, v3;

  void round() {
    v0 += v1;
    v1 = rotl(v1, 13);
    v1 ^= v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl(v1, 17);
    v1 ^= v2;
    v2 = rotl(v2, 32);
  }
  void compress(uint64_t m) {  // c = 2 rounds per message word
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
};

// Little-endian load, whatever the host's byte order.
uint64_t load_le64(const unsigned char* p, size_t n) {
  uint64_t x = 0;
  for (size_t i = 0; i < n; ++i) x |= static_cast<uint64_t>(p[i]) << (8 * i);
  return x;
}

}  // namespace

uint64_t siphash24(uint64_t k0, uint64_t k1, const void* data, size_t size) {
  // Initialisation constants: "somepseudorandomlygeneratedbytes".
  SipState s{k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull, k0 ^ 0x6c7967656e657261ull,
             k1 ^ 0x7465646279746573ull};
  const auto* p = static_cast<const unsigned char*>(data);
  size_t full = size - size % 8;
  for (size_t i = 0; i < full; i += 8) s.compress(load_le64(p + i, 8));
  // The last word: the remaining bytes, and the length's low byte on top.
  uint64_t last = load_le64(p + full, size % 8) | (static_cast<uint64_t>(size & 0xff) << 56);
  s.compress(last);
  s.v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) s.round();  // d = 4 finalisation rounds
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

uint64_t stream_id(std::string_view path) {
  return siphash24(0, 0, path.data(), path.size());
}

uint64_t param_stream_id(std::string_view param_path) {
  std::string tagged = "param:";
  tagged += param_path;
  return stream_id(tagged);
}

uint64_t op_stream_id(std::string_view function, uint64_t position) {
  std::string tagged = "op:";
  tagged += function;
  tagged += ':';
  tagged += std::to_string(position);
  return stream_id(tagged);
}

PhiloxKey derive_philox_key(uint64_t seed, uint64_t stream) {
  uint64_t k = siphash24(seed, stream, nullptr, 0);
  return PhiloxKey{{static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)}};
}

std::optional<RngStream> make_rng_stream(uint64_t seed, uint64_t stream, uint64_t step,
                                         uint32_t microbatch) {
  if (step > kMaxRngStep || microbatch > kMaxRngMicrobatch) return std::nullopt;
  RngStream s;
  s.key = derive_philox_key(seed, stream);
  s.c2 = static_cast<uint32_t>(step);
  s.c3 = static_cast<uint32_t>(step >> 32) | (microbatch << 16);
  return s;
}

}  // namespace sexpgpu::stage
