// TFRecord framing over Boost.CRC's CRC-32C (tfrecord.h).
#include "tensorboard/tfrecord.h"

#include <boost/crc.hpp>

namespace sexpgpu::sinks::tensorboard {
namespace {

// CRC-32C (Castagnoli): width 32, polynomial 0x1EDC6F41, reflected in and
// out, initial and final XOR 0xFFFFFFFF (RFC 3720, section 12.1).
using Crc32c = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  Crc32c crc;
  crc.process_bytes(data.data(), data.size());
  return crc.checksum();
}

uint32_t masked_crc32c(std::string_view data) {
  uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tfrecord(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  put_le(out, data.size(), 8);
  uint32_t length_crc = masked_crc32c(out);
  put_le(out, length_crc, 4);
  out.append(data);
  put_le(out, masked_crc32c(data), 4);
  return out;
}

}  // namespace sexpgpu::sinks::tensorboard
