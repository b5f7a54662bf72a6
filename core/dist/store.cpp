// The run's key-value store (store.h): every rank's client, one
// connection to rank 0's server (store_server.cpp), over the wire of
// wire.h. A mutex serializes the threads that share one client (the
// trainer and the Gloo plugin's threads, through sg_host_store): one
// request in flight per connection keeps request and reply in step. A
// thread that waits in a GET therefore holds back the others' calls of
// this rank until it is answered; rendezvous calls come from one thread.
#include "dist/store.h"

#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include "dist/store_server.h"
#include "dist/wire.h"
#include "util/log.h"

namespace sexpgpu::dist {

namespace {

using namespace wire;
using std::chrono::milliseconds;

// How much longer than the server's own deadline a client waits for the
// server's answer before it takes the server for gone.
constexpr milliseconds kGrace{5000};

class TcpStore final : public Store {
 public:
  TcpStore(World w, std::unique_ptr<Server> server)
      : world_(std::move(w)), server_(std::move(server)) {}
  ~TcpStore() override {
    if (fd_ >= 0) ::close(fd_);  // without BYE: the server counts this rank as gone
    server_.reset();
  }

  sexpgpu::Status connect_and_hello() {
    Clock::time_point deadline = Clock::now() + world_.timeout;
    std::string error;
    for (milliseconds pause{50};; pause = std::min(pause * 2, milliseconds(1000))) {
      bool fatal = false;
      fd_ = connect_once(world_, deadline, error, fatal);
      if (fd_ >= 0) break;
      if (fatal) return failed("E-WORLD", error, "set the master to rank 0's host name or address");
      if (Clock::now() + pause >= deadline)
        return failed("E-RANK",
                      "could not reach rank 0's store at " + world_.master() + " within " +
                          seconds() + " (" + error + ")",
                      "start rank 0 too, check that " + world_.master() +
                          " is rank 0's host and its port is open to this node; "
                          "SEXPGPU_RANK_TIMEOUT waits longer");
      std::this_thread::sleep_for(pause);
    }
    std::string req(1, static_cast<char>(Op::Hello));
    put_u32(req, static_cast<uint32_t>(world_.rank));
    put_u32(req, static_cast<uint32_t>(world_.size));
    Result<std::string> r = call(req, deadline);
    if (!r) return r.failed();
    return ok_status();
  }

  sexpgpu::Status set(const std::string& key, const std::vector<std::byte>& value) override {
    std::string req(1, static_cast<char>(Op::Set));
    put_field(req, key);
    put_field(req, {reinterpret_cast<const char*>(value.data()), value.size()});
    Result<std::string> r = call(req, Clock::now() + world_.timeout);
    if (!r) return r.failed();
    return ok_status();
  }

  Result<std::vector<std::byte>> get(const std::string& key, milliseconds timeout) override {
    Result<std::string> r = call(waiting(Op::Get, key, timeout), Clock::now() + timeout + kGrace);
    if (!r) return r.failed();
    auto* p = reinterpret_cast<const std::byte*>(r->data());
    return std::vector<std::byte>(p, p + r->size());
  }

  sexpgpu::Status barrier(const std::string& name, milliseconds timeout) override {
    Result<std::string> r =
        call(waiting(Op::Barrier, name, timeout), Clock::now() + timeout + kGrace);
    if (!r) return r.failed();
    return ok_status();
  }

  Result<std::vector<int>> gone() override {
    Result<std::string> r =
        call(std::string(1, static_cast<char>(Op::Gone)), Clock::now() + world_.timeout);
    if (!r) return r.failed();
    Reader rd{*r};
    std::vector<int> out(std::min<uint32_t>(rd.u32(), kMaxWorld));
    for (int& g : out) g = static_cast<int>(rd.u32());
    if (!rd.ok) return failed("E-RANK", "a malformed answer from rank 0's store", "report a bug");
    return out;
  }

