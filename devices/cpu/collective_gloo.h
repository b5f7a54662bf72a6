// The CPU device's Collective (collective.h) over Gloo, the collective
// library PyTorch uses on CPUs: a gloo::rendezvous::Context whose ranks
// find each other through the host's key-value store (sg_host_store,
// plugin.h 1.1) and then talk over Gloo's TCP transport. The plugin makes
// one when its open options carry a "world" of more than one process.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "cpu/collective.h"
#include "sexpgpu/plugin.h"
#include "util/result.h"

namespace sexpgpu::cpu {

// The device open options' "world" (plugin.h), already checked.
struct GlooWorld {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  std::string master_host;  // "127.0.0.1", "node0", "::1" (no brackets)
  int master_port = 0;
  std::chrono::milliseconds timeout{120'000};
};

// The local address this process is reached at by the others: the one its
// route to the master leaves from (127.0.0.1 when the master is local; the
// cluster NIC's on a node). Nothing is sent: a UDP socket's connect() only
// picks the route. Why not, when the master's host does not resolve.
Result<std::string> address_towards(const std::string& host, int port);

// Joins the world: every rank's TCP address goes through `store` (keys
// "gloo/<n>/...", n counting the contexts this process made, so a device
// opened again in one run never meets an earlier one's keys), and each
// pair connects, all within world.timeout. Also the timeout of every
// later collective. A failure is "rank communication failed: ..." saying
// why (a rank that never came, the store gone).
Result<std::shared_ptr<Collective>> make_gloo_collective(const GlooWorld& world,
                                                         const sg_host_store* store);

}  // namespace sexpgpu::cpu
