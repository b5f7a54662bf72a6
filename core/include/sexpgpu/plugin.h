/* sexpgpu/plugin.h: the stable C ABI between the SexpGPU core and its
 * plugins (devices, metric sinks, diagnostic reducers). Plain C99; also
 * compiles as C++17. The contract is docs/writing-plugins.md and the
 * project's spec/plugins.md.
 *
 * Rules (PJRT-style):
 *  - One entry point per plugin: sexpgpu_plugin_entry_v1 (below).
 *  - Every struct begins with `size_t struct_size`, set by whoever fills
 *    it; fields are only ever added at the end. Readers compare sizes with
 *    >=, never ==, before touching a field newer than 1.0.
 *  - Outputs are marked "out"; every pointer says who owns it.
 *  - No exceptions, no C++ types: every fallible call returns sg_error*
 *    (NULL on success), which the caller frees with the same table's
 *    error_destroy.
 *  - Strings crossing the ABI are UTF-8, pointer plus length, unless a
 *    field says it is NUL-terminated.
 *
 * Changelog (one entry per minor version):
 *  1.0  initial: sg_plugin, sg_host_api, sg_device_api, sg_sink_api,
 *       sg_reducer_api, sg_error, sg_extension_base.
 *  1.1  sg_host_store on sg_host_api's extension chain (the run's
 *       key-value store, for plugins that reach other processes); device
 *       `open` options may carry "world"; the IR's all_reduce op.
 *  1.2  sg_device_fill on sg_device_api's extension chain (a buffer set
 *       to one value on the device); sg_find_extension.
 *  1.3  sg_program_in_place on sg_device_api's extension chain (whether a
 *       run writes an output straight over the input it is given as).
 */
#ifndef SEXPGPU_PLUGIN_H_
#define SEXPGPU_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SG_ABI_MAJOR 1
#define SG_ABI_MINOR 3

/* Exported with default visibility even under -fvisibility=hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define SG_EXPORT __attribute__((visibility("default")))
#else
#define SG_EXPORT
#endif

/* ---- Opaque handles: each is allocated and freed by the plugin. ---- */
typedef struct sg_error sg_error;
typedef struct sg_device sg_device;
typedef struct sg_program sg_program;
typedef struct sg_buffer sg_buffer;
typedef struct sg_sink sg_sink;
typedef struct sg_reducer_state sg_reducer_state;

typedef enum sg_plugin_kind {
  SG_PLUGIN_DEVICE = 1,
  SG_PLUGIN_SINK = 2,
  SG_PLUGIN_REDUCER = 3
} sg_plugin_kind;

typedef enum sg_error_code {
  SG_ERROR_UNKNOWN = 1,
  SG_ERROR_INVALID_ARGUMENT = 2,
  SG_ERROR_OUT_OF_MEMORY = 3,
  SG_ERROR_UNAVAILABLE = 4, /* e.g. no GPU, driver too old */
  SG_ERROR_UNIMPLEMENTED = 5,
  SG_ERROR_CANCELLED = 6,
  SG_ERROR_IO = 7,
  SG_ERROR_INTERNAL = 8
} sg_error_code;

typedef enum sg_log_level {
  SG_LOG_TRACE = 0,
  SG_LOG_DEBUG = 1,
  SG_LOG_INFO = 2,
  SG_LOG_WARN = 3,
  SG_LOG_ERROR = 4
} sg_log_level;

typedef enum sg_dtype {
  SG_DTYPE_F32 = 1,
  SG_DTYPE_F16 = 2,
  SG_DTYPE_BF16 = 3,
  SG_DTYPE_F64 = 4,
  SG_DTYPE_I32 = 5,
  SG_DTYPE_I64 = 6,
  SG_DTYPE_U8 = 7,
  SG_DTYPE_BOOL = 8,
  SG_DTYPE_U16 = 9
} sg_dtype;

typedef enum sg_reduce_op { SG_REDUCE_SUM = 1, SG_REDUCE_MEAN = 2 } sg_reduce_op;

/* Later, optional features hang off `extension` chains of typed structs.
 * Each starts with this header; `type` tags the struct; unknown types are
 * skipped. Owned by whoever filled the chain; lives as long as the table. */
typedef struct sg_extension_base {
  size_t struct_size;
  uint32_t type;
  const struct sg_extension_base* next; /* NULL ends the chain */
} sg_extension_base;

/* The first link of `type` on the chain from `first` that is at least
 * `needed` bytes long (a link too small to hold what the reader uses is
 * skipped), or NULL. The walk is bounded, so a broken chain that loops
 * cannot hang the reader. A reader first checks that the table's own
 * struct_size reaches its `extension` field. */
