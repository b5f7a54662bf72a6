// The launcher behind `run --ranks N` / `--gpus N` (run_ranks.h).
#include "cli/run_ranks.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/sweep_children.h"

namespace sexpgpu::cli {
namespace {

// A TCP port that was free a moment ago on 127.0.0.1 (bound to port 0 and
// released). Another process could take it before rank 0's store binds it;
// rank 0 then fails with the port named, and the run can be started again.
int free_port(std::string* error) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    *error = std::string("cannot make a socket: ") + std::strerror(errno);
    return 0;
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  else
    *error = std::string("cannot find a free port on 127.0.0.1: ") + std::strerror(errno);
  ::close(fd);
  return port;
}

// run's exit code from a wait status (a rank killed by a signal: 3, the
// run failed at run time, as E-RANK says on the other ranks).
int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 3; }

}  // namespace

int run_ranks(int ranks, const std::function<std::vector<std::string>(int rank)>& args_of,
              const std::vector<std::string>& command) {
  const std::string argv0 = command.empty() ? "sexpgpu" : command[0];
  std::string error;
  const int port = free_port(&error);
  if (port == 0) {
    std::cerr << "sexpgpu run: E-IO " << error << "\n";
    return 3;
  }
  ChildPool pool(argv0);
  for (int r = 0; r < ranks; ++r) {
    ChildPool::Env env = {{"SEXPGPU_RANK", std::to_string(r)},
                          {"SEXPGPU_WORLD_SIZE", std::to_string(ranks)},
                          {"SEXPGPU_LOCAL_RANK", std::to_string(r)},
                          {"SEXPGPU_MASTER", "127.0.0.1:" + std::to_string(port)},
                          {"SEXPGPU_LAUNCH_COMMAND", nlohmann::json(command).dump()}};
    if (!pool.start(size_t(r), args_of(r), &error, env)) {
      std::cerr << "sexpgpu run: E-IO rank " << r << ": " << error << "\n";
      pool.kill_all(SIGKILL);  // the ranks started would wait for this one
      break;
    }
  }
  std::map<size_t, int> codes;
  while (pool.running() > 0)
    pool.wait(
        [](size_t rank, const std::string& line) {
          // Rank 0 speaks for the run; the others print nothing on
          // standard output.
          if (rank == 0) std::cout << line << "\n" << std::flush;
        },
        [&](size_t rank, int status) {
          codes[rank] = exit_code_of(status);
          if (rank == 0 && codes[rank] != 0 && codes[rank] != 75 && codes[rank] != 130)
            pool.kill_all(SIGKILL);
        });
  int code = codes.count(0) ? codes[0] : 3;
  if (code == 0)
    for (const auto& [rank, c] : codes)
      if (c != 0) code = c;
  return code;
}

}  // namespace sexpgpu::cli
