// Passes over an IR function. Each keeps the function's meaning and its
// inputs/outputs, leaves it verified, and renumbers nodes densely.
#pragma once

#include "ir/graph.h"

namespace sexpgpu::ir {

// Removes nodes no output depends on (Input and Param nodes stay: they are
// the calling convention).
void eliminate_dead_code(Function& fn);
// Merges nodes with the same op, operands and attributes (random ops are
// distinct by their `stream`, so they merge only when truly the same draw).
void eliminate_common_subexpressions(Function& fn);
// Folds nodes whose operands are all scalar constants (full of shape []) and
// simplifies identities: x+0, x*1, reshape of a reshape, an identity permute
// or reshape, cast to the same dtype.
void fold_constants(Function& fn);
// Marks maximal chains of elementwise nodes (every consumer but the last in
// the same group) with one fusion_group for devices that fuse.
void fuse_elementwise(Function& fn);

// The standard pipeline: fold, CSE, DCE, the fused classifier
// (passes/fuse_classifier.h), fuse; verifying after each.
// Returns the verifier's message if a pass broke the function (a core bug).
std::string optimize(const Module& module, Function& fn);
// The same without the fused classifier (what SEXPGPU_FUSE_CLASSIFIER=0
// gives), for comparing the two.
std::string optimize_without_classifier(const Module& module, Function& fn);

}  // namespace sexpgpu::ir
