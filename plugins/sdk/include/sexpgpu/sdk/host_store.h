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

// The table's sg_host_store with set and get, or nullptr (found by type
// and size with sg_find_extension).
inline const sg_host_store* host_store(const sg_host_api* host) noexcept {
  constexpr size_t with_extension = offsetof(sg_host_api, extension) + sizeof(void*);
  if (!host || host->struct_size < with_extension) return nullptr;
  auto* store = reinterpret_cast<const sg_host_store*>(sg_find_extension(
      host->extension, SG_EXTENSION_HOST_STORE, offsetof(sg_host_store, get) + sizeof(void*)));
  return store && store->set && store->get ? store : nullptr;
}

}  // namespace sexpgpu::sdk
