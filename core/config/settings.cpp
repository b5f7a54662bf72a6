// The effective settings (settings.h): each resolver walks flag,
// environment, config file, run file and default, and says which one gave
// the value.
#include "config/settings.h"

#include <cstdlib>
#include <filesystem>

namespace sexpgpu::config {

const char* source_name(Source s) {
  switch (s) {
    case Source::Flag: return "flag";
    case Source::Environment: return "environment";
    case Source::ConfigFile: return "config file";
    case Source::RunFile: return "run file";
    case Source::Default: return "default";
  }
  return "default";
}

Env process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
}

ConfigLocation config_location(const Env& env) {
  if (auto named = env("SEXPGPU_CONFIG")) return {*named, Source::Environment};
  if (auto home = env("HOME")) return {*home + "/.config/sexpgpu/config.toml", Source::Default};
  return {"", Source::Default};
}

Settings::Settings(ConfigFile file, ConfigLocation where, bool present, Env env)
    : file_(std::move(file)), where_(std::move(where)), present_(present), env_(std::move(env)) {}

Settings Settings::load(Env env, std::string& error) {
  error.clear();
  ConfigLocation where = config_location(env);
  std::error_code ec;
  bool exists = !where.path.empty() && std::filesystem::exists(where.path, ec);
  if (!exists) {
    // The user named this file: its absence is a mistake, not "no config".
    if (where.source == Source::Environment)
      error = where.path + ": no such file (named by SEXPGPU_CONFIG)";
    return Settings(ConfigFile{}, where, false, std::move(env));
  }
  if (std::filesystem::is_directory(where.path, ec)) {
    error = where.path + ": is a directory, not a config file";
    return Settings(ConfigFile{}, where, false, std::move(env));
  }
  ConfigResult r = read_config(where.path);
  if (!r.file) {
    error = r.error;
    return Settings(ConfigFile{}, where, false, std::move(env));
  }
  return Settings(std::move(*r.file), where, true, std::move(env));
}

std::string Settings::expand_home(const std::string& path) const {
  if (path != "~" && !path.starts_with("~/")) return path;
  auto home = env_("HOME");
  return home ? *home + path.substr(1) : path;
}

Setting Settings::pick(const std::string& name, const std::string& flag,
                       const std::string& flag_name, const char* variable,
                       const std::optional<FileValue>& in_file,
                       const std::optional<std::string>& run_file,
                       const std::string& run_file_origin,
                       std::optional<std::string> fallback) const {
  if (!flag.empty()) return {name, flag, Source::Flag, flag_name};
  if (variable)
    if (auto v = env_(variable)) return {name, *v, Source::Environment, variable};
  if (in_file && !in_file->text.empty())
    return {name, in_file->text, Source::ConfigFile, in_file->at};
  if (run_file) return {name, *run_file, Source::RunFile, run_file_origin};
  return {name, std::move(fallback), Source::Default, "built in"};
}

Setting Settings::runs_dir() const {
  Setting s = pick("runs.dir", "", "", "SEXPGPU_RUNS", file_.runs_dir, {}, "", "runs");
  if (s.source == Source::ConfigFile) s.value = expand_home(*s.value);
  return s;
}

Setting Settings::device(const Flags& flags, const std::optional<std::string>& run_file) const {
  return pick("device", flags.device, "--device", "SEXPGPU_DEVICE", file_.device_default, run_file,
              "defrun :device", "auto");
}

Setting Settings::log_level(const Flags& flags) const {
  // SEXPGPU_LOG that names no level is skipped (the log prints a warning
  // when it starts, util/log.h): a bad log level never stops a verb.
  auto env = env_("SEXPGPU_LOG");
  const char* variable = env && is_log_level(*env) ? "SEXPGPU_LOG" : nullptr;
  return pick("log.level", flags.log, "--log", variable, file_.log_level, {}, "", "warn");
}

std::vector<Settings::Dir> Settings::plugin_dirs() const {
  std::vector<Dir> out;
  auto split = [&](const std::string& text, Source source, const std::string& origin,
                   bool from_file) {
    size_t start = 0;
    while (start <= text.size()) {
      size_t colon = text.find(':', start);
      if (colon == std::string::npos) colon = text.size();
      if (colon > start) {
        std::string dir = text.substr(start, colon - start);
        out.push_back({from_file ? expand_home(dir) : dir, source, origin});
      }
      start = colon + 1;
    }
  };
  if (auto v = env_("SEXPGPU_PLUGIN_PATH"))
    split(*v, Source::Environment, "SEXPGPU_PLUGIN_PATH", false);
  if (file_.plugins_path)
    split(file_.plugins_path->text, Source::ConfigFile, file_.plugins_path->at, true);
  return out;
}

Setting Settings::s3_endpoint() const {
  return pick("s3.endpoint", "", "", "AWS_ENDPOINT_URL", file_.s3_endpoint, {}, "", std::nullopt);
}
Setting Settings::s3_region() const {
  return pick("s3.region", "", "", "AWS_REGION", file_.s3_region, {}, "", std::nullopt);
}
Setting Settings::s3_profile() const {
  return pick("s3.profile", "", "", "AWS_PROFILE", file_.s3_profile, {}, "", "default");
}

std::vector<Setting> Settings::table(const Flags& flags,
                                     const std::optional<std::string>& run_file) const {
  std::vector<Setting> out = {runs_dir(), device(flags, run_file)};
  std::vector<Dir> dirs = plugin_dirs();
  // One row per layer that gives directories, in search order.
  for (Source layer : {Source::Environment, Source::ConfigFile}) {
    std::string joined, origin;
    for (const Dir& d : dirs)
      if (d.source == layer) joined += (joined.empty() ? "" : ":") + d.dir, origin = d.origin;
    if (!joined.empty()) out.push_back({"plugins.path", joined, layer, origin});
  }
  if (dirs.empty())
    out.push_back(
        {"plugins.path", "the build tree's, then the installed", Source::Default, "built in"});
  out.push_back(log_level(flags));
  out.push_back(s3_endpoint());
  out.push_back(s3_region());
  out.push_back(s3_profile());
  return out;
}

}  // namespace sexpgpu::config
