/* A test plugin built for a future ABI major (2): the core must refuse it. */
#include <sexpgpu/plugin.h>

static const sg_plugin g_plugin = {sizeof(sg_plugin), 2,       0,   SG_PLUGIN_SINK,
                                   "abi-two",         "2.0.0", NULL};

const sg_plugin* sexpgpu_plugin_entry_v1(const sg_host_api* host) {
  (void)host;
  return &g_plugin;
}
