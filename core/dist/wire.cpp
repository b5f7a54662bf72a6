// The store's sockets (wire.h): blocking calls with a deadline over
// non-blocking sockets, and connecting to the master over IPv4.
#include "dist/wire.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace sexpgpu::dist::wire {

using std::chrono::milliseconds;

std::string sys_error() {
  return std::strerror(errno);
}

int ms_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left + 1, 0, 1 << 30));
}

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
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

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

}  // namespace sexpgpu::dist::wire
