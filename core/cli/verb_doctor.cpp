// sexpgpu doctor [FILE] [selection] [--json]: whether a run can start on
// this machine: the plugin search path, every plugin found and why it did
// not load, the probe of every device plugin that did, the reducers
// defdiagnostic may name (the core's and the plugins'), and with FILE the
// run's device memory against its memory plan, its data and the disk for
// its checkpoints, and for a file with s3:// data where the S3 credentials
// come from (never their values) and whether each object is reachable;
// NCCL, and every effective setting with where it came from
// (docs/doctor.md).
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/s3_access.h"
#include "cli/settings.h"
#include "cli/verbs.h"
#include "host/plugin_host.h"
#include "runfile/compile.h"
#include "runfile/diagnostics.h"
#include "runfile/loaders.h"
#include "train/memory_plan.h"
#include "train/trainer.h"

namespace sexpgpu::cli {

namespace {

using json = nlohmann::ordered_json;  // keys in the order docs/doctor.md gives

// The probe of one loaded device plugin, behind the exception firewall:
// {plugin, ok, probe (the plugin's JSON) or error}.
json probe_device(const host::PluginRecord& rec) {
  json out = {{"plugin", rec.name}};
  const auto* api = static_cast<const sg_device_api*>(rec.plugin->api);
  // The optional parts of the table it has (plugin.h's extension chain):
  // without them the core uploads fills and keeps updates out of place.
  out["extensions"] = json::array();
  if (host::device_fill_of(api)) out["extensions"].push_back("sg_device_fill");
  if (host::program_in_place_of(api)) out["extensions"].push_back("sg_program_in_place");
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

// The reducers a defdiagnostic's :reduce may name here: the core's, then
// each loaded reducer plugin's with the names of its outputs.
json reducers(const host::PluginHost& h) {
  json plugins = json::array();
  for (const std::string& name : h.names(SG_PLUGIN_REDUCER)) {
    const sg_reducer_api* api = h.reducer(name);
    json outputs = json::array();
    size_t count = 0;
    const char* const* names = nullptr;
    if (api->outputs) api->outputs(&count, &names);
    for (size_t i = 0; names && i < count; ++i) outputs.push_back(names[i] ? names[i] : "");
    plugins.push_back({{"name", name}, {"outputs", outputs}});
  }
  return {{"core", runfile::core_reducers()}, {"plugins", plugins}};
}

json report(const host::PluginHost& h) {
  json j = {{"search_path", json::array()},
            {"plugins", json::array()},
            {"devices", json::array()},
            {"reducers", reducers(h)}};
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

// NCCL, as a run on several GPUs would find it: opened with dlopen, never
// linked into the core, so a machine without it only loses this line.
json nccl_report() {
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return {{"available", false}, {"reason", why ? why : "libnccl.so.2 cannot be loaded"}};
  }
  using GetVersion = int (*)(int*);
  auto get_version = reinterpret_cast<GetVersion>(dlsym(lib, "ncclGetVersion"));
  int code = 0;
  json out;
  if (!get_version) {
    out = {{"available", false}, {"reason", "libnccl.so.2 has no ncclGetVersion"}};
  } else if (int rc = get_version(&code); rc != 0) {
    out = {{"available", false}, {"reason", "ncclGetVersion failed (" + std::to_string(rc) + ")"}};
  } else {
    // NCCL_VERSION_CODE: MAJOR*10000+MINOR*100+PATCH since 2.9, before it
    // MAJOR*1000+MINOR*100+PATCH.
    int major = code >= 10000 ? code / 10000 : code / 1000;
    int minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
    std::string version =
        std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
    Dl_info info{};
    std::string path = dladdr(reinterpret_cast<void*>(get_version), &info) && info.dli_fname
                           ? info.dli_fname
                           : "libnccl.so.2";
    out = {{"available", true}, {"version", version}, {"library", path}};
  }
  // Left open: the process ends soon, and unloading NCCL runs its teardown.
  return out;
}

// The config file and every effective setting: {name, value, source, origin}.
json settings_report(const config::Settings& s, const config::Flags& flags,
                     const std::optional<std::string>& run_file_device) {
  const config::ConfigLocation& where = s.location();
  json out = {{"config",
               {{"path", where.path.empty() ? json(nullptr) : json(where.path)},
                {"source", config::source_name(where.source)},
                {"present", s.file_present()}}},
              {"settings", json::array()}};
  for (const config::Setting& row : s.table(flags, run_file_device))
    out["settings"].push_back({{"name", row.name},
                               {"value", row.value ? json(*row.value) : json(nullptr)},
                               {"source", config::source_name(row.source)},
                               {"origin", row.origin}});
  return out;
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
  std::cout << "\nreducers (defdiagnostic :reduce):\n  core:";
  for (const auto& r : j["reducers"]["core"]) std::cout << " " << r.get<std::string>();
  std::cout << "\n";
  for (const auto& r : j["reducers"]["plugins"]) {
    std::cout << "  " << r["name"].get<std::string>() << ":";
    for (const auto& o : r["outputs"]) std::cout << " " << o.get<std::string>();
    std::cout << "\n";
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
    std::string extensions;
    for (const auto& e : d["extensions"]) extensions += " " + e.get<std::string>();
    std::cout << "    extensions:" << (extensions.empty() ? " none" : extensions) << "\n";
  }
  const json& nccl = j["nccl"];
  std::cout << "\nnccl: "
            << (nccl["available"].get<bool>()
                    ? nccl["version"].get<std::string>() + " (" +
                          nccl["library"].get<std::string>() + ")"
                    : "not available: " + nccl["reason"].get<std::string>())
            << "\n";
  const json& config = j["config"];
  std::cout << "\nsettings:\n  config file: ";
  if (config["path"].is_null())
    std::cout << "none (no SEXPGPU_CONFIG and no HOME)\n";
  else if (config["present"].get<bool>())
    std::cout << config["path"].get<std::string>() << " ("
              << (config["source"] == "environment" ? "SEXPGPU_CONFIG" : "default") << ")\n";
  else
    std::cout << "none (" << config["path"].get<std::string>() << " does not exist)\n";
  for (const json& row : j["settings"]) {
    std::string source = row["source"].get<std::string>();
    if (source != "default") source += ": " + row["origin"].get<std::string>();
    std::cout << "  " << pad(row["name"], 14)
              << (row["value"].is_null() ? "-" : row["value"].get<std::string>()) << "  (" << source
              << ")\n";
  }
}

// What `run FILE` would need here: the device it would pick (as run does:
// $SEXPGPU_DEVICE, else defrun's :device; auto is cuda where its probe can
// serve, else cpu), the memory plan against that device's memory, every
// loader's data, and free disk for a checkpoint in the run directory.
// Each part has "ok"; the problems are listed in "problems" as
// "E-CODE message".
json file_report(runfile::Session& s, const std::string& file, const json& devices,
                 const config::Setting& device) {
  const runfile::CompiledRun& run = *s.compiled;
  std::string spec = *device.value;
  std::string from = device.source == config::Source::Default      ? std::string("default")
                     : device.source == config::Source::ConfigFile ? "config file " + device.origin
                                                                   : device.origin;
  std::string plugin = spec.substr(0, spec.find(':'));
  if (plugin == "auto") {
    plugin = "cpu";
    for (const auto& d : devices)
      if (d["plugin"] == "cuda" && d["ok"].get<bool>()) plugin = "cuda";
  }
  json out = {{"path", file}, {"device", spec}, {"device_from", from}, {"problems", json::array()}};
  auto problem = [&](const std::string& text) { out["problems"].push_back(text); };

  const train::RunMemory plan = train::plan_run_memory(run);
  json memory = {{"plugin", plugin}, {"need_bytes", plan.total()}, {"have_bytes", nullptr}};
  std::optional<int> ordinal = train::device_ordinal(spec);
  const json* probe = nullptr;
  for (const auto& d : devices)
    if (d["plugin"] == plugin && d.contains("probe")) probe = &d["probe"];
  if (!ordinal) {
    problem("E-DEVICE " + spec + ": the ordinal after ':' takes 0 to " +
            std::to_string(train::kMaxOrdinal));
  } else if (!probe) {
    problem("E-DEVICE no device plugin '" + plugin + "' loads here");
  } else {
    const json& list = probe->contains("devices") ? (*probe)["devices"] : json::array();
    if (!list.is_array() || size_t(*ordinal) >= list.size() ||
        !list[size_t(*ordinal)].contains("memory_bytes")) {
      problem("E-DEVICE " + plugin + " has no device " + std::to_string(*ordinal));
    } else {
      uint64_t have = list[size_t(*ordinal)]["memory_bytes"].get<uint64_t>();
      memory["have_bytes"] = have;
      std::string name = plugin + (list.size() > 1 ? ":" + std::to_string(*ordinal) : "");
      if (std::optional<std::string> e = train::memory_shortfall(plan, have, name))
        problem("E-MEMORY " + *e);
    }
  }
  memory["ok"] = out["problems"].empty();
  out["memory"] = memory;

  out["data"] = json::array();
  for (const spec::LoaderDecl& l : run.loaders.decls) {
    data::Status st = l.source->load();
    out["data"].push_back({{"loader", l.name},
                           {"source", l.source->description()},
                           {"examples", l.source->size()},
                           {"ok", bool(st)},
                           {"error", st ? json(nullptr) : json(st.error())}});
    if (!st) problem("E-LOADER-SOURCE loader " + l.name + ": " + st.error());
  }

  // A checkpoint holds the parameters and the optimizer state.
  std::filesystem::path dir = *settings().runs_dir().value;
  std::error_code ec;
  std::filesystem::path probe_dir = std::filesystem::absolute(dir, ec);
  while (!probe_dir.empty() && !std::filesystem::exists(probe_dir, ec))
    probe_dir = probe_dir.parent_path();
  std::filesystem::space_info space = std::filesystem::space(probe_dir, ec);
  uint64_t checkpoint = uint64_t(plan.parameters) + uint64_t(plan.optimizer_state);
  json disk = {{"dir", dir.string()},
               {"free_bytes", ec ? json(nullptr) : json(space.available)},
               {"checkpoint_bytes", checkpoint}};
  // `run` creates the run directory under the nearest directory that exists.
  std::error_code dir_ec;
  bool is_dir = !probe_dir.empty() && std::filesystem::is_directory(probe_dir, dir_ec);
  bool writable = is_dir && access(probe_dir.c_str(), W_OK | X_OK) == 0;
  disk["writable"] = writable;
  disk["ok"] = !ec && space.available >= checkpoint && writable;
  if (!ec && space.available < checkpoint)
    problem("E-IO " + dir.string() + " has " + std::to_string(space.available) +
            " bytes free; one checkpoint takes " + std::to_string(checkpoint));
  if (!writable)
    problem("E-IO " + dir.string() + ": run directories cannot be created there (" +
            (probe_dir.empty() ? std::string("no directory of it exists")
             : !is_dir         ? probe_dir.string() + " is not a directory"
                               : probe_dir.string() + " is not writable") +
            ")");
  out["disk"] = disk;
  return out;
}

// The S3 part, for a file whose loaders named s3:// addresses: the
// client's credentials (their source), endpoint, region and cache, and a
// HEAD of each object: reachable (size, ETag, whether cached) or why not.
json s3_report(const std::vector<S3Access>& accesses) {
  json out = {{"built_with_curl", s3::built_with_curl()}};
  Result<s3::Client*> client = s3_client();
  if (!client) {
    out["credentials"] = {{"kind", "error"}, {"detail", "E-S3 " + client.error()}};
  } else {
    const s3::ClientOptions& o = (*client)->options();
    s3::CredentialSource c = (*client)->credentials();
    out["credentials"] = {{"kind", c.kind}, {"detail", c.detail}};
    out["endpoint"] = o.endpoint.empty() ? json(nullptr) : json(o.endpoint);
    out["region"] = o.region.empty() ? "us-east-1" : o.region;
    out["cache"] = (o.cache_root / "s3").string();
  }
  out["objects"] = json::array();
  std::vector<std::string> seen;
  for (const S3Access& a : accesses) {
    if (std::find(seen.begin(), seen.end(), a.address) != seen.end()) continue;
    seen.push_back(a.address);
    json o = {{"address", a.address}, {"reachable", false}, {"cached", bool(a.local)}};
    Result<s3::Url> url = s3::parse_url(a.address);
    Result<s3::ObjectInfo> info = !url      ? Result<s3::ObjectInfo>(url.failed())
                                  : !client ? Result<s3::ObjectInfo>(client.failed())
                                            : (*client)->head(*url);
    if (info) {
      o["reachable"] = true;
      o["size"] = info->size;
      o["etag"] = info->etag;
    } else {
      o["error"] = "E-S3 " + info.error();
    }
    out["objects"].push_back(o);
  }
  return out;
}

void print_s3(const json& s) {
  std::cout << "\ns3:\n  credentials: " << s["credentials"]["kind"].get<std::string>() << " ("
            << s["credentials"]["detail"].get<std::string>() << ")\n";
  if (s.contains("cache"))
    std::cout << "  endpoint: "
              << (s["endpoint"].is_null() ? std::string("AWS") : s["endpoint"].get<std::string>())
              << ", region " << s["region"].get<std::string>() << ", cache "
              << s["cache"].get<std::string>() << "\n";
  if (!s["built_with_curl"].get<bool>()) std::cout << "  this build has no libcurl: s3:// fails\n";
  for (const json& o : s["objects"]) {
    std::cout << "  " << o["address"].get<std::string>() << ": ";
    if (o["reachable"].get<bool>())
      std::cout << "reachable, " << o["size"].get<uint64_t>() << " bytes, ETag "
                << o["etag"].get<std::string>();
    else
      std::cout << "not reachable: " << o["error"].get<std::string>();
    std::cout << (o["cached"].get<bool>() ? " (cached)" : "") << "\n";
  }
}

void print_file(const json& f) {
  std::cout << "\nrun file " << f["path"].get<std::string>() << ":\n";
  const json& m = f["memory"];
  std::cout << "  device: " << f["device"].get<std::string>() << " ("
            << f["device_from"].get<std::string>() << "), plugin " << m["plugin"].get<std::string>()
            << "\n";
  std::cout << "  memory: the plan needs " << train::bytes_text(m["need_bytes"].get<uint64_t>());
  if (m["have_bytes"].is_number())
    std::cout << ", the device has " << train::bytes_text(m["have_bytes"].get<uint64_t>());
  std::cout << (m["ok"].get<bool>() ? ": fits" : ": does not fit") << "\n";
  for (const json& d : f["data"])
    std::cout << "  data: loader " << d["loader"].get<std::string>() << ": "
              << d["source"].get<std::string>() << ", " << d["examples"].get<int64_t>()
              << " examples" << (d["ok"].get<bool>() ? ": readable" : ": unreadable") << "\n";
  const json& disk = f["disk"];
  std::cout << "  disk: " << disk["dir"].get<std::string>() << ": "
            << (disk["free_bytes"].is_number()
                    ? train::bytes_text(disk["free_bytes"].get<uint64_t>()) + " free"
                    : std::string("free space unknown"))
            << ", a checkpoint takes "
            << train::bytes_text(disk["checkpoint_bytes"].get<uint64_t>())
            << (disk["writable"].get<bool>() ? "" : ": not writable") << "\n";
}

}  // namespace

void add_doctor(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string file;
    std::string device;
    bool json = false;
    LimitFlags limits;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "doctor", "whether a run can start here: plugins, devices, and FILE's memory, data, disk");
  cmd->add_option("file", opts->file, "a run file: its memory plan, data and checkpoints");
  cmd->add_flag("--json", opts->json, "print the report as one JSON document");
  cmd->add_option("--device", opts->device, "the device run --device would be given");
  opts->limits.add_to(cmd);
  cmd->callback([opts, &exit_code]() {
    const config::Settings* settings = settings_or_report("doctor", exit_code);
    if (!settings) return;
    host::PluginHost h(plugin_search_path());
    const std::vector<std::string> reducer_plugins = h.names(SG_PLUGIN_REDUCER);
    std::unique_ptr<runfile::Session> s;
    if (!opts->file.empty()) {
      s = opts->limits.load(opts->file, "doctor", exit_code, true, true,
                            [&reducer_plugins] { return reducer_plugins; });
      if (!s) return;
      if (s->sink.error_count() > 0 || !s->is_run_file || !s->compiled) {
        if (s->sink.error_count() == 0)
          std::cerr << "sexpgpu doctor: " << opts->file << " is not a run file (no defrun)\n";
        // Which objects could not be had, and with which credentials.
        if (std::vector<S3Access> a = s3_accesses(); !a.empty()) {
          if (opts->json)
            std::cout << json{{"s3", s3_report(a)}}.dump(2) << "\n";
          else
            print_s3(s3_report(a));
        }
        exit_code = kFileErrors;
        (void)s.release();
        return;
      }
    }
    json j = report(h);
    j["nccl"] = nccl_report();
    const config::Flags flags{opts->device, log_flag()};
    std::optional<std::string> file_device;
    if (s && s->compiled->run.device_given) file_device = s->compiled->run.device;
    j.update(settings_report(*settings, flags, file_device));
    if (s)
      j["file"] = file_report(*s, opts->file, j["devices"], settings->device(flags, file_device));
    if (std::vector<S3Access> a = s3_accesses(); s && !a.empty()) j["s3"] = s3_report(a);
    if (opts->json) {
      std::cout << j.dump(2) << "\n";
    } else {
      print_human(j);
      if (j.contains("s3")) print_s3(j["s3"]);
      if (s) print_file(j["file"]);
    }
    // A run needs a device; no device plugin serves one yet on this machine.
    bool device_ok = false;
    for (const auto& d : j["devices"]) device_ok = device_ok || d["ok"].get<bool>();
    if (!device_ok) {
      std::cerr << "sexpgpu doctor: this machine cannot start a run: "
                << (j["devices"].empty() ? "no device plugin loads" : "no device plugin can serve")
                << "\n";
      exit_code = kCannotRun;
    }
    if (s && !j["file"]["problems"].empty()) {
      for (const auto& p : j["file"]["problems"])
        std::cerr << "sexpgpu doctor: " << p.get<std::string>() << "\n";
      std::cerr << "sexpgpu doctor: this machine cannot start " << opts->file << "\n";
      exit_code = kCannotRun;
    }
    (void)s.release();  // the process ends next
  });
}

}  // namespace sexpgpu::cli
