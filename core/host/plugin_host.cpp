// The plugin host: discovery, loading and the checks every plugin's
// description must pass before the core touches its table (plugins.md).
#include "host/plugin_host.h"

#include <algorithm>
#include <boost/dll/shared_library.hpp>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <system_error>

#include "dist/store.h"
#include "util/log.h"

#ifndef SEXPGPU_VERSION
#define SEXPGPU_VERSION "0.0.0"
#endif

namespace sexpgpu::host {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "libsexpgpu-";
constexpr const char* kSuffix = ".so";

// The smallest struct a 1.0 plugin may hand over: every field of 1.0.
// Later minor versions add fields after these, so the minimums never grow.
constexpr size_t kMinPlugin = offsetof(sg_plugin, api) + sizeof(void*);
constexpr size_t kMinSink = offsetof(sg_sink_api, extension) + sizeof(void*);
constexpr size_t kMinReducer = offsetof(sg_reducer_api, extension) + sizeof(void*);
constexpr size_t kMinDevice = offsetof(sg_device_api, extension) + sizeof(void*);
// Enough to read struct_size and both ABI numbers of any major version.
constexpr size_t kMinHeader = offsetof(sg_plugin, abi_minor) + sizeof(uint32_t);

bool is_plugin_file(const std::string& name) {
  return name.size() > std::string(kPrefix).size() + std::string(kSuffix).size() &&
         name.rfind(kPrefix, 0) == 0 &&
         name.compare(name.size() - std::string(kSuffix).size(), std::string::npos, kSuffix) == 0;
}

// libsexpgpu-NAME.so -> NAME, the name a plugin that did not load goes by.
std::string name_from_file(const std::string& file) {
  std::string base = fs::path(file).filename().string();
  size_t p = std::string(kPrefix).size(), s = std::string(kSuffix).size();
  return base.substr(p, base.size() - p - s);
}

// Boost.DLL wraps the loader's message; the loader's own words are the reason.
std::string loader_message(const std::string& what) {
  const std::string tag = "(dlerror system message: ";
  size_t at = what.find(tag);
  if (at == std::string::npos) return what;
  // "...(dlerror system message: TEXT): <errno text>": keep TEXT.
  std::string msg = what.substr(at + tag.size());
  size_t close = msg.rfind(')');
  return close == std::string::npos ? msg : msg.substr(0, close);
}

const char* kind_name(int kind) {
  switch (kind) {
    case SG_PLUGIN_DEVICE: return "device";
    case SG_PLUGIN_SINK: return "sink";
    case SG_PLUGIN_REDUCER: return "reducer";
    default: return "";
  }
}

size_t min_api_size(int kind) {
  switch (kind) {
    case SG_PLUGIN_DEVICE: return kMinDevice;
    case SG_PLUGIN_SINK: return kMinSink;
    default: return kMinReducer;
  }
}

const char* api_name(int kind) {
  switch (kind) {
    case SG_PLUGIN_DEVICE: return "sg_device_api";
    case SG_PLUGIN_SINK: return "sg_sink_api";
    default: return "sg_reducer_api";
  }
}

// The reason the description cannot be used, or "" when it can.
std::string check_description(const sg_plugin* p) {
  if (!p) return "entry point returned NULL (the plugin cannot serve this core)";
  if (p->struct_size < kMinHeader)
    return "struct_size " + std::to_string(p->struct_size) + " is too small for sg_plugin";
  if (p->abi_major != SG_ABI_MAJOR)
    return "ABI major " + std::to_string(p->abi_major) + ", this core speaks " +
           std::to_string(SG_ABI_MAJOR);
  if (p->struct_size < kMinPlugin)
    return "struct_size " + std::to_string(p->struct_size) + " is too small for sg_plugin " +
           std::to_string(SG_ABI_MAJOR) + ".0 (" + std::to_string(kMinPlugin) + ")";
  if (!p->name || !*p->name) return "sg_plugin has no name";
  if (!*kind_name(p->kind)) return "unknown plugin kind " + std::to_string(p->kind);
  if (!p->api) return "sg_plugin has no api table";
  size_t api_size = *static_cast<const size_t*>(p->api);
  if (api_size < min_api_size(p->kind))
    return std::string(api_name(p->kind)) + " struct_size " + std::to_string(api_size) +
           " is too small (" + std::to_string(min_api_size(p->kind)) + ")";
  return "";
}

bool is_under(const fs::path& file, const fs::path& dir) {
  std::error_code ec;
  fs::path f = fs::weakly_canonical(file, ec), d = fs::weakly_canonical(dir, ec);
  auto [a, b] = std::mismatch(d.begin(), d.end(), f.begin(), f.end());
  return a == d.end();
}

}  // namespace

