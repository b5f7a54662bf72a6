/* A test plugin whose entry point returns NULL: it cannot serve this core. */
#include <sexpgpu/plugin.h>

const sg_plugin* sexpgpu_plugin_entry_v1(const sg_host_api* host) {
  (void)host;
  return NULL;
}
