// bundle.toml (docs/bundle.md): what a bundle holds and what it was made
// from, written and read with TOML++. `sexpgpu bundle` writes it; `sexpgpu
// run DIR` reads it, checks every file against it and runs the selection it
// names. Paths in it are relative to the bundle directory, '/'-separated,
// and never leave it (a manifest naming "../x" or "/x" is refused), so a
// bundle reads nothing outside itself but the data it references.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "util/result.h"

namespace sexpgpu::bundle {

inline constexpr int64_t kFormat = 1;  // bundle.toml's own version
inline constexpr const char* kManifestName = "bundle.toml";

// A file of the bundle: the run file, a module, a copied data file, ir.json.
struct FileEntry {
  std::string path;  // "src/mlp.lisp"
  int64_t size = 0;
  std::string sha256;
};

// A data file a loader reads, as the run file names it.
struct DataEntry {
  std::string loader;  // "train"
  std::string source;  // as written: "fashion-mnist/train-images-idx3-ubyte.gz"
  int64_t size = 0;
  std::string sha256;
  std::string path;  // its copy in the bundle; "" when made with --no-data
  // An s3:// source stays a reference: its size and ETag when bundled (no
  // sha256, no copy); a run of the bundle refuses an object whose ETag
  // changed.
  std::string etag;
};

// What the run keeps on the device (train/memory_plan.h, as explain
// prints it), in bytes.
struct DeviceNeeds {
  int64_t parameters = 0, gradients = 0, optimizer_state = 0, batch = 0, activations = 0,
          workspace = 0, total = 0;
};

struct Manifest {
  int64_t format = kFormat;
  std::string sexpgpu_version;  // of the binary that made it
  std::string run_file;         // "src/mlp.lisp"
  std::string slug;             // "mlp.quick"
  std::string ir_hash;          // of ir.json, as checkpoints record it
  // The selection, as given to bundle: --variant, --set KNOB=VALUE, --point.
  std::vector<std::string> variants;
  std::vector<std::pair<std::string, std::string>> sets;
  std::string point;
  // Directories of the bundle that stand for $SEXPGPU_MODULE_PATH.
  std::vector<std::string> module_path;
  bool data_bundled = true;  // false: made with --no-data
  DeviceNeeds device;
  std::vector<FileEntry> files;
  std::vector<DataEntry> data;
};

// The text of bundle.toml, headed by a comment saying what it is.
std::string to_toml(const Manifest& m);

// bundle.toml's text read back; a failure (E-BUNDLE) names `path`, the
// line and column where TOML++ gives one, and what is wrong: not TOML, a
// key missing or of the wrong type, a path that leaves the bundle, a
// format this binary does not know.
Result<Manifest> parse_manifest(const std::string& text, const std::string& path);

// Whether `path` may name a file inside a bundle: relative, '/'-separated,
// no "." or ".." part, no empty part.
bool inside_path(const std::string& path);

}  // namespace sexpgpu::bundle
