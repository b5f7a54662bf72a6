// NVRTC compilation and loading of generated kernels (nvrtc_cache.h).
#include "nvrtc_cache.h"

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "cuda/check.h"
#include "cuda/disk_cache.h"
#include "sexpgpu/sdk/log.h"
#include "util/embedded.h"

namespace sexpgpu::cuda {
namespace {

namespace fs = std::filesystem;

// A unit holds at least this many kernels (each unit compiles the prelude
// again: GPT-2's train_step in 13 units of 2 compiled in 541 ms on the
// H200 machine's 16 cores, in 7 units of 4 in 238 ms, in one in 434) and a
// build makes at most this many units. Neither depends on the machine: the
// cache keys must be the same everywhere.
constexpr size_t kKernelsPerUnit = 4;
constexpr size_t kMaxUnits = 16;

std::string nvrtc_error(nvrtcResult r, const char* what) {
  return std::string(what) + ": " + nvrtcGetErrorString(r);
}

// One translation unit of a build, and what became of it.
struct Unit {
  size_t first = 0, count = 0;  // its kernels in the build's pending list
  std::string source;
  fs::path cached;  // its cache entry; empty without a cache directory
  std::vector<char> image;
  std::string error;
  bool from_cache = false;
};

// NVRTC on one unit: the image or the error, with NVRTC's log.
void compile(const std::string& arch, Unit& unit) {
  nvrtcProgram program = nullptr;
  if (nvrtcResult r = nvrtcCreateProgram(&program, unit.source.c_str(), "sexpgpu_generated.cu", 0,
                                         nullptr, nullptr);
      r != NVRTC_SUCCESS) {
    unit.error = nvrtc_error(r, "nvrtcCreateProgram");
    return;
  }
  std::string arch_flag = "--gpu-architecture=" + arch;
  const char* options[] = {arch_flag.c_str(), "-std=c++17", "--extra-device-vectorization"};
  nvrtcResult compiled = nvrtcCompileProgram(program, 3, options);
  if (compiled != NVRTC_SUCCESS) {
    size_t log_size = 0;
    nvrtcGetProgramLogSize(program, &log_size);
    std::string log(log_size, '\0');
    nvrtcGetProgramLog(program, log.data());
    if (log.size() > 4000) log = log.substr(0, 4000) + "...";
    unit.error = nvrtc_error(compiled, "nvrtcCompileProgram") + " (generated kernels):\n" + log;
  } else {
    size_t size = 0;
    if (nvrtcResult r = nvrtcGetCUBINSize(program, &size); r != NVRTC_SUCCESS) {
      unit.error = nvrtc_error(r, "nvrtcGetCUBINSize");
    } else {
      unit.image.resize(size);
      if (nvrtcResult r2 = nvrtcGetCUBIN(program, unit.image.data()); r2 != NVRTC_SUCCESS)
        unit.error = nvrtc_error(r2, "nvrtcGetCUBIN");
    }
  }
  nvrtcDestroyProgram(&program);
  if (unit.error.empty() && !unit.cached.empty()) disk_cache::write(unit.cached, unit.image);
}

// Compiles `units` on up to one thread each (NVRTC may be called from
// several threads at once on different programs).
void compile_all(const std::string& arch, std::vector<Unit*>& units) {
  if (units.empty()) return;
  size_t threads =
      std::min<size_t>(units.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < units.size();) compile(arch, *units[i]);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

}  // namespace

const std::string& NvrtcCache::prelude() {
  static const std::string text = [] {
    std::string s;
    for (size_t i = 0; i < kCudaPrelude_count; ++i) s += kCudaPrelude[i].text;
    return s;
  }();
  return text;
}

NvrtcCache::~NvrtcCache() {
  for (cudaLibrary_t lib : libraries_) (void)cudaLibraryUnload(lib);
}

std::shared_ptr<GeneratedKernel> NvrtcCache::add(const std::string& name,
                                                 const std::string& source) {
  for (const auto& k : all_)
    if (k->name == name) return k;
  auto k = std::make_shared<GeneratedKernel>(GeneratedKernel{name, nullptr});
  all_.push_back(k);
  pending_.push_back(k);
  pending_sources_.push_back(source);
  return k;
}

std::string NvrtcCache::build(bool load) {
  if (pending_.empty()) return {};
  std::vector<std::shared_ptr<GeneratedKernel>> kernels = std::move(pending_);
  std::vector<std::string> sources = std::move(pending_sources_);
  pending_.clear();
  pending_sources_.clear();

  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  const std::string arch = "sm_" + std::to_string(arch_);
  const uint64_t seed =
      disk_cache::fnv1a(arch + "/" + std::to_string(major) + "." + std::to_string(minor));
  const std::string dir = disk_cache::directory();

  // The split: as few units as kMaxUnits allows, of kKernelsPerUnit or more.
  const size_t per_unit = std::max(kKernelsPerUnit, (kernels.size() + kMaxUnits - 1) / kMaxUnits);
  // A kernel of no source of its own stays in its predecessor's unit.
  std::vector<Unit> units;
  for (size_t first = 0, end; first < kernels.size(); first = end) {
    end = std::min(first + per_unit, kernels.size());
    while (end < kernels.size() && sources[end].empty()) ++end;
    Unit u;
    u.first = first;
    u.count = end - first;
    u.source = prelude();
    for (size_t i = first; i < first + u.count; ++i) u.source += "\n" + sources[i];
    if (!dir.empty())
      u.cached = fs::path(dir) / (disk_cache::hex(disk_cache::fnv1a(u.source, seed)) + ".cubin");
    units.push_back(std::move(u));
  }

  auto start = std::chrono::steady_clock::now();
  std::vector<Unit*> missing;
  for (Unit& u : units) {
    u.from_cache = !u.cached.empty() && disk_cache::read(u.cached, u.image);
    if (!u.from_cache) missing.push_back(&u);
  }
  compile_all(arch, missing);
  for (Unit* u : missing)
    if (!u->error.empty()) return u->error;

  // Loading; an entry the driver refuses is compiled again and replaced.
  std::vector<cudaLibrary_t> loaded(units.size(), nullptr);
  auto load_unit = [&](size_t i) {
    return cudaLibraryLoadData(&loaded[i], units[i].image.data(), nullptr, nullptr, 0, nullptr,
                               nullptr, 0);
  };
  auto fail = [&](std::string error) {
    for (cudaLibrary_t lib : loaded)
      if (lib) (void)cudaLibraryUnload(lib);
    return error;
  };
  if (load) {
    std::vector<Unit*> refused;
    for (size_t i = 0; i < units.size(); ++i) {
      cudaError_t r = load_unit(i);
      if (r == cudaSuccess) continue;
      if (!units[i].from_cache)
        return fail(cuda_error(r, "cudaLibraryLoadData (generated kernels)"));
      (void)cudaGetLastError();
      sdk::log(SG_LOG_WARN,
               "nvrtc: the driver refused " + units[i].cached.string() + "; compiling it again");
      units[i].from_cache = false;
      refused.push_back(&units[i]);
    }
    compile_all(arch, refused);
    for (Unit* u : refused) {
      if (!u->error.empty()) return fail(u->error);
      if (std::string e = cuda_error(load_unit(size_t(u - units.data())),
                                     "cudaLibraryLoadData (generated kernels)");
          !e.empty())
        return fail(e);
    }
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  int compiled = 0;
  for (const Unit& u : units) compiled += u.from_cache ? 0 : 1;
  stats_.builds += compiled;
  stats_.cache_hits += int(units.size()) - compiled;
  stats_.kernels += int(kernels.size());
  stats_.compile_ms += ms;
  // Through the host's log (the plugin has no logger of its own).
  std::string what = std::to_string(kernels.size()) + " kernels for " + arch + " in " +
                     std::to_string(units.size()) + " units";
  if (compiled == 0)
    sdk::log(SG_LOG_DEBUG, "nvrtc: " + what + " from the cache in " + dir);
  else
    sdk::log(SG_LOG_INFO, "nvrtc: compiled " + what + " (" + std::to_string(compiled) +
                              " compiled) in " + std::to_string(int64_t(ms)) + " ms" +
                              (dir.empty() ? " (no cache directory)" : ""));
  if (!load) return {};

  for (size_t i = 0; i < units.size(); ++i) {
    libraries_.push_back(loaded[i]);
    for (size_t k = units[i].first; k < units[i].first + units[i].count; ++k)
      if (std::string err = cuda_error(
              cudaLibraryGetKernel(&kernels[k]->function, loaded[i], kernels[k]->name.c_str()),
              "cudaLibraryGetKernel");
          !err.empty())
        return err + " (" + kernels[k]->name + ")";
  }
  return {};
}

}  // namespace sexpgpu::cuda
