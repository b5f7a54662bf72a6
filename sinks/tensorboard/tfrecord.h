// TFRecord framing, the container of TensorBoard's event files: each record
// is its length (uint64, little-endian), the masked CRC-32C of those 8
// bytes, the data, and the masked CRC-32C of the data (both uint32,
// little-endian). The CRC is Boost.CRC's CRC-32C (Castagnoli); the mask is
// TensorFlow's (tensorflow/core/lib/hash/crc32c.h: rotate right by 15, add
// 0xa282ead8), which keeps a CRC of data holding CRCs from being weak.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sexpgpu::sinks::tensorboard {

// CRC-32C (polynomial 0x1EDC6F41, reflected, initial and final XOR all ones).
uint32_t crc32c(std::string_view data);

// TensorFlow's mask over a CRC-32C: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(std::string_view data);

// One record: length, masked CRC of the length, data, masked CRC of the data.
std::string tfrecord(std::string_view data);

}  // namespace sexpgpu::sinks::tensorboard
