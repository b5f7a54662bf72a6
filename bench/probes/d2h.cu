// Device-to-host copy of a checkpoint's bytes (GPT-2's 1.49 GB in 444
// tensors of its sizes, here 12 x 124 MB), into host memory four ways: fresh
// pageable memory (what a checkpoint gets from new[]), pageable memory
// touched before, memory registered with cudaHostRegister for the copy, and
// memory from cudaMallocHost. Prints GB/s for each, to choose the
// checkpoint's download path.  nvcc -O2 -o d2h d2h.cu && ./d2h
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "probe.h"

constexpr size_t kPiece = size_t(124) << 20, kPieces = 12, kTotal = kPiece * kPieces;

void report(const char* what, double s) {
  std::printf("%-44s %7.3f s  %6.2f GB/s\n", what, s, kTotal / s / 1e9);
}

int main() {
  void* dev = nullptr;
  CHECK(cudaMalloc(&dev, kTotal));
  CHECK(cudaMemset(dev, 1, kTotal));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaDeviceSynchronize());
  for (int round = 0; round < 2; ++round) {
    {  // fresh pageable memory, as new[] gives it
      auto t = Clock::now();
      char* host = static_cast<char*>(std::malloc(kTotal));
      copy_pieces(host, static_cast<const char*>(dev), kPiece, 0, kPieces, stream);
      report("fresh pageable", seconds_since(t));
      t = Clock::now();
      std::free(host);
      report("  free of it", seconds_since(t));
    }
    {  // fresh pageable with transparent huge pages asked for
      auto t = Clock::now();
      void* p = nullptr;
      if (posix_memalign(&p, size_t(2) << 20, kTotal) != 0) return 1;
      madvise(p, kTotal, MADV_HUGEPAGE);
      char* host = static_cast<char*>(p);
      copy_pieces(host, static_cast<const char*>(dev), kPiece, 0, kPieces, stream);
      report("fresh pageable, MADV_HUGEPAGE", seconds_since(t));
      std::free(host);
    }
    {  // pageable, touched first (the copy alone)
      char* host = static_cast<char*>(std::malloc(kTotal));
      std::memset(host, 0, kTotal);
      auto t = Clock::now();
      copy_pieces(host, static_cast<const char*>(dev), kPiece, 0, kPieces, stream);
      report("touched pageable (copy alone)", seconds_since(t));
      std::free(host);
    }
    {  // fresh memory registered for the copy, then unregistered
      auto t = Clock::now();
      char* host = static_cast<char*>(std::malloc(kTotal));
      CHECK(cudaHostRegister(host, kTotal, cudaHostRegisterDefault));
      double reg = seconds_since(t);
      copy_pieces(host, static_cast<const char*>(dev), kPiece, 0, kPieces, stream);
      CHECK(cudaHostUnregister(host));
      report("fresh, cudaHostRegister + copy + unregister", seconds_since(t));
      std::printf("%-44s %7.3f s\n", "  of which the register", reg);
      std::free(host);
    }
    {  // a pinned staging ring of 4 x 64 MiB, memcpy out on the host
      auto t = Clock::now();
      char* host = static_cast<char*>(std::malloc(kTotal));
      constexpr size_t kSlot = size_t(64) << 20;
      char* ring[2];
      cudaEvent_t done[2];
      for (int s = 0; s < 2; ++s) {
        CHECK(cudaMallocHost(&ring[s], kSlot));
        CHECK(cudaEventCreateWithFlags(&done[s], cudaEventDisableTiming));
      }
      double setup = seconds_since(t);
      size_t chunks = kTotal / kSlot;
      for (size_t c = 0; c < chunks + 1; ++c) {
        if (c < chunks) {
          CHECK(cudaMemcpyAsync(ring[c % 2], static_cast<char*>(dev) + c * kSlot, kSlot,
                                cudaMemcpyDeviceToHost, stream));
          CHECK(cudaEventRecord(done[c % 2], stream));
        }
        if (c > 0) {
          CHECK(cudaEventSynchronize(done[(c - 1) % 2]));
          std::memcpy(host + (c - 1) * kSlot, ring[(c - 1) % 2], kSlot);
        }
      }
      report("fresh, through a 2 x 64 MiB pinned ring", seconds_since(t));
      std::printf("%-44s %7.3f s\n", "  of which the ring's cudaMallocHost", setup);
      for (int s = 0; s < 2; ++s) CHECK(cudaFreeHost(ring[s]));
      std::free(host);
    }
    {  // pinned memory from cudaMallocHost, its allocation counted
      auto t = Clock::now();
      char* host = nullptr;
      CHECK(cudaMallocHost(&host, kTotal));
      double alloc = seconds_since(t);
      copy_pieces(host, static_cast<const char*>(dev), kPiece, 0, kPieces, stream);
      report("cudaMallocHost + copy", seconds_since(t));
      std::printf("%-44s %7.3f s\n", "  of which the cudaMallocHost", alloc);
      t = Clock::now();
      CHECK(cudaFreeHost(host));
      report("  cudaFreeHost", seconds_since(t));
    }
    std::printf("--\n");
  }
  return 0;
}
