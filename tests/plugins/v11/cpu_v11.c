/* The cpu device as a plugin of ABI 1.1 would be: its table without the
 * extension chain (so no sg_device_fill), under the name "cpu-v11". It
 * loads the build tree's libsexpgpu-cpu.so and forwards to it; the core's
 * fallback for devices without sg_device_fill is tested through it. Built
 * into a directory of its own, off every other test's search path. */
#include <dlfcn.h>
#include <sexpgpu/plugin.h>
#include <stddef.h>

static sg_device_api g_api;
static sg_plugin g_plugin;

const sg_plugin* sexpgpu_plugin_entry_v1(const sg_host_api* host) {
  void* cpu = dlopen(SEXPGPU_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (!cpu) return NULL;
  sg_plugin_entry_fn entry = (sg_plugin_entry_fn)dlsym(cpu, SG_PLUGIN_ENTRY_SYMBOL);
  const sg_plugin* inner = entry ? entry(host) : NULL;
  if (!inner || inner->kind != SG_PLUGIN_DEVICE) return NULL;
  g_api = *(const sg_device_api*)inner->api;
  g_api.extension = NULL;
  g_plugin = *inner;
  g_plugin.abi_minor = 1;
  g_plugin.name = "cpu-v11";
  g_plugin.api = &g_api;
  return &g_plugin;
}
