/* A test plugin that needs libsexpgpu-dep-absent.so, which is not on the
 * loader's path: the loader's own message must be the reason. */
#include <sexpgpu/plugin.h>

int sexpgpu_missing_dep_value(void);

static const sg_plugin g_plugin = {sizeof(sg_plugin), SG_ABI_MAJOR, SG_ABI_MINOR, SG_PLUGIN_SINK,
                                   "missing-dep",     "1.0.0",      NULL};

const sg_plugin* sexpgpu_plugin_entry_v1(const sg_host_api* host) {
  (void)host;
  return sexpgpu_missing_dep_value() ? &g_plugin : NULL;
}
