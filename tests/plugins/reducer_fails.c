/* A reducer plugin named `fails` whose every update returns an error: the
 * run stops with E-DIAG-REDUCER and the plugin's message (tests/e2e/diag.sh). */
#include <sexpgpu/plugin.h>
#include <string.h>

struct sg_error {
  int unused;
};
struct sg_reducer_state {
  int unused;
};

static sg_error g_error;
static sg_reducer_state g_state;
static const char* const g_outputs[] = {"never"};

static void error_destroy(sg_error* e) {
  (void)e;
}
static void error_message(const sg_error* e, const char** out, size_t* len) {
  (void)e;
  *out = "fails: refuses every tensor";
  *len = strlen(*out);
}
static sg_error_code error_code(const sg_error* e) {
  (void)e;
  return SG_ERROR_INVALID_ARGUMENT;
}
static void name(const char** out, size_t* len) {
  *out = "fails";
  *len = 5;
}
static void outputs(size_t* count, const char* const** names) {
  *count = 1;
  *names = g_outputs;
}
static sg_error* init(const char* options, size_t len, sg_reducer_state** out) {
  (void)options;
  (void)len;
  *out = &g_state;
  return NULL;
}
static sg_error* update(sg_reducer_state* s, const float* values, size_t count) {
  (void)s;
  (void)values;
  (void)count;
  return &g_error;
}
static sg_error* finish(sg_reducer_state* s, double* out) {
  (void)s;
  out[0] = 0;
  return NULL;
}
static void destroy(sg_reducer_state* s) {
  (void)s;
}

static const sg_reducer_api g_api = {sizeof(sg_reducer_api), error_destroy, error_message,
                                     error_code, name, outputs, init, update, finish, destroy,
                                     NULL};
static const sg_plugin g_plugin = {sizeof(sg_plugin), SG_ABI_MAJOR, SG_ABI_MINOR,
                                   SG_PLUGIN_REDUCER, "fails", "0.0.1", &g_api};

const sg_plugin* sexpgpu_plugin_entry_v1(const sg_host_api* host) {
  (void)host;
  return &g_plugin;
}