static inline const sg_extension_base* sg_find_extension(const sg_extension_base* first,
                                                         uint32_t type, size_t needed) {
  const sg_extension_base* link = first;
  int hops;
  for (hops = 0; link && hops < 64; ++hops, link = link->next)
    if (link->type == type && link->struct_size >= needed) return link;
  return NULL;
}

/* ---- The host's services, filled by the core and given to the entry
 * point. The table and its strings are owned by the core and live until
 * the plugin is unloaded. Plugins never link against the core. ---- */
typedef struct sg_host_api {
  size_t struct_size;
  uint32_t abi_major, abi_minor; /* the ABI the core speaks */
  const char* core_version;      /* UTF-8, also NUL-terminated; core-owned */
  size_t core_version_len;
  void* host_data; /* opaque; pass it back to the callbacks below */
  /* Writes one message into the run's log. `message` is borrowed for the
   * call only. Safe from any thread. */
  void (*log)(void* host_data, sg_log_level level, const char* message, size_t message_len);
  /* The run directory: *out_dir is core-owned, valid until the run ends;
   * length 0 when there is no run (e.g. under `sexpgpu doctor`). */
  void (*run_dir)(void* host_data, const char** out_dir, size_t* out_len);
  /* Nonzero once the run is being stopped; long calls should poll it and
   * return an SG_ERROR_CANCELLED error. Safe from any thread. */
  int (*cancelled)(void* host_data);
  const sg_extension_base* extension; /* 1.1: an sg_host_store */
} sg_host_api;

/* ---- 1.1: the run's key-value store, for a plugin that reaches the other
 * processes of a run (the rendezvous: Gloo's Store, the NCCL unique id).
 * Rank 0's core serves it on the world's master address; every rank's core
 * is its client. Keys and values are bytes, borrowed for the call. Both
 * calls return 0 on success; otherwise nonzero, and *out_message (owned by
 * the host, valid until the next call of this table on the same thread)
 * says why: no world (a run of one process), the timeout passed, the
 * master is gone. Safe from any thread. ---- */
#define SG_EXTENSION_HOST_STORE 1u
typedef struct sg_host_store {
  sg_extension_base base; /* type SG_EXTENSION_HOST_STORE */
  void* store_data;       /* opaque; pass it back to the calls below */
  /* Sets `key` to `value` for every rank; a key is set once. */
  int (*set)(void* store_data, const char* key, size_t key_len, const void* value, size_t value_len,
             const char** out_message /* out */, size_t* out_message_len /* out */);
  /* Waits until `key` is set, at most timeout_ms (0: the run's rank
   * timeout), then gives its value: *out_value is host-owned, valid until
   * the next call of this table on the same thread. */
  int (*get)(void* store_data, const char* key, size_t key_len, int64_t timeout_ms,
             const void** out_value /* out */, size_t* out_value_len /* out */,
             const char** out_message /* out */, size_t* out_message_len /* out */);
} sg_host_store;

/* The description a plugin returns. Static storage in the plugin: the core
 * reads it while the plugin is loaded and never frees it. */
typedef struct sg_plugin {
  size_t struct_size;
  uint32_t abi_major, abi_minor; /* SG_ABI_MAJOR, SG_ABI_MINOR it was built with */
  sg_plugin_kind kind;
  const char* name;    /* NUL-terminated: "cpu", "cuda", "jsonl", "kurtosis" */
  const char* version; /* NUL-terminated; the plugin's own version */
  const void* api;     /* sg_device_api*, sg_sink_api* or sg_reducer_api* per kind */
} sg_plugin;

/* Every table carries these three, for the errors its calls return:
 *   error_message: *out_message is owned by `error`, valid until destroyed.
 *   error_code:    an sg_error_code.
 *   error_destroy: frees an error returned by any call of this table. */
#define SG_ERROR_FUNCTIONS                                                         \
  void (*error_destroy)(sg_error* error);                                          \
  void (*error_message)(const sg_error* error, const char** out_message /* out */, \
                        size_t* out_len /* out */);                                \
  sg_error_code (*error_code)(const sg_error* error)

/* ---- Sinks: receive the run's events. ---- */
typedef struct sg_sink_api {
  size_t struct_size;
  SG_ERROR_FUNCTIONS;
  /* Opens a sink for one run. Every string is borrowed for the call only:
   * the run directory, the run's `open` event (JSON), and ARG from
   * `--sink NAME:ARG` (length 0 when absent). *out_sink is plugin-owned
   * until `close`. */
  sg_error* (*open)(const char* run_dir, size_t run_dir_len, const char* open_event_json,
                    size_t open_event_len, const char* arg, size_t arg_len,
                    sg_sink** out_sink /* out */);
  /* One event, one JSON line without its newline; borrowed for the call. */
  sg_error* (*event)(sg_sink* sink, const char* event_json, size_t event_len);
  sg_error* (*flush)(sg_sink* sink);
  /* Flushes and frees the sink, even when it returns an error. */
  sg_error* (*close)(sg_sink* sink);
  const sg_extension_base* extension; /* NULL in 1.0 */
} sg_sink_api;

