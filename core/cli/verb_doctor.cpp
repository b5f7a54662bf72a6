// sexpgpu doctor [--json]: whether a run can start on this machine: the
// plugin search path, every plugin found and why it did not load, and the
// probe of every device plugin that did (docs/doctor.md).
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/verbs.h"
#include "host/plugin_host.h"

namespace sexpgpu::cli {

namespace {

using json = nlohmann::ordered_json;  // keys in the order docs/doctor.md gives

// The probe of one loaded device plugin, behind the exception firewall:
// {plugin, ok, probe (the plugin's JSON) or error}.
json probe_device(const host::PluginRecord& rec) {
  json out = {{"plugin", rec.name}};
  const auto* api = static_cast<const sg_device_api*>(rec.plugin->api);
  try {
    const char* text = nullptr;
    size_t len = 0;
    sg_error* err = api->probe ? api->probe(&text, &len) : nullptr;
    if (!api->probe) {
      out["ok"] = false;
      out["error"] = "the plugin has no probe";
    } else if (err) {
      out["ok"] = false;
      out["error"] = host::take_error(api, err);
    } else {
      json probe = json::parse(std::string(text ? text : "", text ? len : 0), nullptr, false);
      out["ok"] = !probe.is_discarded() && probe.value("available", true);
      if (probe.is_discarded())
        out["error"] = "the probe is not JSON";
      else
        out["probe"] = probe;
    }
  } catch (const std::exception& e) {
    out["ok"] = false;
    out["error"] = e.what();
  } catch (...) {
    out["ok"] = false;
    out["error"] = "the plugin threw during probe";
  }
  return out;
}

json report(const host::PluginHost& h) {
  json j = {{"search_path", json::array()}, {"plugins", json::array()}, {"devices", json::array()}};
  for (const auto& d : h.search_path())
    j["search_path"].push_back({{"dir", d.dir}, {"source", d.source}});
  for (const auto& p : h.plugins()) {
    j["plugins"].push_back({{"name", p.name},
                            {"kind", p.kind},
                            {"version", p.version},
                            {"abi", p.abi},
                            {"status", p.loaded ? "loaded" : "not loaded"},
                            {"reason", p.reason},
                            {"path", p.path}});
    if (p.loaded && p.plugin->kind == SG_PLUGIN_DEVICE) j["devices"].push_back(probe_device(p));
  }
  return j;
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

void print_human(const json& j) {
  std::cout << "plugin search path:\n";
  for (const auto& d : j["search_path"]) {
    std::error_code ec;
    bool there = std::filesystem::is_directory(d["dir"].get<std::string>(), ec);
    std::cout << "  " << d["dir"].get<std::string>() << "  (" << d["source"].get<std::string>()
              << (there ? "" : ", missing") << ")\n";
  }
  std::cout << "\nplugins:\n";
  if (j["plugins"].empty())
    std::cout << "  none found\n";
  else
    std::cout << "  " << pad("NAME", 16) << pad("KIND", 9) << pad("VERSION", 10)
              << pad("STATUS", 12) << "PATH\n";
  for (const auto& p : j["plugins"]) {
    std::cout << "  " << pad(p["name"], 16)
              << pad(p["kind"].get<std::string>().empty() ? "-" : p["kind"], 9)
              << pad(p["version"].get<std::string>().empty() ? "-" : p["version"], 10)
              << pad(p["status"], 12) << p["path"].get<std::string>() << "\n";
    if (!p["reason"].get<std::string>().empty())
      std::cout << "    reason: " << p["reason"].get<std::string>() << "\n";
  }
  std::cout << "\ndevices:\n";
  if (j["devices"].empty()) std::cout << "  none: no device plugin loads\n";
  for (const auto& d : j["devices"]) {
    std::cout << "  " << d["plugin"].get<std::string>() << ": ";
    if (d.contains("probe") && !d["ok"].get<bool>())
      std::cout << "unavailable: " << d["probe"].value("reason", std::string("no reason given"))
                << "\n";
    else if (d.contains("probe"))
      std::cout << d["probe"].dump() << "\n";
    else
      std::cout << "error: " << d["error"].get<std::string>() << "\n";
  }
}

}  // namespace

void add_doctor(CLI::App& app, int& exit_code) {
  auto json_out = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("doctor", "whether a run can start here: plugins and devices");
  cmd->add_flag("--json", *json_out, "print the report as one JSON document");
  cmd->callback([json_out, &exit_code]() {
    host::PluginHost h(host::default_search_path());
    json j = report(h);
    if (*json_out)
      std::cout << j.dump(2) << "\n";
    else
      print_human(j);
    // A run needs a device; no device plugin serves one yet on this machine.
    bool device_ok = false;
    for (const auto& d : j["devices"]) device_ok = device_ok || d["ok"].get<bool>();
    if (!device_ok) {
      std::cerr << "sexpgpu doctor: this machine cannot start a run: "
                << (j["devices"].empty() ? "no device plugin loads" : "no device plugin can serve")
                << "\n";
      exit_code = kCannotRun;
    }
  });
}

}  // namespace sexpgpu::cli
