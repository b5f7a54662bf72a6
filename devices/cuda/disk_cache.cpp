// The CUDA device's cache entries on disk (disk_cache.h).
#include "disk_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

namespace sexpgpu::cuda::disk_cache {

namespace fs = std::filesystem;

std::string directory() {
  for (const char* root : {"SEXPGPU_CACHE", "SEXPGPU_CACHE_DIR"})
    if (const char* d = std::getenv(root); d && *d) return std::string(d) + "/cuda";
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return std::string(d) + "/sexpgpu/cuda";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/sexpgpu/cuda";
  return {};
}

uint64_t fnv1a(std::string_view text, uint64_t h) {
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

namespace {

uint64_t checksum(const char* data, size_t size) {
  return fnv1a(std::string_view(data, size));
}

}  // namespace

bool read(const fs::path& path, std::vector<char>& payload) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (bytes.size() <= sizeof(uint64_t)) return false;
  size_t size = bytes.size() - sizeof(uint64_t);
  uint64_t recorded = 0;
  std::memcpy(&recorded, bytes.data() + size, sizeof recorded);
  if (recorded != checksum(bytes.data(), size)) return false;
  bytes.resize(size);
  payload = std::move(bytes);
  return true;
}

void write(const fs::path& path, const std::vector<char>& payload) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path;
  tmp += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;
    uint64_t sum = checksum(payload.data(), payload.size());
    out.write(payload.data(), std::streamsize(payload.size()));
    out.write(reinterpret_cast<const char*>(&sum), sizeof sum);
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace sexpgpu::cuda::disk_cache
