// SHA-256 through libcrypto's EVP digest interface (sha256.h).
#include "bundle/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

namespace sexpgpu::bundle {

namespace {

struct Digest {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), EVP_MD_CTX_free};
  bool ok = ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1;

  void add(const void* data, size_t n) { ok = ok && EVP_DigestUpdate(ctx.get(), data, n) == 1; }
  // "" when libcrypto failed (out of memory: nothing a user can fix).
  std::string hex() {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!ok || EVP_DigestFinal_ex(ctx.get(), out, &len) != 1) return "";
    static const char* digits = "0123456789abcdef";
    std::string text;
    for (unsigned int i = 0; i < len; ++i) {
      text += digits[out[i] >> 4];
      text += digits[out[i] & 15];
    }
    return text;
  }
};

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  Digest d;
  d.add(bytes.data(), bytes.size());
  return d.hex();
}

Result<std::string> sha256_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("E-IO", "cannot read " + path.string() + ": " + std::strerror(errno));
  Digest d;
  std::vector<char> buffer(size_t(1) << 20);
  while (in) {
    in.read(buffer.data(), std::streamsize(buffer.size()));
    d.add(buffer.data(), size_t(in.gcount()));
  }
  if (in.bad()) return fail("E-IO", "cannot read " + path.string() + ": a read failed");
  std::string hex = d.hex();
  if (hex.empty()) return fail("E-IO", "cannot checksum " + path.string() + ": libcrypto failed");
  return hex;
}

}  // namespace sexpgpu::bundle
