/* A test plugin without the entry point sexpgpu_plugin_entry_v1. */
#include <sexpgpu/plugin.h>

SG_EXPORT int sexpgpu_plugin_entry_v0(void);
int sexpgpu_plugin_entry_v0(void) {
  return 0;
}
