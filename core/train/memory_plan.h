// The core's memory plan of a compiled run (spec cli.md, explain; errors.md,
// E-MEMORY): what the training loop keeps on the device between steps and
// the largest arenas of its functions, from the IR alone (no device). explain
// prints it; run checks it against the device before the run directory is
// written, and doctor FILE against every device it sees.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "spec/run_spec.h"

namespace sexpgpu::train {

struct RunMemory {
  std::string step_function;  // the training step's shape that needs the most
  int64_t parameters = 0, gradients = 0, optimizer_state = 0, update_outputs = 0;
  int64_t batch = 0;        // the step's inputs
  int64_t activations = 0;  // the step's intermediates at their peak
  int64_t workspace = 0;    // the largest arena of the other functions
  std::string workspace_function;
  // The sum, saturating at 2^63-1 (a plan that large fits no device).
  int64_t total() const;
};

RunMemory plan_run_memory(const spec::RunSpec& run);

// The E-MEMORY message when the plan does not fit `have_bytes` of device
// `device`, naming what is needed and what the device has; nullopt when it
// fits.
std::optional<std::string> memory_shortfall(const RunMemory& plan, uint64_t have_bytes,
                                            const std::string& device);

// "29.0 TiB" and the like, for messages.
std::string bytes_text(uint64_t bytes);

}  // namespace sexpgpu::train
