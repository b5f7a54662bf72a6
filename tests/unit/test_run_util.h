// Helpers of the core/run tests: a temporary directory, files as strings,
// and tensors' bytes.
#pragma once

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "catch.hpp"
#include "test_temp_files.h"

namespace run_test {

namespace fs = std::filesystem;

// The suite's temporary directories: sexpgpu-run-XXXXXX.
struct TempDir : test_files::TempDir {
  TempDir() : test_files::TempDir("run") {}
};

using test_files::read_file;
using test_files::write_file;

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

inline std::string as_string(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// Flips one byte of a file in place.
inline void flip_byte(const fs::path& path, size_t offset) {
  std::string s = read_file(path);
  REQUIRE(offset < s.size());
  s[offset] = static_cast<char>(s[offset] ^ 0x5a);
  write_file(path, s);
}

}  // namespace run_test
