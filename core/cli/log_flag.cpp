// --log LEVEL, global like --quiet (before or after the verb), and
// SEXPGPU_LOG: the level of the core's log (util/log.h, docs/cli.md
// "Logging"), set after the command line is parsed and before the verb runs.
#include <cstdlib>
#include <iostream>
#include <optional>

#include "cli/verbs.h"
#include "util/log.h"

namespace sexpgpu::cli {

namespace {

std::optional<std::string> g_log_flag;

// A level name, or a usage error (exit 2) naming the levels.
CLI::Validator log_level_name() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (log::parse_level(text)) return "";
        return "'" + text + "' is not a log level; the levels: " + log::kLevelNames;
      },
      "LEVEL");
}

void add_log_option(CLI::App& app) {
  if (!app.get_option_no_throw("--log"))
    app.add_option_function<std::string>(
           "--log", [](const std::string& v) { g_log_flag = v; },
           std::string("log level on standard error: ") + log::kLevelNames +
               " (default warn; SEXPGPU_LOG; any verb)")
        ->check(log_level_name());
  for (CLI::App* sub : app.get_subcommands({})) add_log_option(*sub);
}

// Resolves and sets the level; `warn`: print a warning about a setting
// that names no level (once: at the first call).
void apply_level(const std::optional<std::string>& config_level, bool warn) {
  log::LevelChoice choice =
      log::resolve_level(g_log_flag, std::getenv("SEXPGPU_LOG"), config_level);
  // --quiet silences all but errors, whatever the level asked for.
  if (quiet() && choice.level < log::Level::Error) choice.level = log::Level::Error;
  if (warn && !choice.warning.empty() && !quiet())
    std::cerr << "sexpgpu: warning: " << choice.warning << "\n";
  log::init(choice.level);
  log::debug("log: level {} (from {})", log::level_name(choice.level), choice.source);
}

}  // namespace

std::string log_flag() {
  return g_log_flag.value_or("");
}

void set_log_level(const std::optional<std::string>& config_level) {
  apply_level(config_level, false);
}

void add_log(CLI::App& app) {
  add_log_option(app);
  // The app's parse-complete callback runs after every option of the line
  // is stored (both --log and --quiet, wherever they were) and before the
  // verb's own callback: the level is in force for all the verb does.
  // The config file's [log] level joins when a verb reads the settings.
  app.parse_complete_callback([] { apply_level(std::nullopt, true); });
}

}  // namespace sexpgpu::cli