/* ---- Reducers: turn a tensor into a few numbers for diagnostics. ---- */
typedef struct sg_reducer_api {
  size_t struct_size;
  SG_ERROR_FUNCTIONS;
  /* The name `:reduce` uses; *out_name is plugin-owned static storage. */
  void (*name)(const char** out_name /* out */, size_t* out_len /* out */);
  /* How many numbers `finish` writes and their names: *out_names is a
   * plugin-owned static array of NUL-terminated UTF-8 names. */
  void (*outputs)(size_t* out_count /* out */, const char* const** out_names /* out */);
  /* Options JSON borrowed for the call; *out_state plugin-owned until
   * `destroy`. */
  sg_error* (*init)(const char* options_json, size_t options_len,
                    sg_reducer_state** out_state /* out */);
  /* `values` (count floats) borrowed for the call; may be called often. */
  sg_error* (*update)(sg_reducer_state* state, const float* values, size_t count);
  /* Writes `outputs` count numbers into out_values, caller-owned. */
  sg_error* (*finish)(sg_reducer_state* state, double* out_values /* out */);
  void (*destroy)(sg_reducer_state* state);
  const sg_extension_base* extension; /* NULL in 1.0 */
} sg_reducer_api;

/* ---- Devices: compile and run the IR. Streams are small integers per
 * device; 0 is the device's default stream. ---- */
typedef struct sg_device_api {
  size_t struct_size;
  SG_ERROR_FUNCTIONS;
  /* Can this machine serve? *out_json (plugin-owned, valid until the next
   * probe or unload): {"available":bool,"reason":str,"devices":[{name,
   * memory_bytes,compute_capability,driver}],"count":n}. */
  sg_error* (*probe)(const char** out_json /* out */, size_t* out_len /* out */);
  /* Options JSON (ordinals, precision mode, deterministic) borrowed for the
   * call; *out_device plugin-owned until `close`. 1.1: a run of several
   * processes adds "world": {"rank", "size", "local_rank", "master"
   * ("host:port"), "timeout_ms"}; all_reduce, broadcast and the IR's
   * all_reduce op then reach every rank (through sg_host_store's
   * rendezvous). A device that cannot fails with SG_ERROR_UNIMPLEMENTED. */
  sg_error* (*open)(const char* options_json, size_t options_len,
                    sg_device** out_device /* out */);
  /* Frees the device and every program and buffer still on it. */
  sg_error* (*close)(sg_device* device);
  /* Compiles function `fn` of the IR document (tensors.md), both borrowed
   * for the call. *out_program is plugin-owned until program_destroy or
   * close; *out_report_json (lowering report) is owned by the program;
   * *out_memory_plan_bytes is written by the plugin. */
  sg_error* (*compile)(sg_device* device, const char* ir_json, size_t ir_len, const char* fn,
                       size_t fn_len, sg_program** out_program /* out */,
                       const char** out_report_json /* out */, size_t* out_report_len /* out */,
                       uint64_t* out_memory_plan_bytes /* out */);
  void (*program_destroy)(sg_program* program);
  /* A buffer of dtype and shape (rank dims, borrowed for the call);
   * *out_buffer plugin-owned until `free`. */
  sg_error* (*alloc)(sg_device* device, sg_dtype dtype, const int64_t* shape, size_t rank,
                     sg_buffer** out_buffer /* out */);
  sg_error* (*free)(sg_buffer* buffer);
  /* Copies `bytes` from caller-owned host memory; the host memory may be
   * reused once `synchronize` on that stream returns. */
  sg_error* (*upload)(sg_buffer* buffer, const void* host_data, size_t bytes, uint32_t stream);
  /* Copies into caller-owned host memory, complete after `synchronize`. */
  sg_error* (*download)(sg_buffer* buffer, void* out_host_data /* out */, size_t bytes,
                        uint32_t stream);
  /* Buffer arrays are caller-owned, borrowed for the call; the buffers
   * stay plugin-owned. */
  sg_error* (*run)(sg_program* program, sg_buffer* const* inputs, size_t input_count,
                   sg_buffer* const* outputs, size_t output_count, uint32_t stream);
  sg_error* (*synchronize)(sg_device* device, uint32_t stream);
  /* *out_json plugin-owned, valid until the next memory_stats on this
   * device: {"bytes_in_use","peak_bytes_in_use","bytes_limit"}. */
  sg_error* (*memory_stats)(sg_device* device, const char** out_json /* out */,
                            size_t* out_len /* out */);
  /* One buffer per device, same dtype and shape; arrays borrowed for the
   * call. Every buffer ends with the sum (or mean) of all. */
  sg_error* (*all_reduce)(sg_device* const* devices, sg_buffer* const* buffers, size_t count,
                          sg_reduce_op op, uint32_t stream);
  /* Copies buffers[root] into every other buffer. */
  sg_error* (*broadcast)(sg_device* const* devices, sg_buffer* const* buffers, size_t count,
                         size_t root, uint32_t stream);
  const sg_extension_base* extension; /* 1.2: an sg_device_fill; 1.3: an sg_program_in_place */
} sg_device_api;

