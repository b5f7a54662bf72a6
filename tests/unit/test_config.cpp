// The config file and the effective settings (core/config): parsing with
// TOML++, errors at their line and column, warnings for unknown keys and
// credentials, and the precedence flag > environment > config file > run
// file > default, case by case for every setting.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "catch.hpp"
#include "config/config_file.h"
#include "config/settings.h"

namespace {

namespace fs = std::filesystem;
using namespace sexpgpu::config;

Env fake_env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

ConfigFile parsed(const std::string& text) {
  ConfigResult r = parse_config(text, "cfg.toml");
  INFO(r.error);
  REQUIRE(r.file);
  return *r.file;
}

std::string error_of(const std::string& text) {
  ConfigResult r = parse_config(text, "cfg.toml");
  REQUIRE_FALSE(r.file);
  return r.error;
}

Settings with(const std::string& toml, std::map<std::string, std::string> env) {
  return Settings(parsed(toml), {"cfg.toml", Source::Default}, true, fake_env(std::move(env)));
}

const char* kFull = R"([runs]
dir = "/scratch/runs"

[device]
default = "cuda:1"

[plugins]
path = ["/opt/lab/plugins", "~/my-plugins"]

[s3]
endpoint = "https://s3.example.org"
region = "eu-west-1"
profile = "lab"

[log]
level = "info"
)";

}  // namespace

TEST_CASE("the config file: every key with its place", "[config]") {
  ConfigFile f = parsed(kFull);
  CHECK(f.path == "cfg.toml");
  CHECK(f.warnings.empty());
  REQUIRE(f.runs_dir);
  CHECK(f.runs_dir->text == "/scratch/runs");
  CHECK(f.runs_dir->at == "cfg.toml:2:1");
  CHECK(f.device_default->text == "cuda:1");
  CHECK(f.device_default->at == "cfg.toml:5:1");
  CHECK(f.plugins_path->text == "/opt/lab/plugins:~/my-plugins");
  CHECK(f.s3_endpoint->text == "https://s3.example.org");
  CHECK(f.s3_region->text == "eu-west-1");
  CHECK(f.s3_profile->text == "lab");
  CHECK(f.log_level->text == "info");
  CHECK(f.log_level->at == "cfg.toml:16:1");
  // A string of ':'-joined directories works as well as an array.
  CHECK(parsed("[plugins]\npath = \"/a:/b\"\n").plugins_path->text == "/a:/b");
  // An empty file is no setting at all.
  ConfigFile empty = parsed("");
  CHECK_FALSE(empty.runs_dir);
  CHECK_FALSE(empty.log_level);
}

TEST_CASE("a malformed config file: the error has its line and column", "[config]") {
  // Not TOML: TOML++'s own message at the place it stopped.
  std::string e = error_of("[runs]\ndir = \n");
  CHECK(e.rfind("cfg.toml:2:", 0) == 0);
  e = error_of("[runs\ndir = \"x\"\n");
  CHECK(e.rfind("cfg.toml:1:", 0) == 0);
  e = error_of("[log]\nlevel = \"info\"\nlevel = \"warn\"\n");
  CHECK(e.rfind("cfg.toml:3:", 0) == 0);
  // A known key of the wrong type, at the value.
  CHECK(error_of("[runs]\ndir = 3\n") ==
        "cfg.toml:2:7: [runs] dir is an integer; it takes a string");
  CHECK(error_of("[device]\ndefault = true\n") ==
        "cfg.toml:2:11: [device] default is a boolean; it takes a string");
  CHECK(error_of("[plugins]\npath = 1.5\n") ==
        "cfg.toml:2:8: [plugins] path is a float; it takes a string (directories joined by ':') "
        "or an array of strings");
  CHECK(error_of("[plugins]\npath = [\"/a\", 2]\n") ==
        "cfg.toml:2:15: [plugins] path holds an integer; each directory is a string");
  CHECK(error_of("runs = \"/scratch\"\n") ==
        "cfg.toml:1:1: runs is a string; write it as a table, [runs]");
  // A log level that is none of the levels.
  CHECK(error_of("[log]\nlevel = \"loud\"\n") ==
        "cfg.toml:2:9: [log] level is \"loud\"; it takes trace, debug, info, warn, error or off");
  for (const char* level : kLogLevels)
    CHECK(parsed(std::string("[log]\nlevel = \"") + level + "\"\n").log_level->text == level);
}

TEST_CASE("unknown tables and keys are warnings; the rest still counts", "[config]") {
  // In file order, though TOML++ keeps keys sorted.
  ConfigFile f = parsed("top = 2\n[runs]\ndir = \"/r\"\ndri = \"/x\"\n\n[colours]\nmode = 1\n");
  CHECK(f.runs_dir->text == "/r");
  REQUIRE(f.warnings.size() == 3);
  CHECK(f.warnings[0].rfind("cfg.toml:1:1: unknown key 'top' (ignored)", 0) == 0);
  CHECK(f.warnings[1] == "cfg.toml:4:1: unknown key [runs] dri (ignored); [runs] has dir");
  CHECK(f.warnings[2] ==
        "cfg.toml:6:1: unknown table [colours] (ignored); the config file has "
        "[runs] [device] [plugins] [s3] [log]");
}

