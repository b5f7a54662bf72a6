// `run --ranks N` and `run --gpus N`: a run of N ranks on this machine from
// one command (docs/run.md, "Several GPUs and nodes"). The command starts N
// copies of itself as `sexpgpu run` (without the flag), each with the rank
// variables of one rank (SEXPGPU_RANK, SEXPGPU_WORLD_SIZE, SEXPGPU_LOCAL_RANK
// and SEXPGPU_MASTER on 127.0.0.1 and a free port), exactly what torchrun
// --nproc-per-node N would start; with --gpus, each on the nccl device and
// GPU LOCAL_RANK. Rank 0's standard output is the command's, the ranks'
// standard error is shared, SIGINT and SIGTERM reach every rank (each
// checkpoints at the same step), and the exit code is rank 0's (or, when
// rank 0 ended well and another did not, the other's).
#pragma once

#include <string>
#include <vector>

namespace sexpgpu::cli {

// Runs `args` (run's arguments, the flag removed) as `ranks` processes; the
// exit code. `argv0` is what the ranks see as argv[0].
int run_ranks(int ranks, const std::vector<std::string>& args, const std::string& argv0);

}  // namespace sexpgpu::cli