std::string executable_path() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

std::vector<SearchDir> default_search_path() {
  std::vector<SearchDir> out;
  if (const char* env = std::getenv("SEXPGPU_PLUGIN_PATH")) {
    std::string s = env;
    size_t start = 0;
    while (start <= s.size()) {
      size_t colon = s.find(':', start);
      if (colon == std::string::npos) colon = s.size();
      if (colon > start) out.push_back({s.substr(start, colon - start), "SEXPGPU_PLUGIN_PATH"});
      start = colon + 1;
    }
  }
  return search_path_after(std::move(out));
}

std::vector<SearchDir> search_path_after(std::vector<SearchDir> first) {
  std::vector<SearchDir> out = std::move(first);
  std::string exe = executable_path();
#if defined(SEXPGPU_BUILD_DIR) && defined(SEXPGPU_BUILD_PLUGIN_DIR)
  // Only a binary of this build tree looks at its plugins: an installed one
  // must not pick up a stale build.
  if (!exe.empty() && is_under(exe, SEXPGPU_BUILD_DIR))
    out.push_back({SEXPGPU_BUILD_PLUGIN_DIR, "build tree"});
#endif
  if (!exe.empty()) {
    fs::path installed = fs::path(exe).parent_path() / ".." / "lib" / "sexpgpu" / "plugins";
    out.push_back({installed.lexically_normal().string(), "installed"});
  }
  return out;
}

std::string include_dir() {
  std::error_code ec;
  std::string exe = executable_path();
#if defined(SEXPGPU_BUILD_DIR) && defined(SEXPGPU_SOURCE_INCLUDE_DIR)
  if (!exe.empty() && is_under(exe, SEXPGPU_BUILD_DIR) &&
      fs::exists(fs::path(SEXPGPU_SOURCE_INCLUDE_DIR) / "sexpgpu" / "plugin.h", ec))
    return SEXPGPU_SOURCE_INCLUDE_DIR;
#endif
  if (!exe.empty()) {
    fs::path inc = (fs::path(exe).parent_path() / ".." / "include").lexically_normal();
    if (fs::exists(inc / "sexpgpu" / "plugin.h", ec)) return inc.string();
  }
  return "";
}

// One shared object, kept open while the host lives, with the host table
// it was given (host_data points back here so the log can name it).
struct PluginHost::Library {
  boost::dll::shared_library lib;
  PluginHost* host = nullptr;
  std::string name;
  sg_host_api api{};
  sg_host_store store{};  // api.extension: the run's store, through host->store_
};

PluginHost::PluginHost(std::vector<SearchDir> path) : path_(std::move(path)) {
  // A plugin's messages go into the core's log (util/log.h) at their level.
  log_ = [](sg_log_level level, const std::string& plugin, const std::string& msg) {
    log::Level l = level <= SG_LOG_TRACE   ? log::Level::Trace
                   : level == SG_LOG_DEBUG ? log::Level::Debug
                   : level == SG_LOG_INFO  ? log::Level::Info
                   : level == SG_LOG_WARN  ? log::Level::Warn
                                           : log::Level::Error;
    log::at(l, "plugin {}: {}", plugin, msg);
  };
  log::Stopwatch took;
  for (const SearchDir& d : path_) scan(d);
  if (log::enabled(log::Level::Info)) {
    std::string loaded;
    size_t refused = 0;
    for (const PluginRecord& r : records_) {
      if (r.loaded)
        loaded += (loaded.empty() ? "" : " ") + r.name;
      else
        ++refused;
    }
    log::info("plugin host: loaded {} in {:.1f} ms ({} refused; {} search dirs)",
              loaded.empty() ? "no plugin" : loaded, took.ms(), refused, path_.size());
  }
}

PluginHost::~PluginHost() = default;

void PluginHost::scan(const SearchDir& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir.dir, ec)) {
    log::debug("plugin host: search {} ({}): not a directory, skipped", dir.dir, dir.source);
    return;
  }
  std::vector<std::string> files;
  for (fs::directory_iterator it(dir.dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (is_plugin_file(name)) files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());  // the same order on every machine
  log::debug("plugin host: search {} ({}): {} plugin files", dir.dir, dir.source, files.size());
  for (const std::string& f : files) load(f);
}

