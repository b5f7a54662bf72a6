// Where a data path written in a run file is found (spec/run-file.md,
// "Loaders and `prepare`"): an absolute path as it is; a relative one in the
// run file's directory, then in each directory of $SEXPGPU_DATA (separated by
// ':'), then in the system's dataset directory /usr/share/datasets (where
// Debian's dataset-* packages install). The first that exists wins.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "data/source.h"

namespace sexpgpu::data {

inline constexpr const char* kSystemDatasetDir = "/usr/share/datasets";

struct DataDirs {
  std::filesystem::path run_dir;                // the run file's directory
  std::vector<std::filesystem::path> env_dirs;  // $SEXPGPU_DATA, in order
  std::filesystem::path system_dir = kSystemDatasetDir;

  // run_dir with $SEXPGPU_DATA read from the environment now.
  static DataDirs from_environment(const std::filesystem::path& run_dir);
  // The directories searched, in order.
  std::vector<std::filesystem::path> search_order() const;
};

// $SEXPGPU_DATA's value split at ':', empty entries dropped.
std::vector<std::filesystem::path> split_search_path(std::string_view value);

// The file `written` names; "not found" lists the directories tried. An
// s3:// address is an error saying it is not supported yet.
Result<std::filesystem::path> find_data_file(std::string_view written, const DataDirs& dirs);

}  // namespace sexpgpu::data
