// The plugin host: finds libsexpgpu-*.so files on the search path, loads
// them with Boost.DLL, calls their entry point with the host table and
// records each one as loaded or not, with the reason (spec: plugins.md).
// A bad plugin never stops the core: every load and call is behind an
// exception firewall, and the reason is kept for `sexpgpu doctor`.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "sexpgpu/plugin.h"

namespace sexpgpu::dist {
class Store;
}

namespace sexpgpu::host {

// One directory of the search path and where it came from.
struct SearchDir {
  std::string dir;
  std::string source;  // "SEXPGPU_PLUGIN_PATH", "config file", "build tree", "installed"
};

// What the host learned about one plugin file.
struct PluginRecord {
  std::string name;     // from the plugin; from the file name when it did not load
  std::string path;     // the file
  std::string kind;     // "device", "sink", "reducer"; "" when unknown
  std::string version;  // the plugin's own version; "" when unknown
  std::string abi;      // "MAJOR.MINOR" the plugin was built with; "" when unknown
  bool loaded = false;
  std::string reason;                 // why not loaded; "" when loaded
  const sg_plugin* plugin = nullptr;  // valid while the host lives, when loaded
};

// The search path: each dir of SEXPGPU_PLUGIN_PATH, then the build tree's
// plugins/ (when this executable lives in the build tree), then
// <prefix>/lib/sexpgpu/plugins relative to the executable. Without the
// config file: for programs other than the CLI (the conformance runner).
std::vector<SearchDir> default_search_path();
// `first` (the CLI's: SEXPGPU_PLUGIN_PATH's and the config file's
// directories, core/config), then the build tree's and the installed ones.
std::vector<SearchDir> search_path_after(std::vector<SearchDir> first);

// The running executable's path ("" if unknown).
std::string executable_path();

// The directory holding sexpgpu/plugin.h: <prefix>/include when installed,
// the source tree's core/include in a build tree; "" if neither exists.
std::string include_dir();

// The log callback's destination: the plugin's name (or file, before its
// entry returned) and the message. The default writes warnings and errors
// to standard error as "sexpgpu: plugin NAME: message".
using LogFn = std::function<void(sg_log_level, const std::string& plugin, const std::string&)>;

class PluginHost {
 public:
  // Searches `path` in order and loads every plugin found.
  explicit PluginHost(std::vector<SearchDir> path);
  ~PluginHost();
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;

  const std::vector<SearchDir>& search_path() const { return path_; }
  const std::vector<PluginRecord>& plugins() const { return records_; }

  // The names of the loaded plugins of that kind, in loading order.
  std::vector<std::string> names(sg_plugin_kind kind) const;
  // The loaded plugin of that name, or nullptr.
  const PluginRecord* find(const std::string& name) const;
  // Its table, when loaded and of that kind; else nullptr.
  const sg_sink_api* sink(const std::string& name) const;
  const sg_reducer_api* reducer(const std::string& name) const;
  const sg_device_api* device(const std::string& name) const;

  // The services plugins see through sg_host_api (each plugin gets its own
  // table, whose host_data names it in the log).
  void set_run_dir(std::string dir) { run_dir_ = std::move(dir); }
  void cancel() { cancelled_ = true; }
  void set_log(LogFn log) { log_ = std::move(log); }
  // The run's key-value store, which every plugin reaches through the
  // sg_host_store on its table's extension chain; nullptr detaches it (a
  // run of one process, where set/get say there is no store). Waits for
  // the calls in flight, so the store may be destroyed once detached.
  void set_store(dist::Store* store);
  // The host table the loaded plugin `name` was given, or nullptr: what
  // that plugin sees (the tests call its services as the plugin would).
  const sg_host_api* host_table(const std::string& name) const;

 private:
  struct Library;  // a loaded shared object, kept open while the host lives
  void scan(const SearchDir& dir);
  void load(const std::string& file);
  static void fill_host_api(sg_host_api& api, Library* lib);
  static std::string open_library(Library& lib, const std::string& file);
  static std::string call_entry(Library& lib, const sg_plugin** out);
  static void log_cb(void* lib, sg_log_level level, const char* msg, size_t len);
  static void run_dir_cb(void* lib, const char** out_dir, size_t* out_len);
  static int cancelled_cb(void* lib);
  static int store_set_cb(void* lib, const char* key, size_t key_len, const void* value,
                          size_t value_len, const char** out_message, size_t* out_message_len);
  static int store_get_cb(void* lib, const char* key, size_t key_len, int64_t timeout_ms,
                          const void** out_value, size_t* out_value_len, const char** out_message,
                          size_t* out_message_len);

  std::vector<SearchDir> path_;
  std::vector<PluginRecord> records_;
  std::vector<std::unique_ptr<Library>> libraries_;
  std::string run_dir_;
  std::atomic<bool> cancelled_{false};
  LogFn log_;
  // The store plugins call from their own threads: shared for a call,
  // exclusive to change it.
  std::shared_mutex store_mutex_;
  dist::Store* store_ = nullptr;
};

// "message" of an error returned through `table` (any api with the error
// functions), and frees the error. Survives a misbehaving plugin.
template <class Api>
std::string take_error(const Api* table, sg_error* err) {
  if (!err) return "";
  const char* msg = nullptr;
  size_t len = 0;
  if (table->error_message) table->error_message(err, &msg, &len);
  std::string out = msg ? std::string(msg, len) : "unknown plugin error";
  if (table->error_destroy) table->error_destroy(err);
  return out;
}

// The device table's sg_device_fill (ABI 1.2) with its function set, or
// nullptr: a 1.0 or 1.1 plugin, or one that leaves it out (train::Device
// then uploads the repeated value).
inline const sg_device_fill* device_fill_of(const sg_device_api* api) noexcept {
  constexpr size_t with_extension = offsetof(sg_device_api, extension) + sizeof(void*);
  if (!api || api->struct_size < with_extension) return nullptr;
  auto* fill = reinterpret_cast<const sg_device_fill*>(sg_find_extension(
      api->extension, SG_EXTENSION_DEVICE_FILL, offsetof(sg_device_fill, fill) + sizeof(void*)));
  return fill && fill->fill ? fill : nullptr;
}

// The device table's sg_program_in_place (ABI 1.3) with its function set,
// or nullptr (train::Device then keeps updates out of place).
inline const sg_program_in_place* program_in_place_of(const sg_device_api* api) noexcept {
  constexpr size_t with_extension = offsetof(sg_device_api, extension) + sizeof(void*);
  if (!api || api->struct_size < with_extension) return nullptr;
  auto* ext = reinterpret_cast<const sg_program_in_place*>(
      sg_find_extension(api->extension, SG_EXTENSION_PROGRAM_IN_PLACE,
                        offsetof(sg_program_in_place, in_place) + sizeof(void*)));
  return ext && ext->in_place ? ext : nullptr;
}

}  // namespace sexpgpu::host
