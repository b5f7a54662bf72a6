// The fixed training loop (run-file.md, observe.md): given a run spec
// (spec/run_spec.h), trains it on a device plugin, writing the run directory (events,
// status, checkpoints) as it goes, and returns the process's exit code.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/plugin_host.h"
#include "spec/run_spec.h"

namespace sexpgpu::train {

struct RunOptions {
  std::string file;     // the run file as given
  std::string run_dir;  // where everything goes (made if missing)
  std::string slug;
  std::string device = "auto";         // cpu, cuda, cuda:N, auto
  int threads = 0;                     // CPU device threads; 0: every core
  bool deterministic = false;          // results that repeat bit for bit (GPU devices)
  std::optional<int64_t> steps, seed;  // --steps, --seed
  std::string resume;                  // "", "latest" or a checkpoint path
  bool allow_changed = false;
  bool json = false;               // events on standard output, one per line
  bool quiet = false;              // nothing on standard error but errors
  std::vector<std::string> sinks;  // NAME[:ARG]
  std::vector<std::string> diags;  // --diag NAME: sampled besides defrun's :diagnostics
  std::vector<std::string> argv;   // the command line, for open and the resume command
  nlohmann::json selection;        // {"variants", "knobs": {...}, "slug"}
  std::string file_text;           // the run file's text, copied into the run dir
  std::vector<std::pair<std::string, std::string>> modules;  // user modules: path, text
};

// Trains; the result is the exit code of cli.md (0, 3, 4, 75, 130).
int train(const spec::RunSpec& run, const RunOptions& options, host::PluginHost& plugins);

// The `close` event of a run that failed before its directory was written
// (no events.jsonl): state "failed", `exit_code`, an empty summary and
// `error` ({code, message}, and for a file's errors `diagnostics`, the
// list check --json gives). run --json prints it as its last line.
std::string unstarted_close_line(int exit_code, const nlohmann::json& error);

// The ordinal of a device spec: 0 for "cpu" or "cuda", N for "cuda:N";
// nullopt when what follows the ':' is not a number from 0 to kMaxOrdinal.
constexpr int kMaxOrdinal = 1023;
std::optional<int> device_ordinal(const std::string& spec);

// A content hash for run files, modules and the IR: 16 hex digits of
// 64-bit FNV-1a (identity, not security).
std::string content_hash(std::string_view text);

}  // namespace sexpgpu::train
