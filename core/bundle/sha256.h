// SHA-256 through OpenSSL's libcrypto (EVP): the checksums bundle.toml
// records for every file of a bundle and every data file it names.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "util/result.h"

namespace sexpgpu::bundle {

// The digest as 64 lower-case hex digits.
std::string sha256_hex(std::string_view bytes);
// A file's digest, read in pieces (data files may be large); a failure
// names the path and the system's reason.
Result<std::string> sha256_file(const std::filesystem::path& path);

}  // namespace sexpgpu::bundle
