// The safetensors format, written and read exactly
// (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON header, then the tensors' bytes.
//
// The header maps each tensor name to {"dtype", "shape", "data_offsets":
// [begin, end]} (offsets relative to the first data byte), plus an optional
// "__metadata__" object of strings. What we write is deterministic: tensors
// sorted by name, their data laid out in that order with no gaps, the JSON
// without spaces in the reference implementation's key order, padded with
// spaces so the data starts at a multiple of 8 bytes; metadata keys sorted. Nothing depends on
// time, host or path, so equal tensors give equal bytes. Offsets are 64-bit: files past 4 GiB work.
//
// The reader maps the file and checks everything before handing out a
// tensor: the header length against the file size, the JSON, every dtype
// and shape, each tensor's byte count against dtype times shape, offsets in
// range, no overlap, no gap and no trailing bytes (as the reference
// implementation requires). Every message starts with the file's path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/types.h"

namespace sexpgpu::run {

// "F32" "BF16" "F16" "F64" "I32" "I64" "U8" "U16" "BOOL".
std::string_view safetensors_dtype_name(ir::DType dtype);
std::optional<ir::DType> parse_safetensors_dtype(std::string_view name);

// A tensor to write: its bytes are borrowed, little-endian, row-major, and
// must be exactly size_bytes(dtype) times the product of shape.
struct TensorView {
  std::string name;
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;
};

using Metadata = std::map<std::string, std::string>;

// The whole file as bytes (for small files and tests); the tensors may come
// in any order. Fails on duplicate or empty names, a name "__metadata__",
// negative dims or a byte count that does not match dtype and shape.
ir::Result<std::vector<std::byte>> serialize_safetensors(std::vector<TensorView> tensors,
                                                         const Metadata& metadata = {});

// What a write summed on the way (checksums.json's entries for the file):
// the whole file's CRC-32 and each tensor's, by name.
struct SafetensorsSums {
  uint32_t file = 0;
  std::map<std::string, uint32_t> tensors;
};

// Writes the file at path (streaming the tensors, so no second copy of them
// is made), then fsyncs it. Not atomic by itself: callers write to a
// temporary name and rename. With `sums`, the CRCs are computed from the
// tensors in memory on other threads while the file is written.
ir::Result<uint64_t> write_safetensors(const std::string& path, std::vector<TensorView> tensors,
                                       const Metadata& metadata = {},
                                       SafetensorsSums* sums = nullptr);

// One tensor of a file that was read: data points into the file's map.
struct TensorEntry {
  std::string name;
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // of the first byte, from the start of the file
  std::span<const std::byte> data;
  int64_t elements() const;
};

// A safetensors file mapped read-only and validated. Tensors are listed in
// name order; the map stays alive as long as the object.
class SafetensorsFile {
 public:
  static ir::Result<std::shared_ptr<const SafetensorsFile>> open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t file_bytes() const { return size_; }
  uint64_t header_bytes() const { return header_bytes_; }  // N, padding included
  const std::vector<TensorEntry>& tensors() const { return tensors_; }
  const Metadata& metadata() const { return metadata_; }
  const TensorEntry* find(std::string_view name) const;
  // The whole file, for checksums.
  std::span<const std::byte> bytes() const { return {data_, static_cast<size_t>(size_)}; }

 private:
  SafetensorsFile() = default;
  std::string path_;
  const std::byte* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t header_bytes_ = 0;
  std::vector<TensorEntry> tensors_;
  Metadata metadata_;
};

// The validation alone, on bytes already in memory (what open() runs on the
// map); `where` names the file in messages.
ir::Result<std::vector<TensorEntry>> parse_safetensors(std::span<const std::byte> bytes,
                                                       const std::string& where,
                                                       Metadata* metadata = nullptr,
                                                       uint64_t* header_bytes = nullptr);

}  // namespace sexpgpu::run
