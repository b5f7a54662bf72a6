// CRC-32 (zlib's, the checksum of checksums.json) of many byte ranges at
// once: the ranges are cut into pieces, the pieces summed on several
// threads, and each range's CRC put together (zlib's crc32_combine), so a
// checkpoint's 1.5 GB is summed in a fraction of one thread's time and
// never read back from the disk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sexpgpu::run {

// The CRC-32 of each range, in order. `piece_bytes` bounds the work of one
// task (tests make it small to reach the combining); `threads` 0 is the
// machine's cores, at most 16.
std::vector<uint32_t> crc32_of_ranges(std::span<const std::span<const std::byte>> ranges,
                                      size_t piece_bytes = size_t(32) << 20, unsigned threads = 0);

// The CRC-32 of a then b, from the CRCs of each and b's length.
uint32_t crc32_concat(uint32_t a, uint32_t b, uint64_t b_bytes);

// 8 lowercase hex digits, as checksums.json records them.
std::string crc32_hex(uint32_t crc);

}  // namespace sexpgpu::run
