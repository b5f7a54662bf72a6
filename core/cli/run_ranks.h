// `run --ranks N`, `run --gpus N` and `run --device cuda:0,1,...`: a run of N
// ranks on this machine from one command (docs/run.md, "Several GPUs and
// nodes"). The command starts N copies of itself as `sexpgpu run` (without
// the flag), each with the rank variables of one rank (SEXPGPU_RANK,
// SEXPGPU_WORLD_SIZE, SEXPGPU_LOCAL_RANK and SEXPGPU_MASTER on 127.0.0.1 and
// a free port), exactly what torchrun --nproc-per-node N would start; each
// rank on a GPU drives its own (LOCAL_RANK, or the list's entry) through the
// nccl device. Rank 0's standard output is the command's, the ranks'
// standard error is shared, SIGINT and SIGTERM reach every rank (they stop
// together, at the same step, with rank 0's checkpoint), and the exit code
// is rank 0's (or, when rank 0 ended well and another did not, the
// other's). When rank 0 ends badly the others are stopped at once: it alone
// writes the run, and they would wait for it until their timeout.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace sexpgpu::cli {

// Runs `ranks` processes, rank r with arguments args_of(r) (run's
// arguments, argv[1...]); the exit code. `command` is this command line:
// its argv[0] is the ranks', and the whole line reaches them in
// SEXPGPU_LAUNCH_COMMAND (a JSON array), which the run records as its
// command, so that `open` and the resume command name `--ranks N`.
int run_ranks(int ranks, const std::function<std::vector<std::string>(int rank)>& args_of,
              const std::vector<std::string>& command);

}  // namespace sexpgpu::cli
