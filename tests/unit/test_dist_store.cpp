// The run's store (core/dist/store.cpp): three ranks as threads of this
// process on 127.0.0.1, an ephemeral port each test. set/get, timeouts, the
// barrier, refused joins, a rank gone without goodbye, a server that
// vanished, connecting before the server is up; then the same store
// through the plugin host's sg_host_store, as a plugin sees it.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "catch.hpp"
#include "dist/store.h"
#include "host/plugin_host.h"
#include "sexpgpu/sdk/host_store.h"

namespace {

using namespace std::chrono_literals;
using sexpgpu::Result;
using sexpgpu::dist::Store;
using sexpgpu::dist::World;
using StorePtr = std::unique_ptr<Store>;

// A port nobody listens on now (the kernel's pick, released at once).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

World world_of(int rank, int size, int port, std::chrono::milliseconds timeout = 5s) {
  World w;
  w.rank = rank;
  w.size = size;
  w.master_host = "127.0.0.1";
  w.master_port = port;
  w.timeout = timeout;
  return w;
}

StorePtr join(const World& w) {
  Result<StorePtr> s = Store::join(w);
  INFO(s.error());
  REQUIRE(s.ok());
  return std::move(s).value();
}

// Three ranks joined, rank 0 first (it serves).
std::vector<StorePtr> three(int port) {
  std::vector<StorePtr> out;
  for (int r = 0; r < 3; ++r) out.push_back(join(world_of(r, 3, port)));
  return out;
}

std::vector<std::byte> bytes(const std::string& s) {
  auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Goodbye from every rank, rank 0 last: its leave() waits for the others.
void leave_all(std::vector<StorePtr>& ranks) {
  for (auto it = ranks.rbegin(); it != ranks.rend(); ++it) (*it)->leave();
}

// gone() until it lists `rank` (the server sees a close a moment later).
bool becomes_gone(Store& s, int rank) {
  for (int i = 0; i < 200; ++i) {
    Result<std::vector<int>> g = s.gone();
    REQUIRE(g.ok());
    if (std::find(g->begin(), g->end(), rank) != g->end()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

}  // namespace

TEST_CASE("store: a key set by one rank is read by every rank, and a get waits for it", "[dist]") {
  auto ranks = three(free_port());
  REQUIRE(ranks[1]->set("addr/1", bytes(std::string("\0\x01 binary", 9))).ok());
  for (auto& s : ranks) {
    Result<std::vector<std::byte>> v = s->get("addr/1", 1s);
    REQUIRE(v.ok());
    CHECK(*v == bytes(std::string("\0\x01 binary", 9)));
  }
  // A get before the set: answered when the key arrives.
  auto later = std::async(std::launch::async, [&] { return ranks[2]->get("nccl-id", 5s); });
  std::this_thread::sleep_for(50ms);
  REQUIRE(ranks[0]->set("nccl-id", bytes("id")).ok());
  Result<std::vector<std::byte>> got = later.get();
  REQUIRE(got.ok());
  CHECK(*got == bytes("id"));
  CHECK(ranks[2]->world().rank == 2);
  leave_all(ranks);
}

TEST_CASE("store: one client shared by several threads serializes their calls", "[dist]") {
  auto ranks = three(free_port());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        std::string key = "k" + std::to_string(t) + "." + std::to_string(i);
        CHECK(ranks[1]->set(key, bytes(key)).ok());
        Result<std::vector<std::byte>> v = ranks[1]->get(key, 1s);
        CHECK((v.ok() && *v == bytes(key)));
      }
    });
  for (auto& th : threads) th.join();
  CHECK(*ranks[2]->get("k3.24", 1s) == bytes("k3.24"));
  leave_all(ranks);
}

TEST_CASE("store: a get of a key nobody sets fails at its timeout, naming the key", "[dist]") {
  auto ranks = three(free_port());
  auto start = std::chrono::steady_clock::now();
  Result<std::vector<std::byte>> v = ranks[1]->get("never", 200ms);
  auto took = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(v.ok());
  CHECK(v.code() == "E-RANK");
  CHECK(contains(v.error(), "rank 1"));
  CHECK(contains(v.error(), "\"never\" was not set within 200 ms"));
  CHECK(took >= 190ms);
  CHECK(took < 3s);
  // The connection stays in step: the next call works.
  REQUIRE(ranks[1]->set("after", bytes("x")).ok());
  CHECK(ranks[1]->get("after", 1s).ok());
  leave_all(ranks);
}

TEST_CASE("store: a barrier answers when all ranks arrived, and names those that did not",
          "[dist]") {
  auto ranks = three(free_port());
  for (int round = 0; round < 2; ++round) {  // a name can be used again
    std::vector<std::future<sexpgpu::Status>> arrived;
    for (auto& s : ranks)
      arrived.push_back(std::async(std::launch::async, [&] { return s->barrier("init", 5s); }));
    for (auto& a : arrived) CHECK(a.get().ok());
  }
  auto a = std::async(std::launch::async, [&] { return ranks[0]->barrier("step", 300ms); });
  auto b = std::async(std::launch::async, [&] { return ranks[1]->barrier("step", 300ms); });
  sexpgpu::Status sa = a.get(), sb = b.get();
  REQUIRE_FALSE(sa.ok());
  CHECK(sa.code() == "E-RANK");
  CHECK(contains(sa.error(), "barrier \"step\": rank 2 did not arrive within 300 ms"));
  CHECK_FALSE(sb.ok());
  leave_all(ranks);
}

TEST_CASE("store: a second process with a rank already connected is refused", "[dist]") {
  int port = free_port();
  auto ranks = three(port);
  Result<StorePtr> twice = Store::join(world_of(1, 3, port));
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.code() == "E-WORLD");
  CHECK(contains(twice.error(), "rank 1 is already connected"));
  CHECK(contains(twice.error(), "give each process its own rank"));
  // The first rank 1 is unharmed.
  CHECK(ranks[1]->set("still", bytes("here")).ok());
  leave_all(ranks);
}

