// cpu::Collective over Gloo (collective_gloo.h). Gloo throws on failure
// (gloo::IoException for a peer gone or the timeout, gloo::EnforceNotMet
// for a broken invariant, std::exception otherwise); every call here
// catches all of it and returns "rank communication failed: ...", because
// the plugin's callers take a message, never an exception. After one
// failure the context is unusable (a pair is closed), so every later call
// fails at once with the first message instead of waiting again.
#include "cpu/collective_gloo.h"

#include <arpa/inet.h>
#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "cpu/storage.h"

namespace sexpgpu::cpu {

Result<std::string> address_towards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    return Result<std::string>::failure("the master's host '" + host +
                                        "' does not resolve: " + gai_strerror(rc));
  std::string why = "no address of '" + host + "' has a route";
  for (addrinfo* a = found; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    bool routed = connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
    if (!routed) why = "no route to '" + host + "': " + std::strerror(errno);
    close(fd);
    if (!routed) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* bytes =
        local.ss_family == AF_INET6
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
    if (!inet_ntop(local.ss_family, bytes, text, sizeof text)) continue;
    freeaddrinfo(found);
    return std::string(text);
  }
  freeaddrinfo(found);
  return Result<std::string>::failure(why);
}

namespace {

constexpr const char* kFailed = "rank communication failed: ";

// Gloo's Store over the host's: set, and a wait that is a get with a
// timeout (whose value is kept for the get Gloo makes next). A failure
// throws, inside Gloo's connectFullMesh, and is caught by our caller.
class HostStore : public gloo::rendezvous::Store {
 public:
  HostStore(const sg_host_store* store, std::string prefix, std::chrono::milliseconds timeout)
      : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    std::string full = prefix_ + key;
    const char* message = nullptr;
    size_t message_len = 0;
    if (store_->set(store_->store_data, full.data(), full.size(), data.data(), data.size(),
                    &message, &message_len) != 0)
      throw std::runtime_error("the run's store could not set '" + full +
                               "': " + std::string(message ? message : "", message_len));
  }

  std::vector<char> get(const std::string& key) override {
    auto it = got_.find(key);
    if (it != got_.end()) return it->second;
    return fetch(key, timeout_);
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }

  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    for (const std::string& key : keys)
      if (!got_.count(key))
        got_[key] = fetch(key, timeout == gloo::kNoTimeout ? timeout_ : timeout);
  }

 private:
  std::vector<char> fetch(const std::string& key, std::chrono::milliseconds timeout) {
    std::string full = prefix_ + key;
    const void* value = nullptr;
    size_t value_len = 0;
    const char* message = nullptr;
    size_t message_len = 0;
    if (store_->get(store_->store_data, full.data(), full.size(), int64_t(timeout.count()), &value,
                    &value_len, &message, &message_len) != 0)
      throw std::runtime_error("waiting for '" + full + "' in the run's store: " +
                               std::string(message ? message : "", message_len));
    const char* bytes = static_cast<const char*>(value);
    return std::vector<char>(bytes, bytes + value_len);
  }

  const sg_host_store* store_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
  std::map<std::string, std::vector<char>> got_;
};

// Runs `body`, turning whatever it throws into our message.
template <class Body>
std::string guarded(Body&& body) noexcept {
  try {
    body();
    return "";
  } catch (const gloo::IoException& e) {
    return std::string(kFailed) + e.what();
  } catch (const gloo::EnforceNotMet& e) {
    return std::string(kFailed) + e.what();
  } catch (const std::exception& e) {
    return std::string(kFailed) + e.what();
  } catch (...) {
    return std::string(kFailed) + "an unknown exception from Gloo";
  }
}

// Gloo's reduction function for storage type S: out = a + b, element by
// element, computed in S's arithmetic type (f32 for the 16-bit floats,
// rounded back at each step like every op of the device).
template <class S>
void sum_into(void* out, const void* a, const void* b, size_t n) {
  S* o = static_cast<S*>(out);
  const S* x = static_cast<const S*>(a);
  const S* y = static_cast<const S*>(b);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (is_half_v<S>)
      o[i] = convert<S>(widen(x[i]) + widen(y[i]));
    else if constexpr (std::is_integral_v<S>)  // wraps, as the device's integer adds do
      o[i] = S(std::make_unsigned_t<S>(x[i]) + std::make_unsigned_t<S>(y[i]));
    else
      o[i] = x[i] + y[i];
  }
}

