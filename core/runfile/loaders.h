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
#include "spec/loaders.h"

namespace sexpgpu::runfile {

// The loaders as the run spec holds them (spec/loaders.h).
using spec::BatchFieldType;
using spec::LoaderDecl;
using spec::Loaders;

// The loaders an interpreter has read (empty before register_loaders).
const Loaders& loaders_of(const lisp::Interp& in);

// Registers the source constructors, %defloader and field, with a fresh
// (empty) registry.
void register_loaders(lisp::Interp& in);

}  // namespace sexpgpu::runfile