/* ---- 1.2: setting a buffer to one value where it lives (optimizer
 * state's zeros, without a host copy of the whole buffer to upload). A
 * core that finds no sg_device_fill on the chain uploads the values. ---- */
#define SG_EXTENSION_DEVICE_FILL 2u
typedef struct sg_device_fill {
  sg_extension_base base; /* type SG_EXTENSION_DEVICE_FILL */
  /* Sets every element of `buffer` to `value`: one element of the
   * buffer's dtype, value_bytes long (its size), borrowed for the call.
   * Ordered on `stream` with runs, uploads and downloads. */
  sg_error* (*fill)(sg_buffer* buffer, const void* value, size_t value_bytes, uint32_t stream);
} sg_device_fill;

/* ---- 1.3: updates in place. `run` accepts an output buffer that is also
 * one of the inputs (an optimizer writing a parameter over itself) and
 * must then compute what it computes with separate buffers; a plugin may
 * stage such an output through a temporary, which holds a second copy of
 * it for the run. This says where it does not, so the core holds one copy
 * of a parameter, not two, only where that saves memory. A core that finds
 * no sg_program_in_place on the chain keeps separate buffers. ---- */
#define SG_EXTENSION_PROGRAM_IN_PLACE 3u
typedef struct sg_program_in_place {
  sg_extension_base base; /* type SG_EXTENSION_PROGRAM_IN_PLACE */
  /* *out_in_place = 1 when a run of `program` given the same buffer as
   * output number `output` and input number `input` (of equal type) writes
   * the output straight over the input, with no temporary; 0 otherwise,
   * and for numbers out of range. */
  sg_error* (*in_place)(sg_program* program, size_t output, size_t input,
                        uint8_t* out_in_place /* out */);
} sg_program_in_place;

/* The one entry point, C linkage, default visibility. `host` is core-owned
 * and lives until the plugin is unloaded. Returns the plugin's static
 * description, or NULL when it cannot serve this core. */
typedef const sg_plugin* (*sg_plugin_entry_fn)(const sg_host_api* host);
SG_EXPORT const sg_plugin* sexpgpu_plugin_entry_v1(const sg_host_api* host);
#define SG_PLUGIN_ENTRY_SYMBOL "sexpgpu_plugin_entry_v1"

/* ---- Size pins: a change that breaks the rules fails to compile. Sizes
 * are pinned on LP64 (64-bit Linux and macOS), where plugins are built. */
#if defined(__cplusplus)
#define SG_STATIC_ASSERT(cond, tag) static_assert(cond, #tag)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define SG_STATIC_ASSERT(cond, tag) _Static_assert(cond, #tag)
#else /* C99: an array of negative size fails to compile */
#define SG_STATIC_ASSERT(cond, tag) typedef char sg_static_assert_##tag[(cond) ? 1 : -1]
#endif

#if defined(__LP64__) || defined(_LP64)
SG_STATIC_ASSERT(sizeof(sg_extension_base) == 24, sg_extension_base_size);
SG_STATIC_ASSERT(sizeof(sg_host_api) == 72, sg_host_api_size);
SG_STATIC_ASSERT(sizeof(sg_plugin) == 48, sg_plugin_size);
SG_STATIC_ASSERT(sizeof(sg_sink_api) == 72, sg_sink_api_size);
SG_STATIC_ASSERT(sizeof(sg_reducer_api) == 88, sg_reducer_api_size);
SG_STATIC_ASSERT(sizeof(sg_device_api) == 152, sg_device_api_size);
SG_STATIC_ASSERT(sizeof(sg_host_store) == 48, sg_host_store_size);
SG_STATIC_ASSERT(sizeof(sg_device_fill) == 32, sg_device_fill_size);
SG_STATIC_ASSERT(sizeof(sg_program_in_place) == 32, sg_program_in_place_size);
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SEXPGPU_PLUGIN_H_ */
