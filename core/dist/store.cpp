// The run's key-value store over TCP (store.h): rank 0's server thread and
// every rank's client. Plain POSIX sockets and poll(2), IPv4, so that the
// one piece of networking the project writes stays small enough to read.
//
// Wire: every message is a frame, a 4-byte big-endian length then that
// many bytes. A request is an op byte and its fields; a reply a status
// byte and one field. A field is a 4-byte length and its bytes, an integer
// 4 bytes. A client has one request in flight at a time (a mutex
// serializes the threads that share it: the trainer and the Gloo plugin's
// threads), and the server answers every request exactly once, a GET or a
// barrier when it completes or when the deadline the client sent passes,
// so request and reply never get out of step.
#include "dist/store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>

#include "util/log.h"

namespace sexpgpu::dist {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

enum class Op : uint8_t { Hello = 1, Set, Get, Barrier, Gone, Bye };
// A reply's status: Refused is an inconsistent world (E-WORLD: a rank
// twice, sizes that differ), Gone a rank that left (E-RANK).
enum class Answer : uint8_t { Ok = 0, Timeout = 1, Refused = 2, Gone = 3 };

// Rendezvous values are small (Gloo's addresses, NCCL's 128-byte id); a
// larger frame is a stranger on the port, not a rank.
constexpr uint32_t kMaxFrame = 64u << 20;
// How much longer than the server's own deadline a client waits for the
// server's answer before it takes the server for gone.
constexpr milliseconds kGrace{5000};

std::string sys_error() {
  return std::strerror(errno);
}

// ---- encoding ----

void put_u32(std::string& out, uint32_t v) {
  uint32_t be = htonl(v);
  out.append(reinterpret_cast<const char*>(&be), 4);
}
void put_field(std::string& out, std::string_view bytes) {
  put_u32(out, static_cast<uint32_t>(bytes.size()));
  out.append(bytes);
}
std::string frame(std::string_view payload) {
  std::string out;
  put_field(out, payload);
  return out;
}

// Reads fields off a payload; `ok` turns false at the first short read.
struct Reader {
  std::string_view rest;
  bool ok = true;
  uint32_t u32() {
    if (rest.size() < 4) return ok = false, 0;
    uint32_t be;
    std::memcpy(&be, rest.data(), 4);
    rest.remove_prefix(4);
    return ntohl(be);
  }
  std::string field() {
    uint32_t n = u32();
    if (!ok || rest.size() < n) return ok = false, std::string();
    std::string out(rest.substr(0, n));
    rest.remove_prefix(n);
    return out;
  }
};

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

// ---- blocking I/O on a non-blocking socket, each with a deadline ----

int ms_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left + 1, 0, 1 << 30));
}

// Waits until `fd` is ready for `events`; "" or why not.
std::string wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, ms_until(deadline));
    if (n > 0) return "";
    if (n == 0) return "no answer before the deadline";
    if (errno != EINTR) return sys_error();
  }
}

std::string send_all(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (std::string e = wait_for(fd, POLLOUT, deadline); !e.empty()) return e;
    } else {
      return sys_error();
    }
  }
  return "";
}

std::string recv_exact(int fd, char* out, size_t len, Clock::time_point deadline) {
  while (len > 0) {
    ssize_t n = ::recv(fd, out, len, 0);
    if (n > 0) {
      out += n;
      len -= static_cast<size_t>(n);
    } else if (n == 0) {
      return "the connection closed";
    } else if (errno == EAGAIN || errno == EINTR) {
      if (std::string e = wait_for(fd, POLLIN, deadline); !e.empty()) return e;
    } else {
      return sys_error();
    }
  }
  return "";
}

void tune(int fd) {
  int one = 1;  // small request/reply frames: Nagle would add delayed-ACK waits
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// One connection attempt to host:port until `deadline`: the fd, or -1 and
// `error`. `fatal` when retrying cannot help (the name does not resolve).
int connect_once(const World& w, Clock::time_point deadline, std::string& error, bool& fatal) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::string port = std::to_string(w.master_port);
  if (int rc = ::getaddrinfo(w.master_host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    error = std::string("cannot resolve ") + w.master_host + ": " + ::gai_strerror(rc);
    fatal = rc == EAI_NONAME;
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc < 0 && errno == EINPROGRESS) {
      error = wait_for(fd, POLLOUT, deadline);
      int err = 0;
      socklen_t len = sizeof err;
      if (error.empty() && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
        rc = 0;
      else if (error.empty())
        error = std::strerror(err);
    } else if (rc < 0) {
      error = sys_error();
    }
    if (rc < 0) ::close(fd), fd = -1;
  }
  ::freeaddrinfo(found);
  if (fd >= 0) tune(fd);
  return fd;
}

// ---- the server: rank 0's thread ----

class Server {
 public:
  ~Server() {
    stop_ = true;
    char byte = 0;
    [[maybe_unused]] ssize_t n = ::write(wake_[1], &byte, 1);
    if (thread_.joinable()) thread_.join();
    for (auto& c : conns_) ::close(c->fd);
    for (int fd : {listen_fd_, wake_[0], wake_[1]})
      if (fd >= 0) ::close(fd);
  }

  static Result<std::unique_ptr<Server>> start(const World& w) {
    auto s = std::unique_ptr<Server>(new Server(w.size));
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
    s->thread_ = std::thread([srv = s.get()] { srv->loop(); });
    return s;
  }

  // Waits (at most until `deadline`) until no registered rank is still
  // connected without having said goodbye: rank 0 serves the others' last
  // calls before its process ends.
  void wait_all_left(Clock::time_point deadline) {
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

  explicit Server(int size) : size_(size) {}

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
    std::set<int>& arrived = barriers_[c.wait_key];
    arrived.insert(c.rank);
    for (int g : gone_)
      if (!arrived.count(g)) return fail_barrier(c.wait_key, g);
    if (static_cast<int>(arrived.size()) < size_) return;
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
        std::set<int>& arrived = barriers_[c->wait_key];
        arrived.erase(c->rank);  // this rank stops waiting: it has not arrived for the others
        std::set<int> missing;
        for (int r = 0; r < size_; ++r)
          if (!arrived.count(r) && r != c->rank) missing.insert(r);
        reply(*c, Answer::Timeout,
              "barrier " + show_key(c->wait_key) + ": rank " + rank_list(missing) +
                  " did not arrive" + within);
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
    for (auto& [name, arrived] : barriers_)
      if (!arrived.count(c.rank)) stuck.push_back(name);
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
  std::map<std::string, std::set<int>> barriers_;  // name -> the ranks that arrived
  std::set<int> gone_;
  // Shared with wait_all_left:
  std::mutex mu_;
  std::condition_variable cv_;
  int live_ = 0;
};

// ---- the client: one per rank ----

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
