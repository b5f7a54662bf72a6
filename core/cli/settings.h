// The process's settings (core/config): the config file is read once, at
// the first verb that needs a setting, and its warnings printed then. The
// verbs that compile a run file or load plugins (check, watch, ir,
// explain, diff, new, run, sweep, bundle, doctor) ask here; fmt, docs, eval,
// variants, status, checkpoint and annotate never read the config file
// (docs/environment.md).
#pragma once

#include <string>
#include <vector>

#include "config/settings.h"
#include "host/plugin_host.h"

namespace sexpgpu::cli {

// The settings, or nullptr with `error` set to "PATH:LINE:COL: message"
// (E-CONFIG) when the config file is malformed (or named and absent). The
// file's warnings go to standard error, once, as "sexpgpu VERB: W-CONFIG
// PATH:LINE:COL: ...", and its `[log] level` takes effect (set_log_level).
const config::Settings* load_settings(const char* verb, std::string& error);
// The same, printing "sexpgpu VERB: E-CONFIG ..." and setting exit_code
// to kUsage (2) when there are none.
const config::Settings* settings_or_report(const char* verb, int& exit_code);
// The settings after a verb loaded them (an unreadable file counts as none).
const config::Settings& settings();

// The plugin search path: SEXPGPU_PLUGIN_PATH's directories, the config
// file's [plugins] path, then the build tree's and the installed ones.
std::vector<host::SearchDir> plugin_search_path();

}  // namespace sexpgpu::cli
