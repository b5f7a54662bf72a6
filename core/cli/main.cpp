// sexpgpu: the one binary. Parses the command line (CLI11) on a thread with a
// large stack and dispatches to the verbs.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "cli/verbs.h"
#include "host/plugin_host.h"
#include "sexpgpu/plugin.h"
#include "util/big_stack.h"

#ifndef SEXPGPU_VERSION
#define SEXPGPU_VERSION "0.0.0"
#endif

namespace sexpgpu::cli {

void LimitFlags::add_to(CLI::App* cmd) {
  cmd->add_option("--eval-steps", limits.steps, "evaluation step limit (default 2e7)");
  cmd->add_option("--eval-depth", limits.depth, "call depth limit (default 10000)");
  cmd->add_option("--eval-heap", limits.heap_bytes,
                  "compile-time heap limit in bytes (default 1 GiB)");
  cmd->add_option("--ir-nodes", limits.ir_nodes,
                  "IR nodes per function before fusion (default 100000)");
  cmd->add_option("--variant", variants, "apply declared variants, left to right")->delimiter(',');
  cmd->add_option("--set", sets, "set a knob: KNOB=VALUE (repeatable; after the variants)");
  cmd->add_option("--point", point, "a sweep point: SWEEP:INDEX (0-based; applied last)");
}

std::unique_ptr<lisp::Session> LimitFlags::load(const std::string& file, const char* verb,
                                                int& exit_code, bool compile) const {
  auto s = std::make_unique<lisp::Session>(limits);
  if (!request(s->selection().request)) {
    exit_code = kUsage;
    return nullptr;
  }
  std::string io_error;
  if (!s->load_file(file, &io_error)) {
    std::cerr << "sexpgpu " << verb << ": " << io_error << "\n";
    exit_code = kUsage;
    return nullptr;
  }
  if (compile) s->compile();
  for (const Diagnostic& d : s->sink.all())
    std::cerr << render_human(s->sources, d, use_color_stderr());
  return s;
}

bool LimitFlags::request(select::Request& out) const {
  out.variants = variants;
  out.point = point;
  for (const std::string& s : sets) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "sexpgpu: --set " << s << ": write KNOB=VALUE\n";
      return false;
    }
    out.sets.push_back({s.substr(0, eq), s.substr(eq + 1)});
  }
  return true;
}

namespace {
std::vector<std::string> g_command_line;
}

const std::vector<std::string>& command_line() {
  return g_command_line;
}

void set_command_line(int argc, char** argv) {
  g_command_line.assign(argv, argv + argc);
}

// no-color.org: NO_COLOR set to a non-empty value turns colours off.
static bool no_color() {
  const char* v = std::getenv("NO_COLOR");
  return v != nullptr && *v != '\0';
}
bool use_color_stderr() {
  return !no_color() && isatty(2);
}
bool use_color_stdout() {
  return !no_color() && isatty(1);
}

}  // namespace sexpgpu::cli

int main(int argc, char** argv) {
  using namespace sexpgpu;
  return run_with_big_stack([&]() -> int {
    CLI::App app{"SexpGPU: one Lisp file per ML experiment, checked, compiled and trained."};
    app.require_subcommand(0, 1);
    bool version = false;
    app.add_flag("--version", version,
                 "print the version, the plugin ABI version and the IR version");
    bool include_dir = false;
    app.add_flag("--include-dir", include_dir,
                 "print the directory holding sexpgpu/plugin.h, for plugin authors");
    int exit_code = 0;
    cli::set_command_line(argc, argv);
    cli::add_check(app, exit_code);
    cli::add_eval(app, exit_code);
    cli::add_ir(app, exit_code);
    cli::add_explain(app, exit_code);
    cli::add_checkpoint(app, exit_code);
    cli::add_status(app, exit_code);
    cli::add_variants(app, exit_code);
    cli::add_annotate(app, exit_code);
    cli::add_run(app, exit_code);
    cli::add_docs(app, exit_code);
    cli::add_fmt(app, exit_code);
    cli::add_doctor(app, exit_code);
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      app.exit(e);
      return cli::kUsage;
    } catch (const std::exception& e) {
      std::cerr << "sexpgpu: internal error: " << e.what() << "\n";
      return 70;
    }
    if (version) {
      // The IR's JSON version arrives with the IR; 1 is the first.
      std::cout << "sexpgpu " SEXPGPU_VERSION " (plugin ABI " << SG_ABI_MAJOR << "." << SG_ABI_MINOR
                << ", IR 1)\n";
      return 0;
    }
    if (include_dir) {
      std::string dir = host::include_dir();
      if (dir.empty()) {
        std::cerr << "sexpgpu: sexpgpu/plugin.h is not installed beside this binary\n";
        return 3;
      }
      std::cout << dir << "\n";
      return 0;
    }
    if (app.get_subcommands().empty()) {
      std::cerr << app.help();
      return cli::kUsage;
    }
    return exit_code;
  });
}
