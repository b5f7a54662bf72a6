// sexpgpu watch FILE [--json] [selection]: `check`, then again on every
// save of the file or of a module it requires (docs/check.md, "watch").
// inotify watches the directories that hold those files, not the files, so
// a save that writes a temporary and renames it over the file (as most
// editors do) is seen too; events are filtered by name and debounced, and
// the set of modules is resolved again after each check. SIGINT and SIGTERM
// end it with exit 0.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <set>

#include "cli/settings.h"
#include "cli/verbs.h"
#include "lisp/modules.h"
#include "runfile/session.h"

namespace sexpgpu::cli {

namespace fs = std::filesystem;

namespace {

// The signal handler's way out of poll(): a byte on this pipe.
int g_stop_pipe[2] = {-1, -1};

void on_stop_signal(int) {
  char byte = 1;
  ssize_t ignored = ::write(g_stop_pipe[1], &byte, 1);
  (void)ignored;
}

// Saves closer together than this are one save (an editor's temporary,
// rename and chmod; a formatter run after the write).
constexpr int kDebounceMs = 100;

struct CheckResult {
  nlohmann::json diagnostics = nlohmann::json::array();
  std::string human;
  size_t errors = 0, warnings = 0;
  std::set<std::string> files;  // the file and the user modules it required, absolute
};

std::string absolute(const std::string& path) {
  std::error_code ec;
  return fs::absolute(path, ec).lexically_normal().string();
}

CheckResult check_once(const std::string& file, const LimitFlags& flags,
                       const std::function<std::vector<std::string>()>& reducers) {
  CheckResult r;
  r.files.insert(absolute(file));
  runfile::Session s(flags.limits);
  s.reducer_plugins = reducers;
  flags.request(s.selection().request);  // checked before the first check
  std::error_code ec;
  std::string io_error;
  if (!fs::exists(file, ec) || !s.load_file(file, &io_error)) {
    // Between an editor's delete and its write, or a file removed: said,
    // and the next save is checked again.
    std::string message = io_error.empty() ? "cannot read " + file + ": no such file" : io_error;
    r.diagnostics.push_back(bare_diagnostic("E-IO", message, file));
    r.human = file + ": E-IO " + message + "\n";
    r.errors = 1;
    return r;
  }
  s.compile();
  r.errors = s.sink.error_count();
  r.warnings = s.sink.warning_count();
  r.diagnostics = diagnostics_json(s);
  for (const Diagnostic& d : s.sink.all())
    r.human += render_human(s.sources, d, use_color_stdout());
  std::set<std::string> standard;
  for (uint32_t f : s.interp->library_files) standard.insert(s.interp->sources.file(f).path);
  for (const auto& m : s.interp->modules)
    if (!m->path.empty() && !standard.count(m->path)) r.files.insert(absolute(m->path));
  return r;
}

std::string clock_now() {
  std::time_t t = std::time(nullptr);
  std::tm local{};
  localtime_r(&t, &local);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &local);
  return buf;
}

std::string verdict(const CheckResult& r) {
  if (!r.errors && !r.warnings) return "ok";
  return std::to_string(r.errors) + (r.errors == 1 ? " error, " : " errors, ") +
         std::to_string(r.warnings) + (r.warnings == 1 ? " warning" : " warnings");
}

// The directories to watch and, in each, the names that matter.
class Watches {
 public:
  explicit Watches(int fd) : fd_(fd) {}
  // Watches the directories of `files` (and no others); false when one
  // cannot be watched (`why` says which).
  bool update(const std::set<std::string>& files, std::string& why) {
    std::map<std::string, std::set<std::string>> wanted;
    for (const std::string& f : files) {
      fs::path p(f);
      wanted[p.parent_path().string()].insert(p.filename().string());
    }
    for (auto it = dirs_.begin(); it != dirs_.end();)
      if (!wanted.count(it->first)) {
        inotify_rm_watch(fd_, it->second);
        names_.erase(it->second);
        it = dirs_.erase(it);
      } else {
        ++it;
      }
    for (const auto& [dir, names] : wanted) {
      if (!dirs_.count(dir)) {
        int wd = inotify_add_watch(fd_, dir.c_str(),
                                   IN_CLOSE_WRITE | IN_MODIFY | IN_MOVED_TO | IN_MOVED_FROM |
                                       IN_CREATE | IN_DELETE | IN_ATTRIB);
        if (wd < 0) {
          why = "cannot watch " + dir + ": " + std::strerror(errno);
          return false;
        }
        dirs_[dir] = wd;
      }
      names_[dirs_[dir]] = names;
    }
    return true;
  }
  // Reads the pending events; true when one names a watched file.
  bool drain() {
    alignas(inotify_event) char buf[8192];
    bool relevant = false;
    for (;;) {
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      for (ssize_t at = 0; at < n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
        auto it = names_.find(ev->wd);
        if (ev->len && it != names_.end() && it->second.count(ev->name)) relevant = true;
        at += ssize_t(sizeof(inotify_event) + ev->len);
      }
    }
    return relevant;
  }
  size_t files() const {
    size_t n = 0;
    for (const auto& [wd, names] : names_) n += names.size();
    return n;
  }