TEST_CASE("store: a rank with another world size is refused", "[dist]") {
  int port = free_port();
  StorePtr r0 = join(world_of(0, 3, port));
  Result<StorePtr> other = Store::join(world_of(1, 4, port));
  REQUIRE_FALSE(other.ok());
  CHECK(other.code() == "E-WORLD");
  CHECK(contains(other.error(), "says the world has 4 ranks, but rank 0's store serves 3"));
  r0->leave();
}

TEST_CASE("store: a rank that closes without goodbye is gone; one that leaves is not", "[dist]") {
  auto ranks = three(free_port());
  ranks[1]->leave();
  ranks[1].reset();
  ranks[2].reset();  // no leave(): its socket just closes
  CHECK(becomes_gone(*ranks[0], 2));
  Result<std::vector<int>> g = ranks[0]->gone();
  REQUIRE(g.ok());
  CHECK(*g == std::vector<int>{2});
  // A barrier cannot complete without rank 2: it says so at once.
  auto start = std::chrono::steady_clock::now();
  sexpgpu::Status b = ranks[0]->barrier("end", 5s);
  REQUIRE_FALSE(b.ok());
  CHECK(b.code() == "E-RANK");
  CHECK(contains(b.error(), "rank 2 is gone"));
  CHECK(std::chrono::steady_clock::now() - start < 2s);
}

TEST_CASE("store: a client whose server vanished gets an error naming rank 0", "[dist]") {
  auto ranks = three(free_port());
  ranks[0].reset();  // rank 0's process ends: its server with it
  Result<std::vector<int>> g = ranks[1]->gone();
  REQUIRE_FALSE(g.ok());
  CHECK(g.code() == "E-RANK");
  CHECK(contains(g.error(), "rank 0's store at 127.0.0.1:"));
  CHECK(contains(g.error(), "unreachable"));
  // And it stays failed, at once, for every later call.
  Result<std::vector<std::byte>> v = ranks[1]->get("x", 5s);
  CHECK(v.code() == "E-RANK");
}

TEST_CASE("store: a rank may start before rank 0; connecting retries until the timeout", "[dist]") {
  int port = free_port();
  auto early = std::async(std::launch::async, [&] { return Store::join(world_of(1, 2, port)); });
  std::this_thread::sleep_for(300ms);
  StorePtr r0 = join(world_of(0, 2, port));
  Result<StorePtr> r1 = early.get();
  REQUIRE(r1.ok());
  CHECK((*r1)->set("hello", bytes("1")).ok());
  CHECK(r0->get("hello", 1s).ok());
  (*r1)->leave();
  r0->leave();

  // Nobody serves: the join gives up at the rank timeout, naming the master.
  auto start = std::chrono::steady_clock::now();
  Result<StorePtr> alone = Store::join(world_of(1, 2, free_port(), 1s));
  REQUIRE_FALSE(alone.ok());
  CHECK(alone.code() == "E-RANK");
  CHECK(contains(alone.error(), "could not reach rank 0's store at 127.0.0.1:"));
  CHECK(contains(alone.diagnostic().fix, "SEXPGPU_RANK_TIMEOUT"));
  CHECK(std::chrono::steady_clock::now() - start < 4s);
}

