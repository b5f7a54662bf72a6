// File access for the sources: read-only memory maps of raw files, and gzip
// files read through zlib (header prefix at open, whole file at load). Every
// error message starts with the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "data/source.h"

namespace sexpgpu::data {

// A whole file mapped read-only; unmapped when the last owner goes.
class MappedFile {
 public:
  static Result<std::shared_ptr<const MappedFile>> open(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  MappedFile(const std::byte* data, size_t size) : data_(data), size_(size) {}
  const std::byte* data_;
  size_t size_;
};

// elem_bytes times the product of dims; nullopt past 2^62 (a garbage header).
std::optional<int64_t> checked_bytes(int64_t elem_bytes, std::span<const int64_t> dims);

// "PATH" quoted for messages.
std::string quoted(const std::filesystem::path& path);

// The size in bytes of a regular file; "missing" or "not a regular file".
Result<uint64_t> regular_file_size(const std::filesystem::path& path);

// Whether the file starts with the gzip magic bytes 1f 8b.
Result<bool> is_gzip(const std::filesystem::path& path);

// The first n bytes of the file's content, decompressed when it is gzip;
// fewer when the content is shorter.
Result<std::vector<std::byte>> read_prefix(const std::filesystem::path& path, size_t n);

// The gzip trailer's ISIZE: the uncompressed size modulo 2^32 (of the last
// member, which for the files we read is the only one). Cheap: reads 4 bytes.
Result<uint32_t> gzip_stored_size(const std::filesystem::path& path);

// The whole decompressed content, which must be exactly `expected` bytes:
// "truncated" when the stream ends early or is damaged.
Result<std::vector<std::byte>> read_gzip(const std::filesystem::path& path, uint64_t expected);

}  // namespace sexpgpu::data
