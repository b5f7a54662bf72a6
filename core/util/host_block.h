// HostBlock: a large block of host memory for bytes a device is about to
// overwrite (a checkpoint's download): uninitialised, aligned to 2 MiB and
// asking the kernel for transparent huge pages. On the H200 machine a
// device-to-host copy of GPT-2's 1.49 GB into such a block took 0.44-0.52 s,
// into plain new[] memory 1.14-1.24 s (bench/probes/d2h.cu): the driver's
// copy into pageable memory pays per page, and a huge page is 512 of them.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace sexpgpu::util {

class HostBlock {
 public:
  static constexpr size_t kAlignment = size_t(2) << 20;

  explicit HostBlock(size_t bytes) : bytes_(bytes) {
    const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    data_ = static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded ? rounded : kAlignment));
    if (!data_) throw std::bad_alloc();
    // Only advice: where huge pages are off (or the call fails) the block
    // is still good memory, just slower to fill.
    (void)::madvise(data_, rounded, MADV_HUGEPAGE);
  }
  ~HostBlock() { std::free(data_); }
  HostBlock(const HostBlock&) = delete;
  HostBlock& operator=(const HostBlock&) = delete;

  std::byte* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  std::byte* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace sexpgpu::util
