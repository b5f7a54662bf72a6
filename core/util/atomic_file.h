// Atomic file replacement: write to a temporary name beside the target, then
// rename, so a reader (or a crash) never sees half a file.
#pragma once

#include <string>
#include <string_view>

namespace sexpgpu {

bool write_file_atomic(const std::string& path, std::string_view content, std::string* error);

}  // namespace sexpgpu
