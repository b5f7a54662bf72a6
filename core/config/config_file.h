// The config file (docs/environment.md, "The config file"): a TOML file
// read with TOML++ into the values it may set, each with its place in the
// file. A file that is not TOML, or a known key of the wrong type or value,
// is an error with the file's line and column (E-CONFIG); an unknown table
// or key is a warning, and the rest of the file still counts.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sexpgpu::config {

// One value the file gave and where: "PATH:LINE:COL".
struct FileValue {
  std::string text;
  std::string at;
};

// What the file sets; an absent key is nullopt.
struct ConfigFile {
  std::string path;                         // the file read; "" when there is none
  std::optional<FileValue> runs_dir;        // [runs] dir
  std::optional<FileValue> device_default;  // [device] default
  std::optional<FileValue> plugins_path;    // [plugins] path: a string of dirs joined by ':'
  std::optional<FileValue> s3_endpoint;     // [s3] endpoint
  std::optional<FileValue> s3_region;       // [s3] region
  std::optional<FileValue> s3_profile;      // [s3] profile
  std::optional<FileValue> log_level;       // [log] level
  // "PATH:LINE:COL: message" for each unknown table or key (never its value).
  std::vector<std::string> warnings;
};

// A file, or "PATH:LINE:COL: message" (or "PATH: message") of why not.
struct ConfigResult {
  std::optional<ConfigFile> file;
  std::string error;
};

// The levels [log] level, SEXPGPU_LOG and --log take, quietest last.
inline constexpr const char* kLogLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
bool is_log_level(std::string_view text);

// `text` as the config file at `path` (the path only names places).
ConfigResult parse_config(std::string_view text, const std::string& path);
// The file at `path`; one that cannot be read is an error naming the reason.
ConfigResult read_config(const std::string& path);

}  // namespace sexpgpu::config
