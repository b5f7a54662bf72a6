// The cache's layout (cache.h).
#include "s3/cache.h"

#include <cctype>
#include <system_error>

#include "s3/url.h"

namespace sexpgpu::s3 {

namespace fs = std::filesystem;

fs::path cache_root(const Env& env) {
  if (auto v = env("SEXPGPU_CACHE")) return *v;
  if (auto v = env("SEXPGPU_CACHE_DIR")) return *v;
  if (auto v = env("XDG_CACHE_HOME")) return fs::path(*v) / "sexpgpu";
  if (auto v = env("HOME")) return fs::path(*v) / ".cache" / "sexpgpu";
  return {};
}

std::string encode_part(std::string_view part) {
  if (part.empty()) return "%";  // '%' alone is no encoding of anything else
  // "." and ".." would name this directory or its parent: their dots go %2E.
  if (part == "." || part == "..") return percent_encode(part, [](unsigned char) { return false; });
  return percent_encode(
      part, [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_' || c == '.'; });
}

std::string etag_dir(std::string_view etag) {
  std::string out;
  for (unsigned char c : etag) {
    if (c == '"') continue;
    out += std::isalnum(c) || c == '-' ? char(c) : '_';
  }
  return out.empty() ? "none" : out;
}

namespace {

// BUCKET/K1/.../KN-1 and NAME.
std::pair<fs::path, std::string> key_place(const fs::path& root, const Url& url) {
  fs::path dir = root / "s3" / encode_part(url.bucket);
  std::string_view key = url.key;
  for (size_t slash; (slash = key.find('/')) != std::string_view::npos;) {
    dir /= encode_part(key.substr(0, slash));
    key.remove_prefix(slash + 1);
  }
  return {dir, encode_part(key)};
}

}  // namespace

fs::path cache_entry(const fs::path& root, const Url& url, std::string_view etag) {
  auto [dir, name] = key_place(root, url);
  return dir / ("@" + etag_dir(etag)) / name;
}

std::optional<fs::path> newest_entry(const fs::path& root, const Url& url) {
  auto [dir, name] = key_place(root, url);
  std::error_code ec;
  std::optional<fs::path> best;
  fs::file_time_type best_time;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->path().filename().string().starts_with("@")) continue;
    fs::path entry = it->path() / name;
    std::error_code e2;
    if (!fs::is_regular_file(entry, e2)) continue;
    fs::file_time_type t = fs::last_write_time(entry, e2);
    if (!e2 && (!best || t > best_time)) best = entry, best_time = t;
  }
  return best;
}

}  // namespace sexpgpu::s3
