/* example_reducer.c: a diagnostic reducer plugin in plain C99, the one that
 * docs/writing-plugins.md walks through, as a lab writes its own. Named
 * `mean-abs`, it turns a tensor into two numbers: `mean`, the mean of |x|,
 * and `count`, how many values it saw. A diagnostic uses it by name:
 *   (defdiagnostic act-size :over :activations :value (lambda (a) a)
 *     :reduce (:mean-abs))
 * and its diag events then hold {"PROBE": {"mean-abs": {"mean": M, "count": N}}}.
 * A NaN makes the mean NaN (null in the event); an empty tensor's mean is
 * NaN too, its count 0.
 *
 * Build it outside the project with nothing but the installed header:
 *   cc -std=c99 -shared -fPIC -I"$(sexpgpu --include-dir)" example_reducer.c \
 *      -o libsexpgpu-mean-abs.so
 */
#include <math.h>
#include <sexpgpu/plugin.h>
#include <stdlib.h>
#include <string.h>

/* ---- Errors: objects the plugin allocates and the core frees through
 * error_destroy (the same as example_sink.c's). ---- */
struct sg_error {
  sg_error_code code;
  const char* message; /* static text */
};

static sg_error g_out_of_memory = {SG_ERROR_OUT_OF_MEMORY, "mean-abs: out of memory"};

static sg_error* make_error(sg_error_code code, const char* message) {
  sg_error* e = (sg_error*)malloc(sizeof *e);
  if (!e) return &g_out_of_memory;
  e->code = code;
  e->message = message;
  return e;
}

static void error_destroy(sg_error* e) {
  if (e && e != &g_out_of_memory) free(e);
}

static void error_message(const sg_error* e, const char** out_message, size_t* out_len) {
  *out_message = e->message;
  *out_len = strlen(e->message);
}

static sg_error_code error_code(const sg_error* e) {
  return e->code;
}

/* ---- The reducer. The core calls init, then update once or more with the
 * tensor's values (f32, borrowed for the call), then finish, then destroy;
 * one state per tensor, plugin-owned from init to destroy. ---- */
struct sg_reducer_state {
  double sum_abs; /* in double: a large tensor's sum keeps its digits */
  unsigned long long count;
};

static void reducer_name(const char** out_name, size_t* out_len) {
  *out_name = "mean-abs";
  *out_len = strlen("mean-abs");
}

static const char* const g_outputs[] = {"mean", "count"};

static void reducer_outputs(size_t* out_count, const char* const** out_names) {
  *out_count = sizeof g_outputs / sizeof g_outputs[0];
  *out_names = g_outputs;
}

/* Options arrive as JSON; this reducer takes none, so anything but "{}" is
 * refused rather than ignored. */
static sg_error* reducer_init(const char* options, size_t options_len,
                              sg_reducer_state** out_state) {
  sg_reducer_state* s;
  if (options_len > 0 && !(options_len == 2 && memcmp(options, "{}", 2) == 0))
    return make_error(SG_ERROR_INVALID_ARGUMENT, "mean-abs: takes no options");
  s = (sg_reducer_state*)calloc(1, sizeof *s);
  if (!s) return &g_out_of_memory;
  *out_state = s;
  return NULL;
}

static sg_error* reducer_update(sg_reducer_state* s, const float* values, size_t count) {
  size_t i;
  for (i = 0; i < count; ++i) s->sum_abs += fabs((double)values[i]);
  s->count += count;
  return NULL;
}

static sg_error* reducer_finish(sg_reducer_state* s, double* out_values) {
  out_values[0] = s->count > 0 ? s->sum_abs / (double)s->count : NAN;
  out_values[1] = (double)s->count;
  return NULL;
}

static void reducer_destroy(sg_reducer_state* s) {
  free(s);
}

/* ---- The tables, static: the core reads them while the plugin is loaded. */
static const sg_reducer_api g_reducer_api = {
    sizeof(sg_reducer_api), error_destroy,   error_message, error_code,
    reducer_name,           reducer_outputs, reducer_init,  reducer_update,
    reducer_finish,         reducer_destroy, NULL /* extension */
};

static const sg_plugin g_plugin = {sizeof(sg_plugin), SG_ABI_MAJOR, SG_ABI_MINOR,
                                   SG_PLUGIN_REDUCER, "mean-abs",   "1.0.0",
                                   &g_reducer_api};

const sg_plugin* sexpgpu_plugin_entry_v1(const sg_host_api* host) {
  /* Uses none of the host's services; refuses only a table that is not one. */
  if (!host || host->struct_size < offsetof(sg_host_api, extension)) return NULL;
  return &g_plugin;
}
