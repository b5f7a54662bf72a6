// A checkpoint's copy to the host and its write, three ways, one after the
// other on one machine (bench/RESULTS.md, "the final checkpoint"): GPT-2's
// 1.49 GB, a third of it the model file and two thirds the optimizer's.
//   old:     malloc'd memory, every tensor copied, then both files written
//   thp:     the same into a 2 MiB-aligned block with MADV_HUGEPAGE
//   overlap: thp, the model copied first, then its file written on a second
//            thread while the optimizer state is copied (what the trainer does)
// Each file is written with write(2) and fsync'd.
//   nvcc -O2 -o checkpoint_write checkpoint_write.cu && ./checkpoint_write DIR
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "probe.h"

constexpr size_t kPiece = size_t(124) << 20, kModelPieces = 4, kPieces = 12;
constexpr size_t kTotal = kPiece * kPieces;

void write_file(const std::string& path, const char* data, size_t bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) std::exit(2);
  for (size_t at = 0; at < bytes;) {
    ssize_t n = ::write(fd, data + at, std::min<size_t>(bytes - at, size_t(1) << 30));
    if (n <= 0) std::exit(3);
    at += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) std::exit(4);
  ::unlink(path.c_str());
}

char* block(bool huge) {
  void* p = nullptr;
  if (posix_memalign(&p, size_t(2) << 20, kTotal) != 0) std::exit(5);
  if (huge) madvise(p, kTotal, MADV_HUGEPAGE);
  return static_cast<char*>(p);
}

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "/tmp";
  char* dev = nullptr;
  CHECK(cudaMalloc(&dev, kTotal));
  CHECK(cudaMemset(dev, 1, kTotal));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaDeviceSynchronize());
  const std::string model = dir + "/probe-model", optimizer = dir + "/probe-optimizer";
  for (int round = 0; round < 3; ++round) {
    for (int way = 0; way < 3; ++way) {
      auto t = Clock::now();
      char* host = block(way > 0);
      double copied = 0, written = 0;
      if (way < 2) {
        copy_pieces(host, dev, kPiece, 0, kPieces, stream);
        copied = seconds_since(t);
        write_file(model, host, kModelPieces * kPiece);
        write_file(optimizer, host + kModelPieces * kPiece, (kPieces - kModelPieces) * kPiece);
        written = seconds_since(t) - copied;
      } else {
        copy_pieces(host, dev, kPiece, 0, kModelPieces, stream);
        copied = seconds_since(t);
        std::thread writer([&] { write_file(model, host, kModelPieces * kPiece); });
        copy_pieces(host, dev, kPiece, kModelPieces, kPieces, stream);
        writer.join();
        write_file(optimizer, host + kModelPieces * kPiece, (kPieces - kModelPieces) * kPiece);
        written = seconds_since(t) - copied;
      }
      double all = seconds_since(t);
      std::free(host);
      const char* name[] = {"old", "thp", "overlap"};
      std::printf("%-8s copy %.3f s, then %.3f s, total %.3f s (%.2f GB/s)\n", name[way], copied,
                  written, all, kTotal / all / 1e9);
    }
    std::printf("--\n");
  }
  return 0;
}
