/* example_sink.c: a metric sink plugin in plain C99, the one that
 * docs/writing-plugins.md walks through. `--sink example-sink:FILE` writes
 * every event line it receives to FILE (relative to the run directory);
 * without an argument it counts the events and logs the count at close.
 *
 * Build it outside the project with nothing but the installed header:
 *   cc -std=c99 -shared -fPIC -I"$(sexpgpu --include-dir)" example_sink.c \
 *      -o libsexpgpu-example-sink.so
 */
#include <sexpgpu/plugin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The core's services, kept from the entry point; core-owned. */
static const sg_host_api* g_host;

/* ---- Errors: objects the plugin allocates and the core frees through
 * error_destroy. A static error is used when even malloc failed. ---- */
struct sg_error {
  sg_error_code code;
  char* message; /* owned by the error */
  size_t len;
};

static sg_error g_out_of_memory = {SG_ERROR_OUT_OF_MEMORY, (char*)"out of memory", 13};

static sg_error* make_error(sg_error_code code, const char* what, const char* detail) {
  sg_error* e = (sg_error*)malloc(sizeof *e);
  size_t n = strlen(what) + strlen(detail) + 3;
  if (!e) return &g_out_of_memory;
  e->message = (char*)malloc(n);
  if (!e->message) {
    free(e);
    return &g_out_of_memory;
  }
  e->len = (size_t)snprintf(e->message, n, "%s: %s", what, detail);
  e->code = code;
  return e;
}

static void error_destroy(sg_error* e) {
  if (!e || e == &g_out_of_memory) return;
  free(e->message);
  free(e);
}

static void error_message(const sg_error* e, const char** out_message, size_t* out_len) {
  *out_message = e->message;
  *out_len = e->len;
}

static sg_error_code error_code(const sg_error* e) {
  return e->code;
}

/* ---- The sink: one per run, plugin-owned from open to close. ---- */
struct sg_sink {
  FILE* out; /* NULL when counting only */
  unsigned long events;
};

static void host_log(sg_log_level level, const char* text) {
  if (g_host && g_host->log) g_host->log(g_host->host_data, level, text, strlen(text));
}

/* Joins the run directory and ARG into a fresh NUL-terminated path (caller
 * frees); ARG is used as is when absolute or when there is no run dir. */
static char* join_path(const char* dir, size_t dir_len, const char* arg, size_t arg_len) {
  int relative = dir_len > 0 && arg[0] != '/';
  size_t n = (relative ? dir_len + 1 : 0) + arg_len + 1;
  char* path = (char*)malloc(n);
  size_t at = 0;
  if (!path) return NULL;
  if (relative) {
    memcpy(path, dir, dir_len);
    path[dir_len] = '/';
    at = dir_len + 1;
  }
  memcpy(path + at, arg, arg_len);
  path[at + arg_len] = '\0';
  return path;
}

static sg_error* sink_open(const char* run_dir, size_t run_dir_len, const char* open_event,
                           size_t open_event_len, const char* arg, size_t arg_len,
                           sg_sink** out_sink) {
  sg_sink* s = (sg_sink*)calloc(1, sizeof *s);
  if (!s) return &g_out_of_memory;
  if (arg_len > 0) {
    char* path = join_path(run_dir, run_dir_len, arg, arg_len);
    if (!path) {
      free(s);
      return &g_out_of_memory;
    }
    s->out = fopen(path, "w");
    if (!s->out) {
      sg_error* e = make_error(SG_ERROR_IO, "cannot open", path);
      free(path);
      free(s);
      return e;
    }
    free(path);
  }
  /* The open event is the first line of the run's events. */
  if (s->out && open_event_len > 0) {
    fwrite(open_event, 1, open_event_len, s->out);
    fputc('\n', s->out);
  }
  *out_sink = s;
  return NULL;
}

static sg_error* sink_event(sg_sink* s, const char* event, size_t len) {
  s->events++;
  if (s->out && (fwrite(event, 1, len, s->out) != len || fputc('\n', s->out) == EOF))
    return make_error(SG_ERROR_IO, "example-sink", "write failed");
  return NULL;
}

static sg_error* sink_flush(sg_sink* s) {
  if (s->out && fflush(s->out) != 0) return make_error(SG_ERROR_IO, "example-sink", "flush failed");
  return NULL;
}

static sg_error* sink_close(sg_sink* s) {
  sg_error* err = NULL;
  char line[64];
  snprintf(line, sizeof line, "%lu events", s->events);
  host_log(SG_LOG_INFO, line);
  if (s->out && fclose(s->out) != 0) err = make_error(SG_ERROR_IO, "example-sink", "close failed");
  free(s); /* freed even when closing failed, as the ABI says */
  return err;
}

/* ---- The tables, static: the core reads them while the plugin is loaded. */
static const sg_sink_api g_sink_api = {
    sizeof(sg_sink_api), error_destroy, error_message, error_code, sink_open,
    sink_event,          sink_flush,    sink_close,    NULL /* extension */
};

static const sg_plugin g_plugin = {sizeof(sg_plugin), SG_ABI_MAJOR, SG_ABI_MINOR, SG_PLUGIN_SINK,
                                   "example-sink",    "1.0.0",      &g_sink_api};

const sg_plugin* sexpgpu_plugin_entry_v1(const sg_host_api* host) {
  /* Refuse a host table older than the fields this plugin uses. */
  if (!host || host->struct_size < offsetof(sg_host_api, extension)) return NULL;
  g_host = host;
  return &g_plugin;
}
