// The run's loaders as the run spec holds them (run_spec.h; spec/run-file.md,
// "Loaders and `prepare`"): each defloader's opened source, its options and
// its curriculum stages, as plain data. The compiler (runfile/loaders.h)
// fills them in from the file; the training loop makes its data::Loader
// from them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "data/loader.h"
#include "data/source.h"
#include "ir/types.h"
#include "util/diagnostics.h"

namespace sexpgpu::spec {

// One field of a batch: its keyword name without the colon ("x") and its
// type with the leading batch dimension.
struct BatchFieldType {
  std::string name;
  ir::TensorType type;
};

// A data file a source reads: its path as the run file writes it and the
// file the lookup found for it (data/lookup.h). `bundle` copies and checks
// these; the loop reads the source, never this.
struct DataFile {
  std::string written;          // "fashion-mnist/train-images-idx3-ubyte.gz"
  std::filesystem::path found;  // "/usr/share/datasets/fashion-mnist/..."
};

struct LoaderDecl {
  std::string name;  // lower case, as written: "train"
  Span span;         // the defloader form
  data::SourcePtr source;
  std::vector<DataFile> data_files;  // in the order the source names them
  // The options as written; options.seed is :seed, or 0 where the run's seed
  // applies (has_seed says which).
  data::LoaderOptions options;
  bool has_seed = false;
  // :stages: (stage name, overrides), in order.
  std::vector<std::pair<std::string, data::StageOverrides>> stages;
  // Batches per epoch and the rows of an epoch's last batch (== batch with
  // :drop-last or an even split): the step is compiled for both sizes.
  int64_t batches_per_epoch = 0;
  int64_t last_batch_size = 0;

  // The batch as prepare/objective receive it, `rows` rows (default: batch),
  // and for a token source windows of `seq_len` (default: its own).
  std::vector<BatchFieldType> batch_types(int64_t rows = 0, int64_t seq_len = 0) const;
  // The options in curriculum stage `stage`: its entry of :stages, and for
  // what the entry leaves out the loader's own batch and (token sources)
  // :seq-len, so a later stage can go back to them.
  data::StageOverrides overrides_for(const std::string& stage) const;
};

struct Loaders {
  std::vector<LoaderDecl> decls;  // in definition order
  const LoaderDecl* find(const std::string& name) const;
};

}  // namespace sexpgpu::spec