class GlooCollective : public Collective {
 public:
  GlooCollective(std::shared_ptr<gloo::rendezvous::Context> context, int rank, int size)
      : context_(std::move(context)), rank_(rank), size_(size) {}

  int rank() const override { return rank_; }
  int world_size() const override { return size_; }

  std::string all_reduce_sum(void* data, size_t count, ir::DType dtype) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!broken_.empty()) return broken_;
    if (count == 0) return "";
    switch (dtype) {
      case ir::DType::F32: return reduce<float>(data, count);
      case ir::DType::F64: return reduce<double>(data, count);
      case ir::DType::BF16: return reduce<BF16>(data, count);
      case ir::DType::F16: return reduce<F16>(data, count);
      case ir::DType::I32: return reduce<int32_t>(data, count);
      case ir::DType::I64: return reduce<int64_t>(data, count);
      default:
        return "all_reduce over ranks of " + std::string(ir::ir_name(dtype)) +
               " is not supported (f32, f64, bf16, f16, i32 and i64 are)";
    }
  }

  std::string broadcast(void* data, size_t bytes, int root) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!broken_.empty()) return broken_;
    if (root < 0 || root >= size_)
      return "broadcast from rank " + std::to_string(root) + " of a world of " +
             std::to_string(size_);
    if (bytes == 0) return "";
    return remember(guarded([&] {
      gloo::BroadcastOptions options(context_);
      options.setOutput(static_cast<uint8_t*>(data), bytes);
      options.setRoot(root);
      gloo::broadcast(options);
    }));
  }

 private:
  template <class S>
  std::string reduce(void* data, size_t count) {
    return remember(guarded([&] {
      gloo::AllreduceOptions options(context_);
      options.setOutput(static_cast<S*>(data), count);
      options.setReduceFunction(&sum_into<S>);
      gloo::allreduce(options);
    }));
  }

  std::string remember(std::string error) {
    if (!error.empty()) broken_ = error;
    return error;
  }

  std::mutex mutex_;  // one collective at a time: every rank must issue them in one order
  std::shared_ptr<gloo::rendezvous::Context> context_;
  int rank_, size_;
  std::string broken_;  // the first failure; the pairs are unusable after it
};

std::atomic<int> g_contexts{0};

}  // namespace

Result<std::shared_ptr<Collective>> make_gloo_collective(const GlooWorld& world,
                                                         const sg_host_store* store) {
  using R = Result<std::shared_ptr<Collective>>;
  if (!store)
    return R::failure(std::string(kFailed) +
                      "the host gives no key-value store (sg_host_store), which the ranks "
                      "need to find each other");
  // Gloo writes to its sockets with writev, and a write to a rank that is
  // gone raises SIGPIPE, whose default ends the process before Gloo can
  // report it: ignored here unless the program chose something (the trainer
  // ignores it too), so the write fails with EPIPE and we say so.
  struct sigaction pipe {};
  if (sigaction(SIGPIPE, nullptr, &pipe) == 0 && pipe.sa_handler == SIG_DFL)
    std::signal(SIGPIPE, SIG_IGN);
  Result<std::string> address = address_towards(world.master_host, world.master_port);
  if (!address) return R::failure(kFailed + address.error());
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::string error = guarded([&] {
    gloo::transport::tcp::attr attr;
    attr.hostname = *address;
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    auto made = std::make_shared<gloo::rendezvous::Context>(world.rank, world.size);
    made->setTimeout(world.timeout);
    HostStore adapter(store, "gloo/" + std::to_string(g_contexts++) + "/", world.timeout);
    made->connectFullMesh(adapter, device);
    context = std::move(made);
  });
  if (!error.empty())
    return R::failure(error + " (rank " + std::to_string(world.rank) + " of " +
                      std::to_string(world.size) + ", at " + *address + ")");
  return std::shared_ptr<Collective>(
      std::make_shared<GlooCollective>(std::move(context), world.rank, world.size));
}

}  // namespace sexpgpu::cpu
