// The process's settings, read once (settings.h).
#include "cli/settings.h"

#include <iostream>
#include <memory>

#include "cli/verbs.h"

namespace sexpgpu::cli {

namespace {

constexpr const char* kWarning = "W-CONFIG";  // docs/errors.md

struct Loaded {
  std::unique_ptr<config::Settings> settings;
  std::string error;  // "" when settings hold the file
};

Loaded& loaded(const char* verb) {
  static Loaded once = [verb] {
    Loaded l;
    std::string error;
    l.settings =
        std::make_unique<config::Settings>(config::Settings::load(config::process_env(), error));
    if (!error.empty()) {
      l.error = error;
    } else {
      if (!quiet())
        for (const std::string& w : l.settings->warnings())
          std::cerr << "sexpgpu" << (*verb ? " " : "") << verb << ": " << kWarning << " " << w
                    << "\n";
      if (const auto& level = l.settings->file().log_level; level && !level->text.empty())
        set_log_level(level->text);
    }
    return l;
  }();
  return once;
}

}  // namespace

const config::Settings* load_settings(const char* verb, std::string& error) {
  Loaded& l = loaded(verb);
  error = l.error;
  return l.error.empty() ? l.settings.get() : nullptr;
}

const config::Settings* settings_or_report(const char* verb, int& exit_code) {
  std::string error;
  const config::Settings* s = load_settings(verb, error);
  if (!s) {
    std::cerr << "sexpgpu " << verb << ": E-CONFIG " << error << "\n";
    exit_code = kUsage;
  }
  return s;
}

const config::Settings& settings() {
  return *loaded("").settings;
}

std::vector<host::SearchDir> plugin_search_path() {
  std::vector<host::SearchDir> first;
  for (const config::Settings::Dir& d : settings().plugin_dirs())
    first.push_back(
        {d.dir, d.source == config::Source::Environment ? "SEXPGPU_PLUGIN_PATH" : "config file"});
  return host::search_path_after(std::move(first));
}

}  // namespace sexpgpu::cli
