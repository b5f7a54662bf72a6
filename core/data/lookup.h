// Where a data path written in a run file is found (spec/run-file.md,
// "Loaders and `prepare`"): an absolute path as it is; a relative one in the
// run file's directory, then in each directory of $SEXPGPU_DATA (separated by
// ':'), then in the system's dataset directory /usr/share/datasets (where
// Debian's dataset-* packages install). The first that exists wins. An
// s3://bucket/key address is handed to the remote fetcher, which gives the
// local copy (the S3 cache, docs/data.md): the data library does not know
// S3; the program installs the fetcher (the CLI, which owns the S3 client).
#pragma once

#include <filesystem>
#include <functional>
#include <string_view>
#include <vector>

#include "data/source.h"

namespace sexpgpu::data {

inline constexpr const char* kSystemDatasetDir = "/usr/share/datasets";

// Turns a remote address (s3://...) into a local file, or the failure
// (with its code, E-S3) of why not.
using RemoteFetch = std::function<Result<std::filesystem::path>(std::string_view address)>;

// The process's fetcher, which DataDirs::from_environment hands out:
// installed once, before any run file is read, by the program's top.
void install_remote_fetch(RemoteFetch fetch);

struct DataDirs {
  std::filesystem::path run_dir;                // the run file's directory
  std::vector<std::filesystem::path> env_dirs;  // $SEXPGPU_DATA, in order
  std::filesystem::path system_dir = kSystemDatasetDir;
  RemoteFetch remote;  // empty: s3:// addresses fail saying so

  // run_dir with $SEXPGPU_DATA read from the environment now, and the
  // installed remote fetcher.
  static DataDirs from_environment(const std::filesystem::path& run_dir);
  // The directories searched, in order.
  std::vector<std::filesystem::path> search_order() const;
};

// $SEXPGPU_DATA's value split at ':', empty entries dropped.
std::vector<std::filesystem::path> split_search_path(std::string_view value);

// The file `written` names; "not found" lists the directories tried. An
// s3:// address is the remote fetcher's local copy (its failure as it
// gave it, with its code).
Result<std::filesystem::path> find_data_file(std::string_view written, const DataDirs& dirs);

}  // namespace sexpgpu::data