TEST_CASE("a credential in the config file is ignored and never repeated", "[config]") {
  ConfigFile f = parsed(
      "[s3]\nregion = \"eu-west-1\"\nsecret_access_key = \"wJalrXUtnFEMI/K7MDENG\"\n"
      "aws_session_token = \"FQoGZXIvYXdzEJr\"\n");
  CHECK(f.s3_region->text == "eu-west-1");
  REQUIRE(f.warnings.size() == 2);
  CHECK(f.warnings[1].rfind("cfg.toml:4:1: [s3] aws_session_token is ignored", 0) == 0);
  CHECK(f.warnings[0] ==
        "cfg.toml:3:1: [s3] secret_access_key is ignored: the config file holds no credentials "
        "(use AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or ~/.aws/credentials)");
  for (const std::string& w : f.warnings) {
    CHECK(w.find("wJalr") == std::string::npos);
    CHECK(w.find("FQoG") == std::string::npos);
  }
}

TEST_CASE("which config file: SEXPGPU_CONFIG, else ~/.config/sexpgpu/config.toml", "[config]") {
  ConfigLocation named =
      config_location(fake_env({{"SEXPGPU_CONFIG", "/etc/x.toml"}, {"HOME", "/h"}}));
  CHECK(named.path == "/etc/x.toml");
  CHECK(named.source == Source::Environment);
  ConfigLocation home = config_location(fake_env({{"HOME", "/h"}}));
  CHECK(home.path == "/h/.config/sexpgpu/config.toml");
  CHECK(home.source == Source::Default);
  CHECK(config_location(fake_env({})).path.empty());

  fs::path dir = fs::temp_directory_path() / ("sexpgpu-config-" + std::to_string(getpid()));
  fs::create_directories(dir / ".config/sexpgpu");
  std::string error;
  // The default file may be absent: no config.
  Settings none = Settings::load(fake_env({{"HOME", dir.string()}}), error);
  CHECK(error.empty());
  CHECK_FALSE(none.file_present());
  CHECK(*none.runs_dir().value == "runs");
  // A file the user named must exist.
  Settings::load(fake_env({{"SEXPGPU_CONFIG", (dir / "nope.toml").string()}}), error);
  CHECK(error == (dir / "nope.toml").string() + ": no such file (named by SEXPGPU_CONFIG)");
  // The default file, read; then a malformed one.
  std::ofstream(dir / ".config/sexpgpu/config.toml") << "[runs]\ndir = \"~/runs\"\n";
  Settings home_file = Settings::load(fake_env({{"HOME", dir.string()}}), error);
  CHECK(error.empty());
  CHECK(home_file.file_present());
  CHECK(*home_file.runs_dir().value == (dir / "runs").string());
  std::ofstream(dir / "bad.toml") << "[runs]\ndir = \"unclosed\n";
  Settings::load(fake_env({{"SEXPGPU_CONFIG", (dir / "bad.toml").string()}}), error);
  CHECK(error.rfind((dir / "bad.toml").string() + ":2:", 0) == 0);
  fs::remove_all(dir);
}

TEST_CASE("precedence of the device: flag > environment > config > run file > default",
          "[config]") {
  const std::string file = "[device]\ndefault = \"cuda:1\"\n";
  const std::map<std::string, std::string> env = {{"SEXPGPU_DEVICE", "cuda:2"}};
  const std::optional<std::string> run_file = "cuda:3";
  Setting s = with(file, env).device({"cpu", ""}, run_file);
  CHECK((*s.value == "cpu" && s.source == Source::Flag && s.origin == "--device"));
  s = with(file, env).device({}, run_file);
  CHECK((*s.value == "cuda:2" && s.source == Source::Environment && s.origin == "SEXPGPU_DEVICE"));
  s = with(file, {}).device({}, run_file);
  CHECK((*s.value == "cuda:1" && s.source == Source::ConfigFile && s.origin == "cfg.toml:2:1"));
  s = with("", {}).device({}, run_file);
  CHECK((*s.value == "cuda:3" && s.source == Source::RunFile && s.origin == "defrun :device"));
  s = with("", {}).device({}, std::nullopt);
  CHECK((*s.value == "auto" && s.source == Source::Default));
  // An empty variable counts as unset, as the shell's `VAR= cmd` means.
  s = with(file, {{"SEXPGPU_DEVICE", ""}}).device({}, run_file);
  CHECK(s.source == Source::ConfigFile);
}

TEST_CASE("precedence of the runs directory: environment > config > default", "[config]") {
  const std::string file = "[runs]\ndir = \"~/lab/runs\"\n";
  Setting s = with(file, {{"SEXPGPU_RUNS", "/scratch"}, {"HOME", "/h"}}).runs_dir();
  CHECK((*s.value == "/scratch" && s.source == Source::Environment && s.origin == "SEXPGPU_RUNS"));
  s = with(file, {{"HOME", "/h"}}).runs_dir();
  CHECK((*s.value == "/h/lab/runs" && s.source == Source::ConfigFile));
  s = with("", {}).runs_dir();
  CHECK((*s.value == "runs" && s.source == Source::Default));
}

