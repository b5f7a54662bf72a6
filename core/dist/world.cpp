// The world from the rank variables (world.h; docs/environment.md, "Rank
// variables"). Three families, the first whose size variable is set wins,
// and it is taken whole: SEXPGPU_*, then torchrun's, then Slurm's. Every
// number is range-checked and every error (E-WORLD) names the variable and
// says what to set, since a launch that goes wrong here would otherwise
// train N copies into one run directory or wait for a rank that never
// comes.
#include "dist/world.h"

#include <charconv>
#include <cstdint>
#include <string_view>
#include <utility>

namespace sexpgpu::dist {

namespace {

constexpr int64_t kMaxTimeoutSeconds = 86400;

// A failure E-WORLD with its fix line.
Failed world_error(std::string message, std::string fix) {
  Failed f = fail("E-WORLD", std::move(message));
  f.diagnostic.fix = std::move(fix);
  return f;
}

// The variable's value; an empty one counts as unset, as for every other
// variable of environment.md.
std::optional<std::string> read(const EnvLookup& env, const char* name) {
  std::optional<std::string> v = env(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

// `text` as a decimal integer in [min, max] (plain digits: no sign, no
// spaces, no hex), or an error naming `name`, the range and its meaning.
Result<int64_t> integer(const char* name, const std::string& text, int64_t min, int64_t max,
                        const std::string& meaning) {
  int64_t v = 0;
  bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  std::string range = std::to_string(min) + " to " + std::to_string(max);
  if (!digits || ec != std::errc() || end != text.data() + text.size() || v < min || v > max)
    return world_error(
        std::string(name) + " is \"" + text + "\"; it takes an integer from " + range + " (" +
            meaning + ")",
        std::string("set ") + name + " to an integer from " + range + " (" + meaning + ")");
  return v;
}

// The names of one family's variables.
struct Family {
  const char* rank;
  const char* size;
  const char* local_rank;
  std::string origin;
};

// "host:port" from SEXPGPU_MASTER (the last colon splits them).
Status parse_master(const std::string& text, World& w) {
  size_t colon = text.rfind(':');
  std::string fix = "set SEXPGPU_MASTER to rank 0's host and a free port, e.g. node0:29600";
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    return world_error("SEXPGPU_MASTER is \"" + text + "\"; it takes HOST:PORT", fix);
  Result<int64_t> port = integer("SEXPGPU_MASTER's port", text.substr(colon + 1), 1, 65535,
                                 "the port rank 0's store listens on");
  if (!port) return world_error(port.error(), fix);
  w.master_host = text.substr(0, colon);
  w.master_port = static_cast<int>(*port);
  return ok_status();
}

// MASTER_ADDR and MASTER_PORT (+ `offset`, 1 under torchrun, whose own
// store may hold MASTER_PORT itself).
Status parse_addr_port(const EnvLookup& env, int offset, World& w) {
  std::optional<std::string> addr = read(env, "MASTER_ADDR"), port = read(env, "MASTER_PORT");
  std::string needs = "a world of " + std::to_string(w.size) + " ranks, from " + w.origin +
                      ", needs rank 0's address";
  std::string fix = offset ? "launch with torchrun, which sets MASTER_ADDR and MASTER_PORT"
                           : "set SEXPGPU_MASTER=HOST:PORT (rank 0's host and a free port) in "
                             "the job script";
  if (!addr && !port && !offset)
    return world_error(needs + ": neither SEXPGPU_MASTER nor MASTER_ADDR and MASTER_PORT is set",
                       fix);
  if (!addr || !port)
    return world_error(
        std::string(addr ? "MASTER_PORT" : "MASTER_ADDR") + " is not set, and " + needs, fix);
  std::string meaning = offset ? "torchrun's --master_port; the store listens on MASTER_PORT + 1"
                               : "rank 0's store port";
  Result<int64_t> p = integer("MASTER_PORT", *port, 1, 65535 - offset, meaning);
  if (!p) return p.failed();
  w.master_host = *addr;
  w.master_port = static_cast<int>(*p) + offset;
  return ok_status();
}

Result<World> read_family(const EnvLookup& env, const Family& f) {
  World w;
  w.origin = f.origin;
  Result<int64_t> size = integer(f.size, *read(env, f.size), 1, kMaxWorld, "the number of ranks");
  if (!size) return size.failed();
  w.size = static_cast<int>(*size);
  std::optional<std::string> rank = read(env, f.rank);
  if (!rank && w.several())
    return world_error(
        std::string(f.size) + " is " + std::to_string(w.size) + " but " + f.rank + " is not set",
        std::string("set ") + f.rank + " to this process's rank, 0 to " +
            std::to_string(w.size - 1) + ", in every process");
  if (rank) {
    Result<int64_t> r =
        integer(f.rank, *rank, 0, w.size - 1, "this process's rank, below " + std::string(f.size));
    if (!r) return r.failed();
    w.rank = static_cast<int>(*r);
  }
  // The local rank picks the process's GPU; a world launched by hand on
  // CPUs need not set it (0).
  if (std::optional<std::string> local = read(env, f.local_rank)) {
    Result<int64_t> l = integer(f.local_rank, *local, 0, w.size - 1,
                                "this process's rank on its node, below " + std::string(f.size));
    if (!l) return l.failed();
    w.local_rank = static_cast<int>(*l);
  }
  return w;
}

}  // namespace

Result<World> world_from_env(const EnvLookup& env) {
  static const Family kSexpgpu{"SEXPGPU_RANK", "SEXPGPU_WORLD_SIZE", "SEXPGPU_LOCAL_RANK",
                               "SEXPGPU_*"};
  static const Family kTorchrun{
      "RANK", "WORLD_SIZE", "LOCAL_RANK",
      "torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT)"};
  static const Family kSlurm{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
                             "Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID)"};

  // The timeout first: it holds for every family, and a bad one is a bad
  // one even in a world of one.
  std::chrono::milliseconds timeout{120'000};
  if (std::optional<std::string> t = read(env, "SEXPGPU_RANK_TIMEOUT")) {
    Result<int64_t> s = integer("SEXPGPU_RANK_TIMEOUT", *t, 1, kMaxTimeoutSeconds,
                                "the seconds a rank waits for another");
    if (!s) return s.failed();
    timeout = std::chrono::milliseconds(*s * 1000);
  }

  const Family* family = nullptr;
  for (const Family* f : {&kSexpgpu, &kTorchrun, &kSlurm})
    if (read(env, f->size)) {
      family = f;
      break;
    }
  if (!family) {
    // A stray SEXPGPU_RANK means a launch that forgot the size: refusing it
    // beats N processes each training alone. (RANK alone is too common a
    // name to mean anything.)
    for (const char* stray : {"SEXPGPU_RANK", "SEXPGPU_LOCAL_RANK"})
      if (read(env, stray))
        return world_error(std::string(stray) + " is set but SEXPGPU_WORLD_SIZE is not",
                           "set SEXPGPU_WORLD_SIZE to the number of ranks in every process, or "
                           "unset " +
                               std::string(stray));
    World one;
    one.timeout = timeout;
    return one;
  }

  Result<World> read_world = read_family(env, *family);
  if (!read_world) return read_world;
  World w = std::move(read_world).value();
  w.timeout = timeout;
  if (!w.several()) return w;  // a world of one has no master

  Status master = ok_status();
  if (family == &kSexpgpu) {
    std::optional<std::string> m = read(env, "SEXPGPU_MASTER");
    if (!m)
      return world_error(
          "SEXPGPU_WORLD_SIZE is " + std::to_string(w.size) + " but SEXPGPU_MASTER is not set",
          "set SEXPGPU_MASTER=HOST:PORT (rank 0's host and a free port) in every "
          "process");
    master = parse_master(*m, w);
  } else if (family == &kTorchrun) {
    master = parse_addr_port(env, 1, w);
  } else if (std::optional<std::string> m = read(env, "SEXPGPU_MASTER")) {
    master = parse_master(*m, w);
  } else {
    master = parse_addr_port(env, 0, w);
  }
  if (!master) return master.failed();
  return w;
}

}  // namespace sexpgpu::dist
