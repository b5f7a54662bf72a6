// The effective settings (docs/environment.md, "What wins over what"): one
// place decides each setting's value and where it came from, in the order
// cli.md gives: a flag, then an environment variable, then the config
// file, then the run file, then the built-in default. The CLI asks here
// instead of reading the environment itself; doctor prints the table.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config_file.h"

namespace sexpgpu::config {

enum class Source { Flag, Environment, ConfigFile, RunFile, Default };
// "flag", "environment", "config file", "run file", "default".
const char* source_name(Source s);

// One setting: its value (nullopt: none, e.g. no S3 region), where it came
// from, and the exact origin: "--device", "SEXPGPU_DEVICE", the file's
// "PATH:LINE:COL", "defrun :device", "built in".
struct Setting {
  std::string name;
  std::optional<std::string> value;
  Source source = Source::Default;
  std::string origin;
};

// The environment as the resolvers see it: a variable's value, nullopt
// when it is unset or empty (an empty variable counts as unset).
using Env = std::function<std::optional<std::string>(const std::string& name)>;
Env process_env();

// Which config file: $SEXPGPU_CONFIG (named by the user, so it must
// exist), else $HOME/.config/sexpgpu/config.toml (may be absent).
struct ConfigLocation {
  std::string path;  // "" when neither is known (no HOME)
  Source source = Source::Default;
};
ConfigLocation config_location(const Env& env);

// The flags that take part (empty: not given).
struct Flags {
  std::string device;  // --device
  std::string log;     // --log
};

class Settings {
 public:
  // Finds and reads the config file; `error` is "PATH:LINE:COL: message"
  // (E-CONFIG) when it is malformed, or named by SEXPGPU_CONFIG and absent.
  static Settings load(Env env, std::string& error);
  // From a file already read (for tests).
  Settings(ConfigFile file, ConfigLocation where, bool present, Env env);

  const ConfigFile& file() const { return file_; }
  const ConfigLocation& location() const { return where_; }
  bool file_present() const { return present_; }
  // Warnings of the file (unknown keys) and of the environment.
  const std::vector<std::string>& warnings() const { return file_.warnings; }

  // Where run directories go: SEXPGPU_RUNS > [runs] dir > "runs".
  Setting runs_dir() const;
  // The device: --device > SEXPGPU_DEVICE > [device] default > defrun
  // :device (`run_file`, when the file names one) > "auto".
  Setting device(const Flags& flags, const std::optional<std::string>& run_file = {}) const;
  // The log level: --log > SEXPGPU_LOG > [log] level > "warn".
  Setting log_level(const Flags& flags) const;
  // The plugin directories searched before the build tree's and the
  // installed ones, in order: each of SEXPGPU_PLUGIN_PATH, then each of
  // [plugins] path. Both count: the variable's come first.
  struct Dir {
    std::string dir;
    Source source;
    std::string origin;
  };
  std::vector<Dir> plugin_dirs() const;
  // S3: AWS_ENDPOINT_URL / AWS_REGION / AWS_PROFILE > [s3] endpoint /
  // region / profile > none (the profile: "default").
  Setting s3_endpoint() const;
  Setting s3_region() const;
  Setting s3_profile() const;

  // Every setting, for doctor: runs.dir, device, plugins.path (a row per
  // layer that gives directories, else one for the default), log.level,
  // s3.endpoint, s3.region, s3.profile.
  std::vector<Setting> table(const Flags& flags,
                             const std::optional<std::string>& run_file = {}) const;

 private:
  Setting pick(const std::string& name, const std::string& flag, const std::string& flag_name,
               const char* variable, const std::optional<FileValue>& in_file,
               const std::optional<std::string>& run_file, const std::string& run_file_origin,
               std::optional<std::string> fallback) const;
  std::string expand_home(const std::string& path) const;

  ConfigFile file_;
  ConfigLocation where_;
  bool present_ = false;
  Env env_;
};

}  // namespace sexpgpu::config
