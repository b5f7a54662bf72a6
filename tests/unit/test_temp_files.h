// Test helpers shared by the suites that write files: a temporary directory
// removed with everything in it, and whole files written and read as strings.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "catch.hpp"

namespace test_files {

namespace fs = std::filesystem;

class TempDir {
 public:
  // `tag` names the suite in the directory's name (sexpgpu-TAG-XXXXXX).
  explicit TempDir(const std::string& tag) {
    std::string pattern = (fs::temp_directory_path() / ("sexpgpu-" + tag + "-XXXXXX")).string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

inline void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace test_files
