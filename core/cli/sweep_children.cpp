// ChildPool (see sweep_children.h): fork/exec of this binary with a pipe
// for standard output, a poll loop over the pipes and a self-pipe that the
// signal handler writes to, so signals are handled in the loop, not in the
// handler.
#include "cli/sweep_children.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sexpgpu::cli {

namespace {

int g_signal_pipe[2] = {-1, -1};
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGUSR1};
struct sigaction g_previous[3];

extern "C" void on_sweep_signal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  (void)!::write(g_signal_pipe[1], &b, 1);
  errno = saved;
}

}  // namespace

ChildPool::ChildPool(std::string shown_argv0) : argv0_(std::move(shown_argv0)) {
  if (::pipe2(g_signal_pipe, O_NONBLOCK | O_CLOEXEC) != 0) g_signal_pipe[0] = g_signal_pipe[1] = -1;
  struct sigaction sa {};
  sa.sa_handler = on_sweep_signal;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < 3; ++i) sigaction(kForwarded[i], &sa, &g_previous[i]);
}

ChildPool::~ChildPool() {
  for (size_t i = 0; i < 3; ++i) sigaction(kForwarded[i], &g_previous[i], nullptr);
  for (int& fd : g_signal_pipe)
    if (fd >= 0) ::close(fd), fd = -1;
  for (auto& [key, c] : children_) ::close(c.out);
}

bool ChildPool::start(size_t key, const std::vector<std::string>& args, std::string* error,
                      const Env& env) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    *error = std::string("cannot make a pipe: ") + std::strerror(errno);
    return false;
  }
  std::vector<std::string> words = {argv0_};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  // The environment, made before fork: the child only calls what is safe
  // between fork and exec.
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e) {
    std::string v = *e;
    bool replaced = false;
    for (const auto& [name, value] : env) replaced |= v.rfind(name + "=", 0) == 0;
    if (!replaced) vars.push_back(std::move(v));
  }
  for (const auto& [name, value] : env) vars.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    *error = std::string("cannot start a point: ") + std::strerror(errno);
    ::close(out[0]), ::close(out[1]);
    return false;
  }
  if (pid == 0) {
    // The child: its own process group, SIGTERM when the sweep dies, the
    // signals the sweep handles back to their defaults, the pipe as stdout.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);  // the sweep is already gone
    for (int sig : kForwarded) ::signal(sig, SIG_DFL);
    ::dup2(out[1], STDOUT_FILENO);
    ::execve("/proc/self/exe", argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out[1]);
  children_[key] = Child{pid, out[0], ""};
  return true;
}

void ChildPool::forward(int sig) {
  if (sig == SIGINT || sig == SIGTERM) ++stop_signals_;
  for (auto& [key, c] : children_) ::kill(c.pid, sig);
}

void ChildPool::kill_all(int sig) {
  for (auto& [key, c] : children_) ::kill(c.pid, sig);
}

void ChildPool::take_signals() {
  if (g_signal_pipe[0] < 0) return;
  unsigned char sigs[16];
  ssize_t n;
  while ((n = ::read(g_signal_pipe[0], sigs, sizeof sigs)) > 0)
    for (ssize_t i = 0; i < n; ++i) forward(sigs[i]);
}

void ChildPool::wait(const std::function<void(size_t, const std::string&)>& on_line,
                     const std::function<void(size_t, int)>& on_exit) {
  std::vector<pollfd> fds;
  std::vector<size_t> keys;
  if (g_signal_pipe[0] >= 0) fds.push_back({g_signal_pipe[0], POLLIN, 0});
  for (auto& [key, c] : children_) {
    fds.push_back({c.out, POLLIN, 0});
    keys.push_back(key);
  }
  if (::poll(fds.data(), fds.size(), -1) < 0) return;  // EINTR: the self-pipe has it
  size_t first_child = g_signal_pipe[0] >= 0 ? 1 : 0;
  if (first_child && (fds[0].revents & POLLIN)) take_signals();
  for (size_t i = first_child; i < fds.size(); ++i) {
    if (!fds[i].revents) continue;
    size_t key = keys[i - first_child];
    Child& c = children_.at(key);
    char buf[65536];
    ssize_t n = ::read(c.out, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) {
      c.partial.append(buf, size_t(n));
      for (size_t nl; (nl = c.partial.find('\n')) != std::string::npos;) {
        on_line(key, c.partial.substr(0, nl));
        c.partial.erase(0, nl + 1);
      }
      continue;
    }
    // End of its output: the child has ended (or closed standard output,
    // and then ends soon); its last line may lack a newline.
    if (!c.partial.empty()) on_line(key, c.partial);
    ::close(c.out);
    int status = 0;
    while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
    children_.erase(key);
    on_exit(key, status);
  }
}

}  // namespace sexpgpu::cli