void PluginHost::load(const std::string& file) {
  PluginRecord rec;
  rec.name = name_from_file(file);
  rec.path = file;
  auto lib = std::make_unique<Library>();
  lib->host = this;
  lib->name = rec.name;
  fill_host_api(lib->api, lib.get());
  const sg_plugin* p = nullptr;
  log::trace("plugin host: trying {}", file);
  log::Stopwatch took;
  rec.reason = open_library(*lib, file);
  if (rec.reason.empty()) rec.reason = call_entry(*lib, &p);
  if (rec.reason.empty()) rec.reason = check_description(p);
  if (p && p->struct_size >= kMinHeader)
    rec.abi = std::to_string(p->abi_major) + "." + std::to_string(p->abi_minor);
  if (rec.reason.empty()) {
    rec.name = p->name;
    rec.kind = kind_name(p->kind);
    rec.version = p->version ? p->version : "";
    lib->name = rec.name;
    if (const PluginRecord* earlier = find(rec.name))
      rec.reason = "shadowed by " + earlier->path;
    else
      rec.plugin = p;
  }
  rec.loaded = rec.reason.empty();
  if (rec.loaded)
    log::debug("plugin host: loaded {} ({} {}, ABI {}) from {} in {:.1f} ms", rec.name, rec.kind,
               rec.version, rec.abi, file, took.ms());
  else
    log::debug("plugin host: refused {}: {}", file, rec.reason);
  if (rec.loaded) libraries_.push_back(std::move(lib));
  records_.push_back(std::move(rec));
  // A plugin that did not load is unloaded here, as `lib` goes.
}

void PluginHost::fill_host_api(sg_host_api& api, Library* lib) {
  api.struct_size = sizeof(sg_host_api);
  api.abi_major = SG_ABI_MAJOR;
  api.abi_minor = SG_ABI_MINOR;
  api.core_version = SEXPGPU_VERSION;
  api.core_version_len = sizeof(SEXPGPU_VERSION) - 1;
  api.host_data = lib;
  api.log = &PluginHost::log_cb;
  api.run_dir = &PluginHost::run_dir_cb;
  api.cancelled = &PluginHost::cancelled_cb;
  sg_host_store& store = lib->store;
  store.base.struct_size = sizeof(sg_host_store);
  store.base.type = SG_EXTENSION_HOST_STORE;
  store.base.next = nullptr;
  store.store_data = lib;
  store.set = &PluginHost::store_set_cb;
  store.get = &PluginHost::store_get_cb;
  api.extension = &store.base;
}

