/* A test plugin whose sg_plugin claims a struct_size smaller than ABI 1.0's. */
#include <sexpgpu/plugin.h>

static const sg_plugin g_plugin = {20,      SG_ABI_MAJOR, SG_ABI_MINOR, SG_PLUGIN_SINK,
                                   "small", "1.0.0",      NULL};

const sg_plugin* sexpgpu_plugin_entry_v1(const sg_host_api* host) {
  (void)host;
  return &g_plugin;
}
