// The ranks of a run of several processes as the nccl device reaches them:
// one NCCL communicator per process (one GPU each), made from a unique id
// that rank 0 creates and hands to the others through the host's store
// (sg_host_store, plugin.h 1.1). The IR's all_reduce op and the ABI's
// all_reduce and broadcast are NCCL calls on it.
//
// Faults: NCCL reports a rank that died only asynchronously, and a rank
// that hangs not at all, so every wait for the device's stream watches the
// communicator (ncclCommGetAsyncError) and the world's timeout, and aborts
// the communicator (ncclCommAbort) rather than wait forever; the message
// says which, and the trainer reports it as E-RANK.
#pragma once

#include <nlohmann/json.hpp>

#include "cuda/device_api.h"

namespace sexpgpu::nccl {

// Joins options' "world" ({} or size 1: a communicator of one rank, so a
// world of one runs the same NCCL calls) on the context's GPU.
ir::Result<std::unique_ptr<cuda::Peers>> join(const nlohmann::json& world,
                                              const cuda::Context& context, cudaStream_t stream);

// NCCL's version as "2.28.3", from the library that loaded.
std::string version();

}  // namespace sexpgpu::nccl