TEST_CASE("precedence of the log level: flag > environment > config > default", "[config]") {
  const std::string file = "[log]\nlevel = \"debug\"\n";
  Setting s = with(file, {{"SEXPGPU_LOG", "error"}}).log_level({"", "trace"});
  CHECK((*s.value == "trace" && s.source == Source::Flag && s.origin == "--log"));
  s = with(file, {{"SEXPGPU_LOG", "error"}}).log_level({});
  CHECK((*s.value == "error" && s.source == Source::Environment));
  s = with(file, {}).log_level({});
  CHECK((*s.value == "debug" && s.source == Source::ConfigFile));
  s = with("", {}).log_level({});
  CHECK((*s.value == "warn" && s.source == Source::Default));
  // A variable that names no level is skipped, for the next source.
  s = with(file, {{"SEXPGPU_LOG", "loud"}}).log_level({});
  CHECK((*s.value == "debug" && s.source == Source::ConfigFile));
}

TEST_CASE("precedence of S3's endpoint, region and profile: environment > config > default",
          "[config]") {
  const std::string file =
      "[s3]\nendpoint = \"https://s3.lab\"\nregion = \"eu-west-1\"\nprofile = \"lab\"\n";
  const std::map<std::string, std::string> env = {{"AWS_ENDPOINT_URL", "http://minio:9000"},
                                                  {"AWS_REGION", "us-east-2"},
                                                  {"AWS_PROFILE", "ci"}};
  Settings both = with(file, env), config_only = with(file, {}), neither = with("", {});
  CHECK((*both.s3_endpoint().value == "http://minio:9000" &&
         both.s3_endpoint().source == Source::Environment));
  CHECK((*both.s3_region().value == "us-east-2" && both.s3_region().origin == "AWS_REGION"));
  CHECK((*both.s3_profile().value == "ci" && both.s3_profile().origin == "AWS_PROFILE"));
  CHECK((*config_only.s3_endpoint().value == "https://s3.lab" &&
         config_only.s3_endpoint().source == Source::ConfigFile));
  CHECK((*config_only.s3_region().value == "eu-west-1" &&
         config_only.s3_region().origin == "cfg.toml:3:1"));
  CHECK((*config_only.s3_profile().value == "lab" &&
         config_only.s3_profile().source == Source::ConfigFile));
  CHECK((!neither.s3_endpoint().value && neither.s3_endpoint().source == Source::Default));
  CHECK((!neither.s3_region().value && neither.s3_region().source == Source::Default));
  CHECK(
      (*neither.s3_profile().value == "default" && neither.s3_profile().source == Source::Default));
}

TEST_CASE("the plugin path: the environment's directories, then the config file's", "[config]") {
  const std::string file = "[plugins]\npath = [\"~/mine\", \"/opt/lab\"]\n";
  std::vector<Settings::Dir> dirs =
      with(file, {{"SEXPGPU_PLUGIN_PATH", "/a::/b"}, {"HOME", "/h"}}).plugin_dirs();
  REQUIRE(dirs.size() == 4);
  CHECK((dirs[0].dir == "/a" && dirs[0].source == Source::Environment));
  CHECK((dirs[1].dir == "/b" && dirs[1].source == Source::Environment));
  CHECK((dirs[2].dir == "/h/mine" && dirs[2].source == Source::ConfigFile &&
         dirs[2].origin == "cfg.toml:2:1"));
  CHECK((dirs[3].dir == "/opt/lab" && dirs[3].source == Source::ConfigFile));
  dirs = with(file, {{"HOME", "/h"}}).plugin_dirs();
  REQUIRE(dirs.size() == 2);
  CHECK(dirs[0].dir == "/h/mine");
  CHECK(with("", {}).plugin_dirs().empty());
}

TEST_CASE("the settings table: every setting once, the plugin path per layer", "[config]") {
  std::vector<Setting> rows =
      with(kFull, {{"SEXPGPU_PLUGIN_PATH", "/env"}, {"HOME", "/h"}}).table({}, std::nullopt);
  std::vector<std::string> names;
  for (const Setting& r : rows) names.push_back(r.name);
  CHECK(names == std::vector<std::string>{"runs.dir", "device", "plugins.path", "plugins.path",
                                          "log.level", "s3.endpoint", "s3.region", "s3.profile"});
  CHECK((*rows[2].value == "/env" && rows[2].source == Source::Environment));
  CHECK(
      (*rows[3].value == "/opt/lab/plugins:/h/my-plugins" && rows[3].source == Source::ConfigFile));
  CHECK(std::string(source_name(Source::Flag)) == "flag");
  CHECK(std::string(source_name(Source::Environment)) == "environment");
  CHECK(std::string(source_name(Source::ConfigFile)) == "config file");
  CHECK(std::string(source_name(Source::RunFile)) == "run file");
  CHECK(std::string(source_name(Source::Default)) == "default");
}
