// Rank 0's store server (store_server.h): one thread, one poll(2) loop
// over the listening socket, a wake-up pipe and every rank's connection.
// The state (values, barriers, which ranks are connected or gone) is the
// thread's alone, so it needs no lock; only wait_all_left shares a count.
// Every request is answered exactly once (wire.h): a GET when its key is
// set, a barrier when every rank arrived, either when its deadline passes
// or, for a barrier, as soon as a rank it waits for is gone.
#include "dist/store_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "util/log.h"

namespace sexpgpu::dist {

namespace {

using namespace wire;
using std::chrono::milliseconds;

// A key in a message: as written when printable, else its length.
std::string show_key(const std::string& key) {
  bool printable = std::all_of(key.begin(), key.end(), [](char c) { return c >= 32 && c < 127; });
  return printable ? "\"" + key + "\"" : "a key of " + std::to_string(key.size()) + " bytes";
}

std::string rank_list(const std::set<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

class PollServer final : public Server {
 public:
  ~PollServer() override {
    stop_ = true;
    char byte = 0;
    [[maybe_unused]] ssize_t n = ::write(wake_[1], &byte, 1);
    if (thread_.joinable()) thread_.join();
    for (auto& c : conns_) ::close(c->fd);
    for (int fd : {listen_fd_, wake_[0], wake_[1]})
      if (fd >= 0) ::close(fd);
  }

  static Result<std::unique_ptr<PollServer>> start(const World& w) {
    auto s = std::make_unique<PollServer>(w.size);
    s->listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;  // a restarted run must not wait out the last one's TIME_WAIT
    ::setsockopt(s->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(w.master_port));
    if (s->listen_fd_ < 0 || ::bind(s->listen_fd_, (sockaddr*)&addr, sizeof addr) < 0 ||
        ::listen(s->listen_fd_, 128) < 0 || ::pipe2(s->wake_, O_CLOEXEC | O_NONBLOCK) < 0) {
      Failed f = fail("E-WORLD", "rank 0 cannot serve the store on port " +
                                     std::to_string(w.master_port) + ": " + sys_error());
      f.diagnostic.fix =
          "choose a free port in SEXPGPU_MASTER (torchrun: MASTER_PORT + 1 is "
          "used) for every rank";
      return f;
    }
    s->thread_ = std::thread([srv = s.get()] { srv->serve(); });
    return s;
  }

  explicit PollServer(int size) : size_(size) {}

  void wait_all_left(Clock::time_point deadline) override {
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, deadline, [&] { return live_ == 0; });
  }

 private:
  enum class Wait { None, Get, Barrier };
  struct Conn {
    int fd = -1;
    std::string peer;  // "address:port", for messages
    int rank = -1;     // -1 until HELLO
    bool bye = false, closed = false;
    std::string in, out;
    Wait wait = Wait::None;
    std::string wait_key;
    int64_t wait_ms = 0;
    Clock::time_point deadline;
  };

  // The thread. Should it fail, every connection closes, so that the
  // ranks hear at once that rank 0's store is gone instead of waiting.
  void serve() {
    try {
      loop();
    } catch (const std::exception& e) {
      log::error("store: the server stopped: {}", e.what());
    }
    for (auto& c : conns_) ::shutdown(c->fd, SHUT_RDWR);
  }

  void loop() {
    while (!stop_) {
      std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
      Clock::time_point next = Clock::time_point::max();
      for (auto& c : conns_) {
        fds.push_back({c->fd, static_cast<short>(POLLIN | (c->out.empty() ? 0 : POLLOUT)), 0});
        if (c->wait != Wait::None) next = std::min(next, c->deadline);
      }
      int n =
          ::poll(fds.data(), fds.size(), next == Clock::time_point::max() ? -1 : ms_until(next));
      if (n < 0 && errno != EINTR) {
        log::error("store: poll failed: {}", sys_error());
        return;
      }
      if (fds[1].revents & POLLIN) accept_all();
      for (size_t i = 2; i < fds.size(); ++i) {
        Conn& c = *conns_[i - 2];
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_from(c);
        if (!c.closed && (fds[i].revents & POLLOUT)) write_to(c);
      }
      expire();
      for (auto& c : conns_)
        if (c->closed) ::close(c->fd);
      std::erase_if(conns_, [](auto& c) { return c->closed; });
    }
  }

  void accept_all() {
    for (;;) {
      sockaddr_in addr{};
      socklen_t len = sizeof addr;
      int fd = ::accept4(listen_fd_, (sockaddr*)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      tune(fd);
      char ip[INET_ADDRSTRLEN] = "?";
      ::inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->peer = std::string(ip) + ":" + std::to_string(ntohs(addr.sin_port));
      conns_.push_back(std::move(c));
    }
  }

  void read_from(Conn& c) {
    if (c.closed) return;  // closed earlier in this round, by a failed reply
    char buf[65536];
    for (;;) {
      ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      return close(c);  // closed by the peer, or broken
    }
    while (!c.closed && c.in.size() >= 4) {
      Reader r{c.in};
      uint32_t len = r.u32();
      if (len > kMaxFrame) return protocol_error(c, "a frame of " + std::to_string(len) + " bytes");
      if (c.in.size() < 4 + len) break;
      std::string payload = c.in.substr(4, len);
      c.in.erase(0, 4 + len);
      handle(c, payload);
    }
  }

  void write_to(Conn& c) {
    ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) c.out.erase(0, static_cast<size_t>(n));
    if (n < 0 && errno != EAGAIN && errno != EINTR) close(c);
  }

  void reply(Conn& c, Answer status, std::string_view body) {
    if (c.closed) return;
    std::string payload(1, static_cast<char>(status));
    put_field(payload, body);
    c.out += frame(payload);
    c.wait = Wait::None;
    write_to(c);  // most replies fit the socket's buffer at once
  }

  void protocol_error(Conn& c, const std::string& what) {
    log::warn("store: {} from {} (rank {}) is not this store's protocol; connection closed", what,
              c.peer, c.rank);
    close(c);
  }

  void handle(Conn& c, const std::string& payload) {
    if (payload.empty() || c.wait != Wait::None) return protocol_error(c, "a request out of turn");
    Op op = static_cast<Op>(payload[0]);
    Reader r{std::string_view(payload).substr(1)};
    if (op != Op::Hello && c.rank < 0) return protocol_error(c, "a request before HELLO");
    switch (op) {
      case Op::Hello: {
        int rank = static_cast<int>(r.u32()), size = static_cast<int>(r.u32());
        if (!r.ok) return protocol_error(c, "a short HELLO");
        return hello(c, rank, size);
      }
      case Op::Set: {
        std::string key = r.field(), value = r.field();
        if (!r.ok) return protocol_error(c, "a short SET");
        for (auto& other : conns_)
          if (other->wait == Wait::Get && other->wait_key == key) reply(*other, Answer::Ok, value);
        values_[key] = std::move(value);
        return reply(c, Answer::Ok, "");
      }
      case Op::Get:
      case Op::Barrier: {
        std::string key = r.field();
        int64_t ms = r.u32();
        if (!r.ok) return protocol_error(c, "a short GET or barrier");
        c.wait = op == Op::Get ? Wait::Get : Wait::Barrier;
        c.wait_key = key;
        c.wait_ms = ms;
        c.deadline = Clock::now() + milliseconds(ms);
        if (op == Op::Get) {
          if (auto it = values_.find(key); it != values_.end()) reply(c, Answer::Ok, it->second);
        } else {
          arrive(c);
        }
        return;
      }
      case Op::Gone: {
        std::string list;
        put_u32(list, static_cast<uint32_t>(gone_.size()));
        for (int g : gone_) put_u32(list, static_cast<uint32_t>(g));
        return reply(c, Answer::Ok, list);
      }
      case Op::Bye:
        c.bye = true;
        update_live();
        return reply(c, Answer::Ok, "");
    }
    protocol_error(c, "an unknown op " + std::to_string(payload[0]));
  }

  void hello(Conn& c, int rank, int size) {
    std::string who = "rank " + std::to_string(rank) + " (" + c.peer + ")";
    if (size != size_)
      return reply(c, Answer::Refused,
                   who + " says the world has " + std::to_string(size) +
                       " ranks, but rank 0's store serves " + std::to_string(size_) +
                       ": start every process with the same world size");
    if (rank < 0 || rank >= size_)
      return reply(c, Answer::Refused, who + " is outside a world of " + std::to_string(size_));
    for (auto& other : conns_)
      if (other.get() != &c && other->rank == rank && !other->closed)
        return reply(c, Answer::Refused,
                     who + ": rank " + std::to_string(rank) + " is already connected from " +
                         other->peer +
                         ": two processes were started with one rank; give each "
                         "process its own rank");
    if (gone_.count(rank))
      return reply(c, Answer::Refused,
                   who + ": rank " + std::to_string(rank) +
                       " already left this run without goodbye, and a rank cannot join twice; "
                       "stop every rank and resume");
    c.rank = rank;
    update_live();
    reply(c, Answer::Ok, "");
  }

  // A rank reaches barrier c.wait_key: when all have, every waiter is
  // answered; a rank already gone means it never completes, so say so now.
  void arrive(Conn& c) {
    Barrier& b = barriers_[c.wait_key];
    b.waiting.insert(c.rank);
    b.gave_up.erase(c.rank);
    for (int g : gone_)
      if (!b.waiting.count(g)) return fail_barrier(c.wait_key, g);
    if (static_cast<int>(b.waiting.size()) < size_) return;
    for (auto& other : conns_)
      if (other->wait == Wait::Barrier && other->wait_key == c.wait_key)
        reply(*other, Answer::Ok, "");
    barriers_.erase(c.wait_key);  // the name can be used again
  }

  void fail_barrier(const std::string& name, int gone_rank) {
    for (auto& other : conns_)
      if (other->wait == Wait::Barrier && other->wait_key == name)
        reply(*other, Answer::Gone,
              "barrier " + show_key(name) + ": rank " + std::to_string(gone_rank) +
                  " is gone (its connection closed without goodbye)");
    barriers_.erase(name);
  }

  // Answers every request whose deadline passed.
  void expire() {
    Clock::time_point now = Clock::now();
    for (auto& c : conns_) {
      if (c->wait == Wait::None || c->deadline > now) continue;
      std::string within = " within " + std::to_string(c->wait_ms) + " ms";
      if (c->wait == Wait::Get) {
        std::string msg = show_key(c->wait_key) + " was not set" + within;
        if (!gone_.empty()) msg += " (gone: rank " + rank_list(gone_) + ")";
        reply(*c, Answer::Timeout, msg);
      } else {
        // This rank stops waiting, so it no longer counts as arrived; the
        // message names the ranks that never came, not those that gave up.
        Barrier& b = barriers_[c->wait_key];
        b.waiting.erase(c->rank);
        b.gave_up.insert(c->rank);
        std::set<int> missing;
        for (int r = 0; r < size_; ++r)
          if (!b.waiting.count(r) && !b.gave_up.count(r)) missing.insert(r);
        std::string who = missing.empty() ? "every rank came, but not within one deadline"
                                          : "rank " + rank_list(missing) + " did not arrive";
        reply(*c, Answer::Timeout, "barrier " + show_key(c->wait_key) + ": " + who + within);
      }
    }
  }

  void close(Conn& c) {
    if (c.closed) return;
    c.closed = true;
    c.wait = Wait::None;
    if (c.rank < 0 || c.bye) return update_live();
    log::warn("store: rank {} ({}) closed its connection without goodbye", c.rank, c.peer);
    gone_.insert(c.rank);
    update_live();
    std::vector<std::string> stuck;
    for (auto& [name, b] : barriers_)
      if (!b.waiting.count(c.rank)) stuck.push_back(name);
    for (const std::string& name : stuck) fail_barrier(name, c.rank);
  }

  void update_live() {
    int live = 0;
    for (auto& c : conns_) live += c->rank >= 0 && !c->bye && !c->closed;
    std::lock_guard lock(mu_);
    live_ = live;
    cv_.notify_all();
  }

  const int size_;
  int listen_fd_ = -1, wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::thread thread_;
  // Touched by the server thread alone:
  std::vector<std::unique_ptr<Conn>> conns_;
  std::map<std::string, std::string> values_;
  struct Barrier {
    std::set<int> waiting;  // arrived and waiting
    std::set<int> gave_up;  // arrived, then their deadline passed
  };
  std::map<std::string, Barrier> barriers_;
  std::set<int> gone_;
  // Shared with wait_all_left:
  std::mutex mu_;
  std::condition_variable cv_;
  int live_ = 0;
};

}  // namespace

Result<std::unique_ptr<Server>> Server::start(const World& world) {
  Result<std::unique_ptr<PollServer>> s = PollServer::start(world);
  if (!s) return s.failed();
  return std::unique_ptr<Server>(std::move(s).value());
}

}  // namespace sexpgpu::dist
