// What `bundle` (verb_bundle.cpp) and `run DIR` (verb_run.cpp) share about
// bundles (docs/bundle.md): the IR hash of a compiled bundle, the user's
// modules of a session, and opening a bundle directory to run it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "bundle/manifest.h"
#include "runfile/session.h"
#include "util/result.h"

namespace sexpgpu::cli {

// The run's IR with its source files named relative to the bundle `dir`
// (bundle::relabel_files), and the hash of its JSON as checkpoints record
// it: the same wherever the bundle lies. Changes `compiled`'s module.
std::string bundle_ir_hash(runfile::CompiledRun& compiled, const std::filesystem::path& dir);

// The files of the user's own modules a session loaded (not the standard
// ones, which are the binary's), absolute.
std::vector<std::filesystem::path> user_modules(const runfile::Session& s);

// $SEXPGPU_MODULE_PATH set to the bundle's module directories alone, so a
// bundle never picks a module up from the machine it runs on.
void use_bundle_module_path(const std::filesystem::path& dir, const bundle::Manifest& m);

// Whether `path` is a bundle: a directory with a bundle.toml.
bool is_bundle(const std::string& path);

// `run DIR`: bundle.toml read and every file checked (E-BUNDLE naming what
// changed, or what is malformed).
Result<bundle::Manifest> open_bundle(const std::filesystem::path& dir);

// A --no-data bundle's data as this machine's lookup found them (the
// compiled loaders) against bundle.toml: E-BUNDLE naming a file of another
// size. Only the size is compared: hashing a large data set at every start
// of a preemptible job would cost more than the check is worth.
Status check_referenced_data(const runfile::CompiledRun& compiled, const bundle::Manifest& m);

}  // namespace sexpgpu::cli
