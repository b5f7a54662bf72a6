// The store's wire and sockets (store.h; store.cpp the client,
// store_server.cpp rank 0's server): frames, fields, and blocking I/O with
// a deadline on non-blocking IPv4 sockets.
//
// Every message is a frame: a 4-byte big-endian length, then that many
// bytes. A request is an op byte and its fields; a reply an Answer byte
// and one field. A field is a 4-byte length and its bytes, an integer 4
// bytes. A client has one request in flight at a time, and the server
// answers every request exactly once (a GET or a barrier when it
// completes or when the deadline the client sent passes), so request and
// reply never get out of step.
#pragma once

#include <arpa/inet.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "dist/world.h"

namespace sexpgpu::dist::wire {

using Clock = std::chrono::steady_clock;

enum class Op : uint8_t { Hello = 1, Set, Get, Barrier, Gone, Bye };
// A reply's status: Refused is an inconsistent world (E-WORLD: a rank
// twice, sizes that differ), Gone a rank that left (E-RANK).
enum class Answer : uint8_t { Ok = 0, Timeout = 1, Refused = 2, Gone = 3 };

// Rendezvous values are small (Gloo's addresses, NCCL's 128-byte id); a
// larger frame is a stranger on the port, not a rank.
inline constexpr uint32_t kMaxFrame = 64u << 20;

inline void put_u32(std::string& out, uint32_t v) {
  uint32_t be = htonl(v);
  out.append(reinterpret_cast<const char*>(&be), 4);
}
inline void put_field(std::string& out, std::string_view bytes) {
  put_u32(out, static_cast<uint32_t>(bytes.size()));
  out.append(bytes);
}
inline std::string frame(std::string_view payload) {
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

// errno's text.
std::string sys_error();
// Milliseconds from now to `deadline`, rounded up, at least 0 (for poll).
int ms_until(Clock::time_point deadline);
// Each returns "" or why not ("the connection closed", the deadline, errno).
std::string wait_for(int fd, short events, Clock::time_point deadline);
std::string send_all(int fd, std::string_view data, Clock::time_point deadline);
std::string recv_exact(int fd, char* out, size_t len, Clock::time_point deadline);
// TCP_NODELAY: small request/reply frames must not wait for delayed ACKs.
void tune(int fd);
// One connection attempt to the world's master until `deadline`: the fd
// (non-blocking), or -1 and `error`; `fatal` when retrying cannot help
// (the name does not resolve).
int connect_once(const World& w, Clock::time_point deadline, std::string& error, bool& fatal);

}  // namespace sexpgpu::dist::wire
