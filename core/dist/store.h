// The run's key-value store over TCP: the one networking piece the project
// writes itself (the collectives are Gloo's and NCCL's). Rank 0 serves it on
// the world's master port; every rank, 0 included, is a client. It hands out
// the NCCL unique id, is Gloo's rendezvous Store (through the plugin ABI's
// sg_host_store), and knows which ranks are connected, so that a rank that
// dies is named (E-RANK) rather than waited for.
//
// Protocol: length-prefixed frames over one connection per rank (HELLO
// rank, SET, GET, GONE, BYE). A client that closes without BYE is gone.
// Every call has a timeout; none blocks forever.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "dist/world.h"
#include "util/result.h"

namespace sexpgpu::dist {

class Store {
 public:
  // Rank 0 starts the server on world.master_port (every interface) and
  // connects to it; the other ranks connect, retrying until world.timeout.
  // Registers this rank: a second process claiming a rank already
  // connected is refused (an error naming the rank), as is a world size
  // that differs from the server's.
  static Result<std::unique_ptr<Store>> join(const World& world);
  virtual ~Store() = default;

  // Sets `key` for every rank.
  virtual Status set(const std::string& key, const std::vector<std::byte>& value) = 0;
  // Waits until `key` is set (at most `timeout`), then gives its value.
  virtual Result<std::vector<std::byte>> get(const std::string& key,
                                             std::chrono::milliseconds timeout) = 0;
  // Waits until every rank has reached barrier `name` (at most `timeout`).
  virtual Status barrier(const std::string& name, std::chrono::milliseconds timeout) = 0;
  // The ranks that were connected and closed without leave(), ascending;
  // an error when the server itself is unreachable (rank 0 is gone).
  virtual Result<std::vector<int>> gone() = 0;
  // An orderly goodbye (BYE), at the end of a run that ended well.
  virtual void leave() = 0;

  virtual const World& world() const = 0;
};

}  // namespace sexpgpu::dist