TEST_CASE("store: a world without a master, or a port in use, cannot serve", "[dist]") {
  Result<StorePtr> none = Store::join(World{});
  REQUIRE_FALSE(none.ok());
  CHECK(none.code() == "E-WORLD");
  int port = free_port();
  StorePtr r0 = join(world_of(0, 2, port));
  Result<StorePtr> second = Store::join(world_of(0, 2, port));
  REQUIRE_FALSE(second.ok());
  CHECK(second.code() == "E-WORLD");
  CHECK(contains(second.error(), "cannot serve the store on port " + std::to_string(port)));
  r0->leave();
}

TEST_CASE("sdk::host_store walks the extension chain by type and size", "[dist][sdk]") {
  sg_host_api api{};
  api.struct_size = sizeof api;
  CHECK(sexpgpu::sdk::host_store(&api) == nullptr);
  CHECK(sexpgpu::sdk::host_store(nullptr) == nullptr);
  sg_host_store store{};
  store.base = {sizeof store, SG_EXTENSION_HOST_STORE, nullptr};
  store.set = [](void*, const char*, size_t, const void*, size_t, const char**, size_t*) {
    return 0;
  };
  store.get = [](void*, const char*, size_t, int64_t, const void**, size_t*, const char**,
                 size_t*) { return 0; };
  sg_extension_base other{sizeof(sg_extension_base), 99u, &store.base};
  api.extension = &other;
  CHECK(sexpgpu::sdk::host_store(&api) == &store);
  store.base.struct_size = sizeof(sg_extension_base);  // too small to hold set and get
  CHECK(sexpgpu::sdk::host_store(&api) == nullptr);
  store.base.struct_size = sizeof store;
  api.struct_size = offsetof(sg_host_api, extension);  // a table without the field
  CHECK(sexpgpu::sdk::host_store(&api) == nullptr);
}

TEST_CASE("the plugin host gives every plugin the store through sg_host_store", "[dist][plugins]") {
  sexpgpu::host::PluginHost h(
      std::vector<sexpgpu::host::SearchDir>{{SEXPGPU_BUILD_PLUGIN_DIR, "build tree"}});
  const sg_host_api* api = h.host_table("example-sink");
  REQUIRE(api);
  const sg_host_store* store = sexpgpu::sdk::host_store(api);
  REQUIRE(store);
  const char* msg = nullptr;
  size_t msg_len = 0;
  const void* value = nullptr;
  size_t value_len = 0;

  // No store: a run of one process.
  CHECK(store->set(store->store_data, "k", 1, "v", 1, &msg, &msg_len) != 0);
  CHECK(std::string(msg, msg_len) == "this run is one process: there is no store");

  int port = free_port();
  StorePtr r0 = join(world_of(0, 2, port)), r1 = join(world_of(1, 2, port));
  h.set_store(r0.get());
  REQUIRE(store->set(store->store_data, "gloo/0", 6, "addr", 4, &msg, &msg_len) == 0);
  Result<std::vector<std::byte>> seen = r1->get("gloo/0", 1s);  // the other rank sees it
  REQUIRE(seen.ok());
  CHECK(*seen == bytes("addr"));
  REQUIRE(r1->set("gloo/1", bytes("other")).ok());
  REQUIRE(store->get(store->store_data, "gloo/1", 6, 0, &value, &value_len, &msg, &msg_len) == 0);
  CHECK(std::string(static_cast<const char*>(value), value_len) == "other");
  // A timeout passes through, and the message names the key.
  CHECK(store->get(store->store_data, "none", 4, 100, &value, &value_len, &msg, &msg_len) != 0);
  CHECK(contains(std::string(msg, msg_len), "\"none\" was not set within 100 ms"));
  CHECK(store->get(store->store_data, "none", 4, -1, &value, &value_len, &msg, &msg_len) != 0);

  h.set_store(nullptr);  // detached
  CHECK(store->get(store->store_data, "gloo/1", 6, 0, &value, &value_len, &msg, &msg_len) != 0);
  CHECK(std::string(msg, msg_len) == "this run is one process: there is no store");
  r1->leave();
  r0->leave();
}
