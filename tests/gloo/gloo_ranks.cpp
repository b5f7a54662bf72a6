// The CPU device's ranks through Gloo (devices/cpu/collective_gloo.h), in
// worlds of 2 and 3 forked processes on 127.0.0.1: the Collective itself
// (all_reduce_sum per dtype, exact on small integers; identical result
// bits on every rank; broadcast from rank 1), the plugin's C table opened
// with a "world" (all_reduce sum and mean, broadcast, the probe, the world
// refused when malformed), and faults: a rank that is gone before the
// rendezvous or before a collective, or that hangs, makes every other
// fail within the timeout with "rank communication failed", never a hang.
//
// The ranks find each other through an sg_host_store over Gloo's own
// FileStore in a temporary directory: a test double, standing where the
// core's TCP store (core/dist) is in a run.
//
// Usage: gloo_ranks PATH/libsexpgpu-cpu.so. Each world is a fork per rank;
// a child's exit code is its verdict (0 passed; it prints why not).
#include <dlfcn.h>
#include <gloo/rendezvous/file_store.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cpu/collective_gloo.h"
#include "cpu/storage.h"
#include "sexpgpu/plugin.h"

namespace fs = std::filesystem;
using sexpgpu::cpu::Collective;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kTimeoutMs = 3000;  // the world's timeout in every case here
int g_failures = 0;
const char* g_plugin = nullptr;

// ---- The store double: sg_host_store over gloo::rendezvous::FileStore.

struct FileHostStore {
  sg_host_store table{};
  gloo::rendezvous::FileStore files;
  std::string message;
  std::vector<char> value;

  explicit FileHostStore(const std::string& dir) : files(dir) {
    table.base = {sizeof(sg_host_store), SG_EXTENSION_HOST_STORE, nullptr};
    table.store_data = this;
    table.set = &set;
    table.get = &get;
  }
  // FileStore keeps a key in a file of that name: no '/'.
  static std::string file_key(const char* key, size_t len) {
    std::string k(key, len);
    for (char& c : k)
      if (c == '/') c = '_';
    return k;
  }
  static int fail(FileHostStore* s, const std::string& why, const char** msg, size_t* len) {
    s->message = why;
    *msg = s->message.data();
    *len = s->message.size();
    return 1;
  }
  static int set(void* data, const char* key, size_t key_len, const void* value, size_t value_len,
                 const char** msg, size_t* msg_len) {
    auto* s = static_cast<FileHostStore*>(data);
    try {
      const char* bytes = static_cast<const char*>(value);
      s->files.set(file_key(key, key_len), std::vector<char>(bytes, bytes + value_len));
      return 0;
    } catch (const std::exception& e) {
      return fail(s, e.what(), msg, msg_len);
    }
  }
  static int get(void* data, const char* key, size_t key_len, int64_t timeout_ms, const void** out,
                 size_t* out_len, const char** msg, size_t* msg_len) {
    auto* s = static_cast<FileHostStore*>(data);
    try {
      std::string k = file_key(key, key_len);
      s->files.wait({k}, std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : kTimeoutMs));
      s->value = s->files.get(k);
      *out = s->value.data();
      *out_len = s->value.size();
      return 0;
    } catch (const std::exception& e) {
      return fail(s, std::string("timed out or failed: ") + e.what(), msg, msg_len);
    }
  }
};

// ---- Worlds of forked ranks.

// A check inside a rank: prints and counts, the rank's exit code says so.
#define EXPECT(cond, ...)                                                                      \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "  rank %d: %s:%d: failed: %s: ", rank, __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                       \
      std::fprintf(stderr, "\n");                                                              \
      ++g_failures;                                                                            \
    }                                                                                          \
  } while (0)

struct Rank {
  int rank, size;
  std::string dir;  // shared by the world: the store's files and the result files
};

