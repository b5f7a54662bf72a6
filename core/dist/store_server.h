// Rank 0's side of the run's store (store.h): a thread serving every
// rank's connection. Internal to core/dist; store.cpp starts it.
#pragma once

#include <memory>

#include "dist/wire.h"
#include "util/result.h"

namespace sexpgpu::dist {

class Server {
 public:
  // Listens on every interface at world.master_port (SO_REUSEADDR) and
  // starts the thread; E-WORLD when the port cannot be had.
  static Result<std::unique_ptr<Server>> start(const World& world);
  // Stops the thread and closes every connection.
  virtual ~Server() = default;
  // Waits (at most until `deadline`) until no rank that joined is still
  // connected without having said goodbye: rank 0 serves the others' last
  // calls before its process ends.
  virtual void wait_all_left(wire::Clock::time_point deadline) = 0;
};

}  // namespace sexpgpu::dist
