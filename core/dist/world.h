// The world of a run: which process this is among how many, and where rank
// 0's store listens (cli.md, "Several GPUs and nodes"; docs/environment.md,
// "Rank variables"). Read from the environment, first of:
//
//   SEXPGPU_RANK, SEXPGPU_WORLD_SIZE, SEXPGPU_LOCAL_RANK, SEXPGPU_MASTER (host:port)
//   RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR + MASTER_PORT (torchrun): the
//     store listens on MASTER_PORT + 1, since torchrun's own store may hold
//     MASTER_PORT
//   SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (Slurm): the master from
//     SEXPGPU_MASTER or MASTER_ADDR + MASTER_PORT, which the job script sets
//
// A family is taken whole (its size variable decides which one is set);
// a malformed or inconsistent value (rank >= size, a size above kMaxWorld,
// a port outside 1..65535, no master for a world above one) is an error
// that names the variable, a usage error before anything starts.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "util/result.h"

namespace sexpgpu::dist {

inline constexpr int kMaxWorld = 65536;

struct World {
  int rank = 0, size = 1, local_rank = 0;
  std::string master_host;  // empty for a world of one
  int master_port = 0;
  // The variables it came from, for messages: "SEXPGPU_*", "torchrun
  // (RANK, WORLD_SIZE, ...)", "Slurm (SLURM_PROCID, ...)", "" when none.
  std::string origin;
  // How long a rank waits for another (rendezvous, a collective, the
  // store): SEXPGPU_RANK_TIMEOUT seconds, 1 to 86400, default 120.
  std::chrono::milliseconds timeout{120'000};

  bool several() const { return size > 1; }
  std::string master() const { return master_host + ":" + std::to_string(master_port); }
};

using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// The world the environment describes (a world of one when no variable is set).
Result<World> world_from_env(const EnvLookup& env);

}  // namespace sexpgpu::dist
