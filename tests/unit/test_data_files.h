// Helpers of the core/data tests: a temporary directory, and writers of the
// file formats the sources read (IDX raw and gzip, .npy, flat token files),
// each written byte by byte from its specification, not with core/data code.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "data/loader.h"
#include "test_temp_files.h"

namespace data_test {

namespace fs = std::filesystem;

// The suite's temporary directories: sexpgpu-data-XXXXXX.
struct TempDir : test_files::TempDir {
  TempDir() : test_files::TempDir("data") {}
};

using test_files::write_file;

inline void write_gzip(const fs::path& path, const std::string& bytes) {
  gzFile gz = gzopen(path.c_str(), "wb");
  REQUIRE(gz != nullptr);
  REQUIRE(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  REQUIRE(gzclose(gz) == Z_OK);
}

inline std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// An IDX file: 00 00 TYPE NDIM, big-endian dims, then `data` (already
// big-endian for multi-byte types).
inline std::string idx_bytes(uint8_t type, const std::vector<uint32_t>& dims,
                             const std::string& data) {
  std::string out = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) out += be32(d);
  return out + data;
}

template <class T>
std::string le_bytes(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// A .npy file, version 1 (or 2), header padded so the data starts at a
// multiple of 64 as numpy.save does.
inline std::string npy_bytes(const std::string& descr, const std::string& shape,
                             const std::string& data, int version = 1) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t prefix = version == 1 ? 10 : 12;
  size_t total = prefix + dict.size() + 1;
  dict += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  uint32_t len = static_cast<uint32_t>(dict.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>(len >> 8);
  if (version != 1) out += std::string(2, '\0');
  return out + dict + data;
}

template <class T>
std::vector<T> field_values(const sexpgpu::data::Batch& batch, const std::string& name) {
  const sexpgpu::data::BatchField* f = batch.find(name);
  REQUIRE(f != nullptr);
  auto v = f->values<T>();
  return {v.begin(), v.end()};
}

// The source's examples `indices`, gathered, as one field's values.
template <class T>
std::vector<T> gather_field(const sexpgpu::data::Source& source, std::vector<int64_t> indices,
                            size_t field) {
  std::vector<std::vector<std::byte>> buffers;
  std::vector<std::byte*> out;
  for (const auto& f : source.fields()) {
    buffers.emplace_back(indices.size() * static_cast<size_t>(f.example_bytes()));
    out.push_back(buffers.back().data());
  }
  source.gather(indices, out);
  std::vector<T> values(buffers[field].size() / sizeof(T));
  if (!values.empty()) std::memcpy(values.data(), buffers[field].data(), buffers[field].size());
  return values;
}

}  // namespace data_test
