// The plugin host: loading the example sink and calling it through its
// table; every broken test plugin (tests/plugins/) listed with its reason
// and nothing crashing; shadowing by an earlier directory.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "catch.hpp"
#include "host/plugin_host.h"
#include "sexpgpu/sdk/tables.h"

namespace {

namespace fs = std::filesystem;
using sexpgpu::host::PluginHost;
using sexpgpu::host::PluginRecord;
using sexpgpu::host::SearchDir;

const PluginRecord* by_file(const PluginHost& h, const std::string& file) {
  for (const PluginRecord& r : h.plugins())
    if (fs::path(r.path).filename() == file) return &r;
  return nullptr;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A fresh empty directory under the system temp dir.
fs::path temp_dir(const std::string& tag) {
  fs::path d =
      fs::temp_directory_path() / ("sexpgpu-host-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST_CASE("the example sink loads and writes every event through its table", "[plugins]") {
  PluginHost h(std::vector<SearchDir>{{SEXPGPU_BUILD_PLUGIN_DIR, "build tree"}});
  const PluginRecord* rec = h.find("example-sink");
  REQUIRE(rec);
  CHECK(rec->loaded);
  CHECK(rec->kind == "sink");
  CHECK(rec->version == "1.0.0");
  CHECK(rec->abi == "1.3");
  CHECK(rec->reason.empty());
  const sg_sink_api* api = h.sink("example-sink");
  REQUIRE(api);
  CHECK(h.device("example-sink") == nullptr);
  CHECK(h.reducer("example-sink") == nullptr);

  fs::path dir = temp_dir("sink");
  h.set_run_dir(dir.string());
  std::vector<std::string> logged;
  h.set_log([&](sg_log_level, const std::string& plugin, const std::string& msg) {
    logged.push_back(plugin + ": " + msg);
  });
  std::string run = dir.string(), open = R"({"event":"open"})", arg = "copy.jsonl";
  sg_sink* sink = nullptr;
  REQUIRE(api->open(run.data(), run.size(), open.data(), open.size(), arg.data(), arg.size(),
                    &sink) == nullptr);
  REQUIRE(sink);
  for (std::string ev : {R"({"event":"step","step":1})", R"({"event":"step","step":2})"})
    CHECK(api->event(sink, ev.data(), ev.size()) == nullptr);
  CHECK(api->flush(sink) == nullptr);
  CHECK(api->close(sink) == nullptr);
  CHECK(slurp(dir / "copy.jsonl") ==
        "{\"event\":\"open\"}\n{\"event\":\"step\",\"step\":1}\n{\"event\":\"step\",\"step\":2}\n");
  // The sink logs its count through the host table, named by the host.
  REQUIRE(logged.size() == 1);
  CHECK(logged[0] == "example-sink: 2 events");
  fs::remove_all(dir);
}

TEST_CASE("a sink's error is an object freed through its table", "[plugins]") {
  PluginHost h(std::vector<SearchDir>{{SEXPGPU_BUILD_PLUGIN_DIR, "build tree"}});
  const sg_sink_api* api = h.sink("example-sink");
  REQUIRE(api);
  std::string run, open = "{}", arg = "/no/such/dir/out.jsonl";
  sg_sink* sink = nullptr;
  sg_error* err =
      api->open(run.data(), run.size(), open.data(), open.size(), arg.data(), arg.size(), &sink);
  REQUIRE(err);
  CHECK(api->error_code(err) == SG_ERROR_IO);
  CHECK(sexpgpu::host::take_error(api, err) == "cannot open: /no/such/dir/out.jsonl");
  CHECK(sink == nullptr);
}

TEST_CASE("a sink without an argument counts events", "[plugins]") {
  PluginHost h(std::vector<SearchDir>{{SEXPGPU_BUILD_PLUGIN_DIR, "build tree"}});
  const sg_sink_api* api = h.sink("example-sink");
  REQUIRE(api);
  std::string msg;
  h.set_log([&](sg_log_level level, const std::string&, const std::string& m) {
    CHECK(level == SG_LOG_INFO);
    msg = m;
  });
  sg_sink* sink = nullptr;
  REQUIRE(api->open("", 0, "{}", 2, "", 0, &sink) == nullptr);
  for (int i = 0; i < 5; ++i) CHECK(api->event(sink, "{}", 2) == nullptr);
  CHECK(api->close(sink) == nullptr);
  CHECK(msg == "5 events");
}

TEST_CASE("every broken plugin is listed with its reason, and nothing crashes", "[plugins]") {
  PluginHost h(std::vector<SearchDir>{{SEXPGPU_TEST_PLUGIN_DIR, "SEXPGPU_PLUGIN_PATH"}});
  REQUIRE(h.plugins().size() == 8);

  const PluginRecord* abi2 = by_file(h, "libsexpgpu-abi2.so");
  REQUIRE(abi2);
  CHECK_FALSE(abi2->loaded);
  CHECK(abi2->reason == "ABI major 2, this core speaks 1");
  CHECK(abi2->abi == "2.0");

  const PluginRecord* no_entry = by_file(h, "libsexpgpu-no-entry.so");
  REQUIRE(no_entry);
  CHECK_FALSE(no_entry->loaded);
  CHECK(no_entry->reason == "no entry point sexpgpu_plugin_entry_v1");
  CHECK(no_entry->name == "no-entry");

  const PluginRecord* null_entry = by_file(h, "libsexpgpu-null-entry.so");
  REQUIRE(null_entry);
  CHECK_FALSE(null_entry->loaded);
  CHECK(null_entry->reason == "entry point returned NULL (the plugin cannot serve this core)");

  const PluginRecord* small = by_file(h, "libsexpgpu-small-struct.so");
  REQUIRE(small);
  CHECK_FALSE(small->loaded);
  CHECK(small->reason == "struct_size 20 is too small for sg_plugin 1.0 (48)");

  const PluginRecord* dep = by_file(h, "libsexpgpu-missing-dep.so");
  REQUIRE(dep);
  CHECK_FALSE(dep->loaded);
  // The loader's own words.
  CHECK(dep->reason.find("libsexpgpu-dep-absent.so: cannot open shared object file") !=
        std::string::npos);
  CHECK(dep->reason ==
        "libsexpgpu-dep-absent.so: cannot open shared object file: No such file or directory");

  const PluginRecord* throws = by_file(h, "libsexpgpu-throws.so");
  REQUIRE(throws);
  CHECK_FALSE(throws->loaded);
  CHECK(throws->reason == "entry point threw: no GPU driver found");

  const PluginRecord* device = by_file(h, "libsexpgpu-device.so");
  REQUIRE(device);
  CHECK(device->loaded);
  CHECK(device->kind == "device");
  CHECK(device->name == "test-device");
  const sg_device_api* api = h.device("test-device");
  REQUIRE(api);
  const char* json = nullptr;
  size_t len = 0;
  CHECK(api->probe(&json, &len) == nullptr);
  CHECK(std::string(json, len).find("\"available\":false") != std::string::npos);
  CHECK(h.sink("test-device") == nullptr);

  // The loaded plugins by kind: what check and run hand the compiler.
  CHECK(h.names(SG_PLUGIN_DEVICE) == std::vector<std::string>{"test-device"});
  CHECK(h.names(SG_PLUGIN_REDUCER) == std::vector<std::string>{"fails"});
  CHECK(h.names(SG_PLUGIN_SINK).empty());

  // Only loaded plugins are found by name.
  CHECK(h.find("abi-two") == nullptr);
  CHECK(h.find("no-entry") == nullptr);
}

TEST_CASE("a plugin name taken by an earlier directory shadows the later one", "[plugins]") {
  fs::path early = temp_dir("shadow");
  fs::copy_file(fs::path(SEXPGPU_BUILD_PLUGIN_DIR) / "libsexpgpu-example-sink.so",
                early / "libsexpgpu-my-copy.so");
  PluginHost h({{early.string(), "SEXPGPU_PLUGIN_PATH"}, {SEXPGPU_BUILD_PLUGIN_DIR, "build tree"}});
  const PluginRecord* first = by_file(h, "libsexpgpu-my-copy.so");
  const PluginRecord* second = by_file(h, "libsexpgpu-example-sink.so");
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->loaded);
  CHECK(first->name == "example-sink");
  CHECK_FALSE(second->loaded);
  CHECK(second->name == "example-sink");
  CHECK(second->reason == "shadowed by " + first->path);
  CHECK(h.find("example-sink") == first);
  fs::remove_all(early);
}

TEST_CASE("missing and empty directories, and files that are not plugins, are skipped",
          "[plugins]") {
  fs::path d = temp_dir("skip");
  std::ofstream(d / "libsexpgpu-.so") << "";
  std::ofstream(d / "libother.so") << "";
  std::ofstream(d / "libsexpgpu-garbage.so") << "not an ELF file";
  PluginHost h({{(d / "missing").string(), "SEXPGPU_PLUGIN_PATH"}, {d.string(), "installed"}});
  REQUIRE(h.plugins().size() == 1);
  CHECK(h.plugins()[0].name == "garbage");
  CHECK_FALSE(h.plugins()[0].loaded);
  CHECK(h.plugins()[0].reason.find("libsexpgpu-garbage.so") != std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("the search path: SEXPGPU_PLUGIN_PATH first, then the build tree, then installed",
          "[plugins]") {
  setenv("SEXPGPU_PLUGIN_PATH", "/a::/b", 1);
  auto path = sexpgpu::host::default_search_path();
  unsetenv("SEXPGPU_PLUGIN_PATH");
  REQUIRE(path.size() == 4);
  CHECK(path[0].dir == "/a");
  CHECK(path[0].source == "SEXPGPU_PLUGIN_PATH");
  CHECK(path[1].dir == "/b");
  CHECK(path[2].dir == SEXPGPU_BUILD_PLUGIN_DIR);
  CHECK(path[2].source == "build tree");
  CHECK(path[3].source == "installed");
  CHECK(path[3].dir.size() > std::string("lib/sexpgpu/plugins").size());
  CHECK(path[3].dir.rfind("lib/sexpgpu/plugins") == path[3].dir.size() - 19);
}

TEST_CASE("the include dir holds sexpgpu/plugin.h", "[plugins]") {
  std::string dir = sexpgpu::host::include_dir();
  REQUIRE(!dir.empty());
  CHECK(fs::exists(fs::path(dir) / "sexpgpu" / "plugin.h"));
}

TEST_CASE("device_fill_of finds sg_device_fill on a device table's chain by type and size",
          "[plugins]") {
  constexpr sg_device_api bare = sexpgpu::sdk::device_table({});
  CHECK(sexpgpu::host::device_fill_of(&bare) == nullptr);
  CHECK(sexpgpu::host::device_fill_of(nullptr) == nullptr);
  static constexpr sg_device_fill kFill = sexpgpu::sdk::device_fill(
      [](sg_buffer*, const void*, size_t, uint32_t) -> sg_error* { return nullptr; });
  static_assert(kFill.base.type == SG_EXTENSION_DEVICE_FILL);
  static_assert(kFill.base.struct_size == sizeof(sg_device_fill));
  // Behind a link of another type, as a later minor version may put one.
  const sg_extension_base other{sizeof(sg_extension_base), 99u, &kFill.base};
  sg_device_api api = sexpgpu::sdk::device_table({}, &other);
  CHECK(sexpgpu::host::device_fill_of(&api) == &kFill);
  api.struct_size = offsetof(sg_device_api, extension);  // a table without the field
  CHECK(sexpgpu::host::device_fill_of(&api) == nullptr);
  api.struct_size = sizeof api;
  sg_device_fill small = kFill;
  small.base.struct_size = offsetof(sg_device_fill, fill);  // too small to hold fill
  api.extension = &small.base;
  CHECK(sexpgpu::host::device_fill_of(&api) == nullptr);
  sg_device_fill unset = kFill;
  unset.fill = nullptr;
  api.extension = &unset.base;
  CHECK(sexpgpu::host::device_fill_of(&api) == nullptr);
  sg_extension_base loop{sizeof(sg_extension_base), 99u, nullptr};
  loop.next = &loop;  // a broken chain ends the walk, not the process
  api.extension = &loop;
  CHECK(sexpgpu::host::device_fill_of(&api) == nullptr);
}
