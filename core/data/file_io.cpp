// File access for the sources (file_io.h): mmap for raw files, zlib's gz*
// interface for gzip ones.
#include "data/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

namespace sexpgpu::data {

namespace fs = std::filesystem;

std::optional<int64_t> checked_bytes(int64_t elem_bytes, std::span<const int64_t> dims) {
  int64_t n = elem_bytes;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > (int64_t{1} << 62)) return std::nullopt;
  }
  return n;
}

std::string quoted(const fs::path& path) {
  return "\"" + path.string() + "\"";
}

namespace {

template <class T>
Result<T> fail(const fs::path& path, const std::string& what) {
  return Result<T>::failure(quoted(path) + ": " + what);
}

std::string errno_text() {
  return errno == ENOENT ? "missing (no such file)" : std::strerror(errno);
}

// Closes a gzFile on scope exit.
struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzHandle = std::unique_ptr<gzFile_s, GzCloser>;

}  // namespace

MappedFile::~MappedFile() {
  if (size_ > 0) munmap(const_cast<std::byte*>(data_), size_);
}

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const fs::path& path) {
  using R = Result<std::shared_ptr<const MappedFile>>;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail<std::shared_ptr<const MappedFile>>(path, errno_text());
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail<std::shared_ptr<const MappedFile>>(path, "not a regular file");
  }
  size_t size = static_cast<size_t>(st.st_size);
  void* p = nullptr;
  if (size > 0) {
    p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      std::string why = std::strerror(errno);
      ::close(fd);
      return fail<std::shared_ptr<const MappedFile>>(path, "cannot map: " + why);
    }
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  return R(std::shared_ptr<const MappedFile>(new MappedFile(static_cast<std::byte*>(p), size)));
}

Result<uint64_t> regular_file_size(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return fail<uint64_t>(path, errno_text());
  if (!S_ISREG(st.st_mode)) return fail<uint64_t>(path, "not a regular file");
  return static_cast<uint64_t>(st.st_size);
}

Result<bool> is_gzip(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail<bool>(path, errno_text());
  unsigned char magic[2] = {0, 0};
  in.read(reinterpret_cast<char*>(magic), 2);
  return in.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

Result<std::vector<std::byte>> read_prefix(const fs::path& path, size_t n) {
  using Bytes = std::vector<std::byte>;
  if (auto size = regular_file_size(path); !size) return Result<Bytes>::failure(size.error());
  GzHandle gz(gzopen(path.c_str(), "rb"));  // transparent for raw files
  if (!gz) return fail<Bytes>(path, errno_text());
  Bytes out(n);
  int got = gzread(gz.get(), out.data(), static_cast<unsigned>(n));
  if (got < 0) return fail<Bytes>(path, "damaged gzip stream");
  out.resize(static_cast<size_t>(got));
  return out;
}

Result<uint32_t> gzip_stored_size(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return fail<uint32_t>(path, errno_text());
  auto size = static_cast<int64_t>(in.tellg());
  if (size < 18) return fail<uint32_t>(path, "truncated (too short for a gzip file)");
  in.seekg(size - 4);
  unsigned char b[4];
  in.read(reinterpret_cast<char*>(b), 4);
  return static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 |
         static_cast<uint32_t>(b[2]) << 16 | static_cast<uint32_t>(b[3]) << 24;
}

Result<std::vector<std::byte>> read_gzip(const fs::path& path, uint64_t expected) {
  using Bytes = std::vector<std::byte>;
  GzHandle gz(gzopen(path.c_str(), "rb"));
  if (!gz) return fail<Bytes>(path, errno_text());
  gzbuffer(gz.get(), 1 << 18);
  Bytes out(expected);
  uint64_t done = 0;
  while (done < expected) {
    unsigned chunk = static_cast<unsigned>(std::min<uint64_t>(expected - done, 1u << 30));
    int got = gzread(gz.get(), out.data() + done, chunk);
    if (got <= 0) {
      return fail<Bytes>(path, "truncated: decompressed " + std::to_string(done) + " of " +
                                   std::to_string(expected) + " bytes");
    }
    done += static_cast<uint64_t>(got);
  }
  return out;
}

}  // namespace sexpgpu::data
