// The child processes of `sexpgpu sweep`: each point runs as `sexpgpu run`
// in a process of its own (this binary, /proc/self/exe), its standard
// output a pipe the sweep reads line by line (the point's events under
// --json), its standard error the sweep's.
//
// Signals: while a ChildPool exists, SIGINT and SIGTERM do not end the
// sweep; they are counted and forwarded to every running child, which
// checkpoints and exits 75 (a second one: 130), and SIGUSR1 (checkpoint and
// carry on) is forwarded too. Each child runs in its own process group, so
// a Ctrl-C on the terminal reaches it once, through the sweep, and never
// twice (directly and forwarded), which would stop it without a checkpoint.
// A child gets SIGTERM if the sweep itself dies (PR_SET_PDEATHSIG), so a
// killed sweep leaves no training behind, only resumable checkpoints.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sexpgpu::cli {

class ChildPool {
 public:
  // Installs the signal handlers (the previous ones come back with the
  // destructor); `shown_argv0` is what children see as argv[0], so their
  // recorded command and resume hint read like the user's.
  explicit ChildPool(std::string shown_argv0);
  ~ChildPool();
  ChildPool(const ChildPool&) = delete;
  ChildPool& operator=(const ChildPool&) = delete;

  // Starts this binary with `args` (argv[1...]) under `key`, its
  // environment this process's with `env` set over it; false and why when
  // it cannot be started.
  using Env = std::vector<std::pair<std::string, std::string>>;
  bool start(size_t key, const std::vector<std::string>& args, std::string* error,
             const Env& env = {});
  size_t running() const { return children_.size(); }
  // How many SIGINT/SIGTERM arrived since the pool was made.
  int stop_signals() const { return stop_signals_; }
  // Counts (and forwards) the signals that arrived, without waiting: call
  // it before starting a point, so a stop between points starts none.
  void take_signals();
  // Sends `sig` to every running child (not counted as a stop signal).
  void kill_all(int sig);

  // Waits until something happens, then reports it: each whole line a
  // child wrote, and each child that ended, with its wait(2) status (after
  // all its lines). Forwards signals as they arrive.
  void wait(const std::function<void(size_t key, const std::string& line)>& on_line,
            const std::function<void(size_t key, int wait_status)>& on_exit);

 private:
  struct Child {
    pid_t pid = -1;
    int out = -1;
    std::string partial;  // a line not yet ended
  };
  void forward(int sig);
  std::string argv0_;
  std::map<size_t, Child> children_;
  int stop_signals_ = 0;
};

}  // namespace sexpgpu::cli
