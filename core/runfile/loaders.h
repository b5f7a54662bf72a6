// The run file's `defloader` forms at check time (spec/run-file.md, "Loaders
// and `prepare`"): the source constructors (idx, tokens, text, npy, csv,
// synthetic) build a description, %defloader (what the defloader macro
// expands to) opens it with the data library and records the loader, and
// `field` reads a batch's field. The training loop takes the declarations
// from loaders_of(); prepare and objective are staged on batch_types().
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/loader.h"
#include "data/source.h"
#include "lisp/interp.h"

namespace sexpgpu::runfile {

// One field of a batch: its keyword name without the colon ("x") and its
// type with the leading batch dimension.
struct BatchFieldType {
  std::string name;
  ir::TensorType type;
};

struct LoaderDecl {
  std::string name;  // lower case, as written: "train"
  Span span;         // the defloader form
  data::SourcePtr source;
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

// The loaders an interpreter has read (empty before register_loaders).
const Loaders& loaders_of(const lisp::Interp& in);

// Registers the source constructors, %defloader and field, with a fresh
// (empty) registry.
void register_loaders(lisp::Interp& in);

}  // namespace sexpgpu::runfile
