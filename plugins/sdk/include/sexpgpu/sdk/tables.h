// sexpgpu/sdk/tables.h: filling the ABI's tables (plugins/sdk/README.md).
// Each builder sets struct_size to the size this plugin was compiled
// with, the error functions to the SDK's (errors.h) and the extension
// chain to none (a device's to the one it passes), so a plugin names only
// its own functions; `describe`
// fills the sg_plugin description and `serve` is the entry point's body.
#pragma once

#include <cstddef>

#include "sexpgpu/plugin.h"
#include "sexpgpu/sdk/errors.h"
#include "sexpgpu/sdk/log.h"

namespace sexpgpu::sdk {

// The description the entry point returns, for the ABI this plugin is
// built with. `name`, `version` and `api` must be static storage.
constexpr sg_plugin describe(sg_plugin_kind kind, const char* name, const char* version,
                             const void* api) {
  return sg_plugin{sizeof(sg_plugin), SG_ABI_MAJOR, SG_ABI_MINOR, kind, name, version, api};
}

// Whether the core's table is one this plugin can use: the same major
// version, and every field of 1.0 (read with >=: a newer core's table is
// larger, never smaller).
inline bool host_serves(const sg_host_api* host) noexcept {
  constexpr size_t versions = offsetof(sg_host_api, abi_minor) + sizeof(uint32_t);
  constexpr size_t v1_0 = offsetof(sg_host_api, extension) + sizeof(void*);
  return host && host->struct_size >= versions && host->abi_major == SG_ABI_MAJOR &&
         host->struct_size >= v1_0;
}

// The entry point's body: the plugin's description, or nullptr (declined)
// when the core's table is not one it can use. The table is kept for
// sdk::log (log.h).
inline const sg_plugin* serve(const sg_host_api* host, const sg_plugin& plugin) noexcept {
  if (!host_serves(host)) return nullptr;
  served_host() = host;
  return &plugin;
}

// The one exported function of a C++ plugin, returning `plugin` (an
// sg_plugin of static storage) to every core it can serve:
//   SEXPGPU_SDK_ENTRY(sexpgpu::sdk::ReducerPlugin<Kurtosis>::kPlugin)
#define SEXPGPU_SDK_ENTRY(plugin)                                                          \
  extern "C" SG_EXPORT const sg_plugin* sexpgpu_plugin_entry_v1(const sg_host_api* host) { \
    return ::sexpgpu::sdk::serve(host, plugin);                                            \
  }

constexpr sg_sink_api sink_table(sg_error* (*open)(const char*, size_t, const char*, size_t,
                                                   const char*, size_t, sg_sink**),
                                 sg_error* (*event)(sg_sink*, const char*, size_t),
                                 sg_error* (*flush)(sg_sink*), sg_error* (*close)(sg_sink*)) {
  return sg_sink_api{sizeof(sg_sink_api),
                     error_destroy,
                     error_message,
                     error_code,
                     open,
                     event,
                     flush,
                     close,
                     nullptr};
}

constexpr sg_reducer_api reducer_table(void (*name)(const char**, size_t*),
                                       void (*outputs)(size_t*, const char* const**),
                                       sg_error* (*init)(const char*, size_t, sg_reducer_state**),
                                       sg_error* (*update)(sg_reducer_state*, const float*, size_t),
                                       sg_error* (*finish)(sg_reducer_state*, double*),
                                       void (*destroy)(sg_reducer_state*)) {
  return sg_reducer_api{sizeof(sg_reducer_api),
                        error_destroy,
                        error_message,
                        error_code,
                        name,
                        outputs,
                        init,
                        update,
                        finish,
                        destroy,
                        nullptr};
}

// The device table's functions, in the order of sg_device_api.
struct DeviceFunctions {
  sg_error* (*probe)(const char**, size_t*);
  sg_error* (*open)(const char*, size_t, sg_device**);
  sg_error* (*close)(sg_device*);
  sg_error* (*compile)(sg_device*, const char*, size_t, const char*, size_t, sg_program**,
                       const char**, size_t*, uint64_t*);
  void (*program_destroy)(sg_program*);
  sg_error* (*alloc)(sg_device*, sg_dtype, const int64_t*, size_t, sg_buffer**);
  sg_error* (*free)(sg_buffer*);
  sg_error* (*upload)(sg_buffer*, const void*, size_t, uint32_t);
  sg_error* (*download)(sg_buffer*, void*, size_t, uint32_t);
  sg_error* (*run)(sg_program*, sg_buffer* const*, size_t, sg_buffer* const*, size_t, uint32_t);
  sg_error* (*synchronize)(sg_device*, uint32_t);
  sg_error* (*memory_stats)(sg_device*, const char**, size_t*);
  sg_error* (*all_reduce)(sg_device* const*, sg_buffer* const*, size_t, sg_reduce_op, uint32_t);
  sg_error* (*broadcast)(sg_device* const*, sg_buffer* const*, size_t, size_t, uint32_t);
};

// A device's sg_device_fill (ABI 1.2), to head its table's chain.
constexpr sg_device_fill device_fill(sg_error* (*fill)(sg_buffer*, const void*, size_t, uint32_t),
                                     const sg_extension_base* next = nullptr) {
  return sg_device_fill{{sizeof(sg_device_fill), SG_EXTENSION_DEVICE_FILL, next}, fill};
}

// A device's sg_program_in_place (ABI 1.3), for its table's chain.
constexpr sg_program_in_place program_in_place(sg_error* (*in_place)(sg_program*, size_t, size_t,
                                                                     uint8_t*),
                                               const sg_extension_base* next = nullptr) {
  return sg_program_in_place{{sizeof(sg_program_in_place), SG_EXTENSION_PROGRAM_IN_PLACE, next},
                             in_place};
}

// `extension`: the head of the table's chain (an sg_device_fill, 1.2; an
// sg_program_in_place, 1.3), of static storage, or none.
constexpr sg_device_api device_table(const DeviceFunctions& f,
                                     const sg_extension_base* extension = nullptr) {
  return sg_device_api{sizeof(sg_device_api),
                       error_destroy,
                       error_message,
                       error_code,
                       f.probe,
                       f.open,
                       f.close,
                       f.compile,
                       f.program_destroy,
                       f.alloc,
                       f.free,
                       f.upload,
                       f.download,
                       f.run,
                       f.synchronize,
                       f.memory_stats,
                       f.all_reduce,
                       f.broadcast,
                       extension};
}

}  // namespace sexpgpu::sdk