  void leave() override {
    if (left_) return;
    left_ = true;
    Clock::time_point deadline = Clock::now() + world_.timeout;
    (void)call(std::string(1, static_cast<char>(Op::Bye)), deadline);
    if (server_) server_->wait_all_left(deadline);
  }

  const World& world() const override { return world_; }

 private:
  std::string seconds() const { return std::to_string(world_.timeout.count() / 1000) + " s"; }

  static std::string waiting(Op op, const std::string& key, milliseconds timeout) {
    std::string req(1, static_cast<char>(op));
    put_field(req, key);
    put_u32(req, static_cast<uint32_t>(std::clamp<int64_t>(timeout.count(), 0, UINT32_MAX)));
    return req;
  }

  Failed failed(const char* code, const std::string& what, const std::string& fix) const {
    Failed f = fail(code, "rank " + std::to_string(world_.rank) + ": " + what);
    f.diagnostic.fix = fix;
    return f;
  }

  // One request and its reply, serialized with every other thread's. A
  // connection that fails once stays failed: its frames are out of step.
  Result<std::string> call(const std::string& request, Clock::time_point deadline) {
    std::lock_guard lock(mu_);
    if (!broken_.empty()) return failed("E-RANK", broken_, "see rank 0's log, then resume");
    std::string err = send_all(fd_, frame(request), deadline);
    char head[4];
    if (err.empty()) err = recv_exact(fd_, head, 4, deadline);
    std::string payload;
    if (err.empty()) {
      Reader r{std::string_view(head, 4)};
      uint32_t len = r.u32();
      if (len < 1 || len > kMaxFrame) err = "a malformed reply";
      payload.resize(len);
      if (err.empty()) err = recv_exact(fd_, payload.data(), payload.size(), deadline);
    }
    Reader r{err.empty() ? std::string_view(payload).substr(1) : std::string_view()};
    std::string body = r.field();
    if (err.empty() && !r.ok) err = "a malformed reply";
    if (!err.empty()) {
      broken_ = "rank 0's store at " + world_.master() + " is unreachable (" + err +
                "): rank 0 is gone or stuck";
      return failed("E-RANK", broken_, "see rank 0's log, then resume from the last checkpoint");
    }
    switch (static_cast<Answer>(payload[0])) {
      case Answer::Ok: return body;
      case Answer::Timeout:
        return failed("E-RANK", body,
                      "another rank is slow or stuck: see its log; SEXPGPU_RANK_TIMEOUT waits "
                      "longer");
      case Answer::Refused:
        return failed("E-WORLD", body,
                      "check the rank variables of every process "
                      "(docs/environment.md, \"Rank variables\")");
      default: return failed("E-RANK", body, "see that rank's log, then resume every rank");
    }
  }

  World world_;
  std::unique_ptr<Server> server_;  // rank 0 only
  std::mutex mu_;
  int fd_ = -1;
  std::string broken_;  // why the connection is unusable; "" while it is fine
  bool left_ = false;
};

}  // namespace

Result<std::unique_ptr<Store>> Store::join(const World& world) {
  if (world.master_host.empty() || world.master_port < 1 || world.master_port > 65535) {
    Failed f =
        fail("E-WORLD", "a world without a master address has no store (" + world.master() + ")");
    f.diagnostic.fix = "set SEXPGPU_MASTER=HOST:PORT for a world of several processes";
    return f;
  }
  std::unique_ptr<Server> server;
  if (world.rank == 0) {
    Result<std::unique_ptr<Server>> s = Server::start(world);
    if (!s) return s.failed();
    server = std::move(s).value();
  }
  auto store = std::make_unique<TcpStore>(world, std::move(server));
  if (sexpgpu::Status hello = store->connect_and_hello(); !hello) return hello.failed();
  log::debug("store: rank {} of {} joined {}", world.rank, world.size, world.master());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace sexpgpu::dist
