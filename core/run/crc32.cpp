// crc32_of_ranges and friends over zlib (crc32.h).
#include "run/crc32.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

namespace sexpgpu::run {

namespace {

struct Piece {
  size_t range;
  std::span<const std::byte> bytes;
};

uint32_t crc32_of(std::span<const std::byte> bytes) {
  uLong crc = ::crc32_z(0L, Z_NULL, 0);
  return uint32_t(::crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

}  // namespace

std::vector<uint32_t> crc32_of_ranges(std::span<const std::span<const std::byte>> ranges,
                                      size_t piece_bytes, unsigned threads) {
  piece_bytes = std::max<size_t>(piece_bytes, 1);
  std::vector<Piece> pieces;
  uint64_t total = 0;
  for (size_t r = 0; r < ranges.size(); ++r) {
    std::span<const std::byte> b = ranges[r];
    total += b.size();
    if (b.empty()) pieces.push_back({r, b});
    for (size_t at = 0; at < b.size(); at += piece_bytes)
      pieces.push_back({r, b.subspan(at, std::min(piece_bytes, b.size() - at))});
  }
  std::vector<uint32_t> sums(pieces.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < pieces.size();) sums[k] = crc32_of(pieces[k].bytes);
  };
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  // A thread per 32 MiB at most: below that, starting one costs more than it saves.
  threads = unsigned(std::clamp<uint64_t>(total >> 25, 1, threads));
  threads = unsigned(std::min<size_t>(threads, pieces.size()));
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();

  std::vector<uint32_t> out(ranges.size(), crc32_of({}));
  std::vector<bool> started(ranges.size(), false);
  for (size_t k = 0; k < pieces.size(); ++k) {
    const size_t r = pieces[k].range;
    out[r] = started[r] ? crc32_concat(out[r], sums[k], pieces[k].bytes.size()) : sums[k];
    started[r] = true;
  }
  return out;
}

uint32_t crc32_concat(uint32_t a, uint32_t b, uint64_t b_bytes) {
  return uint32_t(::crc32_combine64(a, b, z_off64_t(b_bytes)));
}

std::string crc32_hex(uint32_t crc) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08lx", static_cast<unsigned long>(crc));
  return buf;
}

}  // namespace sexpgpu::run
