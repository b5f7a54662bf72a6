// Atomic file replacement: write to a temporary name beside the target, then
// rename, so a reader (or a crash) never sees half a file.
#pragma once

#include <string>
#include <string_view>

namespace sexpgpu {

bool write_file_atomic(const std::string& path, std::string_view content, std::string* error);

// The same for a file that must not exist yet: the complete file appears
// under `path` at once (a hard link from the temporary), or not at all when
// something is already there (`error` says "... already exists"), so it
// never replaces a file, not even one created meanwhile.
bool write_file_new(const std::string& path, std::string_view content, std::string* error);

}  // namespace sexpgpu
