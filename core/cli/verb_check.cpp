// sexpgpu check FILE... [--json] [--strict]: every diagnostic of the files
// (a :reduce is checked against the reducer plugins that load here).
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/settings.h"
#include "cli/verbs.h"
#include "runfile/session.h"

namespace sexpgpu::cli {

void add_check(CLI::App& app, int& exit_code) {
  struct Opts {
    std::vector<std::string> files;
    bool json = false;
    bool strict = false;
    LimitFlags limits;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("check", "read and evaluate files, reporting every diagnostic");
  cmd->add_option("files", opts->files, "run files to check")->required();
  cmd->add_flag("--json", opts->json, "print the diagnostics as one JSON document");
  cmd->add_flag("--strict", opts->strict, "warnings fail the check too");
  opts->limits.add_to(cmd);
  cmd->callback([opts, &exit_code]() {
    if (!settings_or_report("check", exit_code)) return;
    // The reducers a defdiagnostic may name: the core's and the plugins'
    // that load here, loaded once for all the files.
    auto reducers = lazy_reducer_plugins();
    std::vector<Diagnostic> all;
    SourceMap* sources = nullptr;
    // One session per file: files are independent experiments.
    std::vector<std::unique_ptr<runfile::Session>> sessions;
    std::string human;
    size_t errors = 0, warnings = 0;
    for (const std::string& file : opts->files) {
      auto s = std::make_unique<runfile::Session>(opts->limits.limits);
      s->reducer_plugins = reducers;
      if (!opts->limits.request(s->selection().request)) {
        exit_code = kUsage;
        return;
      }
      if (!load_or_report(*s, file, "check")) {
        if (opts->json) std::cout << unreadable_file_json(file).dump(2) << "\n";
        exit_code = kUsage;
        return;
      }
      s->compile();
      errors += s->sink.error_count();
      warnings += s->sink.warning_count();
      if (opts->json) {
        for (const Diagnostic& d : s->sink.all()) all.push_back(d);
      } else {
        for (const Diagnostic& d : s->sink.all())
          human += render_human(s->sources, d, use_color_stdout());
      }
      sources = &s->sources;
      sessions.push_back(std::move(s));
    }
    if (opts->json) {
      // Diagnostics of different files refer to different source maps; render
      // each file's list and merge as JSON.
      nlohmann::json merged = nlohmann::json::array();
      for (auto& s : sessions)
        for (auto& j : nlohmann::json::parse(render_json(s->sources, s->sink.all())))
          merged.push_back(j);
      std::cout << merged.dump(2) << "\n";
    } else {
      std::cout << human;
      if ((errors || warnings) && !quiet())
        std::cerr << errors << " error" << (errors == 1 ? "" : "s") << ", " << warnings
                  << " warning" << (warnings == 1 ? "" : "s") << "\n";
    }
    (void)sources;
    exit_code = errors || (opts->strict && warnings) ? kFileErrors : kOk;
    // The process ends next: freeing every compile-time object one by one
    // would cost more than checking did, so the sessions are left to the OS.
    for (auto& s : sessions) (void)s.release();
  });
}

}  // namespace sexpgpu::cli
