// Where `sexpgpu sweep --jobs N` runs its points (sweep.h): each slot its
// own device (cuda:0, cuda:1, ...) or its own share of the CPU cores, never
// two points on one GPU and never more threads than cores.
#include <sched.h>

#include <algorithm>
#include <thread>

#include "cli/settings.h"
#include "cli/sweep.h"
#include "host/plugin_host.h"

namespace sexpgpu::cli {

namespace {

// The cores this process may use (its affinity, as a container sets it).
size_t cpu_count() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return size_t(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// The GPUs the cuda plugin's probe sees, or nullopt (and why) when the
// plugin does not load or cannot say.
std::optional<size_t> visible_gpus(std::string& why) {
  host::PluginHost plugins(plugin_search_path());
  const sg_device_api* api = plugins.device("cuda");
  if (!api || !api->probe) {
    why = "the cuda plugin does not load here (sexpgpu doctor says why)";
    return std::nullopt;
  }
  const char* text = nullptr;
  size_t len = 0;
  if (sg_error* err = api->probe(&text, &len)) {
    why = "the cuda plugin's probe failed: " + host::take_error(api, err);
    return std::nullopt;
  }
  ojson probe = ojson::parse(std::string(text ? text : "", text ? len : 0), nullptr, false);
  if (!probe.is_object()) {
    why = "the cuda plugin's probe is not JSON";
    return std::nullopt;
  }
  if (!probe.value("available", false)) return 0;
  if (probe.contains("count") && probe["count"].is_number_unsigned())
    return probe["count"].get<size_t>();
  return probe.value("devices", ojson::array()).size();
}

}  // namespace

Placement place(size_t jobs, std::string device, int threads) {
  Placement pl;
  if (jobs == 1) {
    std::vector<std::string> args;
    if (!device.empty()) args = {"--device", device};
    if (threads) args.insert(args.end(), {"--threads", std::to_string(threads)});
    pl.slot_args.push_back(args);
    return pl;
  }
  std::string why;
  if (device.empty() || device == "auto") {
    std::optional<size_t> gpus = visible_gpus(why);
    device = gpus && *gpus > 0 ? "cuda" : "cpu";
  }
  std::string n = std::to_string(jobs);
  if (device == "cpu") {
    size_t cores = cpu_count();
    if (jobs > cores) {
      pl.error = "--jobs " + n + " needs " + n + " cores and this process may use " +
                 std::to_string(cores) + "; each point gets its own share, never fewer";
    } else if (threads && size_t(threads) * jobs > cores) {
      pl.error = "--jobs " + n + " --threads " + std::to_string(threads) + " needs " +
                 std::to_string(size_t(threads) * jobs) + " cores and this process may use " +
                 std::to_string(cores);
    } else {
      int each = threads ? threads : int(cores / jobs);
      for (size_t i = 0; i < jobs; ++i)
        pl.slot_args.push_back({"--device", "cpu", "--threads", std::to_string(each)});
    }
    return pl;
  }
  if (device == "cuda") {
    std::optional<size_t> gpus = visible_gpus(why);
    if (!gpus)
      pl.error = "--jobs " + n + " on cuda needs the number of GPUs, and " + why;
    else if (jobs > *gpus)
      pl.error = "--jobs " + n + " needs " + n + " GPUs and " + std::to_string(*gpus) +
                 " are visible; each point gets a GPU of its own, never a shared one";
    else
      for (size_t i = 0; i < jobs; ++i)
        pl.slot_args.push_back({"--device", "cuda:" + std::to_string(i)});
    return pl;
  }
  pl.error = "--jobs " + n + " gives each point a device of its own, so it takes --device cpu, " +
             "cuda or auto, not " + device;
  return pl;
}

}  // namespace sexpgpu::cli