 private:
  int fd_;
  std::map<std::string, int> dirs_;
  std::map<int, std::set<std::string>> names_;
};

enum class Wait { Changed, Stop, Failed };

// Blocks until a watched file changed (and then stayed quiet for
// kDebounceMs) or a stop signal came.
Wait wait_for_change(int inotify_fd, Watches& watches) {
  bool changed = false;
  for (;;) {
    pollfd fds[2] = {{inotify_fd, POLLIN, 0}, {g_stop_pipe[0], POLLIN, 0}};
    int n = ::poll(fds, 2, changed ? kDebounceMs : -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Wait::Failed;
    }
    if (fds[1].revents) return Wait::Stop;
    if (n == 0) return Wait::Changed;  // quiet since the last relevant event
    if (fds[0].revents && watches.drain()) changed = true;
  }
}

}  // namespace

void add_watch(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string file;
    bool json = false;
    LimitFlags limits;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "watch", "check a file, then again on every save of it or of a module it requires");
  cmd->add_option("file", opts->file, "the file to watch")->required();
  cmd->add_flag("--json", opts->json, "one check --json document per line, per check");
  opts->limits.add_to(cmd);
  cmd->callback([opts, &exit_code]() {
    if (!settings_or_report("watch", exit_code)) return;
    std::error_code ec;
    if (!fs::exists(opts->file, ec) || fs::is_directory(opts->file, ec)) {
      std::cerr << "sexpgpu watch: cannot read " << opts->file
                << (fs::exists(opts->file, ec) ? ": a directory, not a file" : ": no such file")
                << "\n";
      if (opts->json) std::cout << unreadable_file_json(opts->file).dump() << "\n";
      exit_code = kUsage;
      return;
    }
    select::Request request;
    if (!opts->limits.request(request)) {
      exit_code = kUsage;
      return;
    }
    int inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_fd < 0 || ::pipe2(g_stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
      std::cerr << "sexpgpu watch: cannot watch files: " << std::strerror(errno) << "\n";
      exit_code = kRunFailed;
      return;
    }
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);

    const bool terminal = !opts->json && isatty(1);
    Watches watches(inotify_fd);
    auto reducers = lazy_reducer_plugins();
    for (bool first = true;; first = false) {
      CheckResult r = check_once(opts->file, opts->limits, reducers);
      std::string why;
      if (!watches.update(r.files, why)) {
        std::cerr << "sexpgpu watch: " << why << "\n";
        exit_code = kRunFailed;
        return;
      }
      if (opts->json) {
        std::cout << r.diagnostics.dump() << "\n";
      } else {
        if (terminal)
          std::cout << "\x1b[H\x1b[2J";
        else if (!first)
          std::cout << "\n";
        std::cout << (terminal ? "" : "--- ") << clock_now() << " " << opts->file << ": "
                  << verdict(r)
                  << (terminal ? "  (watching " + std::to_string(watches.files()) +
                                     (watches.files() == 1 ? " file" : " files") + "; Ctrl-C stops)"
                               : std::string())
                  << "\n";
        if (!r.human.empty()) std::cout << (terminal ? "\n" : "") << r.human;
      }
      std::cout << std::flush;
      switch (wait_for_change(inotify_fd, watches)) {
        case Wait::Changed: continue;
        case Wait::Stop: exit_code = kOk; return;
        case Wait::Failed:
          std::cerr << "sexpgpu watch: waiting for changes failed: " << std::strerror(errno)
                    << "\n";
          exit_code = kRunFailed;
          return;
      }
    }
  });
}

}  // namespace sexpgpu::cli
