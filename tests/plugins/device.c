/* A test device plugin: loads, and its probe says this machine has no
 * device it can serve, unless SEXPGPU_TEST_DEVICE_AVAILABLE is set. Lets
 * the tests see doctor print a probe and exit 0 or 5. */
#include <sexpgpu/plugin.h>
#include <stdlib.h>
#include <string.h>

static const char kAbsent[] =
    "{\"available\":false,\"reason\":\"test device: not available\",\"devices\":[],\"count\":0}";
static const char kPresent[] =
    "{\"available\":true,\"devices\":[{\"name\":\"test\",\"memory_bytes\":1024}],\"count\":1}";

static sg_error* probe(const char** out_json, size_t* out_len) {
  const char* text = getenv("SEXPGPU_TEST_DEVICE_AVAILABLE") ? kPresent : kAbsent;
  *out_json = text;
  *out_len = strlen(text);
  return NULL;
}

/* Only probe: doctor calls nothing else. */
static const sg_device_api g_api = {.struct_size = sizeof(sg_device_api), .probe = probe};

static const sg_plugin g_plugin = {sizeof(sg_plugin), SG_ABI_MAJOR, SG_ABI_MINOR, SG_PLUGIN_DEVICE,
                                   "test-device",     "0.1.0",      &g_api};

const sg_plugin* sexpgpu_plugin_entry_v1(const sg_host_api* host) {
  (void)host;
  return &g_plugin;
}
