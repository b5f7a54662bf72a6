// write_file_atomic (see atomic_file.h).
#include "util/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace sexpgpu {

namespace {

// Writes `content` to `tmp` and syncs it; false (the temporary removed,
// `error` set) on failure.
bool write_temporary(const std::string& tmp, std::string_view content, std::string* error) {
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    if (error) *error = "cannot write " + tmp + ": " + std::strerror(errno);
    return false;
  }
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (error) *error = "cannot write " + tmp + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    off += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    if (error) *error = "cannot write " + tmp + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace

bool write_file_atomic(const std::string& path, std::string_view content, std::string* error) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  if (!write_temporary(tmp, content, error)) return false;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    if (error) *error = "cannot replace " + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

bool write_file_new(const std::string& path, std::string_view content, std::string* error) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  if (!write_temporary(tmp, content, error)) return false;
  // link() fails with EEXIST instead of replacing, which rename() would do.
  int linked = ::link(tmp.c_str(), path.c_str());
  int link_errno = errno;
  ::unlink(tmp.c_str());
  if (linked != 0) {
    if (error)
      *error = link_errno == EEXIST ? path + " already exists"
                                    : "cannot write " + path + ": " + std::strerror(link_errno);
    return false;
  }
  return true;
}

}  // namespace sexpgpu
