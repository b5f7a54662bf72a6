// The CUDA device's files under the one cache root (docs/environment.md):
// $SEXPGPU_CACHE/cuda holds the images NVRTC compiled (codegen/nvrtc_cache.h)
// and the matmul algorithms timing chose (factories/kernels_matmul.cpp).
// An entry is one file that ends in a checksum of the rest, written under a
// temporary name and renamed, so a reader never sees half of one; a missing,
// unreadable or corrupt entry only costs its recomputation.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace sexpgpu::cuda::disk_cache {

// $SEXPGPU_CACHE, else $SEXPGPU_CACHE_DIR (its older name), else
// $XDG_CACHE_HOME/sexpgpu, else ~/.cache/sexpgpu; then /cuda (the S3 cache
// is s3/ beside it: core/s3/cache.h). Empty when none can be found (no caching).
std::string directory();

// FNV-1a, for entry names: a name only finds an entry, whose checksum and
// recorded key decide whether it is used.
uint64_t fnv1a(std::string_view text, uint64_t h = 1469598103934665603ull);
std::string hex(uint64_t v);  // 16 digits

// The entry's payload; false when it is missing or its checksum is wrong.
bool read(const std::filesystem::path& path, std::vector<char>& payload);
// Writes `payload` and its checksum atomically; a failure only loses the entry.
void write(const std::filesystem::path& path, const std::vector<char>& payload);

}  // namespace sexpgpu::cuda::disk_cache
