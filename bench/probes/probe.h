// What the probes share: a CUDA call checked (the message and exit 1), and
// seconds on the steady clock.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                          \
  do {                                                    \
    cudaError_t e = (x);                                  \
    if (e != cudaSuccess) {                               \
      std::printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      std::exit(1);                                       \
    }                                                     \
  } while (0)

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Pieces [from, to) of `piece` bytes each, device to host, then a synchronise.
inline void copy_pieces(char* host, const char* dev, size_t piece, size_t from, size_t to,
                        cudaStream_t s) {
  for (size_t k = from; k < to; ++k)
    CHECK(cudaMemcpyAsync(host + k * piece, dev + k * piece, piece, cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
}
