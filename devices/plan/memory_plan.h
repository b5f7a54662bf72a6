// The static memory plan: every intermediate buffer's offset in one arena,
// from the steps where it is live. Greedy best-fit over byte intervals in
// definition order: a buffer whose last reader has run is free for buffers
// defined after that step (never during it, so no kernel's output overlaps
// its own operands). Offsets and sizes are 64-byte aligned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sexpgpu::cpu {

inline constexpr size_t kArenaAlignment = 64;

struct BufferLife {
  int64_t first_step;  // the step that writes it
  int64_t last_step;   // the last step that reads it (>= first_step)
  size_t bytes;
};

struct ArenaLayout {
  std::vector<size_t> offsets;  // per buffer, in the order given
  size_t bytes = 0;             // the arena's size
};

// Buffers must be given in order of first_step.
ArenaLayout plan_arena(std::span<const BufferLife> buffers);

}  // namespace sexpgpu::cpu
