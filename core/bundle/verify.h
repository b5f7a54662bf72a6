// Checking a bundle before it runs (docs/bundle.md): every file against
// bundle.toml, and the decision on a bundle another sexpgpu made. Also the
// path arithmetic the bundle's layout rests on, so that making a bundle and
// running one agree on it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bundle/manifest.h"
#include "util/result.h"

namespace sexpgpu::bundle {

// Every file bundle.toml lists, in `dir`: present, of its size and SHA-256.
// A failure (E-BUNDLE) names each file that is missing or changed and how.
Status check_files(const std::filesystem::path& dir, const Manifest& m);

// What to do with a bundle, given the sexpgpu version that made it, this
// one's, and the IR hash it recorded against the one compiled here.
enum class Verdict {
  Run,     // same version, same IR
  Warn,    // another version, same IR: W-BUNDLE-VERSION, then it runs
  Refuse,  // the IR differs: E-BUNDLE (the run would not be the one bundled)
};
struct VersionCheck {
  Verdict verdict = Verdict::Run;
  std::string message;  // for Warn and Refuse: what differs and what to do
};
VersionCheck check_version(const std::string& made_by, const std::string& running,
                           const std::string& recorded_ir_hash,
                           const std::string& compiled_ir_hash);

// The deepest directory holding every one of `dirs` (absolute, normalised).
std::filesystem::path common_directory(const std::vector<std::filesystem::path>& dirs);

// `path` relative to `root` as a bundle path ("src/mlp.lisp"), or nullopt
// when it is not inside `root` (both absolute and normalised).
std::optional<std::string> relative_inside(const std::filesystem::path& root,
                                           const std::filesystem::path& path);

// `path` made absolute and normalised lexically (symlinks kept: the
// run file's own view of its neighbours is what require and the data
// lookup use).
std::filesystem::path absolute_path(const std::filesystem::path& path);

// The IR's source file names (ir::Module::files) that lie inside the
// bundle `dir`, renamed relative to it, so that the IR, its hash and the
// checkpoints' record of it are the same wherever the bundle is.
void relabel_files(std::vector<std::string>& files, const std::filesystem::path& dir);

}  // namespace sexpgpu::bundle
