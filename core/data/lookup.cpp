// Data path lookup (lookup.h).
#include "data/lookup.h"

#include <cstdlib>
#include <system_error>

#include "util/log.h"

namespace sexpgpu::data {

namespace fs = std::filesystem;

std::vector<fs::path> split_search_path(std::string_view value) {
  std::vector<fs::path> dirs;
  while (!value.empty()) {
    size_t colon = value.find(':');
    std::string_view dir = value.substr(0, colon);
    if (!dir.empty()) dirs.emplace_back(dir);
    if (colon == std::string_view::npos) break;
    value.remove_prefix(colon + 1);
  }
  return dirs;
}

namespace {
RemoteFetch& installed_fetch() {
  static RemoteFetch fetch;
  return fetch;
}
}  // namespace

void install_remote_fetch(RemoteFetch fetch) {
  installed_fetch() = std::move(fetch);
}

DataDirs DataDirs::from_environment(const fs::path& run_dir) {
  DataDirs dirs;
  dirs.run_dir = run_dir;
  dirs.remote = installed_fetch();
  if (const char* env = std::getenv("SEXPGPU_DATA")) dirs.env_dirs = split_search_path(env);
  return dirs;
}

std::vector<fs::path> DataDirs::search_order() const {
  std::vector<fs::path> order = {run_dir.empty() ? fs::path(".") : run_dir};
  order.insert(order.end(), env_dirs.begin(), env_dirs.end());
  order.push_back(system_dir);
  return order;
}

Result<fs::path> find_data_file(std::string_view written, const DataDirs& dirs) {
  using R = Result<fs::path>;
  if (written.starts_with("s3://")) {
    if (!dirs.remote)
      return R::failure("\"" + std::string(written) +
                        "\": this program reads no s3:// addresses (copy the file locally and "
                        "name it, or put its directory in $SEXPGPU_DATA)");
    return dirs.remote(written);
  }
  if (written.empty()) return R::failure("an empty data path");
  fs::path path(written);
  std::error_code ec;
  if (path.is_absolute()) {
    if (fs::exists(path, ec)) return path;
    return R::failure("\"" + path.string() + "\": missing (no such file)");
  }
  std::string tried;
  for (const fs::path& dir : dirs.search_order()) {
    fs::path candidate = dir / path;
    if (fs::exists(candidate, ec)) {
      log::debug("data: \"{}\" found at {}", written, candidate.string());
      return candidate;
    }
    log::trace("data: \"{}\" not in {}", written, dir.string());
    tried += (tried.empty() ? "" : ", ") + dir.string();
  }
  return R::failure("\"" + std::string(written) + "\": missing (not found in " + tried +
                    "; $SEXPGPU_DATA adds directories)");
}

}  // namespace sexpgpu::data