// Loads the shared object; the reason it cannot be loaded, or "". Running
// the plugin's static constructors is part of loading, hence the firewall.
std::string PluginHost::open_library(Library& lib, const std::string& file) {
  try {
    lib.lib.load(file, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    if (!lib.lib.has(SG_PLUGIN_ENTRY_SYMBOL)) return "no entry point " SG_PLUGIN_ENTRY_SYMBOL;
    return "";
  } catch (const std::exception& e) {
    return loader_message(e.what());
  } catch (...) {
    return "the plugin threw while being loaded";
  }
}

// Calls the entry point behind the exception firewall: a C++ plugin that
// lets an exception escape is refused, not fatal.
std::string PluginHost::call_entry(Library& lib, const sg_plugin** out) {
  try {
    auto entry = lib.lib.get<const sg_plugin*(const sg_host_api*)>(SG_PLUGIN_ENTRY_SYMBOL);
    *out = entry(&lib.api);
    return "";
  } catch (const std::exception& e) {
    return std::string("entry point threw: ") + e.what();
  } catch (...) {
    return "entry point threw";
  }
}

void PluginHost::set_store(dist::Store* store) {
  std::unique_lock lock(store_mutex_);
  store_ = store;
}

const sg_host_api* PluginHost::host_table(const std::string& name) const {
  for (const auto& lib : libraries_)
    if (lib->name == name) return &lib->api;
  return nullptr;
}

const PluginRecord* PluginHost::find(const std::string& name) const {
  for (const PluginRecord& r : records_)
    if (r.loaded && r.name == name) return &r;
  return nullptr;
}

std::vector<std::string> PluginHost::names(sg_plugin_kind kind) const {
  std::vector<std::string> out;
  for (const PluginRecord& r : records_)
    if (r.loaded && r.plugin->kind == kind) out.push_back(r.name);
  return out;
}

const sg_sink_api* PluginHost::sink(const std::string& name) const {
  const PluginRecord* r = find(name);
  return r && r->plugin->kind == SG_PLUGIN_SINK ? static_cast<const sg_sink_api*>(r->plugin->api)
                                                : nullptr;
}

const sg_reducer_api* PluginHost::reducer(const std::string& name) const {
  const PluginRecord* r = find(name);
  return r && r->plugin->kind == SG_PLUGIN_REDUCER
             ? static_cast<const sg_reducer_api*>(r->plugin->api)
             : nullptr;
}

const sg_device_api* PluginHost::device(const std::string& name) const {
  const PluginRecord* r = find(name);
  return r && r->plugin->kind == SG_PLUGIN_DEVICE
             ? static_cast<const sg_device_api*>(r->plugin->api)
             : nullptr;
}

// The callbacks are called from C: nothing may escape them.
void PluginHost::log_cb(void* lib, sg_log_level level, const char* msg, size_t len) {
  try {
    auto* l = static_cast<Library*>(lib);
    if (l->host->log_) l->host->log_(level, l->name, msg ? std::string(msg, len) : std::string());
  } catch (...) {
  }
}

void PluginHost::run_dir_cb(void* lib, const char** out_dir, size_t* out_len) {
  const std::string& d = static_cast<Library*>(lib)->host->run_dir_;
  if (out_dir) *out_dir = d.c_str();
  if (out_len) *out_len = d.size();
}

int PluginHost::cancelled_cb(void* lib) {
  return static_cast<Library*>(lib)->host->cancelled_.load() ? 1 : 0;
}

namespace {

// What sg_host_store's calls hand back (plugin.h: host-owned, valid until
// the next call of that table on the same thread), per thread and table.
struct StoreScratch {
  std::string message;
  std::vector<std::byte> value;
};
StoreScratch& scratch(const void* lib) {
  thread_local std::map<const void*, StoreScratch> per_table;
  return per_table[lib];
}

// A failed call: nonzero, and the message in the caller's scratch.
int store_failure(StoreScratch& s, std::string message, const char** out, size_t* out_len) {
  s.message = std::move(message);
  if (out) *out = s.message.c_str();
  if (out_len) *out_len = s.message.size();
  return 1;
}

std::string describe(const Diagnostic& d) {
  return d.fix.empty() ? d.message : d.message + "; " + d.fix;
}

constexpr const char* kNoStore = "this run is one process: there is no store";

}  // namespace

int PluginHost::store_set_cb(void* lib, const char* key, size_t key_len, const void* value,
                             size_t value_len, const char** out_message, size_t* out_message_len) {
  try {
    PluginHost* host = static_cast<Library*>(lib)->host;
    StoreScratch& s = scratch(lib);
    std::shared_lock lock(host->store_mutex_);
    if (!host->store_) return store_failure(s, kNoStore, out_message, out_message_len);
    if ((!key && key_len) || (!value && value_len))
      return store_failure(s, "sg_host_store set: a null key or value with a length", out_message,
                           out_message_len);
    auto* bytes = static_cast<const std::byte*>(value);
    Status st = host->store_->set(std::string(key ? key : "", key_len),
                                  std::vector<std::byte>(bytes, bytes + value_len));
    if (!st) return store_failure(s, describe(st.diagnostic()), out_message, out_message_len);
    return 0;
  } catch (const std::exception& e) {
    return store_failure(scratch(lib), std::string("sg_host_store set: ") + e.what(), out_message,
                         out_message_len);
  }
}

int PluginHost::store_get_cb(void* lib, const char* key, size_t key_len, int64_t timeout_ms,
                             const void** out_value, size_t* out_value_len,
                             const char** out_message, size_t* out_message_len) {
  try {
    PluginHost* host = static_cast<Library*>(lib)->host;
    StoreScratch& s = scratch(lib);
    std::shared_lock lock(host->store_mutex_);
    if (!host->store_) return store_failure(s, kNoStore, out_message, out_message_len);
    if ((!key && key_len) || timeout_ms < 0)
      return store_failure(s, "sg_host_store get: a null key with a length, or timeout_ms < 0",
                           out_message, out_message_len);
    std::chrono::milliseconds timeout =
        timeout_ms == 0 ? host->store_->world().timeout : std::chrono::milliseconds(timeout_ms);
    Result<std::vector<std::byte>> got =
        host->store_->get(std::string(key ? key : "", key_len), timeout);
    if (!got) return store_failure(s, describe(got.diagnostic()), out_message, out_message_len);
    s.value = std::move(got).value();
    if (out_value) *out_value = s.value.data();
    if (out_value_len) *out_value_len = s.value.size();
    return 0;
  } catch (const std::exception& e) {
    return store_failure(scratch(lib), std::string("sg_host_store get: ") + e.what(), out_message,
                         out_message_len);
  }
}

}  // namespace sexpgpu::host
