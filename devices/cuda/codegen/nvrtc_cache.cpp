// NVRTC compilation and loading of generated kernels (nvrtc_cache.h).
#include "nvrtc_cache.h"

#include <nvrtc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cuda/check.h"
#include "sexpgpu/sdk/log.h"
#include "util/embedded.h"

namespace sexpgpu::cuda {
namespace {

namespace fs = std::filesystem;

std::string nvrtc_error(nvrtcResult r, const char* what) {
  return std::string(what) + ": " + nvrtcGetErrorString(r);
}

uint64_t fnv1a(const std::string& text, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

bool read_file(const fs::path& path, std::vector<char>& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !out.empty();
}

// Written to a temporary name and renamed, so a reader never sees half a
// file; a failure only loses the cache entry.
void write_file_atomically(const fs::path& path, const std::vector<char>& data) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path;
  tmp += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;
    out.write(data.data(), std::streamsize(data.size()));
    if (!out) return;
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
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

std::string NvrtcCache::cache_directory() {
  // The one cache root (docs/environment.md), SEXPGPU_CACHE_DIR its older name.
  for (const char* root : {"SEXPGPU_CACHE", "SEXPGPU_CACHE_DIR"})
    if (const char* d = std::getenv(root); d && *d) return std::string(d) + "/cuda";
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return std::string(d) + "/sexpgpu/cuda";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/sexpgpu/cuda";
  return {};
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

std::string NvrtcCache::compile(const std::string& source, std::vector<char>& image) {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  std::string arch = "sm_" + std::to_string(arch_);
  std::string key =
      hex(fnv1a(source, fnv1a(arch + "/" + std::to_string(major) + "." + std::to_string(minor))));
  std::string dir = cache_directory();
  fs::path cached = dir.empty() ? fs::path() : fs::path(dir) / (key + ".cubin");
  if (!dir.empty() && read_file(cached, image)) {
    ++stats_.cache_hits;
    return {};
  }
  auto start = std::chrono::steady_clock::now();
  nvrtcProgram program = nullptr;
  if (nvrtcResult r =
          nvrtcCreateProgram(&program, source.c_str(), "sexpgpu_generated.cu", 0, nullptr, nullptr);
      r != NVRTC_SUCCESS)
    return nvrtc_error(r, "nvrtcCreateProgram");
  std::string arch_flag = "--gpu-architecture=" + arch;
  const char* options[] = {arch_flag.c_str(), "-std=c++17", "--extra-device-vectorization"};
  nvrtcResult compiled = nvrtcCompileProgram(program, 3, options);
  std::string result;
  if (compiled != NVRTC_SUCCESS) {
    size_t log_size = 0;
    nvrtcGetProgramLogSize(program, &log_size);
    std::string log(log_size, '\0');
    nvrtcGetProgramLog(program, log.data());
    if (log.size() > 4000) log = log.substr(0, 4000) + "...";
    result = nvrtc_error(compiled, "nvrtcCompileProgram") + " (generated kernels):\n" + log;
  } else {
    size_t size = 0;
    if (nvrtcResult r = nvrtcGetCUBINSize(program, &size); r != NVRTC_SUCCESS) {
      result = nvrtc_error(r, "nvrtcGetCUBINSize");
    } else {
      image.resize(size);
      if (nvrtcResult r2 = nvrtcGetCUBIN(program, image.data()); r2 != NVRTC_SUCCESS)
        result = nvrtc_error(r2, "nvrtcGetCUBIN");
    }
  }
  nvrtcDestroyProgram(&program);
  stats_.compile_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ++stats_.builds;
  if (result.empty() && !dir.empty()) write_file_atomically(cached, image);
  return result;
}

std::string NvrtcCache::build(bool load) {
  if (pending_.empty()) return {};
  std::string source = prelude();
  for (const std::string& s : pending_sources_) source += "\n" + s;
  std::vector<char> image;
  const int hits = stats_.cache_hits;
  const double ms = stats_.compile_ms;
  std::string e = compile(source, image);
  std::vector<std::shared_ptr<GeneratedKernel>> kernels = std::move(pending_);
  pending_.clear();
  pending_sources_.clear();
  if (!e.empty()) return e;
  // Through the host's log (the plugin has no logger of its own).
  if (stats_.cache_hits > hits)
    sdk::log(SG_LOG_DEBUG, "nvrtc: " + std::to_string(kernels.size()) + " kernels for sm_" +
                               std::to_string(arch_) + " from the cache in " + cache_directory());
  else
    sdk::log(SG_LOG_INFO, "nvrtc: compiled " + std::to_string(kernels.size()) + " kernels for sm_" +
                              std::to_string(arch_) + " in " +
                              std::to_string(int64_t(stats_.compile_ms - ms)) + " ms" +
                              (cache_directory().empty() ? " (no cache directory)" : ""));
  stats_.kernels += int(kernels.size());
  if (!load) return {};
  cudaLibrary_t library = nullptr;
  if (std::string err = cuda_error(
          cudaLibraryLoadData(&library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
          "cudaLibraryLoadData (generated kernels)");
      !err.empty())
    return err;
  libraries_.push_back(library);
  for (const auto& k : kernels)
    if (std::string err = cuda_error(cudaLibraryGetKernel(&k->function, library, k->name.c_str()),
                                     "cudaLibraryGetKernel");
        !err.empty())
      return err + " (" + k->name + ")";
  return {};
}

}  // namespace sexpgpu::cuda
