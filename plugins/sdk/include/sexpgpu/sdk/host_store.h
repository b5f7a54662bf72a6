// sexpgpu/sdk/host_store.h: finding the run's key-value store (ABI 1.1,
// sg_host_store) on the host table's extension chain. A plugin that
// reaches other processes (Gloo's rendezvous, the NCCL unique id) asks
// for it when a device opens with a "world"; a 1.0 core, or a chain
// without it, gives null, and the plugin says it cannot serve a world:
//   const sg_host_store* store = sexpgpu::sdk::host_store(sexpgpu::sdk::served_host());
#pragma once

#include <cstddef>

#include "sexpgpu/plugin.h"

namespace sexpgpu::sdk {

// The table's sg_host_store, or nullptr. Checks every link's type and
// struct_size (a link too small to hold set and get is skipped) and stops
// after a bounded number of links, so a broken chain cannot loop forever.
inline const sg_host_store* host_store(const sg_host_api* host) noexcept {
  constexpr size_t with_extension = offsetof(sg_host_api, extension) + sizeof(void*);
  constexpr size_t with_get = offsetof(sg_host_store, get) + sizeof(void*);
  if (!host || host->struct_size < with_extension) return nullptr;
  const sg_extension_base* link = host->extension;
  for (int hops = 0; link && hops < 64; ++hops, link = link->next) {
    if (link->type != SG_EXTENSION_HOST_STORE || link->struct_size < with_get) continue;
    auto* store = reinterpret_cast<const sg_host_store*>(link);
    if (store->set && store->get) return store;
  }
  return nullptr;
}

}  // namespace sexpgpu::sdk
