// Gradient buckets for data parallel (docs/devices.md, "Gradient buckets"):
// groups a function's gradients into buckets and makes each bucket one
// all_reduce op (ops.def, "Collective"), so the processes of a run average
// their gradients in a few large transfers, each started as soon as its
// last gradient is computed, while the rest of the backward runs.
//
// Gradients are taken in the order of the node that computes each (by id,
// ascending: the backward computes the last layers' first), one dtype per
// bucket, a bucket filled greedily until the next gradient would pass
// `bucket_bytes`; a gradient larger than that is a bucket alone. Each
// bucket's all_reduce (reduction "mean") is placed right after the node
// that completes it, and each gradient's use becomes reshape(slice(bucket))
// (no slice for a bucket of one, no reshape for a 1-D gradient): for
// train_step's outputs after every other node (only the outputs wait for a
// reduction), for update's inputs right after the bucket. The
// function is rebuilt in definition order, so it verifies as before; it
// does not depend on the number of processes (in a world of one the op only
// packs).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace sexpgpu::ir {

struct GradientBuckets {
  int buckets = 0;
  // new_id[old]: where node `old` of the function before the pass is now.
  std::vector<NodeId> new_id;
};

// train_step: the outputs named `outputs` ("grad:PATH") are the gradients;
// each output is repointed to its gradient averaged over the processes.
GradientBuckets bucket_gradient_outputs(Function& fn, std::span<const std::string> outputs,
                                        int64_t bucket_bytes);

// update (:microbatches > 1): the Input nodes named `inputs` ("grad:PATH",
// the sums over microbatches) are the gradients; every use of one (operands
// and outputs) is repointed to it averaged over the processes.
GradientBuckets bucket_gradient_inputs(Function& fn, std::span<const std::string> inputs,
                                       int64_t bucket_bytes);

// The inverse, for a device without other ranks (a world of one, where
// all_reduce is the identity on each operand): every value that unpacks a
// bucket member (the reshape of its slice, or the bucket of one itself)
// is replaced by the member, and what is then dead goes. The backward's
// gradients are written where they were before the pass, without the
// copies into a bucket and back (1.7% of a GPT-2 step on an H200). A
// bucket read whole (an output, a test's) stays. The number of all_reduce
// ops removed.
int elide_buckets(Function& fn);
// `module` with its function `name` through elide_buckets.
Module without_buckets(Module module, std::string_view name);

}  // namespace sexpgpu::ir