// Forks `size` ranks running `body`; each exits with its failure count.
// Waits at most `deadline` for all (a hang kills them and fails). Returns
// the exit codes, -1 for a rank that died by a signal or was killed.
std::vector<int> run_world(const std::string& name, int size, std::function<int(Rank)> body,
                           std::chrono::seconds deadline = std::chrono::seconds(20)) {
  fs::path dir =
      fs::temp_directory_path() / ("sexpgpu-gloo-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir / "store");
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  for (int r = 0; r < size; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      g_failures = 0;
      int code = body(Rank{r, size, dir.string()});
      std::fflush(nullptr);
      _exit(code > 100 ? 100 : code);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes(size_t(size), -2);
  auto until = Clock::now() + deadline;
  size_t left = pids.size();
  while (left > 0) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (codes[i] != -2) continue;
      int status = 0;
      if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (WIFSIGNALED(status))
          std::fprintf(stderr, "  %s: rank %zu died by signal %d\n", name.c_str(), i,
                       WTERMSIG(status));
        --left;
      }
    }
    if (left == 0) break;
    if (Clock::now() > until) {
      std::fprintf(stderr, "  %s: ranks still running after %llds: a hang; killing them\n",
                   name.c_str(), (long long)deadline.count());
      for (size_t i = 0; i < pids.size(); ++i)
        if (codes[i] == -2) {
          kill(pids[i], SIGKILL);
          waitpid(pids[i], nullptr, 0);
          codes[i] = -1;
        }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return codes;
}

void verdict(const std::string& name, const std::vector<int>& codes, const std::vector<int>& want) {
  bool ok = codes == want;
  std::string got, expected;
  for (size_t i = 0; i < codes.size(); ++i) {
    got += (i ? "," : "") + std::to_string(codes[i]);
    expected += (i ? "," : "") + std::to_string(want[i]);
  }
  std::printf("%s %s (exit codes %s, expected %s)\n", ok ? "ok  " : "FAIL", name.c_str(),
              got.c_str(), expected.c_str());
  if (!ok) ++g_failures;
}

std::vector<int> all_zero(int n) {
  return std::vector<int>(size_t(n), 0);
}

sexpgpu::cpu::GlooWorld world_of(const Rank& r) {
  sexpgpu::cpu::GlooWorld w;
  w.rank = r.rank;
  w.size = r.size;
  w.master_host = "127.0.0.1";
  w.master_port = 29500;
  w.timeout = std::chrono::milliseconds(kTimeoutMs);
  return w;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---- The Collective itself

int collective_sums(Rank r) {
  int rank = r.rank;
  FileHostStore store(r.dir + "/store");
  auto made = sexpgpu::cpu::make_gloo_collective(world_of(r), &store.table);
  EXPECT(made.ok(), "%s", made.error().c_str());
  if (!made) return 1;
  Collective& c = **made;
  EXPECT(c.rank() == rank && c.world_size() == r.size, "rank %d size %d", c.rank(), c.world_size());

  // f32, more than one of Gloo's 1 MiB segments: small integers, exact.
  const size_t n = 300'000;
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = float(int(i % 7) - 3 + rank * 10);
  EXPECT(c.all_reduce_sum(f.data(), n, sexpgpu::ir::DType::F32).empty(), "f32");
  // sum over ranks of (i%7 - 3 + 10 r) = size (i%7 - 3) + 10 size (size-1)/2
  bool exact = true;
  for (size_t i = 0; i < n; ++i)
    exact &= f[i] == float(r.size * (int(i % 7) - 3) + 5 * r.size * (r.size - 1));
  EXPECT(exact, "f32 sums of small integers are not exact");

  std::vector<double> d = {1.5, -2.0, double(rank)};
  EXPECT(c.all_reduce_sum(d.data(), d.size(), sexpgpu::ir::DType::F64).empty(), "f64");
  EXPECT(d[0] == 1.5 * r.size && d[1] == -2.0 * r.size && d[2] == r.size * (r.size - 1) / 2.0,
         "f64 %g %g %g", d[0], d[1], d[2]);

  using sexpgpu::cpu::BF16;
  using sexpgpu::cpu::F16;
  std::vector<BF16> b = {sexpgpu::cpu::float_to_bf16(float(rank + 1)),
                         sexpgpu::cpu::float_to_bf16(-4.0f)};
  EXPECT(c.all_reduce_sum(b.data(), b.size(), sexpgpu::ir::DType::BF16).empty(), "bf16");
  EXPECT(sexpgpu::cpu::bf16_to_float(b[0]) == float(r.size * (r.size + 1) / 2) &&
             sexpgpu::cpu::bf16_to_float(b[1]) == -4.0f * r.size,
         "bf16 %g %g", sexpgpu::cpu::bf16_to_float(b[0]), sexpgpu::cpu::bf16_to_float(b[1]));
  std::vector<F16> h = {sexpgpu::cpu::float_to_f16(0.5f * float(rank))};
  EXPECT(c.all_reduce_sum(h.data(), h.size(), sexpgpu::ir::DType::F16).empty(), "f16");
  EXPECT(sexpgpu::cpu::f16_to_float(h[0]) == 0.25f * float(r.size * (r.size - 1)), "f16 %g",
         sexpgpu::cpu::f16_to_float(h[0]));
  std::vector<int64_t> i64 = {int64_t(1) << 40, -rank};
  EXPECT(c.all_reduce_sum(i64.data(), i64.size(), sexpgpu::ir::DType::I64).empty(), "i64");
  EXPECT(i64[0] == r.size * (int64_t(1) << 40) && i64[1] == -r.size * (r.size - 1) / 2, "i64");

  // A dtype Gloo is not given: a message naming it, and the context is
  // still usable after (nothing was sent).
  uint8_t bytes[4] = {1, 2, 3, 4};
  std::string u8 = c.all_reduce_sum(bytes, 4, sexpgpu::ir::DType::U8);
  EXPECT(contains(u8, "u8") && contains(u8, "not supported"), "u8: '%s'", u8.c_str());

  // Values whose sum rounds: every rank must hold the same bits (the ring
  // reduces each segment on one rank and passes that result on).
  std::vector<float> noisy(n);
  uint32_t state = 12345u + uint32_t(rank) * 7919u;
  for (float& v : noisy) {
    state = state * 1664525u + 1013904223u;
    v = float(state >> 8) / float(1 << 24) * 2.0f - 1.0f;
    v *= 1e-3f + float(state & 0xff);
  }
  EXPECT(c.all_reduce_sum(noisy.data(), n, sexpgpu::ir::DType::F32).empty(), "noisy f32");
  std::ofstream(r.dir + "/bits." + std::to_string(rank), std::ios::binary)
      .write(reinterpret_cast<const char*>(noisy.data()), std::streamsize(n * sizeof(float)));

  // Broadcast from rank 1: every rank ends with rank 1's bytes.
  std::vector<uint8_t> cast(1000);
  for (size_t i = 0; i < cast.size(); ++i) cast[i] = uint8_t(i * 3 + rank * 100);
  EXPECT(c.broadcast(cast.data(), cast.size(), 1).empty(), "broadcast");
  bool from_one = true;
  for (size_t i = 0; i < cast.size(); ++i) from_one &= cast[i] == uint8_t(i * 3 + 100);
  EXPECT(from_one, "broadcast did not give rank 1's bytes");
  std::string bad_root = c.broadcast(cast.data(), cast.size(), r.size);
  EXPECT(contains(bad_root, "broadcast from rank"), "'%s'", bad_root.c_str());
  return g_failures;
}

void check_same_bits(const std::string& name, int size) {
  fs::path dir =
      fs::temp_directory_path() / ("sexpgpu-gloo-" + std::to_string(getpid()) + "-" + name);
  auto read = [&](int r) {
    std::ifstream in(dir / ("bits." + std::to_string(r)), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::string first = read(0);
  bool same = first.size() == 300'000 * sizeof(float);
  for (int r = 1; r < size; ++r) same &= read(r) == first;
  std::printf("%s %s: the sum's bytes are identical on all %d ranks (%zu bytes)\n",
              same ? "ok  " : "FAIL", name.c_str(), size, first.size());
  if (!same) ++g_failures;
}

// ---- The plugin's C table

struct Plugin {
  void* handle = nullptr;
  const sg_device_api* api = nullptr;
  sg_host_api host{};
  static void log(void*, sg_log_level, const char*, size_t) {}
  static void run_dir(void*, const char** d, size_t* n) {
    *d = "";
    *n = 0;
  }
  static int cancelled(void*) { return 0; }

  explicit Plugin(const sg_extension_base* extension) {
    host.struct_size = sizeof(sg_host_api);
    host.abi_major = SG_ABI_MAJOR;
    host.abi_minor = SG_ABI_MINOR;
    host.core_version = "test";
    host.core_version_len = 4;
    host.log = log;
    host.run_dir = run_dir;
    host.cancelled = cancelled;
    host.extension = extension;
    handle = dlopen(g_plugin, RTLD_NOW | RTLD_LOCAL);
    if (!handle) return;
    auto entry = reinterpret_cast<sg_plugin_entry_fn>(dlsym(handle, SG_PLUGIN_ENTRY_SYMBOL));
    const sg_plugin* plugin = entry ? entry(&host) : nullptr;
    if (plugin) api = static_cast<const sg_device_api*>(plugin->api);
  }
  // "" or the error's message (freed).
  std::string check(sg_error* e) const {
    if (!e) return "";
    const char* m = nullptr;
    size_t n = 0;
    api->error_message(e, &m, &n);
    std::string message(m, n);
    api->error_destroy(e);
    return message.empty() ? "(an error without a message)" : message;
  }
  std::string open(const nlohmann::json& options, sg_device** dev) const {
    std::string text = options.dump();
    return check(api->open(text.data(), text.size(), dev));
  }
};

nlohmann::json world_json(const Rank& r, int timeout_ms = kTimeoutMs) {
  return {{"world",
           {{"rank", r.rank},
            {"size", r.size},
            {"local_rank", r.rank},
            {"master", "127.0.0.1:29500"},
            {"timeout_ms", timeout_ms}}}};
}

sg_buffer* f32_buffer(const Plugin& p, sg_device* dev, const std::vector<float>& values) {
  sg_buffer* b = nullptr;
  int64_t shape[] = {int64_t(values.size())};
  if (!p.check(p.api->alloc(dev, SG_DTYPE_F32, shape, 1, &b)).empty()) return nullptr;
  p.check(p.api->upload(b, values.data(), values.size() * sizeof(float), 0));
  return b;
}

std::vector<float> values_of(const Plugin& p, sg_buffer* b, size_t n) {
  std::vector<float> v(n);
  p.check(p.api->download(b, v.data(), n * sizeof(float), 0));
  return v;
}

int plugin_collectives(Rank r) {
  int rank = r.rank;
  FileHostStore store(r.dir + "/store");
  Plugin p(&store.table.base);
  EXPECT(p.api, "the plugin %s did not load: %s", g_plugin, dlerror());
  if (!p.api) return 1;
  const char* probe = nullptr;
  size_t probe_len = 0;
  EXPECT(p.check(p.api->probe(&probe, &probe_len)).empty(), "probe");
  auto pj = nlohmann::json::parse(std::string(probe, probe_len));
  EXPECT(pj.value("collectives", "") == "gloo", "probe: %s", pj.dump().c_str());

  sg_device* dev = nullptr;
  std::string opened = p.open(world_json(r), &dev);
  EXPECT(opened.empty(), "open: %s", opened.c_str());
  if (!dev) return g_failures;
  sg_buffer* x = f32_buffer(p, dev, {float(rank), 1.0f, -2.0f * float(rank + 1), 6.0f});
  sg_buffer* one[] = {x};
  sg_device* devs[] = {dev};
  EXPECT(p.check(p.api->all_reduce(devs, one, 1, SG_REDUCE_SUM, 0)).empty(), "sum");
  float s = float(r.size);
  std::vector<float> got = values_of(p, x, 4);
  EXPECT(got == (std::vector<float>{s * (s - 1) / 2, s, -s * (s + 1), 6 * s}), "sum %g %g %g %g",
         got[0], got[1], got[2], got[3]);
  // The mean of 6 * size over size ranks: 6 exactly; of the sum -s(s+1): -(s+1).
  EXPECT(p.check(p.api->all_reduce(devs, one, 1, SG_REDUCE_MEAN, 0)).empty(), "mean");
  got = values_of(p, x, 4);
  EXPECT(got[1] == s && got[2] == -s * (s + 1) && got[3] == 6 * s, "mean %g %g %g", got[1], got[2],
         got[3]);

  sg_buffer* y = f32_buffer(p, dev, {float(rank * 10), float(rank * 10 + 1)});
  sg_buffer* cast[] = {y};
  EXPECT(p.check(p.api->broadcast(devs, cast, 1, 1, 0)).empty(), "broadcast");
  got = values_of(p, y, 2);
  EXPECT(got[0] == 10.0f && got[1] == 11.0f, "broadcast from 1: %g %g", got[0], got[1]);

  // Two local buffers on a device of a world: refused, before anything is sent.
  sg_buffer* two[] = {x, x};
  std::string refused = p.check(p.api->all_reduce(devs, two, 2, SG_REDUCE_SUM, 0));
  EXPECT(contains(refused, "one buffer"), "'%s'", refused.c_str());
  refused = p.check(p.api->broadcast(devs, cast, 1, size_t(r.size), 0));
  EXPECT(contains(refused, "broadcast from rank"), "'%s'", refused.c_str());
  EXPECT(p.check(p.api->close(dev)).empty(), "close");
  return g_failures;
}

// Malformed worlds, each refused at open with a message naming the member;
// a world of one opens without a store and all-reduces locally.
int plugin_world_checks(Rank r) {
  int rank = r.rank;
  Plugin p(nullptr);
  EXPECT(p.api, "the plugin did not load");
  if (!p.api) return 1;
  struct Bad {
    const char* world;
    const char* says;
  } bad[] = {
      {R"("two")", "must be a JSON object"},
      {R"({"size": 2})", "has no \"rank\""},
      {R"({"rank": 2, "size": 2, "master": "127.0.0.1:1"})",
       "\"rank\" must be an integer from 0 to 1"},
      {R"({"rank": 0, "size": 0})", "\"size\" must be an integer from 1"},
      {R"({"rank": 0, "size": 2, "master": "nohostport"})", "\"host:port\""},
      {R"({"rank": 0, "size": 2, "master": "h:70000"})", "\"host:port\""},
      {R"({"rank": 0, "size": 2})", "\"master\" must be"},
      {R"({"rank": 0, "size": 2, "master": "h:1", "timeout_ms": 0})", "\"timeout_ms\""},
      {R"({"rank": 0, "size": 2, "master": "h:1", "local_rank": -1})", "\"local_rank\""},
      {R"({"rank": 0, "size": 2, "master": "h:1", "ranks": 2})", "unknown member \"ranks\""},
      {R"({"rank": 0, "size": 1, "master": ":29500"})", "\"host:port\""},
  };
  for (const Bad& b : bad) {
    sg_device* dev = nullptr;
    std::string e = p.open(nlohmann::json{{"world", nlohmann::json::parse(b.world)}}, &dev);
    EXPECT(contains(e, b.says), "world %s: '%s'", b.world, e.c_str());
  }
  // Size 2 with no host store (a 1.0 core): refused, naming the store.
  sg_device* dev = nullptr;
  std::string e = p.open(world_json(Rank{0, 2, ""}), &dev);
  EXPECT(contains(e, "rank communication failed") && contains(e, "sg_host_store"), "'%s'",
         e.c_str());
  // A world of one: no store needed; all_reduce of one buffer is itself.
  e = p.open(world_json(Rank{0, 1, ""}), &dev);
  EXPECT(e.empty(), "size 1: %s", e.c_str());
  if (!dev) return g_failures;
  sg_buffer* x = f32_buffer(p, dev, {3.0f, -1.0f});
  sg_buffer* one[] = {x};
  EXPECT(p.check(p.api->all_reduce(&dev, one, 1, SG_REDUCE_MEAN, 0)).empty(), "local mean");
  std::vector<float> got = values_of(p, x, 2);
  EXPECT(got[0] == 3.0f && got[1] == -1.0f, "%g %g", got[0], got[1]);
  p.check(p.api->close(dev));
  return g_failures;
}

// ---- Faults: each surviving rank must fail with the message, in time.

// How a rank that is not among the survivors misbehaves.
enum class Fault { GoneBeforeOpen, GoneBeforeCollective, Hangs };

int faulty_world(Rank r, Fault fault) {
  int rank = r.rank;
  const int culprit = r.size - 1;
  if (rank == culprit && fault == Fault::GoneBeforeOpen) return 0;  // never comes
  FileHostStore store(r.dir + "/store");
  Plugin p(&store.table.base);
  EXPECT(p.api, "the plugin did not load");
  if (!p.api) return 1;
  auto start = Clock::now();
  sg_device* dev = nullptr;
  std::string opened = p.open(world_json(r), &dev);
  auto open_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  if (fault == Fault::GoneBeforeOpen) {
    EXPECT(contains(opened, "rank communication failed"), "open: '%s'", opened.c_str());
    EXPECT(open_ms < kTimeoutMs + 2000, "open failed after %lld ms", (long long)open_ms);
    std::fprintf(stderr, "  rank %d: open failed after %lld ms: %s\n", rank, (long long)open_ms,
                 opened.c_str());
    return g_failures;
  }
  EXPECT(opened.empty(), "open: %s", opened.c_str());
  if (!dev) return g_failures;
  // One collective of all first: every pair is connected (a rank ending its
  // rendezvous early may else leave before a slower one has reached it).
  sg_buffer* ready = f32_buffer(p, dev, {1.0f});
  EXPECT(p.check(p.api->all_reduce(&dev, &ready, 1, SG_REDUCE_SUM, 0)).empty(), "first");
  if (rank == culprit) {
    if (fault == Fault::GoneBeforeCollective) _exit(0);  // no cleanup: its sockets just close
    std::this_thread::sleep_for(
        std::chrono::milliseconds(kTimeoutMs + 1500));  // past the others' timeout
    _exit(0);
  }
  sg_buffer* x = f32_buffer(p, dev, std::vector<float>(1'000'000, 1.0f) /* 4 segments */);
  sg_buffer* one[] = {x};
  start = Clock::now();
  std::string e = p.check(p.api->all_reduce(&dev, one, 1, SG_REDUCE_SUM, 0));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  EXPECT(contains(e, "rank communication failed"), "all_reduce: '%s'", e.c_str());
  EXPECT(ms < kTimeoutMs + 2000, "all_reduce failed after %lld ms", (long long)ms);
  std::fprintf(stderr, "  rank %d: all_reduce failed after %lld ms: %s\n", rank, (long long)ms,
               e.c_str());
  // Every later collective fails at once with the first failure.
  start = Clock::now();
  std::string again = p.check(p.api->broadcast(&dev, one, 1, 0, 0));
  ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  EXPECT(contains(again, "rank communication failed") && ms < 100, "again after %lld ms: '%s'",
         (long long)ms, again.c_str());
  // Closing returns; the process then exits without waiting for the culprit.
  EXPECT(p.check(p.api->close(dev)).empty(), "close");
  return g_failures;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gloo_ranks PATH/libsexpgpu-cpu.so\n");
    return 2;
  }
  g_plugin = argv[1];
  auto start = Clock::now();
  int failures = 0;
  auto world = [&](const std::string& name, int size, std::function<int(Rank)> body,
                   std::vector<int> want) {
    auto t = Clock::now();
    std::vector<int> codes = run_world(name, size, std::move(body));
    g_failures = 0;
    verdict(
        name + " (" +
            std::to_string(
                std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count()) +
            " ms)",
        codes, want);
    failures += g_failures;
  };
  for (int size : {2, 3}) {
    std::string n = std::to_string(size);
    world("collective-" + n, size, collective_sums, all_zero(size));
    g_failures = 0;
    check_same_bits("collective-" + n, size);
    failures += g_failures;
    world("plugin-" + n, size, plugin_collectives, all_zero(size));
  }
  world("world-checks", 1, plugin_world_checks, {0});
  world("rank-gone-before-open", 2, [](Rank r) { return faulty_world(r, Fault::GoneBeforeOpen); },
        {0, 0});
  world("rank-gone-before-collective", 3,
        [](Rank r) { return faulty_world(r, Fault::GoneBeforeCollective); }, {0, 0, 0});
  world("rank-hangs", 3, [](Rank r) { return faulty_world(r, Fault::Hangs); }, {0, 0, 0});
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path()))
    if (e.path().filename().string().rfind("sexpgpu-gloo-" + std::to_string(getpid()) + "-", 0) ==
        0)
      fs::remove_all(e.path());
  std::printf("%s: %d failure(s), %lld ms\n", failures ? "FAILED" : "passed", failures,
              (long long)std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start)
                  .count());
  return failures ? 1 : 0;
}
